//! Post-quantum key exchange on channels (issue 48): two queue managers' TLS channel
//! negotiates X25519MLKEM768 and shows it in DISPLAY CHSTATUS at both ends; a queue manager
//! that requires it refuses a partner that offers classical groups only.

use super::*;

/// Polls `f` until it holds or `limit` passes: whether it held.
fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + limit;
    while std::time::Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    f()
}

/// Starts `qm` in the background with `SEALMQ_TLS_PQ=pq` and `extra` arguments.
fn start_with_pq(h: &Home, qm: &str, pq: &str, extra: &[&str]) {
    let mut args = vec!["start", qm, "--background"];
    args.extend_from_slice(extra);
    let out = h
        .cmd(&args)
        .env("SEALMQ_TLS_PQ", pq)
        .output()
        .expect("run sealmq start");
    assert!(out.status.success(), "start {qm}: {out:?}");
}

/// QMS and QMR trusting each other's identities, each started (TLS listener on QMR) with
/// `SEALMQ_TLS_PQ` as given; a TLS sender QMS.QMR and its receiver. QMR's port.
fn tls_pair(h: &Home, pq_s: &str, pq_r: &str) -> u16 {
    let (ps, pr) = (free_port(), free_port());
    h.ok(&["create", "QMS"]);
    h.ok(&["create", "QMR"]);
    trust_each_other(h, "QMS", "QMR");
    let (ls, lr) = (format!("127.0.0.1:{ps}"), format!("127.0.0.1:{pr}"));
    start_with_pq(h, "QMS", pq_s, &["--listen", &ls]);
    start_with_pq(h, "QMR", pq_r, &["--tls", "--listen", &lr]);
    h.mqsc("QMR", "DEFINE QLOCAL(DEST)\n");
    h.mqsc(
        "QMS",
        "DEFINE QREMOTE(DEST) RNAME(DEST) RQMNAME(QMR) XMITQ(QMR)\n",
    );
    link(h, "QMS", "QMR", pr, "SSLCIPH(ANY) SSLPEER('CN=QMR')");
    h.mqsc(
        "QMR",
        "ALTER CHANNEL(QMS.QMR) CHLTYPE(RCVR) SSLCIPH(ANY) SSLPEER('CN=QMS')\n",
    );
    h.mqsc("QMS", "START CHANNEL(QMS.QMR)\n");
    pr
}

#[test]
fn a_tls_channel_negotiates_x25519mlkem768_and_shows_it() {
    let h = Home::new();
    tls_pair(&h, "prefer", "prefer");
    h.ok(&["put", "QMS", "DEST", "--count", "5"]);
    wait_for(LONG, "5 messages over TLS", || h.depth("QMR", "DEST") == 5);
    let sent = chstatus(&h, "QMS", "QMS.QMR");
    assert_eq!(field(&sent, "SECPROT"), "TLSV13", "{sent}");
    assert_eq!(field(&sent, "SSLGROUP"), "X25519MLKEM768", "{sent}");
    let got = chstatus(&h, "QMR", "QMS.QMR");
    assert_eq!(field(&got, "SECPROT"), "TLSV13", "{got}");
    assert_eq!(field(&got, "SSLGROUP"), "X25519MLKEM768", "{got}");
    h.ok(&["stop", "QMS"]);
    h.ok(&["stop", "QMR"]);
}

#[test]
fn a_queue_manager_requiring_post_quantum_refuses_a_classical_partner() {
    let h = Home::new();
    // QMR requires X25519MLKEM768; QMS offers classical groups only.
    tls_pair(&h, "off", "require");
    h.ok(&["put", "QMS", "DEST", "--count", "3", "--persistent"]);
    wait_for(LONG, "the refusal", || {
        let st = chstatus(&h, "QMS", "QMS.QMR");
        st.contains("TLS handshake") && field(&st, "STATUS") != "RUNNING"
    });
    assert_eq!(h.depth("QMR", "DEST"), 0, "nothing crossed a refused link");
    assert_eq!(h.depth("QMS", "QMR"), 3, "nothing is lost");
    // Both offering it (QMS restarted preferring it): the held messages cross.
    h.ok(&["stop", "QMS"]);
    start_with_pq(&h, "QMS", "prefer", &[]);
    h.mqsc("QMS", "START CHANNEL(QMS.QMR)\n");
    let crossed = wait_until(LONG, || h.depth("QMR", "DEST") == 3);
    assert!(
        crossed,
        "the held messages: {}",
        chstatus(&h, "QMS", "QMS.QMR")
    );
    let st = chstatus(&h, "QMS", "QMS.QMR");
    assert_eq!(field(&st, "SSLGROUP"), "X25519MLKEM768", "{st}");
    h.ok(&["stop", "QMS"]);
    h.ok(&["stop", "QMR"]);
}

#[test]
fn an_unknown_post_quantum_setting_is_refused_at_start() {
    let h = Home::new();
    h.ok(&["create", "QMR"]);
    let port = free_port();
    let out = h
        .cmd(&[
            "start",
            "QMR",
            "--background",
            "--tls",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .env("SEALMQ_TLS_PQ", "maybe")
        .output()
        .expect("run sealmq start");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("SEALMQ_TLS_PQ='maybe'"), "{err}");
}

#[test]
fn a_client_connection_shows_the_group_it_negotiated() {
    let h = Home::new();
    h.ok(&["create", "QR"]);
    let desk = Home::new();
    let ops = desk.dir.path().join("ops");
    let addr = h.start_tls_for("QR", free_port(), &ops, "CN=ops,O=Example");
    h.mqsc(
        "QR",
        "DEFINE CHANNEL(ADMIN.SVRCONN) CHLTYPE(SVRCONN) SSLCIPH(ANY)\n\
         SET CHLAUTH('ADMIN.SVRCONN') TYPE(SSLPEERMAP) SSLPEER('CN=ops,O=Example') USERSRC(MAP) MCAUSER('opsuser')\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('opsuser') AUTHADD(CONNECT,DSP)\n",
    );
    // The client's own connection, as DISPLAY CONN shows it to that client.
    let shown = |pq: &str| {
        let ks = ops.to_string_lossy();
        let o = desk
            .cmd(&[
                "mqsc",
                "QR",
                "--conn",
                &addr,
                "--channel",
                "ADMIN.SVRCONN",
                "--tls",
                "--keystore",
                &ks,
            ])
            .env("SEALMQ_TLS_PQ", pq)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().map(|mut i| {
                    i.write_all(
                        b"DISPLAY CONN(*) WHERE(CHANNEL EQ ADMIN.SVRCONN) SECPROT SSLGROUP\n",
                    )
                });
                c.wait_with_output()
            })
            .expect("run sealmq mqsc");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let pq = shown("prefer");
    assert!(
        pq.contains("SECPROT(TLSV13)") && pq.contains("SSLGROUP(X25519MLKEM768)"),
        "{pq}"
    );
    let classical = shown("off");
    assert!(classical.contains("SSLGROUP(X25519)"), "{classical}");
    h.ok(&["stop", "QR"]);
}

/// Queue manager QR started with a TLS listener and `SEALMQ_TLS_PQ=pq`, and an application
/// identity (CN=app) it trusts: the home, the application's keystore and the address.
fn tls_qm(pq: &str) -> (Home, std::path::PathBuf, String) {
    let h = Home::new();
    h.ok(&["create", "QR"]);
    let app = h.dir.path().join("app");
    let addr = h.start_tls_with(
        "QR",
        free_port(),
        &app,
        "CN=app,O=Example",
        &[("SEALMQ_TLS_PQ", pq)],
    );
    (h, app, addr)
}

/// What a command printed, standard output then error.
fn said(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// OpenSSL 4.0's `openssl`, built from the openssl-src crate's sources by tools/openssl-pq.sh
/// (./test builds it first).
fn openssl_pq() -> std::path::PathBuf {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/openssl-pq/bin/openssl");
    assert!(
        p.exists(),
        "{} is missing: run tools/openssl-pq.sh (./test does)",
        p.display()
    );
    p
}

/// Interoperability with another implementation of the hybrid: OpenSSL 4.0's `s_client`
/// negotiates X25519MLKEM768 with a queue manager's TLS listener, and one offering only
/// classical groups is refused by a queue manager that requires post-quantum.
#[test]
fn openssl_negotiates_x25519mlkem768_with_a_queue_manager() {
    let (h, app, addr) = tls_qm("require");
    let ca = h.qm_dir("QR").join("keystore/identity.pem");
    let s_client = |groups: &str| {
        let o = std::process::Command::new(openssl_pq())
            .args([
                "s_client",
                "-brief",
                "-verify_return_error",
                "-connect",
                &addr,
            ])
            .args(["-groups", groups])
            .arg("-CAfile")
            .arg(&ca)
            .arg("-cert")
            .arg(app.join("identity.pem"))
            .arg("-key")
            .arg(app.join("identity.key"))
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run openssl s_client");
        (o.status.success(), said(&o))
    };
    let (_, pq) = s_client("X25519MLKEM768");
    assert!(
        pq.contains("CONNECTION ESTABLISHED")
            && pq.contains("Negotiated TLS1.3 group: X25519MLKEM768"),
        "{pq}"
    );
    let (ok, classical) = s_client("X25519:P-256");
    assert!(
        !ok && !classical.contains("CONNECTION ESTABLISHED"),
        "{classical}"
    );
    h.ok(&["stop", "QR"]);
}

#[test]
fn a_client_requiring_post_quantum_is_refused_by_a_classical_queue_manager() {
    let (h, app, addr) = tls_qm("off");
    let o = h
        .cmd(&[
            "mqsc",
            "QR",
            "--conn",
            &addr,
            "--tls",
            "--keystore",
            &app.to_string_lossy(),
        ])
        .env("SEALMQ_TLS_PQ", "require")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run sealmq mqsc");
    let text = said(&o);
    assert!(!o.status.success(), "{text}");
    // MQ's reason for a TLS handshake that fails (2393), the handshake's failure named.
    assert!(
        text.contains("2393")
            && text.contains("TLS handshake")
            && text.contains("HandshakeFailure"),
        "{text}"
    );
    h.ok(&["stop", "QR"]);
}

/// A queue manager with nothing classical: an ML-DSA-65 authority issues the queue manager an
/// ML-DSA-65 identity (its TLS certificate and its signature) with an added ML-KEM-768 key (what
/// it reads with), and an application an ML-DSA-65 identity. The application connects over TLS
/// (X25519MLKEM768, ML-DSA certificates both ways) through an intercepting channel; the queue
/// manager protects its puts for itself (ML-DSA signature, ML-KEM recipient) and opens them for
/// its gets.
#[test]
fn a_post_quantum_queue_manager_intercepts_for_its_applications() {
    let h = Home::new();
    let ks = |n: &str| h.dir.path().join(n).to_string_lossy().to_string();
    let (ca, app) = (ks("pqca"), ks("app"));
    h.ok(&[
        "keystore",
        "init",
        &ca,
        "--dn",
        "CN=PQ CA,O=Example",
        "--key",
        "ml-dsa-65",
        "--authority",
    ]);
    h.ok(&["create", "QP"]);
    let qm_ks = h.qm_dir("QP").join("keystore");
    std::fs::remove_dir_all(&qm_ks).unwrap();
    let qm_ks = qm_ks.to_string_lossy().to_string();
    let made = h.ok(&[
        "keystore",
        "init",
        &qm_ks,
        "--dn",
        "CN=QP",
        "--key",
        "ml-dsa-65",
        "--ca",
        &ca,
        "--kem",
        "ml-kem-768",
    ]);
    assert!(made.contains("key: CN=QP (ML-KEM-768"), "{made}");
    h.ok(&[
        "keystore",
        "init",
        &app,
        "--dn",
        "CN=app,O=Example",
        "--key",
        "ml-dsa-65",
        "--ca",
        &ca,
    ]);
    let listed = h.ok(&["keystore", "list", &qm_ks]);
    assert!(
        listed.contains("identity: CN=QP (ML-DSA-65") && listed.contains("key: CN=QP (ML-KEM-768"),
        "{listed}"
    );
    let addr = format!("127.0.0.1:{}", free_port());
    start_with_pq(&h, "QP", "require", &["--tls", "--listen", &addr]);
    h.mqsc(
        "QP",
        "DEFINE QLOCAL(W.Q)\nDEFINE QALIAS(W.RAW) TARGET(W.Q)\n\
         SET POLICY(W.Q) SIGNALG(SHA256) ENCALG(AES256) RECIP('CN=QP')\n\
         DEFINE CHANNEL(ICPT) CHLTYPE(SVRCONN) SSLCIPH(ANY) INTERCEPT(YES)\n\
         SET CHLAUTH('ICPT') TYPE(SSLPEERMAP) SSLPEER('CN=app,O=Example') USERSRC(MAP) MCAUSER('app')\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
         SET AUTHREC PROFILE('W.Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(GET,PUT,INQ)\n",
    );
    let via = |cmd: &str| -> Vec<String> {
        [
            cmd,
            "QP",
            "W.Q",
            "--conn",
            &addr,
            "--tls",
            "--keystore",
            &app,
            "--channel",
            "ICPT",
        ]
        .map(String::from)
        .to_vec()
    };
    let mut put = via("put");
    put.extend(["--message".into(), "quantum-safe order".into()]);
    h.ok(&put.iter().map(String::as_str).collect::<Vec<_>>());
    let raw = h.ok(&["browse", "QP", "W.RAW"]);
    assert!(
        raw.contains("SMQE") && !raw.contains("quantum-safe order"),
        "{raw}"
    );
    let get = via("get");
    let got = h.ok(&get.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(got, "quantum-safe order\n");
    h.ok(&["stop", "QP"]);
}
