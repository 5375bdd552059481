//! `sealmq keystore init|import|add-key|retire|trust|list|crl`.

use crate::CliResult;
use crate::io::{read_input, write_output};
use clap::{Args, Subcommand};
use sealmq_protect::identity::IdentitySpec;
use sealmq_protect::keystore::{make_crl_pem, read_private_key_file};
use sealmq_protect::{Dn, KeyKind, Keystore};
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum KeystoreCmd {
    /// Create a keystore with a new identity (self-signed, or signed by a CA keystore).
    Init(InitArgs),
    /// Replace the keystore's identity with a certificate and private key (or PKCS#12).
    Import(ImportArgs),
    /// Add a further key under the identity's DN, issued by a CA keystore: an ML-KEM key that
    /// reads post-quantum messages beside an identity that signs.
    AddKey(AddKeyArgs),
    /// Retire an added key: never encrypted to again, still reads what was sent to it.
    Retire(RetireArgs),
    /// Add CA or recipient certificates, or CRLs, from PEM/DER files.
    Trust(TrustArgs),
    /// Show the identity, trusted CAs, recipients and CRLs.
    List(ListArgs),
    /// Issue a CRL from a CA keystore revoking the given certificates.
    Crl(CrlArgs),
}

#[derive(Args)]
pub struct InitArgs {
    /// Keystore directory to create.
    dir: PathBuf,
    /// Distinguished name of the identity, e.g. "CN=alice,O=Example".
    #[arg(long)]
    dn: String,
    /// Key type: rsa2048, rsa3072, rsa4096, p256, p384, ed25519; post-quantum: ml-dsa-44,
    /// ml-dsa-65, ml-dsa-87 (signers) or ml-kem-512, ml-kem-768, ml-kem-1024 (recipients that
    /// cannot sign, so issued by a CA: --ca).
    #[arg(long, default_value = "p256")]
    key: String,
    /// CA keystore whose identity signs the new certificate.
    #[arg(long)]
    ca: Option<PathBuf>,
    /// Make a CA identity (can sign other identities and CRLs).
    #[arg(long)]
    authority: bool,
    /// Days the certificate is valid.
    #[arg(long, default_value_t = 365)]
    days: u32,
    /// Allow --key rsa1024, which is insecure (only to reproduce RSA-1024 figures).
    #[arg(long)]
    insecure_rsa1024: bool,
    /// Also add an ML-KEM key (ml-kem-512, ml-kem-768 or ml-kem-1024) under the same DN, issued
    /// by --ca, that reads what is encrypted to it (as `sealmq keystore add-key`).
    #[arg(long, requires = "ca")]
    kem: Option<String>,
}

#[derive(Args)]
pub struct AddKeyArgs {
    dir: PathBuf,
    /// Key type of the added key, e.g. ml-kem-768.
    #[arg(long, default_value = "ml-kem-768")]
    key: String,
    /// CA keystore whose identity issues the key's certificate.
    #[arg(long)]
    ca: PathBuf,
    /// Days the certificate is valid.
    #[arg(long, default_value_t = 365)]
    days: u32,
}

#[derive(Args)]
pub struct RetireArgs {
    dir: PathBuf,
    /// Serial number (hex, as `sealmq keystore list` shows it) of the added key to retire.
    #[arg(long)]
    serial: String,
}

#[derive(Args)]
pub struct ImportArgs {
    dir: PathBuf,
    /// Certificate file (PEM or DER; extra certificates become the chain).
    #[arg(long, requires = "key", conflicts_with = "p12")]
    cert: Option<PathBuf>,
    /// Private key file (PEM PKCS#8, PKCS#1 or SEC1, or DER PKCS#8).
    #[arg(long, requires = "cert")]
    key: Option<PathBuf>,
    /// PKCS#12 file holding the key and certificates.
    #[arg(long)]
    p12: Option<PathBuf>,
    /// PKCS#12 password (or SEALMQ_P12_PASSWORD).
    #[arg(
        long,
        env = "SEALMQ_P12_PASSWORD",
        hide_env_values = true,
        default_value = ""
    )]
    password: String,
}

#[derive(Args)]
pub struct TrustArgs {
    dir: PathBuf,
    /// Certificate or CRL files (PEM or DER).
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

#[derive(Args)]
pub struct ListArgs {
    dir: PathBuf,
}

#[derive(Args)]
pub struct CrlArgs {
    /// CA keystore that signs the CRL.
    ca: PathBuf,
    /// Certificates to revoke.
    #[arg(long = "revoke")]
    revoke: Vec<PathBuf>,
    /// CRL number.
    #[arg(long, default_value_t = 1)]
    number: u64,
    /// Days until the next update.
    #[arg(long, default_value_t = 7)]
    days: u32,
    /// Where to write the PEM CRL.
    #[arg(long, default_value = "-")]
    out: String,
}

pub fn run(cmd: KeystoreCmd) -> CliResult {
    match cmd {
        KeystoreCmd::Init(a) => {
            let mut spec = IdentitySpec::new(Dn::parse(&a.dn)?, KeyKind::parse(&a.key)?, a.days);
            spec.authority = a.authority;
            spec.insecure_rsa1024 = a.insecure_rsa1024;
            let kem = a.kem.as_deref().map(KeyKind::parse).transpose()?;
            let mut ks = Keystore::init(&a.dir, &spec, a.ca.as_deref())?;
            let id = ks.require_identity()?;
            println!("created keystore {}", a.dir.display());
            println!(
                "identity: {} ({}, serial {})",
                id.cert.subject(),
                id.cert.public_key().kind.name(),
                id.cert.serial_hex()
            );
            if let (Some(kind), Some(ca)) = (kem, &a.ca) {
                let (cert, file) = ks.add_key(kind, a.days, ca)?;
                print_added(&cert, &file);
            }
            Ok(())
        }
        KeystoreCmd::AddKey(a) => {
            let mut ks = Keystore::load(&a.dir)?;
            let (cert, file) = ks.add_key(KeyKind::parse(&a.key)?, a.days, &a.ca)?;
            print_added(&cert, &file);
            Ok(())
        }
        KeystoreCmd::Retire(a) => {
            let mut ks = Keystore::load(&a.dir)?;
            ks.retire(&a.serial)?;
            println!("retired: serial {}", a.serial.to_ascii_uppercase());
            Ok(())
        }
        KeystoreCmd::Import(a) => {
            let mut ks = Keystore::load_or_create(&a.dir)?;
            match (a.cert, a.key, a.p12) {
                (Some(c), Some(k), None) => {
                    let cert = read_input(&c.to_string_lossy())?;
                    let key = read_private_key_file(&k)?;
                    ks.import(&cert, &key)?;
                }
                (None, None, Some(p)) => {
                    let bytes = read_input(&p.to_string_lossy())?;
                    ks.import_pkcs12(&bytes, &a.password)?;
                }
                _ => return Err("give --cert and --key, or --p12".to_string().into()),
            }
            let ks = Keystore::load(&a.dir)?;
            println!("identity: {}", ks.require_identity()?.cert.subject());
            Ok(())
        }
        KeystoreCmd::Trust(a) => {
            let mut ks = Keystore::load(&a.dir)?;
            for f in &a.files {
                let bytes = read_input(&f.to_string_lossy())?;
                let added = ks.trust(&bytes)?;
                for t in &added.trusted {
                    println!("trusted: {t}");
                }
                for r in &added.recipients {
                    println!("recipient: {r}");
                }
                if added.crls > 0 {
                    println!("crls: {}", added.crls);
                }
                if added.trusted.is_empty() && added.recipients.is_empty() && added.crls == 0 {
                    println!("already known: {}", f.display());
                }
            }
            Ok(())
        }
        KeystoreCmd::List(a) => {
            let ks = Keystore::load(&a.dir)?;
            match ks.identity() {
                Some(id) => println!(
                    "identity: {} ({}, serial {}, issuer {})",
                    id.cert.subject(),
                    id.cert.public_key().kind.name(),
                    id.cert.serial_hex(),
                    id.cert.issuer()
                ),
                None => println!("identity: none"),
            }
            for k in ks.more_keys() {
                let c = &k.cert;
                let (what, when) = match &k.retired {
                    None => ("key", String::new()),
                    Some(t) => ("retired key", format!(", retired {t}")),
                };
                println!(
                    "{what}: {} ({}, serial {}, issuer {}{when})",
                    c.subject(),
                    c.public_key().kind.name(),
                    c.serial_hex(),
                    c.issuer()
                );
            }
            for c in ks.trusted() {
                println!("trusted: {}", c.subject());
            }
            for c in ks.recipients() {
                println!(
                    "recipient: {} ({})",
                    c.subject(),
                    c.public_key().kind.name()
                );
            }
            println!("crls: {}", ks.crl_count());
            Ok(())
        }
        KeystoreCmd::Crl(a) => {
            let mut certs = Vec::new();
            for f in &a.revoke {
                let bytes = read_input(&f.to_string_lossy())?;
                certs.extend(sealmq_protect::cert::Cert::all_from_pem_or_der(&bytes)?);
            }
            let refs: Vec<_> = certs.iter().collect();
            let pem = make_crl_pem(&a.ca, &refs, a.number, a.days)?;
            write_output(&a.out, pem.as_bytes())?;
            Ok(())
        }
    }
}

/// What `add-key` and `init --kem` print: the key and where its certificate is, for
/// `sealmq keystore trust` in the keystores of those who encrypt to it.
fn print_added(cert: &sealmq_protect::cert::Cert, file: &std::path::Path) {
    println!(
        "key: {} ({}, serial {})",
        cert.subject(),
        cert.public_key().kind.name(),
        cert.serial_hex()
    );
    println!("certificate: {}", file.display());
}
