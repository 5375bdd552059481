//! IBM MQ Advanced Message Security and sealmq read each other's protected messages (issue
//! 45): Java programs on IBM's MQ classes with AMS's interceptor on (keystores made here with
//! keytool) and sealmq's own applications share one queue under each quality of protection.
//! IBM's interceptor learns the queue's policy — set with SET POLICY, marked ENVELOPE(IBM) —
//! from the queue manager, and protects in its own format (`PDMQ` + CMS), which sealmq reads;
//! what sealmq protects under the policy IBM's interceptor reads.

use super::*;
use common::ams::{PASS, ams, dn, ks, pki};
use common::wait_for;
use std::path::Path;

/// A queue manager with APP.Q, a raw view of it (APP.RAW, an alias without a policy), and
/// what IBM's interceptor needs (put on the protection error queue).
fn ams_qm(h: &Home, qm: &str) -> u16 {
    let port = setup(h, qm);
    h.mqsc(
        qm,
        "DEFINE QALIAS(APP.RAW) TARGET(APP.Q)\n\
         SET AUTHREC PROFILE('SYSTEM.PROTECTION.ERROR.QUEUE') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT)\n",
    );
    port
}

/// The stored messages of APP.Q, taken through the raw alias.
fn take_raw(h: &Home, qm: &str) -> Vec<(Md, Vec<u8>)> {
    let mut c = Client::connect_local(&h.qm_dir(qm), "raw").unwrap();
    let (q, _) = c.open("APP.RAW", OpenOptions::input()).unwrap();
    let mut all = Vec::new();
    while let Ok(g) = c.get(q, &GetOptions::default()) {
        all.push((g.md, g.payload));
    }
    all
}

/// Puts stored messages back as they are, through the raw alias (a put of what is no longer
/// a protected message is refused: the queue's policy requires one).
fn try_put_raw(h: &Home, qm: &str, msgs: &[(Md, Vec<u8>)]) -> Result<(), String> {
    let mut c = Client::connect_local(&h.qm_dir(qm), "raw").unwrap();
    let (q, _) = c.open("APP.RAW", OpenOptions::output()).unwrap();
    for (md, p) in msgs {
        c.put(q, &mut md.clone(), p, false)
            .map_err(|e| format!("{e:?}"))?;
    }
    Ok(())
}

fn put_raw(h: &Home, qm: &str, msgs: &[(Md, Vec<u8>)]) {
    try_put_raw(h, qm, msgs).unwrap();
}

/// The stored messages of APP.Q, browsed through the raw alias (left on the queue).
fn browse_raw(h: &Home, qm: &str) -> Vec<Vec<u8>> {
    let mut c = Client::connect_local(&h.qm_dir(qm), "raw").unwrap();
    let (q, _) = c.open("APP.RAW", OpenOptions::browse()).unwrap();
    let mut all = Vec::new();
    let mut o = GetOptions {
        browse: sealmq_mqi::Browse::First,
        ..GetOptions::default()
    };
    while let Ok(g) = c.get(q, &o) {
        all.push(g.payload);
        o.browse = sealmq_mqi::Browse::Next;
    }
    all
}

/// DER tag and length before `body`.
fn tlv(tag: u8, body: &[u8]) -> Vec<u8> {
    let n = body.len();
    let mut out = vec![tag];
    match n {
        0..128 => out.push(n as u8),
        128..256 => out.extend([0x81, n as u8]),
        _ => out.extend([0x82, (n >> 8) as u8, n as u8]),
    }
    out.extend_from_slice(body);
    out
}

/// `openssl` with `args`; its standard output.
fn openssl(args: &[&str]) -> Vec<u8> {
    let out = Command::new("openssl")
        .args(args)
        .env("AMS_PASS", PASS)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// OpenSSL opens IBM's envelopes: the CMS after the header is what `openssl cms` reads
/// (Privacy's decrypted content is the SignedData's contents, wrapped here to verify it).
fn openssl_opens(d: &Path, qop: &str, stored: &[u8], want: &str) {
    let f = |n: &str| d.join(n).display().to_string();
    let cms = &stored[104..];
    std::fs::write(d.join("m.der"), cms).unwrap();
    let signed = if qop == "INTEGRITY" {
        f("m.der")
    } else {
        openssl(&[
            "pkcs12",
            "-in",
            &f("bob.p12"),
            "-passin",
            "env:AMS_PASS",
            "-nocerts",
            "-nodes",
            "-out",
            &f("bob.key"),
        ]);
        let inner = openssl(&[
            "cms",
            "-decrypt",
            "-inform",
            "DER",
            "-in",
            &f("m.der"),
            "-recip",
            &f("bob.pem"),
            "-inkey",
            &f("bob.key"),
        ]);
        let oid = [
            0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02,
        ];
        let ci = tlv(0x30, &[&oid[..], &tlv(0xa0, &tlv(0x30, &inner))].concat());
        std::fs::write(d.join("sd.der"), ci).unwrap();
        f("sd.der")
    };
    let content = openssl(&[
        "cms",
        "-verify",
        "-inform",
        "DER",
        "-in",
        &signed,
        "-CAfile",
        &f("alice.pem"),
    ]);
    assert_eq!(String::from_utf8_lossy(&content), want, "{qop}");
}

fn be32(b: &[u8], at: usize) -> usize {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap()) as usize
}

/// sealmq's get of one message as `who`: the payload, or the failure's text.
fn sealmq_get(h: &Home, qm: &str, d: &Path, who: &str) -> Result<String, String> {
    let out = h.run(&["get", qm, "APP.Q", "--keystore", &ks(d, who)], None);
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() {
        Ok(text)
    } else {
        Err(String::from_utf8_lossy(&out.stderr).to_string())
    }
}

#[test]
fn ibm_ams_and_sealmq_exchange_protected_messages_under_each_quality_of_protection() {
    let h = Home::new();
    let port = ams_qm(&h, "QS");
    let d = pki(&h);
    let (alice, bob) = (dn("alice"), dn("bob"));
    for (qop, attrs) in [
        ("INTEGRITY", format!("SIGNALG(SHA256) SIGNER('{alice}')")),
        (
            "PRIVACY",
            format!("SIGNALG(SHA256) ENCALG(AES256) SIGNER('{alice}') RECIP('{bob}')"),
        ),
        (
            "CONFIDENTIALITY",
            format!("ENCALG(AES128) RECIP('{bob}') KEYREUSE(10)"),
        ),
    ] {
        let set = h.mqsc("QS", &format!("SET POLICY(APP.Q) {attrs} ENVELOPE(IBM)\n"));
        assert!(set.contains(&format!("set: {qop}")), "{set}");
        // IBM → sealmq: three messages in IBM's format, nothing in clear at rest.
        let secret = format!("secret-{qop}");
        assert_eq!(
            ams(&d, port, "alice", &["put", "APP.Q", &secret, "3"])[0]["sent"],
            3
        );
        let stored = take_raw(&h, "QS");
        assert_eq!(stored.len(), 3, "{qop}");
        for (md, p) in &stored {
            assert_eq!(&p[..4], b"PDMQ", "{qop}");
            assert_eq!(
                md.format.trim(),
                "",
                "{qop}: IBM's envelope travels as MQFMT_NONE"
            );
            let clear = p.windows(secret.len()).any(|w| w == secret.as_bytes());
            assert_eq!(
                clear,
                qop == "INTEGRITY",
                "{qop}: in clear at rest only when signed alone"
            );
        }
        if qop != "CONFIDENTIALITY" {
            openssl_opens(&d, qop, &stored[0].1, &format!("{secret} 0"));
        }
        if qop == "CONFIDENTIALITY" {
            // Key reuse: the three messages carry one key envelope.
            let key = |p: &[u8]| p[112..112 + be32(p, 28)].to_vec();
            assert!(
                stored.iter().all(|(_, p)| key(p) == key(&stored[0].1)),
                "one key reused"
            );
        }
        put_raw(&h, "QS", &stored);
        for i in 0..3 {
            assert_eq!(
                sealmq_get(&h, "QS", &d, "bob").unwrap(),
                format!("{secret} {i}"),
                "{qop}"
            );
        }
        // sealmq → IBM: what sealmq protects under the policy, IBM's interceptor reads.
        let text = format!("from-sealmq-{qop}");
        h.ok(&[
            "put",
            "QS",
            "APP.Q",
            "--keystore",
            &ks(&d, "alice"),
            "--message",
            &text,
            "--count",
            "2",
        ]);
        let stored = browse_raw(&h, "QS");
        assert_eq!(stored.len(), 2, "{qop}");
        assert!(
            stored.iter().all(|p| p.starts_with(b"PDMQ")),
            "{qop}: sealmq wrote IBM's format"
        );
        let clear = |p: &[u8]| p.windows(text.len()).any(|w| w == text.as_bytes());
        assert!(
            stored.iter().all(|p| clear(p) == (qop == "INTEGRITY")),
            "{qop}: in clear at rest only when signed alone"
        );
        if qop != "CONFIDENTIALITY" {
            openssl_opens(&d, qop, &stored[0], &text);
        }
        let got = ams(&d, port, "bob", &["get", "APP.Q", "2"]);
        for g in &got {
            assert_eq!(
                (g["data"].as_str(), g["format"].as_str()),
                (Some(&text[..]), Some("MQSTR")),
                "{qop}: {got:?}"
            );
        }
        // A signer outside the policy, both ways (the policy names its signers).
        if qop != "CONFIDENTIALITY" {
            ams(&d, port, "eve", &["put", "APP.Q", "forged", "1"]);
            let e = sealmq_get(&h, "QS", &d, "bob").unwrap_err();
            assert!(
                e.contains("2063") && e.contains("signer-list"),
                "{qop}: {e}"
            );
            h.ok(&[
                "put",
                "QS",
                "APP.Q",
                "--keystore",
                &ks(&d, "eve"),
                "--message",
                "forged",
            ]);
            assert_eq!(
                ams(&d, port, "bob", &["get", "APP.Q", "1"])[0]["reason"],
                2063,
                "{qop}"
            );
        }
        // A reader who is not a recipient, both ways.
        if qop != "INTEGRITY" {
            ams(&d, port, "alice", &["put", "APP.Q", "for-bob", "1"]);
            let e = sealmq_get(&h, "QS", &d, "eve").unwrap_err();
            assert!(e.contains("2063") && e.contains("recipient"), "{qop}: {e}");
            h.ok(&[
                "put",
                "QS",
                "APP.Q",
                "--keystore",
                &ks(&d, "alice"),
                "--message",
                "for-bob",
            ]);
            assert_eq!(
                ams(&d, port, "eve", &["get", "APP.Q", "1"])[0]["reason"],
                2063,
                "{qop}"
            );
        }
        assert_eq!(
            h.depth("QS", "APP.Q"),
            0,
            "{qop}: refused messages left the queue"
        );
    }
    assert!(h.depth("QS", "SYSTEM.PROTECTION.ERROR.QUEUE") >= 4);
    // A queue whose policy is ENVELOPE(SEALMQ) refuses IBM's format: it is set per policy.
    h.mqsc(
        "QS",
        &format!("SET POLICY(APP.Q) SIGNALG(SHA256) SIGNER('{alice}')\n"),
    );
    ams(&d, port, "alice", &["put", "APP.Q", "ibm", "1"]);
    let e = sealmq_get(&h, "QS", &d, "bob").unwrap_err();
    assert!(e.contains("ENVELOPE(IBM)"), "{e}");
}

#[test]
fn byte_flips_of_ibm_envelopes_are_refused() {
    let h = Home::new();
    let port = ams_qm(&h, "QT");
    let d = pki(&h);
    let (alice, bob) = (dn("alice"), dn("bob"));
    for attrs in [
        format!("SIGNALG(SHA256) SIGNER('{alice}')"),
        format!("SIGNALG(SHA256) ENCALG(AES256) SIGNER('{alice}') RECIP('{bob}')"),
    ] {
        h.mqsc("QT", &format!("SET POLICY(APP.Q) {attrs} ENVELOPE(IBM)\n"));
        ams(&d, port, "alice", &["put", "APP.Q", "pay 100 to bob", "1"]);
        let (md, good) = take_raw(&h, "QT").remove(0);
        // Every header byte but the original format (IBM's header is not authenticated and
        // that field is free text), and positions throughout the CMS object.
        let mut at: Vec<usize> = (0..104).filter(|i| !(32..40).contains(i)).collect();
        at.extend((104..good.len()).step_by(37));
        at.push(good.len() - 1);
        for &i in &at {
            let mut bad = good.clone();
            bad[i] ^= 0x5a;
            if let Err(e) = try_put_raw(&h, "QT", &[(md.clone(), bad)]) {
                assert!(i < 4 && e.contains("SecurityError"), "flip at {i}: {e}");
                continue;
            }
            // Refused, or (a flip in what nothing reads: a certificate copy) the message
            // unchanged: tampering never yields a different message.
            match sealmq_get(&h, "QT", &d, "bob") {
                Err(e) => assert!(e.contains("2063"), "flip at {i}: {e}"),
                Ok(m) => assert_eq!(m, "pay 100 to bob 0", "flip at {i} changed the message"),
            }
        }
        put_raw(&h, "QT", &[(md.clone(), good)]);
        assert_eq!(sealmq_get(&h, "QT", &d, "bob").unwrap(), "pay 100 to bob 0");
    }
}

/// SPLPROT at a protected island's edge under policies in IBM's format: what IBM's interceptor
/// protected leaves the island in clear (SPLPROT(REMOVE) on the sender, with the transmission
/// queue's policy), and what a partner sends in clear arrives protected in IBM's format
/// (SPLPROT(ASPOLICY) on the receiver, the queue manager signing), which IBM's interceptor reads.
#[test]
fn splprot_removes_and_applies_ibms_envelope_at_an_islands_edge() {
    let h = Home::new();
    let d = pki(&h);
    h.ok(&["create", "QI"]);
    h.ok(&["create", "QP"]);
    // The island's queue manager signs and reads as bob (an RSA identity, as IBM's format needs).
    let qm_ks = h.qm_dir("QI").join("keystore");
    common::ams::import(&h, &qm_ks, &d, "bob");
    for who in ["alice", "bob"] {
        h.trust(&qm_ks, &d.join(format!("{who}.pem")));
    }
    let (pi, pp) = (free_port(), free_port());
    h.start_tcp("QI", pi);
    h.start_tcp("QP", pp);
    let (alice, bob) = (dn("alice"), dn("bob"));
    let pol = |name: &str, signer: &str, recip: &str| {
        format!(
            "SET POLICY({name}) SIGNALG(SHA256) ENCALG(AES256) SIGNER('{signer}') RECIP('{recip}') ENVELOPE(IBM)\n"
        )
    };
    h.mqsc(
        "QI",
        &format!(
            "DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app')\n\
             SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT,INQ)\n\
             SET AUTHREC PROFILE('**') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET,BROWSE,INQ)\n\
             SET AUTHREC PROFILE('SYSTEM.PROTECTION.ERROR.QUEUE') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT)\n\
             DEFINE QLOCAL(QP) USAGE(XMITQ)\n\
             DEFINE CHANNEL(QI.QP) CHLTYPE(SDR) CONNAME('127.0.0.1({pp})') XMITQ(QP) SHORTTMR(0) SPLPROT(REMOVE)\n\
             DEFINE QREMOTE(TO.PARTNER) RNAME(IN) RQMNAME(QP) XMITQ(QP)\n\
             DEFINE CHANNEL(QP.QI) CHLTYPE(RCVR) SPLPROT(ASPOLICY)\n\
             SET CHLAUTH('QP.QI') TYPE(BLOCKUSER) USERLIST('nobody')\n\
             DEFINE QLOCAL(ISLAND.IN)\n\
             DEFINE QALIAS(ISLAND.RAW) TARGET(ISLAND.IN)\n\
             {}{}{}",
            pol("TO.PARTNER", &alice, &bob),
            pol("QP", &alice, &bob),
            pol("ISLAND.IN", &bob, &alice),
        ),
    );
    h.mqsc(
        "QP",
        &format!(
            "DEFINE QLOCAL(IN)\n\
             DEFINE CHANNEL(QI.QP) CHLTYPE(RCVR)\n\
             SET CHLAUTH('QI.QP') TYPE(BLOCKUSER) USERLIST('nobody')\n\
             DEFINE QLOCAL(QI) USAGE(XMITQ)\n\
             DEFINE CHANNEL(QP.QI) CHLTYPE(SDR) CONNAME('127.0.0.1({pi})') XMITQ(QI) SHORTTMR(0)\n\
             DEFINE QREMOTE(ISLAND.IN) RNAME(ISLAND.IN) RQMNAME(QI) XMITQ(QI)\n"
        ),
    );
    let long = Duration::from_secs(60);
    // Out: IBM's interceptor protects; the sender removes the protection at the edge.
    assert_eq!(
        ams(&d, pi, "alice", &["put", "TO.PARTNER", "invoice", "2"])[0]["sent"],
        2
    );
    h.mqsc("QI", "START CHANNEL(QI.QP)\n");
    wait_for(long, "two invoices at the partner", || {
        h.depth("QP", "IN") == 2
    });
    assert_eq!(h.ok(&["get", "QP", "IN"]), "invoice 0\n");
    // In: the partner sends in clear; the receiver protects in IBM's format for alice.
    h.ok(&[
        "put",
        "QP",
        "ISLAND.IN",
        "--message",
        "payment",
        "--persistent",
    ]);
    h.mqsc("QP", "START CHANNEL(QP.QI)\n");
    wait_for(long, "the payment in the island", || {
        h.depth("QI", "ISLAND.IN") == 1
    });
    let raw = h.ok(&["browse", "QI", "ISLAND.RAW", "--raw"]);
    assert!(raw.contains(" 50444d51"), "not IBM's format: {raw}");
    let got = ams(&d, pi, "alice", &["get", "ISLAND.IN", "1"]);
    assert_eq!(got[0]["data"], "payment", "{got:?}");
}

/// A policy names its recipients and signers: IBM's interceptor is told only the policies of
/// queues its principal may use (INQ, PUT, GET or BROWSE), as sealmq's own clients are.
#[test]
fn ibms_interceptor_learns_only_the_policies_of_queues_its_principal_may_use() {
    let h = Home::new();
    let port = ams_qm(&h, "QV");
    let d = pki(&h);
    let bob = dn("bob");
    h.mqsc(
        "QV",
        &format!(
            "DEFINE QLOCAL(SECRET.Q)
             SET POLICY(APP.Q) ENCALG(AES256) RECIP('{bob}') ENVELOPE(IBM)
             SET POLICY(SECRET.Q) ENCALG(AES256) RECIP('{bob}') ENVELOPE(IBM)
"
        ),
    );
    let index = ams(
        &d,
        port,
        "alice",
        &["index", "SYSTEM.PROTECTION.POLICY.QUEUE"],
    );
    let index = index[0]["index"].as_str().unwrap_or_default().to_string();
    assert!(index.contains("APP.Q"), "{index}");
    assert!(
        !index.contains("SECRET.Q"),
        "a queue 'app' may not use: {index}"
    );
    // Given authority, it is told.
    h.mqsc(
        "QV",
        "SET AUTHREC PROFILE('SECRET.Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(GET)\n",
    );
    let index = ams(
        &d,
        port,
        "alice",
        &["index", "SYSTEM.PROTECTION.POLICY.QUEUE"],
    );
    assert!(
        index[0]["index"]
            .as_str()
            .is_some_and(|t| t.contains("SECRET.Q")),
        "{index:?}"
    );
}
