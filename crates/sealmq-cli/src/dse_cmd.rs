//! `sealmq dse ...`: encryption at rest (SPEC §7) — a new master key file, master-key rotation
//! (the queue manager may be running), and what a queue manager's setting is.

use crate::CliResult;
use clap::{Args, Subcommand};
use sealmq_storage::dse::{Dse, MasterSource, new_master_hex};
use std::io::Write;

#[derive(Subcommand)]
pub enum DseCmd {
    /// Write a new random master key (64 hex digits) to a file readable by its owner only.
    Keygen(KeygenArgs),
    /// Rewrap a queue manager's data keys under a new master key (no downtime).
    Rotate(RotateArgs),
    /// Whether a queue manager encrypts at rest, with which master key source and data keys.
    Status(StatusArgs),
}

#[derive(Args)]
pub struct KeygenArgs {
    /// The key file to create (refused if it exists).
    pub path: std::path::PathBuf,
}

#[derive(Args)]
pub struct RotateArgs {
    pub qm: String,
    /// The new master key source: file:PATH, env:VAR or passphrase-env:VAR.
    #[arg(long)]
    pub to: String,
}

#[derive(Args)]
pub struct StatusArgs {
    pub qm: String,
}

pub fn run(c: DseCmd) -> CliResult {
    match c {
        DseCmd::Keygen(a) => {
            use std::os::unix::fs::OpenOptionsExt;
            let key = new_master_hex()?;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&a.path)
                .map_err(|e| format!("cannot create {}: {e}", a.path.display()))?;
            f.write_all(key.as_bytes())
                .and_then(|_| f.write_all(b"\n"))
                .and_then(|_| f.sync_all())
                .map_err(|e| format!("cannot write {}: {e}", a.path.display()))?;
            println!(
                "Master key written to {} (mode 600). Keep a copy apart from the queue manager's data: without it the data cannot be read.",
                a.path.display()
            );
            Ok(())
        }
        DseCmd::Rotate(a) => {
            let dir = crate::home::exists(&a.qm)?;
            if !Dse::configured(&dir) {
                return Err(format!(
                    "queue manager '{}' does not encrypt at rest (create it with --dse)",
                    a.qm
                )
                .into());
            }
            let old = Dse::source(&dir)?;
            let new = MasterSource::parse(&a.to)?;
            let n = Dse::rotate(&dir, &old, &new)?;
            Dse::set_source(&dir, &new)?;
            println!(
                "{n} data key(s) of {} rewrapped under the master key from {new}; the old master key no longer opens them.",
                a.qm
            );
            Ok(())
        }
        DseCmd::Status(a) => {
            let dir = crate::home::exists(&a.qm)?;
            if !Dse::configured(&dir) {
                println!("QMNAME({}) DSE(OFF)", a.qm);
            } else {
                let (master_age, key_age) = Dse::ages(&dir)?;
                println!(
                    "QMNAME({}) DSE(ON) MASTER({}) MASTERAGE({master_age}) KEYAGE({key_age})",
                    a.qm,
                    Dse::source(&dir)?
                );
            }
            Ok(())
        }
    }
}
