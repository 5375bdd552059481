//! `sealmq`: the command line. This subcommands: `keystore` (identities and trust),
//! `message` (offline protect / unprotect / inspect) and `demo` (a self-contained walk
//! through every quality of protection).

mod demo;
mod io;
mod keystore_cmd;
mod message_cmd;

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
    /// Identities and trust for applications and queue managers.
    #[command(subcommand)]
    Keystore(keystore_cmd::KeystoreCmd),
    /// Protect a payload offline, unprotect it, or show what an envelope holds.
    #[command(subcommand)]
    Message(message_cmd::MessageCmd),
    /// Make throw-away identities and show every quality of protection end to end.
    Demo(demo::DemoArgs),
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

impl From<String> for CliError {
    fn from(e: String) -> Self {
        CliError::Other(e)
    }
}

pub type CliResult<T = ()> = Result<T, CliError>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Keystore(c) => keystore_cmd::run(c),
        Command::Message(c) => message_cmd::run(c),
        Command::Demo(a) => demo::run(a),
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
