//! `sealmq demo`: throw-away identities, then every QoP end to end, with sizes and counts.

use crate::CliResult;
use clap::Args;
use sealmq_protect::identity::IdentitySpec;
use sealmq_protect::{
    Dn, EncAlg, KeyKind, KeyReuse, Keystore, Original, Policy, Protector, SignAlg,
};
use std::path::PathBuf;

#[derive(Args)]
pub struct DemoArgs {
    /// Directory for the demo keystores (default: a new temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Messages per quality of protection.
    #[arg(long, default_value_t = 100)]
    count: u32,
}

pub fn run(a: DemoArgs) -> CliResult {
    let dir = match a.dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!("sealmq-demo-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut ca = IdentitySpec::new(Dn::parse("CN=Demo CA,O=Example")?, KeyKind::P256, 30);
    ca.authority = true;
    Keystore::init(&dir.join("ca"), &ca, None)?;
    Keystore::init(
        &dir.join("alice"),
        &IdentitySpec::new(Dn::parse("CN=alice,O=Example")?, KeyKind::P256, 30),
        Some(&dir.join("ca")),
    )?;
    Keystore::init(
        &dir.join("bob"),
        &IdentitySpec::new(Dn::parse("CN=bob,O=Example")?, KeyKind::Rsa(2048), 30),
        Some(&dir.join("ca")),
    )?;
    let bob_cert = std::fs::read(dir.join("bob/identity.pem")).map_err(|e| e.to_string())?;
    Keystore::load(&dir.join("alice"))?.trust(&bob_cert)?;
    println!(
        "keystores in {}: CA (P-256), alice (P-256), bob (RSA-2048)",
        dir.display()
    );
    println!(
        "{:<16} {:>9} {:>12} {:>10} {:>10} {:>10}",
        "qop", "messages", "stored bytes", "put wraps", "get unwraps", "signatures"
    );
    let payload = vec![b'x'; 1024];
    for (name, sign, enc, reuse) in [
        (
            "INTEGRITY",
            SignAlg::Sha256,
            EncAlg::None,
            KeyReuse::Disabled,
        ),
        (
            "PRIVACY",
            SignAlg::Sha256,
            EncAlg::Aes256,
            KeyReuse::Disabled,
        ),
        (
            "CONFIDENTIALITY",
            SignAlg::None,
            EncAlg::Aes256,
            KeyReuse::Count(32),
        ),
    ] {
        let mut policy = Policy::none("DEMO.Q");
        policy.sign_alg = sign;
        policy.enc_alg = enc;
        policy.key_reuse = reuse;
        if enc != EncAlg::None {
            policy.recipients = vec![Dn::parse("CN=bob,O=Example")?];
        }
        let alice = Protector::new(Keystore::load(&dir.join("alice"))?);
        let bob = Protector::new(Keystore::load(&dir.join("bob"))?);
        let mut size = 0;
        for _ in 0..a.count {
            let stored = alice.protect(&policy, &payload, Original::with_format("MQSTR"))?;
            size = stored.len();
            let out = bob.unprotect(&policy, &stored)?;
            if out.payload != payload {
                return Err("demo: payload changed in transit".to_string().into());
            }
        }
        let (p, g) = (alice.counters(), bob.counters());
        println!(
            "{name:<16} {:>9} {size:>12} {:>10} {:>10} {:>10}",
            a.count, p.key_wrap, g.key_unwrap, p.sign
        );
    }
    println!(
        "1 KiB payloads, all unprotected by bob and checked; try: sealmq message inspect --in FILE"
    );
    Ok(())
}
