//! `sealmq bench reprotect --messages N --size BYTES --key-reuse R --key OLD`: fills a queue
//! with N persistent Confidentiality messages for a reader with an `OLD` key (RSA-2048 unless
//! `--key` says), then re-protects the backlog as `sealmq reprotect` does, back and forth: for
//! an ML-KEM-768 reader with the old reader's keystore, and back with the new reader's. Each
//! way reports messages per second and the private-key operations it took; `--rounds`
//! interleaves and ends with medians.

use super::app::{open_q, per_second};
use super::common::{BenchArgs, mqsc};
use crate::CliResult;
use sealmq_client::Client;
use sealmq_engine::Persistence;
use sealmq_engine::md::Md;
use sealmq_engine::mqi::OpenOptions;
use sealmq_protect::identity::IdentitySpec;
use sealmq_protect::{Dn, KeyKind, KeyReuse, Keystore, Original, Policy, Protector};
use std::path::Path;
use std::time::Instant;

const QUEUE: &str = "BENCH.REPROTECT";
const OLD: &str = "CN=bench-old,O=sealmq";
const NEW: &str = "CN=bench-new,O=sealmq";

/// The CA, the two readers and a putter in `work`; the queue manager's keystore made to know
/// them (and read again).
fn keystores(dir: &Path, work: &Path, old: KeyKind) -> CliResult {
    let mut ca = IdentitySpec::new(Dn::parse("CN=bench-ca,O=sealmq")?, KeyKind::P256, 30);
    ca.authority = true;
    Keystore::init(&work.join("ca"), &ca, None)?;
    for (name, dn, kind) in [
        ("old", OLD, old),
        ("new", NEW, KeyKind::MlKem(768)),
        ("putter", "CN=bench-putter,O=sealmq", KeyKind::P256),
    ] {
        let spec = IdentitySpec::new(Dn::parse(dn)?, kind, 30);
        Keystore::init(&work.join(name), &spec, Some(&work.join("ca")))?;
    }
    for who in [dir.join("keystore"), work.join("putter")] {
        let mut ks = Keystore::load(&who)?;
        for c in ["ca", "old", "new"] {
            ks.trust(
                &std::fs::read(work.join(c).join("identity.pem")).map_err(|e| e.to_string())?,
            )?;
        }
    }
    mqsc(dir, "REFRESH SECURITY TYPE(SSL)")
}

/// The queue's policy: Confidentiality for `recip` with key reuse `reuse`.
fn set_policy(dir: &Path, recip: &str, reuse: &str) -> CliResult {
    mqsc(
        dir,
        &format!(
            "SET POLICY({QUEUE}) ENCALG(AES256) RECIP('{recip}') KEYREUSE({reuse}) ACTION(REPLACE)"
        ),
    )
}

/// `n` messages protected for the old reader, put through an alias without a policy.
fn fill(dir: &Path, work: &Path, n: u64, size: usize, reuse: KeyReuse) -> CliResult<f64> {
    let putter = Protector::new(Keystore::load(&work.join("putter"))?);
    let mut p = Policy::none(QUEUE);
    p.enc_alg = sealmq_protect::EncAlg::Aes256;
    p.recipients = vec![Dn::parse(OLD)?];
    p.key_reuse = reuse;
    let mut c = Client::connect_local(dir, "bench-fill").map_err(|e| e.to_string())?;
    let h = open_q(&mut c, &format!("{QUEUE}.RAW"), OpenOptions::output())?;
    let payload = vec![0x6b_u8; size];
    let t = Instant::now();
    for i in 0..n {
        let stored = putter.protect(&p, &payload, Original::default())?;
        let mut md = Md {
            persistence: Persistence::Persistent,
            ..Md::default()
        };
        c.put(h, &mut md, &stored, true)
            .map_err(|e| e.to_string())?;
        if (i + 1) % 1000 == 0 || i + 1 == n {
            c.commit().map_err(|e| e.to_string())?;
        }
    }
    Ok(per_second(n, t))
}

/// One whole re-protection with `keystore`'s keys: messages per second, and the private-key
/// operations it took.
fn reprotect(dir: &Path, keystore: &Path) -> CliResult<(f64, u64, u64)> {
    let mut c = Client::connect_local(dir, "bench-reprotect").map_err(|e| e.to_string())?;
    let ks = keystore.to_string_lossy().to_string();
    let (mut after, mut rewritten) = (None, 0u64);
    let t = Instant::now();
    loop {
        let r = c
            .reprotect(QUEUE, &ks, after, 512, false)
            .map_err(|e| e.to_string())?;
        rewritten += u64::from(r.rewritten);
        if r.failed > 0 {
            return Err(format!("bench reprotect: {} failed: {}", r.failed, r.detail).into());
        }
        match r.next {
            Some(n) => after = Some(n),
            None => return Ok((per_second(rewritten, t), rewritten, r.unwraps)),
        }
    }
}

pub(crate) fn run(a: &BenchArgs, dir: &Path) -> CliResult {
    let work = std::env::temp_dir().join(format!("sealmq-bench-reprotect-{}", std::process::id()));
    let r = run_in(a, dir, &work);
    let _ = std::fs::remove_dir_all(&work);
    r
}

fn run_in(a: &BenchArgs, dir: &Path, work: &Path) -> CliResult {
    let n = a.messages.unwrap_or(100_000);
    let size = a.size.unwrap_or(2048);
    let old = KeyKind::parse(a.key.split(',').next().unwrap_or("rsa2048"))?;
    let reuse = KeyReuse::parse(&a.key_reuse)?;
    let reuse_mqsc = reuse.to_string();
    keystores(dir, work, old)?;
    mqsc(
        dir,
        &format!(
            "DEFINE QLOCAL({QUEUE}) MAXDEPTH(999999999) MAXMSGL(104857600)\n\
             DEFINE QALIAS({QUEUE}.RAW) TARGET({QUEUE})"
        ),
    )?;
    set_policy(dir, OLD, &reuse_mqsc)?;
    let fill_rate = fill(dir, work, n, size, reuse)?;
    let (mut there, mut back) = (Vec::new(), Vec::new());
    for round in 0..a.rounds.max(1) {
        set_policy(dir, NEW, &reuse_mqsc)?;
        let t = reprotect(dir, &work.join("old"))?;
        set_policy(dir, OLD, &reuse_mqsc)?;
        let b = reprotect(dir, &work.join("new"))?;
        for (way, (rate, done, ops)) in [("there", t), ("back", b)] {
            if done != n {
                return Err(format!("bench reprotect: {way} rewrote {done} of {n}").into());
            }
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({"scenario": "reprotect", "round": round + 1, "way": way,
                        "old_key": old.name(), "messages": n, "size": size,
                        "key_reuse": a.key_reuse, "rate_per_s": rate, "private_key_ops": ops})
                );
            }
        }
        there.push(t.0);
        back.push(b.0);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|x, y| x.total_cmp(y));
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    println!(
        "reprotect: {n} persistent messages of {size} bytes, key reuse {}, {} round(s) (medians); filled at {fill_rate:.0} msg/s",
        a.key_reuse,
        a.rounds.max(1)
    );
    println!("{:<40} {:>10}", "way", "msg/s");
    println!(
        "{:<40} {:>10.0}",
        format!("{} -> ML-KEM-768", old.name()),
        median(&mut there)
    );
    println!(
        "{:<40} {:>10.0}",
        format!("ML-KEM-768 -> {}", old.name()),
        median(&mut back)
    );
    Ok(())
}
