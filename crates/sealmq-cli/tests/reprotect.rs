//! `sealmq reprotect` (issue 48): a queue's backlog rewritten for its policy's current
//! recipients without decrypting a payload — a departed RSA reader removed and ML-KEM put in its
//! place in one command — through `kill -9` of the queue manager while it runs.

mod common;

use common::*;
use sealmq_client::Client;
use sealmq_mqi::{Browse, GetOptions, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A CA; the putter alice (P-256), the departing reader bob (RSA-2048), the new reader carol
/// (ML-KEM-768); queue manager QM with Q (its policy for bob, key reuse 32) and Q.RAW, an alias
/// without a policy to read the envelopes as stored. The keystores' directories.
fn world(h: &Home) -> (PathBuf, PathBuf, PathBuf) {
    let ks = |n: &str| h.dir.path().join(n);
    let s = |p: &Path| p.to_string_lossy().to_string();
    h.ca(&ks("ca"), "CN=CA,O=Example");
    h.identity(&ks("alice"), "CN=alice,O=Example", &ks("ca"));
    for (n, key) in [("bob", "rsa2048"), ("carol", "ml-kem-768")] {
        let dn = format!("CN={n},O=Example");
        h.ok(&[
            "keystore",
            "init",
            &s(&ks(n)),
            "--dn",
            &dn,
            "--key",
            key,
            "--ca",
            &s(&ks("ca")),
        ]);
    }
    h.ok(&["create", "QM"]);
    let qm_ks = h.qm_dir("QM").join("keystore");
    for who in [&qm_ks, &ks("alice")] {
        h.trust(who, &ks("ca").join("identity.pem"));
        h.trust(who, &ks("bob").join("identity.pem"));
        h.trust(who, &ks("carol").join("identity.pem"));
    }
    h.ok(&["start", "QM", "--background"]);
    h.mqsc(
        "QM",
        "DEFINE QLOCAL(Q) MAXDEPTH(200000)\nDEFINE QALIAS(Q.RAW) TARGET(Q)\n",
    );
    policy(h, "bob");
    (ks("alice"), ks("bob"), ks("carol"))
}

/// Q's policy: Confidentiality, AES-256, for `recip`, key reuse 32.
fn policy(h: &Home, recip: &str) {
    let r = format!("CN={recip},O=Example");
    h.ok(&[
        "policy", "set", "-m", "QM", "-p", "Q", "-e", "AES256", "-r", &r, "-c", "32",
    ]);
}

/// alice puts `n` persistent messages of `size` bytes to Q, protected by its policy, a commit
/// every 1,000.
fn fill(h: &Home, alice: &Path, n: usize, size: usize) {
    let (count, size) = (n.to_string(), size.to_string());
    h.ok(&[
        "put",
        "QM",
        "Q",
        "--size",
        &size,
        "--count",
        &count,
        "--persistent",
        "--syncpoint",
        "1000",
        "--keystore",
        &s(alice),
    ]);
}

/// Every message of Q as stored (its envelope), in delivery order, browsed through Q.RAW.
fn raw_messages(h: &Home) -> Vec<Vec<u8>> {
    let mut c = Client::connect_local(&h.qm_dir("QM"), "reprotect-test").unwrap();
    let (hobj, _) = c.open("Q.RAW", OpenOptions::browse()).unwrap();
    let mut out = Vec::new();
    let mut browse = Browse::First;
    loop {
        let gmo = GetOptions {
            browse,
            ..Default::default()
        };
        match c.get(hobj, &gmo) {
            Ok(g) => out.push(g.payload),
            Err(e) if e.reason.code() == 2033 => return out,
            Err(e) => panic!("browse: {e}"),
        }
        browse = Browse::Next;
    }
}

/// Every stored envelope of Q, in delivery order: (header core, the CMS bytes after the
/// RecipientInfos — the encrypted content, its tag and authenticated attributes — and the
/// RecipientInfos).
fn stored(h: &Home) -> Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> {
    raw_messages(h)
        .iter()
        .map(|m| {
            let cms = &m[32..];
            let ris = sealmq_protect::enveloped::parse(cms)
                .unwrap()
                .recipient_infos;
            let end = ris.as_ptr() as usize - cms.as_ptr() as usize + ris.len();
            (m[..28].to_vec(), cms[end..].to_vec(), ris.to_vec())
        })
        .collect()
}

fn s(p: &Path) -> String {
    p.to_string_lossy().to_string()
}

/// The departed reader's key cannot open what is now on Q; carol's opens all of it, each
/// message once and whole.
fn only_carol_reads(h: &Home, bob: &Path, carol: &Path, n: usize) {
    let bob_p = sealmq_protect::Protector::new(sealmq_protect::Keystore::load(bob).unwrap());
    let raw = raw_messages(h).remove(0);
    let mut pol = sealmq_protect::Policy::none("Q");
    pol.enc_alg = sealmq_protect::EncAlg::Aes256;
    pol.recipients = vec![sealmq_protect::Dn::parse("CN=carol,O=Example").unwrap()];
    let e = bob_p.unprotect(&pol, &raw).unwrap_err();
    assert_eq!(e.check(), Some(sealmq_protect::Check::Recipient), "{e}");
    let got = h.ok(&[
        "get",
        "QM",
        "Q",
        "--all",
        "--verify",
        "--keystore",
        &s(carol),
    ]);
    assert!(
        got.contains(&format!("got {n} ok {n} corrupt 0 duplicate 0")),
        "{got}"
    );
}

#[test]
fn a_departed_rsa_reader_gives_way_to_ml_kem_in_one_command() {
    let h = Home::new();
    let (alice, bob, carol) = world(&h);
    let n = 2000;
    fill(&h, &alice, n, 2048);
    let before = stored(&h);
    assert_eq!(before.len(), n);
    policy(&h, "carol");
    let dry = h.ok(&["reprotect", "QM", "Q", "--keystore", &s(&bob), "--dry-run"]);
    assert!(dry.contains(&format!("would rewrite {n} of {n}")), "{dry}");
    assert_eq!(stored(&h), before, "a dry run changes nothing");
    let out = h.ok(&["reprotect", "QM", "Q", "--keystore", &s(&bob)]);
    assert!(out.contains(&format!("rewrote {n} of {n}")), "{out}");
    // Once per reused key: 2000 messages under KEYREUSE(32) share 63 keys.
    assert!(out.contains("private-key operations 63"), "{out}");
    let after = stored(&h);
    assert_eq!(after.len(), n);
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        assert_eq!(a.0, b.0, "message {i}: header core");
        assert_eq!(
            a.1, b.1,
            "message {i}: encrypted content, in the same place"
        );
        assert_ne!(a.2, b.2, "message {i}: recipients");
    }
    // After a restart, run again: everything is current.
    h.ok(&["stop", "QM"]);
    h.ok(&["start", "QM", "--background"]);
    let again = h.ok(&["reprotect", "QM", "Q", "--keystore", &s(&bob)]);
    assert!(
        again.contains(&format!("rewrote 0 of {n}"))
            && again.contains(&format!("already current {n}")),
        "{again}"
    );
    only_carol_reads(&h, &bob, &carol, n);
    h.ok(&["stop", "QM"]);
}

#[test]
fn reprotect_refuses_without_the_old_key_and_for_others_than_the_queue_managers_user() {
    let h = Home::new();
    let (alice, _bob, carol) = world(&h);
    fill(&h, &alice, 3, 100);
    policy(&h, "carol");
    // carol's keystore opens nothing that is queued: every message is left as it was.
    let err = h.fails(&["reprotect", "QM", "Q", "--keystore", &s(&carol)]);
    assert!(
        err.contains("3 message(s) could not be re-protected") && err.contains("recipient"),
        "{err}"
    );
    let none = h.fails(&["reprotect", "QM", "NOPOLICY", "--keystore", &s(&carol)]);
    assert!(none.contains("no security policy"), "{none}");
    // A keystore that is not there: named, nothing changed.
    let missing = h.dir.path().join("nowhere");
    let gone = h.fails(&["reprotect", "QM", "Q", "--keystore", &s(&missing)]);
    assert!(gone.contains("nowhere"), "{gone}");
    // An application through a channel, even with every authority on the queue, is not the
    // queue manager's user: 2035, and the queue is as it was.
    let before = stored(&h);
    h.ok(&["stop", "QM"]);
    let port = free_port();
    h.start_tcp("QM", port);
    h.mqsc(
        "QM",
        "DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app')\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
         SET AUTHREC PROFILE('Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(ALL)\n",
    );
    let addr = format!("127.0.0.1:{port}");
    let mut app = Client::connect_tcp_channel(&addr, "APP.SVRCONN", "not-admin").unwrap();
    let e = app
        .reprotect("Q", &s(&carol), None, 512, false)
        .expect_err("refused");
    assert_eq!(e.reason.code(), 2035, "{e}");
    assert!(stored(&h) == before, "the queue changed");
    drop(app);
    h.ok(&["stop", "QM"]);
}

/// 100,000 messages re-protected under three `kill -9`s of the queue manager at random
/// points: afterwards each message is there once, in its place, with its encrypted content
/// unchanged, readable by the new recipient and not by the removed one.
#[test]
fn reprotect_of_100000_messages_survives_three_kill_9s() {
    let h = Home::new();
    let (alice, bob, carol) = world(&h);
    let n = 100_000;
    fill(&h, &alice, n, 2048);
    let before = stored(&h);
    assert_eq!(before.len(), n);
    policy(&h, "carol");
    let mut seed = std::process::id() as u64 ^ 0x9e37_79b9_7f4a_7c15;
    let mut interrupted = 0;
    for kill in 0..3 {
        let mut child = h
            .cmd(&["reprotect", "QM", "Q", "--keystore", &s(&bob)])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // A random point in the run (fault injection, not a wait for a result).
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_millis(200 + seed % 1500));
        if child.try_wait().unwrap().is_none() {
            interrupted += 1;
        }
        h.kill9("QM");
        let _ = child.wait();
        eprintln!("kill {kill}: {interrupted} interrupted so far");
        h.ok(&["start", "QM", "--background"]);
    }
    assert!(interrupted >= 1, "no kill landed while reprotect ran");
    let out = h.ok(&["reprotect", "QM", "Q", "--keystore", &s(&bob)]);
    eprintln!("{out}");
    let after = stored(&h);
    assert_eq!(after.len(), n, "each message once");
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        assert_eq!(a.0, b.0, "message {i}: header core");
        assert_eq!(
            a.1, b.1,
            "message {i}: encrypted content, in the same place"
        );
    }
    // What was rewritten stays rewritten through one more kill (checkpoints ran meanwhile).
    h.kill9("QM");
    h.ok(&["start", "QM", "--background"]);
    let last = h.ok(&["reprotect", "QM", "Q", "--keystore", &s(&bob)]);
    assert!(last.contains(&format!("already current {n}")), "{last}");
    only_carol_reads(&h, &bob, &carol, n);
    h.ok(&["stop", "QM"]);
}
