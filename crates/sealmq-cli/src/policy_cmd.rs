//! `sealmq policy set|show|remove|export`: security policies (setmqspl / dspmqspl).

use crate::CliResult;
use crate::home::qm_dir;
use clap::{Args, Subcommand};
use sealmq_client::Client;
use sealmq_protect::{Dn, EncAlg, Envelope, KeyReuse, Policy, SignAlg};

#[derive(Subcommand)]
pub enum PolicyCmd {
    /// Set (create or replace) a queue's policy, like setmqspl.
    Set(SetArgs),
    /// Show one policy or all.
    Show(ShowArgs),
    /// Remove a queue's policy.
    Remove(NameArgs),
    /// Print the MQSC commands that recreate every policy exactly.
    Export(QmArgs),
}

#[derive(Args)]
pub struct QmArgs {
    /// Queue manager.
    #[arg(short = 'm', long = "qmgr")]
    pub qm: String,
}

#[derive(Args)]
pub struct NameArgs {
    #[arg(short = 'm', long = "qmgr")]
    pub qm: String,
    /// Policy name (the queue's name).
    #[arg(short = 'p', long = "policy")]
    pub name: String,
}

#[derive(Args)]
pub struct ShowArgs {
    #[arg(short = 'm', long = "qmgr")]
    pub qm: String,
    #[arg(short = 'p', long = "policy")]
    pub name: Option<String>,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct SetArgs {
    #[arg(short = 'm', long = "qmgr")]
    pub qm: String,
    #[arg(short = 'p', long = "policy")]
    pub name: String,
    /// Signing algorithm: NONE, SHA256, SHA384, SHA512.
    #[arg(short = 's', long = "sign-alg", default_value = "NONE")]
    pub sign: String,
    /// Encryption algorithm: NONE, AES128, AES256.
    #[arg(short = 'e', long = "enc-alg", default_value = "NONE")]
    pub enc: String,
    /// Recipient DN (repeatable).
    #[arg(short = 'r', long = "recip")]
    pub recip: Vec<String>,
    /// Authorized signer DN (repeatable).
    #[arg(short = 'a', long = "signer")]
    pub signer: Vec<String>,
    /// 1: tolerate unprotected messages; 0: enforce.
    #[arg(short = 't', long = "tolerate", default_value = "0")]
    pub tolerate: String,
    /// Key reuse: a count, 0 (disabled) or * (unlimited).
    #[arg(short = 'c', long = "key-reuse", default_value = "0")]
    pub key_reuse: String,
    /// The envelope sealmq writes: SEALMQ (its own), or IBM (what IBM MQ AMS's interceptor
    /// reads; messages in either format are then read).
    #[arg(long = "envelope", default_value = "SEALMQ")]
    pub envelope: String,
}

fn client(qm: &str) -> CliResult<Client> {
    Client::connect_local(&qm_dir(qm), "sealmq-policy").map_err(|e| e.to_string().into())
}

fn run(qm: &str, script: &str, json: bool) -> CliResult<String> {
    let (text, failed) = client(qm)?.mqsc(script, json).map_err(|e| e.to_string())?;
    if failed > 0 {
        // The answer: MQ's message (if any) and sealmq's detail, which says what to do.
        return Err(text.trim().replace('\n', " ").into());
    }
    Ok(text)
}

pub fn run_cmd(cmd: PolicyCmd) -> CliResult {
    match cmd {
        PolicyCmd::Set(a) => {
            // Validate locally first for a clear message, then let the queue manager store it.
            let mut p = Policy::none(&a.name);
            p.sign_alg = SignAlg::parse(&a.sign)?;
            p.enc_alg = EncAlg::parse(&a.enc)?;
            p.recipients = a
                .recip
                .iter()
                .map(|d| Dn::parse(d))
                .collect::<Result<_, _>>()?;
            p.signers = a
                .signer
                .iter()
                .map(|d| Dn::parse(d))
                .collect::<Result<_, _>>()?;
            p.tolerate = match a.tolerate.as_str() {
                "0" => false,
                "1" => true,
                t => return Err(format!("-t {t}: use 0 (enforce) or 1 (tolerate)").into()),
            };
            p.key_reuse = KeyReuse::parse(&a.key_reuse)?;
            p.envelope = Envelope::parse(&a.envelope)?;
            p.validate()?;
            run(&a.qm, &sealmq_mqsc::exec::policy_command(&p), false)?;
            println!("Policy {} set ({}).", a.name, p.qop());
            Ok(())
        }
        PolicyCmd::Show(a) => {
            let name = a.name.unwrap_or_else(|| "*".into());
            print!(
                "{}",
                run(&a.qm, &format!("DISPLAY POLICY({name})"), a.json)?
            );
            Ok(())
        }
        PolicyCmd::Remove(a) => {
            run(&a.qm, &format!("DELETE POLICY({})", a.name), false)?;
            println!("Policy {} removed.", a.name);
            Ok(())
        }
        PolicyCmd::Export(a) => {
            let json = run(&a.qm, "DISPLAY POLICY(*)", true)?;
            let v: serde_json::Value =
                serde_json::from_str(&json).map_err(|e| format!("unreadable answer: {e}"))?;
            let list = |o: &serde_json::Value, k: &str| -> Vec<String> {
                match &o[k] {
                    serde_json::Value::String(s) => vec![s.clone()],
                    serde_json::Value::Array(a) => a
                        .iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect(),
                    _ => vec![],
                }
            };
            for o in v[0]["objects"].as_array().cloned().unwrap_or_default() {
                let mut p = Policy::none(o["POLICY"].as_str().unwrap_or_default());
                p.sign_alg = SignAlg::parse(o["SIGNALG"].as_str().unwrap_or("NONE"))?;
                p.enc_alg = EncAlg::parse(o["ENCALG"].as_str().unwrap_or("NONE"))?;
                p.recipients = list(&o, "RECIP")
                    .iter()
                    .map(|d| Dn::parse(d))
                    .collect::<Result<_, _>>()?;
                p.signers = list(&o, "SIGNER")
                    .iter()
                    .map(|d| Dn::parse(d))
                    .collect::<Result<_, _>>()?;
                p.tolerate = o["TOLERATE"].as_str() == Some("YES");
                p.key_reuse = KeyReuse::parse(o["KEYREUSE"].as_str().unwrap_or("DISABLED"))?;
                p.envelope = Envelope::parse(o["ENVELOPE"].as_str().unwrap_or("SEALMQ"))?;
                println!("{}", sealmq_mqsc::exec::policy_command(&p));
            }
            Ok(())
        }
    }
}
