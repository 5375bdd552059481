//! The report's configurations (issue 6, SPEC §5.5.3), with real queue managers on loopback:
//! one data island with end-to-end protection; one protected island with an unprotected partner
//! (SPLPROT(REMOVE) on the island's sender, SPLPROT(ASPOLICY) on its receiver: the partner sees
//! plaintext, the island's queues hold only envelopes); two independently protected islands.

mod common;

use common::{Home, free_port, wait_for};
use std::path::{Path, PathBuf};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(60);
const MAGIC_HEX: &str = "534d5145";

fn ks(h: &Home, name: &str) -> PathBuf {
    h.dir.path().join("ks").join(name)
}

fn s(p: &std::path::Path) -> String {
    p.to_str().unwrap().to_string()
}

/// A CA, application identities, and queue managers (created, not started) with their own
/// identities in `<QM dir>/keystore`; each `trusts` pair (who, whose certificate) added.
fn world(h: &Home, apps: &[&str], qms: &[&str], trusts: &[(&str, &str)]) {
    world_keys(h, apps, qms, trusts, &[]);
}

/// [`world`], the identities named in `keys` holding keys of the type given (e.g. `ml-kem-768`:
/// a reader that signs nothing; `ml-dsa-65`: a post-quantum signer), the others P-256.
fn world_keys(
    h: &Home,
    apps: &[&str],
    qms: &[&str],
    trusts: &[(&str, &str)],
    keys: &[(&str, &str)],
) {
    let ca = s(&ks(h, "ca"));
    h.ca(Path::new(&ca), "CN=Island CA,O=Example");
    let dir_of = |n: &str| -> PathBuf {
        if qms.contains(&n) {
            h.qm_dir(n).join("keystore")
        } else {
            ks(h, n)
        }
    };
    for q in qms {
        h.ok(&["create", q]);
        // `create` gives the queue manager a self-signed identity; the island's CA issues one.
        std::fs::remove_dir_all(h.qm_dir(q).join("keystore")).unwrap();
    }
    for n in apps.iter().chain(qms.iter()) {
        let (dir, dn) = (s(&dir_of(n)), format!("CN={n},O=Example"));
        if let Some((_, key)) = keys.iter().find(|(k, _)| k == n) {
            h.ok(&[
                "keystore", "init", &dir, "--dn", &dn, "--ca", &ca, "--key", key,
            ]);
        } else {
            h.identity(Path::new(&dir), &dn, Path::new(&ca));
        }
    }
    for (who, whose) in trusts {
        let cert = dir_of(whose).join("identity.pem");
        h.trust(&dir_of(who), &cert);
    }
}

fn policy(h: &Home, qm: &str, name: &str, signer: &str, recip: &str) {
    h.ok(&[
        "policy",
        "set",
        "-m",
        qm,
        "-p",
        name,
        "-s",
        "SHA256",
        "-e",
        "AES256",
        "-r",
        &format!("CN={recip},O=Example"),
        "-a",
        &format!("CN={signer},O=Example"),
    ]);
}

fn sdr(h: &Home, from: &str, to: &str, port: u16, splprot: &str) {
    h.mqsc(
        from,
        &format!(
            "DEFINE QLOCAL({to}) USAGE(XMITQ)\n\
             DEFINE CHANNEL({from}.{to}) CHLTYPE(SDR) CONNAME('127.0.0.1({port})') XMITQ({to}) \
             SHORTTMR(0) SPLPROT({splprot})\n"
        ),
    );
}

fn rcvr(h: &Home, from: &str, to: &str, splprot: &str) {
    h.mqsc(
        to,
        &format!(
            "DEFINE CHANNEL({from}.{to}) CHLTYPE(RCVR) SPLPROT({splprot})\n\
             SET CHLAUTH('{from}.{to}') TYPE(BLOCKUSER) USERLIST('nobody')\n"
        ),
    );
}

fn put(h: &Home, qm: &str, q: &str, text: &str, who: Option<&str>) {
    let mut args = vec!["put", qm, q, "--message", text, "--persistent"];
    let k;
    if let Some(w) = who {
        k = s(&ks(h, w));
        args.extend(["--keystore", &k]);
    }
    h.ok(&args);
}

fn get(h: &Home, qm: &str, q: &str, who: Option<&str>) -> String {
    let mut args = vec!["get", qm, q];
    let k;
    if let Some(w) = who {
        k = s(&ks(h, w));
        args.extend(["--keystore", &k]);
    }
    h.ok(&args)
}

fn hex(t: &str) -> String {
    t.bytes().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn one_data_island_with_end_to_end_protection() {
    let h = Home::new();
    world(&h, &["alice", "bob"], &["QMA", "QMB"], &[("alice", "bob")]);
    let (pa, pb) = (free_port(), free_port());
    h.start_tcp("QMA", pa);
    h.start_tcp("QMB", pb);
    sdr(&h, "QMA", "QMB", pb, "PASSTHRU");
    rcvr(&h, "QMA", "QMB", "PASSTHRU");
    h.mqsc(
        "QMA",
        "DEFINE QREMOTE(ORDERS) RNAME(ORDERS) RQMNAME(QMB) XMITQ(QMB)\n",
    );
    h.mqsc(
        "QMB",
        "DEFINE QLOCAL(ORDERS)\nDEFINE QALIAS(ORDERS.RAW) TARGET(ORDERS)\n",
    );
    policy(&h, "QMA", "ORDERS", "alice", "bob");
    policy(&h, "QMB", "ORDERS", "alice", "bob");
    put(&h, "QMA", "ORDERS", "order 1", Some("alice"));
    // Still on QMA's transmission queue (channel not started): an envelope already.
    let xq = h.ok(&["browse", "QMA", "QMB"]);
    assert!(
        xq.contains("for queue ORDERS on QMB") && xq.contains("SMQE") && !xq.contains("order 1"),
        "{xq}"
    );
    h.mqsc("QMA", "START CHANNEL(QMA.QMB)\n");
    wait_for(LONG, "the message at QMB", || h.depth("QMB", "ORDERS") == 1);
    let raw = h.ok(&["browse", "QMB", "ORDERS.RAW", "--raw"]);
    assert!(
        raw.contains(MAGIC_HEX) && !raw.contains(&hex("order 1")),
        "{raw}"
    );
    assert_eq!(get(&h, "QMB", "ORDERS", Some("bob")), "order 1\n");
    h.ok(&["stop", "QMA"]);
    h.ok(&["stop", "QMB"]);
}

#[test]
fn a_protected_island_and_an_unprotected_partner() {
    let h = Home::new();
    // alice and carol work in the island (QMA); the partner (QMP) has no keystore at all.
    world(
        &h,
        &["alice", "carol"],
        &["QMA"],
        &[("alice", "QMA"), ("carol", "QMA"), ("QMA", "alice")],
    );
    h.ok(&["create", "QMP"]);
    let (pa, pp) = (free_port(), free_port());
    h.start_tcp("QMA", pa);
    h.start_tcp("QMP", pp);
    // Outbound: protected to the island's edge, plaintext beyond it.
    sdr(&h, "QMA", "QMP", pp, "REMOVE");
    rcvr(&h, "QMA", "QMP", "PASSTHRU");
    h.mqsc(
        "QMA",
        "DEFINE QREMOTE(TO.PARTNER) RNAME(IN) RQMNAME(QMP) XMITQ(QMP)\n\
         DEFINE QREMOTE(TO.PARTNER.C) RNAME(IN) RQMNAME(QMP) XMITQ(QMP)\n\
         DEFINE QALIAS(XMIT.RAW) TARGET(QMP)\n",
    );
    h.mqsc("QMP", "DEFINE QLOCAL(IN)\n");
    policy(&h, "QMA", "TO.PARTNER", "alice", "QMA");
    policy(&h, "QMA", "TO.PARTNER.C", "carol", "QMA");
    policy(&h, "QMA", "QMP", "alice", "QMA");
    put(&h, "QMA", "TO.PARTNER", "invoice 1", Some("alice"));
    // carol's message fails the transmission queue's SIGNER list at REMOVE: error queue.
    put(&h, "QMA", "TO.PARTNER.C", "from carol", Some("carol"));
    put(&h, "QMA", "TO.PARTNER", "invoice 2", Some("alice"));
    let xq = h.ok(&["browse", "QMA", "XMIT.RAW"]);
    assert!(xq.contains("SMQE") && !xq.contains("invoice 1"), "{xq}");
    h.mqsc("QMA", "START CHANNEL(QMA.QMP)\n");
    wait_for(LONG, "two invoices at the partner", || {
        h.depth("QMP", "IN") == 2
    });
    assert_eq!(get(&h, "QMP", "IN", None), "invoice 1\n");
    assert_eq!(get(&h, "QMP", "IN", None), "invoice 2\n");
    let errors = h.ok(&["browse", "QMA", "SYSTEM.PROTECTION.ERROR.QUEUE"]);
    assert!(
        errors.contains("reason 2063 check 'signer-list' queue QMP qmgr QMA"),
        "{errors}"
    );
    let st = h.mqsc("QMA", "DISPLAY CHSTATUS(QMA.QMP) STATUS\n");
    assert!(st.contains("STATUS(RUNNING)"), "the channel goes on: {st}");

    // Inbound: the partner sends plaintext; the island's receiver protects on arrival.
    sdr(&h, "QMP", "QMA", pa, "PASSTHRU");
    rcvr(&h, "QMP", "QMA", "ASPOLICY");
    h.mqsc(
        "QMP",
        "DEFINE QREMOTE(ISLAND.IN) RNAME(ISLAND.IN) RQMNAME(QMA) XMITQ(QMA)\n",
    );
    h.mqsc(
        "QMA",
        "DEFINE QLOCAL(ISLAND.IN)\nDEFINE QALIAS(ISLAND.RAW) TARGET(ISLAND.IN)\n",
    );
    policy(&h, "QMA", "ISLAND.IN", "QMA", "alice");
    h.mqsc("QMP", "START CHANNEL(QMP.QMA)\n");
    put(&h, "QMP", "ISLAND.IN", "payment 1", None);
    wait_for(LONG, "the payment in the island", || {
        h.depth("QMA", "ISLAND.IN") == 1
    });
    let raw = h.ok(&["browse", "QMA", "ISLAND.RAW", "--raw"]);
    assert!(
        raw.contains(MAGIC_HEX) && !raw.contains(&hex("payment 1")),
        "{raw}"
    );
    assert_eq!(get(&h, "QMA", "ISLAND.IN", Some("alice")), "payment 1\n");
    h.ok(&["stop", "QMA"]);
    h.ok(&["stop", "QMP"]);
}

#[test]
fn two_independently_protected_islands() {
    let h = Home::new();
    // Island A (alice, QMA) and island B (bob, QMB): each has its own keys and policies.
    world(
        &h,
        &["alice", "bob"],
        &["QMA", "QMB"],
        &[("alice", "QMA"), ("QMB", "bob")],
    );
    let (pa, pb) = (free_port(), free_port());
    h.start_tcp("QMA", pa);
    h.start_tcp("QMB", pb);
    sdr(&h, "QMA", "QMB", pb, "REMOVE");
    rcvr(&h, "QMA", "QMB", "ASPOLICY");
    h.mqsc(
        "QMA",
        "DEFINE QREMOTE(B.ORDERS) RNAME(ORDERS) RQMNAME(QMB) XMITQ(QMB)\n",
    );
    h.mqsc(
        "QMB",
        "DEFINE QLOCAL(ORDERS)\nDEFINE QALIAS(ORDERS.RAW) TARGET(ORDERS)\n",
    );
    policy(&h, "QMA", "B.ORDERS", "alice", "QMA");
    policy(&h, "QMA", "QMB", "alice", "QMA");
    policy(&h, "QMB", "ORDERS", "QMB", "bob");
    h.mqsc("QMA", "START CHANNEL(QMA.QMB)\n");
    for i in 0..5 {
        put(&h, "QMA", "B.ORDERS", &format!("order {i}"), Some("alice"));
    }
    wait_for(LONG, "five orders in island B", || {
        h.depth("QMB", "ORDERS") == 5
    });
    let raw = h.ok(&["browse", "QMB", "ORDERS.RAW", "--raw"]);
    assert!(
        raw.contains(MAGIC_HEX) && !raw.contains(&hex("order 0")),
        "{raw}"
    );
    for i in 0..5 {
        assert_eq!(
            get(&h, "QMB", "ORDERS", Some("bob")),
            format!("order {i}\n")
        );
    }
    // alice's key cannot read island B's messages, nor bob's island A's: they share nothing.
    put(&h, "QMA", "B.ORDERS", "order 5", Some("alice"));
    wait_for(LONG, "the last order", || h.depth("QMB", "ORDERS") == 1);
    let err = h.fails(&["get", "QMB", "ORDERS", "--keystore", &s(&ks(&h, "alice"))]);
    assert!(err.contains("2063"), "{err}");
    h.ok(&["stop", "QMA"]);
    h.ok(&["stop", "QMB"]);
}

/// Two islands whose readers hold ML-KEM-768 keys: island A's queue manager removes protection
/// at its edge (SPLPROT(REMOVE)) with its ML-KEM key, island B's receiver protects on arrival
/// (SPLPROT(ASPOLICY)) for an ML-KEM reader, signing with its ML-DSA-65 key; a reader without
/// the key reads nothing.
#[test]
fn two_islands_whose_readers_hold_ml_kem_keys() {
    let h = Home::new();
    let lone = s(&ks(&h, "lone"));
    let err = h.fails(&[
        "keystore",
        "init",
        &lone,
        "--dn",
        "CN=lone",
        "--key",
        "ml-kem-768",
    ]);
    assert!(
        err.contains("cannot sign its own certificate") && err.contains("--ca"),
        "{err}"
    );
    world_keys(
        &h,
        &["alice", "bob"],
        &["QMA", "QMB"],
        &[
            ("alice", "QMA"),
            ("QMA", "alice"),
            ("QMB", "bob"),
            ("bob", "QMB"),
        ],
        &[
            ("QMA", "ml-kem-768"),
            ("bob", "ml-kem-768"),
            ("QMB", "ml-dsa-65"),
        ],
    );
    let (pa, pb) = (free_port(), free_port());
    h.start_tcp("QMA", pa);
    h.start_tcp("QMB", pb);
    sdr(&h, "QMA", "QMB", pb, "REMOVE");
    rcvr(&h, "QMA", "QMB", "ASPOLICY");
    h.mqsc(
        "QMA",
        "DEFINE QREMOTE(B.ORDERS) RNAME(ORDERS) RQMNAME(QMB) XMITQ(QMB)\n\
         DEFINE QALIAS(XMIT.RAW) TARGET(QMB)\n",
    );
    h.mqsc(
        "QMB",
        "DEFINE QLOCAL(ORDERS)\nDEFINE QALIAS(ORDERS.RAW) TARGET(ORDERS)\n",
    );
    policy(&h, "QMA", "B.ORDERS", "alice", "QMA");
    policy(&h, "QMA", "QMB", "alice", "QMA");
    policy(&h, "QMB", "ORDERS", "QMB", "bob");
    for i in 0..3 {
        put(&h, "QMA", "B.ORDERS", &format!("order {i}"), Some("alice"));
    }
    // Island A holds envelopes that only its queue manager's ML-KEM key opens; the sender
    // opens them (its only key is that one) to pass plaintext to island B.
    let xq = h.ok(&["browse", "QMA", "XMIT.RAW"]);
    assert!(xq.contains("SMQE") && !xq.contains("order 0"), "{xq}");
    h.mqsc("QMA", "START CHANNEL(QMA.QMB)\n");
    wait_for(LONG, "three orders in island B", || {
        h.depth("QMB", "ORDERS") == 3
    });
    let raw = h.ok(&["browse", "QMB", "ORDERS.RAW", "--raw"]);
    assert!(
        raw.contains(MAGIC_HEX) && !raw.contains(&hex("order 0")),
        "{raw}"
    );
    // bob's only key is ML-KEM-768: reading is decapsulating.
    for i in 0..2 {
        assert_eq!(
            get(&h, "QMB", "ORDERS", Some("bob")),
            format!("order {i}\n")
        );
    }
    let err = h.fails(&["get", "QMB", "ORDERS", "--keystore", &s(&ks(&h, "alice"))]);
    assert!(err.contains("2063"), "{err}");
    let errors = h.ok(&["browse", "QMB", "SYSTEM.PROTECTION.ERROR.QUEUE"]);
    assert!(errors.contains("reason 2063"), "{errors}");
    h.ok(&["stop", "QMA"]);
    h.ok(&["stop", "QMB"]);
}
