//! `sealmq`: the command line: queue manager lifecycle (`create`, `start`, `stop`, `status`,
//! `delete`), administration (`mqsc`), the sample applications (`put`, `get`, `browse`),
//! `keystore` (identities and trust), `message` (offline protect / unprotect / inspect) and
//! `demo`.

mod app_cmd;
mod bench;
mod browse_fmt;
mod consume_cmd;
mod demo;
mod dse_cmd;
mod dump_cmd;
mod ha_cmd;
mod home;
mod io;
mod keystore_cmd;
mod message_cmd;
mod mqsc_cmd;
mod policy_cmd;
mod progress;
mod pubsub_cmd;
mod qm_cmd;
mod reprotect_cmd;
mod stop_cmd;
mod trigger_cmd;
mod web_cmd;

use clap::{Parser, Subcommand};
use sealmq_protect::ProtectError;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "sealmq",
    version,
    about = "sealmq: a queue manager with message protection built in"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create a queue manager (its data directory, system objects and keystore).
    Create(qm_cmd::CreateArgs),
    /// Delete a queue manager that is not running.
    Delete(qm_cmd::NameArg),
    /// Run a queue manager (in the foreground, or --background).
    Start(qm_cmd::StartArgs),
    /// End a running queue manager.
    Stop(stop_cmd::StopArgs),
    /// Queue managers under SEALMQ_HOME, running or not, and their listeners.
    Status(qm_cmd::StatusArgs),
    /// Run MQSC commands as runmqsc does: at a terminal, from standard input or a file, locally
    /// or as a client through a SVRCONN channel (-c, --conn).
    Mqsc(mqsc_cmd::MqscArgs),
    /// Print MQSC that recreates the queue manager's objects, authority records, CHLAUTH
    /// rules, policies and attributes (MQ's dmpmqcfg).
    Dump(dump_cmd::DumpArgs),
    /// Set or remove a user's password in the queue manager's password file (CONNAUTH).
    Passwd(qm_cmd::PasswdArgs),
    /// Security policies of queues (set, show, remove, export).
    #[command(subcommand)]
    Policy(policy_cmd::PolicyCmd),
    /// Put messages (sample application).
    Put(app_cmd::PutArgs),
    /// Get messages (sample application).
    Get(app_cmd::GetArgs),
    /// Browse messages without removing them.
    Browse(app_cmd::BrowseArgs),
    /// Publish messages on a topic string (QM TOPICSTR).
    Pub(pubsub_cmd::PubArgs),
    /// Subscribe to a topic string (QM TOPICSTR, `#` and `+` wildcards) and print what is
    /// published.
    Sub(pubsub_cmd::SubArgs),
    /// Run a benchmark scenario (local-rr, put1, mover-rr, stream, partner, deep, drain, amqp, jms, ha, connections, servers, fanout, reprotect).
    Bench(bench::BenchArgs),
    /// Re-protect a queue's messages for its policy's current recipients without decrypting
    /// them (after a key is retired, a recipient leaves, or RSA gives way to ML-KEM).
    Reprotect(reprotect_cmd::ReprotectArgs),
    /// Identities and trust for applications and queue managers.
    #[command(subcommand)]
    Keystore(keystore_cmd::KeystoreCmd),
    /// Encryption at rest: master key files, master-key rotation, status.
    #[command(subcommand)]
    Dse(dse_cmd::DseCmd),
    /// A replicated queue manager's instances: switch the active role, drain one, readiness.
    #[command(subcommand)]
    Ha(ha_cmd::HaCmd),
    /// Protect a payload offline, unprotect it, or show what an envelope holds.
    #[command(subcommand)]
    Message(message_cmd::MessageCmd),
    /// Make throw-away identities and show every quality of protection end to end.
    Demo(demo::DemoArgs),
    /// Serve an initiation queue: start the program of each triggered queue's PROCESS
    /// (MQ's runmqtrm).
    TriggerMonitor(trigger_cmd::TriggerMonitorArgs),
    /// Serve the REST API and web console of every queue manager under SEALMQ_HOME, running
    /// or not, and start and stop them (IBM MQ's mqweb).
    Web(web_cmd::WebArgs),
}

/// A CLI failure: a protection error (with its MQ reason code) or another problem.
pub enum CliError {
    Protect(ProtectError),
    Other(String),
}

impl From<ProtectError> for CliError {
    fn from(e: ProtectError) -> Self {
        CliError::Protect(e)
    }
}

impl From<sealmq_storage::StorageError> for CliError {
    fn from(e: sealmq_storage::StorageError) -> Self {
        let reason = e.reason();
        CliError::Other(format!("{} {}: {e}", reason.code(), reason.name()))
    }
}

impl From<String> for CliError {
    fn from(e: String) -> Self {
        CliError::Other(e)
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Protect(e) => e.fmt(f),
            CliError::Other(e) => f.write_str(e),
        }
    }
}

pub type CliResult<T = ()> = Result<T, CliError>;

/// A failure that is one of MQ's reasons, written as the client's errors are: `2058
/// Q_MGR_NAME_ERROR: detail`.
pub(crate) fn refused(
    reason: sealmq_types::ReasonCode,
    detail: impl std::fmt::Display,
) -> CliError {
    CliError::Other(format!("{} {}: {detail}", reason.code(), reason.name()))
}

fn main() -> ExitCode {
    // Whatever sealmq writes — queue managers, keystores, envelopes — is its user's alone
    // unless the user shares it.
    sealmq_server::perms::private_umask();
    io::quiet_on_closed_stdout();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Create(a) => qm_cmd::create(a),
        Command::Dse(c) => dse_cmd::run(c),
        Command::Ha(c) => ha_cmd::command(c),
        Command::Delete(a) => qm_cmd::delete(a),
        Command::Start(a) => qm_cmd::start(a),
        Command::Stop(a) => stop_cmd::stop(a),
        Command::Status(a) => qm_cmd::status(a),
        Command::Mqsc(a) => return mqsc_cmd::run(a),
        Command::Dump(a) => dump_cmd::run(a),
        Command::Passwd(a) => qm_cmd::passwd(a),
        Command::Policy(c) => policy_cmd::run_cmd(c),
        Command::Put(a) => app_cmd::put(a),
        Command::Get(a) if a.async_consume => consume_cmd::get_async(a),
        Command::Get(a) => app_cmd::get(a),
        Command::Browse(a) => app_cmd::browse(a),
        Command::Pub(a) => pubsub_cmd::publish(a),
        Command::Sub(a) => pubsub_cmd::subscribe(a),
        Command::Bench(a) => bench::run(a),
        Command::Keystore(c) => keystore_cmd::run(c),
        Command::Reprotect(a) => reprotect_cmd::run(a),
        Command::Message(c) => message_cmd::run(c),
        Command::Demo(a) => demo::run(a),
        Command::TriggerMonitor(a) => trigger_cmd::run(a),
        Command::Web(a) => web_cmd::web(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Protect(e)) => {
            let r = e.reason();
            eprintln!("sealmq: {} {}: {e}", r.code(), r.name());
            ExitCode::FAILURE
        }
        Err(CliError::Other(e)) => {
            eprintln!("sealmq: {e}");
            ExitCode::FAILURE
        }
    }
}
