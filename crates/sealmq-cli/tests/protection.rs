//! Protection in the queue manager (issue 5), with real processes: alice puts under Privacy to
//! bob; bob reads; carol (not a recipient) gets 2063 and the message is on the error queue with
//! the failing check; tampering through an unprotected alias is caught; an unlisted signer is
//! refused; ENFORCE vs TOLERATE; a policy change applies at the next open; export round-trips.

use sealmq_client::Client;
use sealmq_engine::Md;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use std::path::{Path, PathBuf};

mod common;
use common::Home;

/// A home with queue manager QMP and a keystore per name (under `ks/`).
struct World {
    h: Home,
}

impl std::ops::Deref for World {
    type Target = Home;
    fn deref(&self) -> &Home {
        &self.h
    }
}

impl World {
    /// A home with a CA, an identity per name signed by it (alice trusting bob's
    /// certificate, so she can encrypt to him), and queue manager QMP started.
    fn started(names: &[&str]) -> World {
        let w = World { h: Home::new() };
        w.h.ca(&w.ks("ca"), "CN=Example CA,O=Example");
        for n in names {
            w.identity(n);
        }
        w.trust("alice", "bob");
        w.ok(&["create", "QMP"]);
        w.ok(&["start", "QMP", "--background"]);
        w
    }

    fn mqsc(&self, script: &str) -> String {
        self.h.mqsc("QMP", script)
    }

    fn depth(&self, q: &str) -> u64 {
        self.h.depth("QMP", q)
    }

    /// A local application using the keystore of `name` (client-side protection).
    fn client(&self, name: &str, appl: &str) -> Client {
        let mut c = Client::connect_local(&self.qm_dir(), appl).unwrap();
        c.set_keystore(&self.ks(name)).unwrap();
        c
    }

    /// A Confidentiality policy on `q` (AES-256 to bob), each key used `reuse` times.
    fn confidential_to_bob(&self, q: &str, reuse: &str) {
        self.ok(&[
            "policy",
            "set",
            "-m",
            "QMP",
            "-p",
            q,
            "-e",
            "AES256",
            "-r",
            "CN=bob,O=Example",
            "-c",
            reuse,
        ]);
    }

    fn ks(&self, name: &str) -> PathBuf {
        self.h.dir.path().join("ks").join(name)
    }

    fn qm_dir(&self) -> PathBuf {
        self.h.qm_dir("QMP")
    }

    fn identity(&self, name: &str) {
        let dn = format!("CN={name},O=Example");
        self.h.identity(&self.ks(name), &dn, &self.ks("ca"));
    }

    fn trust(&self, who: &str, cert_of: &str) {
        self.h
            .trust(&self.ks(who), &self.ks(cert_of).join("identity.pem"));
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn end_to_end_protection_scenarios() {
    let w = World::started(&["alice", "bob", "carol", "dave"]);
    w.trust("dave", "bob");
    w.mqsc("DEFINE QLOCAL(APP.Q)\nDEFINE QALIAS(APP.RAW) TARGET(APP.Q)\n");
    w.ok(&privacy_for_bob("APP.Q"));
    let shown = w.ok(&["policy", "show", "-m", "QMP", "-p", "APP.Q"]);
    assert!(
        shown.contains("QOP(PRIVACY)") && shown.contains("RECIP(CN=bob,O=Example)"),
        "{shown}"
    );

    // alice → bob under Privacy; the stored message is an envelope, not the plaintext.
    w.ok(&[
        "put",
        "QMP",
        "APP.Q",
        "--message",
        "top secret",
        "--keystore",
        s(&w.ks("alice")),
    ]);
    let raw = w.ok(&["browse", "QMP", "APP.RAW", "--raw"]);
    assert!(
        raw.contains("534d5145"),
        "the stored bytes start with the sealmq header: {raw}"
    );
    assert!(
        !raw.contains(
            &"top secret"
                .bytes()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        )
    );
    assert!(
        w.fails(&["get", "QMP", "APP.Q"])
            .contains("needs a keystore")
    );
    assert_eq!(
        w.ok(&["get", "QMP", "APP.Q", "--keystore", s(&w.ks("bob"))]),
        "top secret\n"
    );

    // carol is not a recipient: 2063, and the message moves to the error queue with the check.
    w.ok(&[
        "put",
        "QMP",
        "APP.Q",
        "--message",
        "for bob only",
        "--keystore",
        s(&w.ks("alice")),
    ]);
    let err = w.fails(&["get", "QMP", "APP.Q", "--keystore", s(&w.ks("carol"))]);
    assert!(err.contains("2063") && err.contains("recipient"), "{err}");
    let dl = w.ok(&["browse", "QMP", "SYSTEM.PROTECTION.ERROR.QUEUE"]);
    assert!(
        dl.contains("reason 2063 check 'recipient' queue APP.Q qmgr QMP"),
        "{dl}"
    );
    // The time is ISO 8601; an unsigned failure names no signer.
    assert!(
        dl.contains("time 2") && dl.contains("Z getter 'root'"),
        "{dl}"
    );
    assert!(
        w.fails(&["get", "QMP", "APP.Q", "--keystore", s(&w.ks("bob"))])
            .contains("2033"),
        "moved, not left on the queue"
    );

    // Tampering through the unprotected alias is caught.
    {
        w.ok(&[
            "put",
            "QMP",
            "APP.Q",
            "--message",
            "pay 10",
            "--keystore",
            s(&w.ks("alice")),
        ]);
        let mut c = Client::connect_local(&w.qm_dir(), "tamper").unwrap();
        c.set_raw(true);
        let (h, _) = c
            .open(
                "APP.RAW",
                OpenOptions {
                    input_shared: true,
                    output: true,
                    ..Default::default()
                },
            )
            .unwrap();
        let mut got = c.get(h, &GetOptions::default()).unwrap();
        let n = got.payload.len();
        got.payload[n - 40] ^= 0x01;
        c.put(h, &mut Md::default(), &got.payload, false).unwrap();
    }
    let err = w.fails(&["get", "QMP", "APP.Q", "--keystore", s(&w.ks("bob"))]);
    assert!(err.contains("2063"), "{err}");

    // A signer outside SIGNER: dave signs and encrypts for bob, but only alice is listed.
    w.ok(&[
        "put",
        "QMP",
        "APP.Q",
        "--message",
        "from dave",
        "--keystore",
        s(&w.ks("dave")),
    ]);
    let err = w.fails(&["get", "QMP", "APP.Q", "--keystore", s(&w.ks("bob"))]);
    assert!(
        err.contains("signer-list") && err.contains("CN=dave"),
        "{err}"
    );

    // ENFORCE refuses an unprotected message; TOLERATE returns it. While the policy is in
    // force the queue manager refuses plaintext put to the queue, even through an alias
    // without a policy (issue 42); these two arrive while it is not (messages put before a
    // policy existed, say).
    let policy = privacy_for_bob("APP.Q");
    {
        let mut c = Client::connect_local(&w.qm_dir(), "plain").unwrap();
        c.set_raw(true);
        let e = c
            .put1("APP.RAW", &mut Md::default(), b"plain zero", false)
            .unwrap_err();
        assert_eq!(e.reason, sealmq_types::ReasonCode::SecurityError, "{e}");
        w.ok(&["policy", "remove", "-m", "QMP", "-p", "APP.Q"]);
        c.put1("APP.RAW", &mut Md::default(), b"plain one", false)
            .unwrap();
        c.put1("APP.RAW", &mut Md::default(), b"plain two", false)
            .unwrap();
        w.ok(&policy);
    }
    assert!(
        w.fails(&["get", "QMP", "APP.Q", "--keystore", s(&w.ks("bob"))])
            .contains("'qop'")
    );
    w.ok(&[&policy[..], &["-t", "1"]].concat());
    assert_eq!(
        w.ok(&["get", "QMP", "APP.Q", "--keystore", s(&w.ks("bob"))]),
        "plain two\n"
    );
    let errors = w.ok(&["browse", "QMP", "SYSTEM.PROTECTION.ERROR.QUEUE"]);
    assert!(errors.contains("4 message(s)"), "{errors}");

    // A policy change applies at the next open, not to handles already open.
    {
        let mut c = w.client("alice", "opener");
        let (before, _) = c.open("APP.Q", OpenOptions::output()).unwrap();
        w.ok(&["policy", "remove", "-m", "QMP", "-p", "APP.Q"]);
        c.put(before, &mut Md::default(), b"old policy", false)
            .unwrap();
        let (after, _) = c.open("APP.Q", OpenOptions::output()).unwrap();
        c.put(after, &mut Md::default(), b"no policy", false)
            .unwrap();
    }
    let raw = w.ok(&["browse", "QMP", "APP.Q", "--raw"]);
    let lines: Vec<&str> = raw.lines().collect();
    assert!(
        lines[0].contains("534d5145"),
        "put through the earlier handle was protected: {raw}"
    );
    assert!(
        lines[1].contains(
            &"no policy"
                .bytes()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        ),
        "{raw}"
    );

    // policy export → remove all → replay → identical export.
    w.ok(&[
        "policy",
        "set",
        "-m",
        "QMP",
        "-p",
        "A.Q",
        "-e",
        "AES128",
        "-r",
        "CN=bob,O=Example",
        "-r",
        "CN=carol,O=Example",
        "-c",
        "32",
        "-t",
        "1",
    ]);
    w.ok(&[
        "policy",
        "set",
        "-m",
        "QMP",
        "-p",
        "B.Q",
        "-s",
        "SHA512",
        "-a",
        "CN=alice,O=Example",
    ]);
    let export = w.ok(&["policy", "export", "-m", "QMP"]);
    assert_eq!(export.lines().count(), 2, "{export}");
    w.ok(&["policy", "remove", "-m", "QMP", "-p", "A.Q"]);
    w.ok(&["policy", "remove", "-m", "QMP", "-p", "B.Q"]);
    assert_eq!(w.ok(&["policy", "export", "-m", "QMP"]), "");
    w.mqsc(&export);
    assert_eq!(w.ok(&["policy", "export", "-m", "QMP"]), export);
    w.ok(&["stop", "QMP"]);
}

/// Key reuse through the client library: one process's put and put1 share the reused key
/// (put1 keeps key reuse), and the next key is made while the queue manager handles a put, so
/// no put pays a wrap after the first. bob unwraps once per key.
#[test]
fn put_and_put1_share_reused_keys_made_ahead() {
    let w = World::started(&["alice", "bob"]);
    w.mqsc("DEFINE QLOCAL(CONF.Q)\n");
    w.confidential_to_bob("CONF.Q", "4");
    let mut c = w.client("alice", "reuser");
    let (h, _) = c.open("CONF.Q", OpenOptions::output()).unwrap();
    for i in 0..12u32 {
        let before = c.protection_counters().unwrap().key_wrap;
        let body = format!("message {i}");
        if i % 2 == 0 {
            c.put(h, &mut Md::default(), body.as_bytes(), false)
                .unwrap();
        } else {
            c.put1("CONF.Q", &mut Md::default(), body.as_bytes(), false)
                .unwrap();
        }
        let made = c.protection_counters().unwrap().key_wrap - before;
        if i == 0 {
            assert_eq!(made, 2, "the first key, and the next one made ahead");
        } else {
            // At most the next key is made, after the message went with a key made earlier.
            assert!(made <= 1, "message {i} made {made} keys");
        }
    }
    let p = c.protection_counters().unwrap();
    assert_eq!(p.key_wrap, 4, "three keys used, one made ahead: {p:?}");
    assert_eq!((p.put_reuse_misses, p.put_reuse_hits), (3, 9), "{p:?}");

    let mut g = w.client("bob", "bob");
    let (q, _) = g.open("CONF.Q", OpenOptions::input()).unwrap();
    for i in 0..12u32 {
        let m = g.get(q, &GetOptions::default()).unwrap();
        assert_eq!(m.payload, format!("message {i}").as_bytes());
    }
    assert_eq!(g.protection_counters().unwrap().key_unwrap, 3);
    drop((c, g));
    w.ok(&["stop", "QMP"]);
}

/// Issue 47: a put1 reads its queue's policy once (wire version 7: the policy comes with the
/// queue manager's policy epoch, and each put1 carries it), not before every message; when the
/// policies change the next put1 is refused with 2041 inside the library, which reads the new
/// policy and protects for it. Counted in the accounting record: 2 policy reads for 6 put1s.
#[test]
fn put1_reads_its_policy_once_and_again_when_policies_change() {
    let w = World::started(&["alice", "bob", "carol"]);
    w.trust("alice", "carol");
    w.mqsc("DEFINE QLOCAL(CONF.Q)\nALTER QMGR ACCTMQI(ON) ACCTINT(600)\n");
    w.confidential_to_bob("CONF.Q", "4");
    let mut c = w.client("alice", "put1er");
    for i in 0..5 {
        c.put1(
            "CONF.Q",
            &mut Md::default(),
            format!("to bob {i}").as_bytes(),
            false,
        )
        .unwrap();
    }
    // Now to carol instead: the cached policy is stale, and must not be used.
    w.ok(&[
        "policy",
        "set",
        "-m",
        "QMP",
        "-p",
        "CONF.Q",
        "-e",
        "AES256",
        "-r",
        "CN=carol,O=Example",
    ]);
    c.put1("CONF.Q", &mut Md::default(), b"to carol", false)
        .unwrap();
    drop(c);
    // The six envelopes as stored (a raw browse: nothing unprotected on the way).
    let mut raw = w.client("bob", "bob-raw");
    raw.set_raw(true);
    let (rq, _) = raw.open("CONF.Q", OpenOptions::browse()).unwrap();
    let mut envelopes = Vec::new();
    for i in 0..6 {
        let o = GetOptions {
            browse: if i == 0 {
                sealmq_engine::mqi::Browse::First
            } else {
                sealmq_engine::mqi::Browse::Next
            },
            ..GetOptions::default()
        };
        envelopes.push(raw.get(rq, &o).unwrap().payload);
    }
    drop(raw);
    // Who each envelope is for (sealmq message inspect: recipients, without keys).
    let recipients = |env: &[u8]| {
        let o = w.h.run_bytes(&["message", "inspect"], Some(env));
        assert!(o.status.success(), "{o:?}");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let serial = |who: &str| {
        let o = std::process::Command::new("openssl")
            .args(["x509", "-noout", "-serial", "-in"])
            .arg(w.ks(who).join("identity.pem"))
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout).trim().to_string();
        out.trim_start_matches("serial=").to_ascii_uppercase()
    };
    let (bob, carol) = (serial("bob"), serial("carol"));
    assert!(!bob.is_empty() && bob != carol);
    for (i, env) in envelopes.iter().enumerate().take(5) {
        let r = recipients(env);
        assert!(r.contains(&bob) && !r.contains(&carol), "message {i}: {r}");
    }
    let r = recipients(&envelopes[5]);
    assert!(r.contains(&carol) && !r.contains(&bob), "the last: {r}");
    // The accounting record of put1er: six put1s, two policy reads.
    let record = || {
        common::accounting_records(&w.qm_dir())
            .into_iter()
            .find(|r| r["appl"] == "put1er")
    };
    common::wait_for(
        std::time::Duration::from_secs(10),
        "put1er's record",
        || record().is_some(),
    );
    let r = record().unwrap();
    assert_eq!(
        r["calls"]["put1"]["count"], 7,
        "six put1s and one refused: {r}"
    );
    assert_eq!(r["calls"]["other"]["count"], 2, "two policy reads: {r}");
    w.ok(&["stop", "QMP"]);
}

/// Issue 27: asynchronous consume with client-side protection. bob consumes a
/// Confidentiality queue (key reuse 32) under syncpoint: every message in plaintext, in
/// order, one key unwrap per reused key. carol, not a recipient, consumes outside a unit of
/// work: each message gives her 2063 and goes to the protection error queue, none is lost.
#[test]
fn consumers_unprotect_with_key_reuse_and_hand_failures_to_the_error_queue() {
    use sealmq_client::{ConsumeMode, ConsumeOptions};
    use std::time::Duration;
    let w = World::started(&["alice", "bob", "carol"]);
    w.mqsc("DEFINE QLOCAL(CONF.Q) MAXDEPTH(10000)\n");
    w.confidential_to_bob("CONF.Q", "32");
    let mut a = w.client("alice", "alice");
    let (out, _) = a.open("CONF.Q", OpenOptions::output()).unwrap();
    let put = |a: &mut Client, n: std::ops::Range<u32>| {
        for i in n {
            a.put(
                out,
                &mut Md::default(),
                format!("conf {i:04}").as_bytes(),
                false,
            )
            .unwrap();
        }
    };
    put(&mut a, 0..320);
    let mut b = w.client("bob", "bob");
    let (q, _) = b.open("CONF.Q", OpenOptions::input()).unwrap();
    let opts = |mode| ConsumeOptions {
        mode,
        window: 100,
        batch: 20,
        batch_ms: 200,
        ..Default::default()
    };
    let mut consumer = b.consume(q, opts(ConsumeMode::Syncpoint)).unwrap();
    let mut got = Vec::new();
    while let Some(g) = consumer.next(Duration::from_millis(1000)).unwrap() {
        got.push(String::from_utf8_lossy(&g.payload).into_owned());
    }
    got.extend(
        consumer
            .stop()
            .unwrap()
            .iter()
            .map(|g| String::from_utf8_lossy(&g.payload).into_owned()),
    );
    let want: Vec<String> = (0..320).map(|i| format!("conf {i:04}")).collect();
    assert!(got == want, "{} of 320 in order", got.len());
    let unwraps = b.protection_counters().unwrap().key_unwrap;
    assert!(
        unwraps <= 11,
        "{unwraps} unwraps for 320 messages under 32-fold key reuse"
    );
    assert_eq!(w.depth("CONF.Q"), 0);
    // carol is no recipient.
    put(&mut a, 0..5);
    let mut c = w.client("carol", "carol");
    let (q, _) = c.open("CONF.Q", OpenOptions::input()).unwrap();
    let mut consumer = c.consume(q, opts(ConsumeMode::Auto)).unwrap();
    let mut refused = 0;
    loop {
        match consumer.next(Duration::from_millis(1000)) {
            Ok(Some(g)) => panic!("carol read {:?}", String::from_utf8_lossy(&g.payload)),
            Ok(None) => break,
            Err(e) => {
                assert_eq!(e.reason, sealmq_types::ReasonCode::SecurityError, "{e}");
                refused += 1;
            }
        }
    }
    assert!(consumer.stop().unwrap().is_empty());
    assert_eq!(refused, 5);
    assert_eq!(w.depth("CONF.Q"), 0);
    assert_eq!(
        w.depth("SYSTEM.PROTECTION.ERROR.QUEUE"),
        5,
        "every failure kept"
    );
    drop((a, b, c));
    w.ok(&["stop", "QMP"]);
}

/// A protection policy on a topic (issue 28, beyond IBM MQ): alice's publication is protected
/// once, in her process; every subscription's copy is that envelope on its queue; bob, a
/// recipient, reads it; carol, subscribed too but no recipient, gets 2063.
#[test]
fn a_protected_topic_keeps_every_subscribers_copy_an_envelope() {
    let w = World::started(&["alice", "bob", "carol"]);
    w.mqsc("DEFINE TOPIC(FRUIT) TOPICSTR('price/fruit')\n");
    w.ok(&privacy_for_bob("FRUIT"));
    let (alice, bob, carol) = (w.ks("alice"), w.ks("bob"), w.ks("carol"));
    for (name, ks) in [("BOB", &bob), ("CAROL", &carol)] {
        w.ok(&[
            "sub",
            "QMP",
            "price/fruit/#",
            "--name",
            name,
            "--durable",
            "--count",
            "0",
            "--keystore",
            s(ks),
        ]);
    }
    w.ok(&[
        "pub",
        "QMP",
        "price/fruit/apples",
        "--message",
        "apples 3",
        "--keystore",
        s(&alice),
    ]);
    // Each subscription's queue holds an envelope, never the plaintext.
    let mut raw = Client::connect_local(&w.qm_dir(), "raw").unwrap();
    raw.set_raw(true);
    for name in ["BOB", "CAROL"] {
        let out = w.mqsc(&format!("DISPLAY SUB({name}) DEST\n"));
        let dest = out
            .split("DEST(")
            .nth(1)
            .unwrap()
            .split(')')
            .next()
            .unwrap();
        let (h, _) = raw.open(dest, OpenOptions::browse()).unwrap();
        let g = raw
            .get(
                h,
                &GetOptions {
                    browse: sealmq_engine::mqi::Browse::First,
                    ..Default::default()
                },
            )
            .unwrap();
        assert!(
            sealmq_protect::header::has_magic(&g.payload),
            "{name}'s copy"
        );
        assert!(!String::from_utf8_lossy(&g.payload).contains("apples"));
        raw.close(h).unwrap();
    }
    let out = w.ok(&[
        "sub",
        "QMP",
        "price/fruit/#",
        "--name",
        "BOB",
        "--resume",
        "--keystore",
        s(&bob),
    ]);
    assert_eq!(out.trim(), "apples 3");
    let o = w.run(
        &[
            "sub",
            "QMP",
            "price/fruit/#",
            "--name",
            "CAROL",
            "--resume",
            "--keystore",
            s(&carol),
        ],
        None,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("2063"), "{err}");
    // Carol's copy moved, still protected, to the protection error queue; bob's is read.
    assert_eq!(w.depth("SYSTEM.PROTECTION.ERROR.QUEUE"), 1);
    // Nowhere on disk (log, queue files, checkpoints) is the plaintext.
    nowhere_on_disk(&w.qm_dir(), b"apples 3");
}

/// Issue 42: `sealmq pub` without a keystore published in clear on a topic with a Privacy
/// policy — the text in the recovery log and in every subscriber's queue — where the same put
/// to a protected queue was refused (the client skipped the policy look-up without a
/// keystore). The queue manager now refuses plaintext to a protected topic or queue from any
/// connection it does not protect for: publish, put1, and a put through an alias that has no
/// policy of its own.
#[test]
fn plaintext_to_a_protected_topic_or_queue_is_refused_by_the_queue_manager() {
    let w = World::started(&["alice", "bob"]);
    w.mqsc(
        "DEFINE TOPIC(PAY) TOPICSTR('pay')\nDEFINE QLOCAL(PAY.Q)\n\
         DEFINE QALIAS(PAY.ALIAS) TARGET(PAY.Q)\n",
    );
    for p in ["PAY", "PAY.Q"] {
        w.ok(&privacy_for_bob(p));
    }
    let bob = w.ks("bob");
    w.ok(&[
        "sub",
        "QMP",
        "pay/#",
        "--name",
        "AUDIT",
        "--durable",
        "--count",
        "0",
        "--keystore",
        s(&bob),
    ]);
    let err = w.fails(&["pub", "QMP", "pay/salaries", "--message", "salary 100"]);
    assert!(err.contains("2063") && err.contains("keystore"), "{err}");
    let mut c = Client::connect_local(&w.qm_dir(), "plain").unwrap();
    let e = c
        .put1("PAY.Q", &mut Md::default(), b"salary 200", false)
        .unwrap_err();
    assert_eq!(e.reason, sealmq_types::ReasonCode::SecurityError, "{e}");
    let (h, _) = c.open("PAY.ALIAS", OpenOptions::output()).unwrap();
    let e = c
        .put(h, &mut Md::default(), b"salary 300", false)
        .unwrap_err();
    assert_eq!(e.reason, sealmq_types::ReasonCode::SecurityError, "{e}");
    let e = c
        .publish("pay/bonus", &mut Md::default(), b"salary 400", false)
        .unwrap_err();
    assert_eq!(e.reason, sealmq_types::ReasonCode::SecurityError, "{e}");
    drop(c);
    assert_eq!(w.depth("PAY.Q"), 0);
    // A publication alice protects still goes, to the subscription as an envelope.
    let alice = w.ks("alice");
    w.ok(&[
        "pub",
        "QMP",
        "pay/salaries",
        "--message",
        "salary 500",
        "--keystore",
        s(&alice),
    ]);
    let out = w.ok(&[
        "sub",
        "QMP",
        "pay/#",
        "--name",
        "AUDIT",
        "--resume",
        "--keystore",
        s(&bob),
    ]);
    assert_eq!(out.trim(), "salary 500");
    // None of the refused text reached the disk.
    nowhere_on_disk(&w.qm_dir(), b"salary ");
}

/// `sealmq policy set` for a Privacy policy named `name`: alice signs (SHA256), only bob reads
/// (AES256).
fn privacy_for_bob(name: &str) -> [&str; 14] {
    [
        "policy",
        "set",
        "-m",
        "QMP",
        "-p",
        name,
        "-s",
        "SHA256",
        "-e",
        "AES256",
        "-r",
        "CN=bob,O=Example",
        "-a",
        "CN=alice,O=Example",
    ]
}

/// No file under `dir` (log, queue files, checkpoints) holds `text`.
fn nowhere_on_disk(dir: &Path, text: &[u8]) {
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                assert!(
                    !bytes.windows(text.len()).any(|x| x == text),
                    "plaintext in {}",
                    p.display()
                );
            }
        }
    }
}
