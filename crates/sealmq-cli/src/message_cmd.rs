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

#[derive(Args)]
pub struct KeystoreArg {
    /// Keystore directory (or SEALMQ_KEYSTORE).
    #[arg(long, env = "SEALMQ_KEYSTORE")]
    keystore: PathBuf,
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
    ks: KeystoreArg,
    /// Signing algorithm: NONE, SHA256, SHA384, SHA512.
    #[arg(long, default_value = "NONE")]
    sign_alg: String,
    /// Encryption algorithm: NONE, AES128, AES256.
    #[arg(long, default_value = "NONE")]
    enc_alg: String,
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
    /// Allow RSA-1024 keys, which are insecure (only to reproduce RSA-1024 figures).
    #[arg(long)]
    insecure_rsa1024: bool,
    #[command(flatten)]
    io: IoArgs,
}

#[derive(Args)]
pub struct UnprotectArgs {
    #[command(flatten)]
    ks: KeystoreArg,
    /// Minimum signing algorithm required: NONE, SHA256, SHA384, SHA512.
    #[arg(long, default_value = "NONE")]
    sign_alg: String,
    /// Minimum encryption algorithm required: NONE, AES128, AES256.
    #[arg(long, default_value = "NONE")]
    enc_alg: String,
    /// Authorized signer DN (repeatable); when given, other signers are refused.
    #[arg(long = "signer")]
    signer: Vec<String>,
    /// Accept an unprotected message as it is.
    #[arg(long)]
    tolerate: bool,
    /// Allow RSA-1024 keys, which are insecure (only to reproduce RSA-1024 figures).
    #[arg(long)]
    insecure_rsa1024: bool,
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
            let mut policy = Policy::none("CLI");
            policy.sign_alg = SignAlg::parse(&a.sign_alg)?;
            policy.enc_alg = EncAlg::parse(&a.enc_alg)?;
            policy.recipients = dns(&a.recip)?;
            policy.key_reuse = KeyReuse::parse(&a.key_reuse)?;
            policy.validate()?;
            if policy.qop() == sealmq_protect::Qop::None {
                return Err("nothing to do: give --sign-alg and/or --enc-alg"
                    .to_string()
                    .into());
            }
            let opts = Options {
                rsa_pss: a.rsa_pss,
                insecure_rsa1024: a.insecure_rsa1024,
                ..Options::default()
            };
            let p = Protector::with_options(Keystore::load(&a.ks.keystore)?, opts);
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
            let mut policy = Policy::none("CLI");
            policy.sign_alg = SignAlg::parse(&a.sign_alg)?;
            policy.enc_alg = EncAlg::parse(&a.enc_alg)?;
            policy.signers = dns(&a.signer)?;
            policy.tolerate = a.tolerate;
            if policy.sign_alg == SignAlg::None && !policy.signers.is_empty() {
                policy.sign_alg = SignAlg::Sha256;
            }
            let opts = Options {
                insecure_rsa1024: a.insecure_rsa1024,
                ..Options::default()
            };
            let p = Protector::with_options(Keystore::load(&a.ks.keystore)?, opts);
            let input = read_input(&a.io.input)?;
            // An unprotect with no minimum still refuses a plain message unless --tolerate.
            let out = if a.io.cms_only {
                p.unprotect_cms(&policy, &input)?
            } else if !sealmq_protect::header::has_magic(&input)
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
