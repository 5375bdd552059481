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
    let temporary = a.dir.is_none();
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
    let r = queue_manager_demo(&dir, a.count);
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    r
}

/// An embedded queue manager: started in this process, a queue defined with MQSC, persistent
/// messages moved through it by a client over the local socket, then a restart.
fn queue_manager_demo(dir: &std::path::Path, count: u32) -> CliResult {
    use sealmq_client::Client;
    use sealmq_engine::mqi::{GetOptions, OpenOptions};
    use sealmq_engine::{Md, Persistence, QmConfig};
    use sealmq_server::{Server, ServerConfig};
    let qm_dir = dir.join("DEMO.QM");
    if !qm_dir.join("log").exists() {
        sealmq_engine::create(QmConfig::new("DEMO.QM", &qm_dir))
            .map_err(|e| e.to_string())?
            .shutdown()
            .map_err(|e| e.to_string())?;
    }
    let cfg = ServerConfig {
        name: "DEMO.QM".into(),
        dir: qm_dir.clone(),
        listen: None,
        tls: false,
        metrics: None,
        web: None,
        replicator: None,
    };
    let server = Server::start(&cfg)?;
    println!("\nqueue manager DEMO.QM running in {}", qm_dir.display());
    let mut c = Client::connect_local(&qm_dir, "sealmq-demo").map_err(|e| e.to_string())?;
    let script =
        "DEFINE QLOCAL(DEMO.Q) REPLACE DESCR('demo queue')\nDISPLAY QLOCAL(DEMO.Q) DESCR CURDEPTH";
    let (out, _) = c.mqsc(script, false).map_err(|e| e.to_string())?;
    print!("{out}");
    let (h, _) = c
        .open("DEMO.Q", OpenOptions::output())
        .map_err(|e| e.to_string())?;
    let start = std::time::Instant::now();
    for i in 0..count {
        let mut md = Md {
            persistence: Persistence::Persistent,
            ..Md::default()
        };
        c.put(h, &mut md, format!("order {i}").as_bytes(), true)
            .map_err(|e| e.to_string())?;
        if i % 10 == 9 {
            c.commit().map_err(|e| e.to_string())?;
        }
    }
    c.commit().map_err(|e| e.to_string())?;
    println!(
        "put {count} persistent messages in units of 10 in {:?}",
        start.elapsed()
    );
    drop(c);
    server.request_stop();
    server.wait()?;
    println!("stopped; restarting to show they survived");
    let server = Server::start(&cfg)?;
    let mut c = Client::connect_local(&qm_dir, "sealmq-demo").map_err(|e| e.to_string())?;
    let (h, _) = c
        .open("DEMO.Q", OpenOptions::input())
        .map_err(|e| e.to_string())?;
    let mut got = 0;
    while c.get(h, &GetOptions::default()).is_ok() {
        got += 1;
    }
    println!("got {got} messages back after the restart");
    drop(c);
    server.request_stop();
    server.wait()?;
    if got != count {
        return Err(format!("demo: expected {count} messages, got {got}").into());
    }
    Ok(())
}
