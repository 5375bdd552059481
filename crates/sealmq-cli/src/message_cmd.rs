//! `sealmq message protect|unprotect|inspect`.

use crate::CliResult;
use crate::io::{read_input, write_output};
use clap::{Args, Subcommand};
use sealmq_protect::{
    Dn, EncAlg, KeyReuse, Keystore, Options, Original, Policy, Protector, SignAlg,
};
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum MessageCmd {
    /// Protect a payload as a policy would (sealmq header + CMS, or bare CMS).
    Protect(ProtectArgs),
    /// Check and remove protection; the payload goes to --out.
    Unprotect(UnprotectArgs),
    /// Show QoP, algorithms, recipients, signer and sizes, without keys.
    Inspect(InspectArgs),
}

/// The keystore and the algorithms: those to protect with, or the least an unprotect accepts.
#[derive(Args)]
pub struct KeyArgs {
    /// Keystore directory (or SEALMQ_KEYSTORE).
    #[arg(long, env = "SEALMQ_KEYSTORE")]
    keystore: PathBuf,
    /// Signing algorithm (unprotect: the least required): NONE, SHA256, SHA384, SHA512.
    #[arg(long, default_value = "NONE")]
    sign_alg: String,
    /// Encryption algorithm (unprotect: the least required): NONE, AES128, AES256.
    #[arg(long, default_value = "NONE")]
    enc_alg: String,
    /// Allow RSA-1024 keys, which are insecure (only to reproduce RSA-1024 figures).
    #[arg(long)]
    insecure_rsa1024: bool,
}

impl KeyArgs {
    /// A policy with these algorithms.
    fn policy(&self) -> CliResult<Policy> {
        let mut policy = Policy::none("CLI");
        policy.sign_alg = SignAlg::parse(&self.sign_alg)?;
        policy.enc_alg = EncAlg::parse(&self.enc_alg)?;
        Ok(policy)
    }

    fn protector(&self, opts: Options) -> CliResult<Protector> {
        let opts = Options {
            insecure_rsa1024: self.insecure_rsa1024,
            ..opts
        };
        Ok(Protector::with_options(
            Keystore::load(&self.keystore)?,
            opts,
        ))
    }
}

#[derive(Args)]
pub struct IoArgs {
    /// Input file, or - for standard input.
    #[arg(long = "in", default_value = "-")]
    input: String,
    /// Output file, or - for standard output.
    #[arg(long, default_value = "-")]
    out: String,
    /// Write or read the bare DER CMS, without the sealmq header, for other tools.
    #[arg(long)]
    cms_only: bool,
}

#[derive(Args)]
pub struct ProtectArgs {
    #[command(flatten)]
    ks: KeyArgs,
    /// Recipient DN (repeatable).
    #[arg(long = "recip")]
    recip: Vec<String>,
    /// Key reuse for Confidentiality: a count, DISABLED or UNLIMITED.
    #[arg(long, default_value = "DISABLED")]
    key_reuse: String,
    /// MQ format name kept in the header.
    #[arg(long, default_value = "MQSTR")]
    format: String,
    /// Sign with RSASSA-PSS when the identity is RSA.
    #[arg(long)]
    rsa_pss: bool,
    #[command(flatten)]
    io: IoArgs,
}

#[derive(Args)]
pub struct UnprotectArgs {
    #[command(flatten)]
    ks: KeyArgs,
    /// Authorized signer DN (repeatable); when given, other signers are refused.
    #[arg(long = "signer")]
    signer: Vec<String>,
    /// Accept an unprotected message as it is.
    #[arg(long)]
    tolerate: bool,
    /// Print what was established (QoP, signer) on standard error.
    #[arg(long, short)]
    verbose: bool,
    #[command(flatten)]
    io: IoArgs,
}

#[derive(Args)]
pub struct InspectArgs {
    /// Input file, or - for standard input.
    #[arg(long = "in", default_value = "-")]
    input: String,
    /// Read a bare DER CMS object (no sealmq header).
    #[arg(long)]
    cms_only: bool,
}

fn dns(list: &[String]) -> CliResult<Vec<Dn>> {
    Ok(list
        .iter()
        .map(|d| Dn::parse(d))
        .collect::<Result<_, _>>()?)
}

pub fn run(cmd: MessageCmd) -> CliResult {
    match cmd {
        MessageCmd::Protect(a) => {
            let mut policy = a.ks.policy()?;
            policy.recipients = dns(&a.recip)?;
            policy.key_reuse = KeyReuse::parse(&a.key_reuse)?;
            policy.validate()?;
            if policy.qop() == sealmq_protect::Qop::None {
                return Err("nothing to do: give --sign-alg and/or --enc-alg"
                    .to_string()
                    .into());
            }
            let p = a.ks.protector(Options {
                rsa_pss: a.rsa_pss,
                ..Options::default()
            })?;
            let payload = read_input(&a.io.input)?;
            let out = if a.io.cms_only {
                p.protect_cms(&policy, &payload)?
            } else {
                p.protect(&policy, &payload, Original::with_format(&a.format))?
            };
            write_output(&a.io.out, &out)?;
            Ok(())
        }
        MessageCmd::Unprotect(a) => {
            let mut policy = a.ks.policy()?;
            policy.signers = dns(&a.signer)?;
            policy.tolerate = a.tolerate;
            if policy.sign_alg == SignAlg::None && !policy.signers.is_empty() {
                policy.sign_alg = SignAlg::Sha256;
            }
            let p = a.ks.protector(Options::default())?;
            let input = read_input(&a.io.input)?;
            // An unprotect with no minimum still refuses a plain message unless --tolerate.
            let out = if a.io.cms_only {
                p.unprotect_cms(&policy, &input)?
            } else if !sealmq_protect::is_protected(&input)
                && policy.qop() == sealmq_protect::Qop::None
                && !a.tolerate
            {
                return Err("the input is not a sealmq envelope (use --tolerate to accept unprotected messages, or --cms-only for bare CMS)".to_string().into());
            } else {
                p.unprotect(&policy, &input)?
            };
            if a.verbose {
                eprintln!(
                    "qop: {}{}",
                    out.qop,
                    out.signer
                        .as_ref()
                        .map(|s| format!(", signer: {s}"))
                        .unwrap_or_default()
                );
            }
            write_output(&a.io.out, &out.payload)?;
            Ok(())
        }
        MessageCmd::Inspect(a) => {
            let input = read_input(&a.input)?;
            let i = sealmq_protect::inspect(&input, a.cms_only)?;
            println!("qop: {}", i.qop);
            if let Some(h) = &i.header {
                println!(
                    "header: version {}, format '{}', ccsid {}, encoding {}, payload {} bytes",
                    sealmq_protect::header::VERSION,
                    h.original().format_str(),
                    h.ccsid,
                    h.encoding,
                    h.payload_len
                );
            }
            println!("size: total {} bytes, cms {} bytes", i.total_len, i.cms_len);
            if let Some(e) = &i.encryption {
                println!("encryption: {e}");
            }
            for r in &i.recipients {
                println!("recipient: {r}");
            }
            if let Some(d) = &i.digest {
                println!("digest: {d}");
            }
            if let Some(s) = &i.signature {
                println!("signature: {s}");
            }
            if let Some(s) = &i.signer {
                println!("signer: {s}");
            }
            Ok(())
        }
    }
}
