//! The queue manager as a user runs it: `sealmq create/start/stop/status/delete`, `mqsc`,
//! `put/get/browse`, reason codes end to end, and `kill -9` of the queue manager mid-run.
//!
//! Durability contract checked by the crash test: with `put --persistent --syncpoint 10
//! --log-commits`, every message up to the last `committed N` line survives a SIGKILL of the
//! queue manager, at most the 10 of the unit of work in flight may also be there, and no
//! message is corrupt or duplicated.

use serde_json::json;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::Home;

fn pid(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("qm.pid"))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn lifecycle_mqsc_and_sample_applications() {
    let h = Home::new();
    assert!(h.ok(&["create", "QM1"]).contains("created"));
    assert!(h.fails(&["create", "QM1"]).contains("2100"));
    assert!(h.ok(&["status"]).contains("QMNAME(QM1) STATUS(ENDED)"));
    let out = h.ok(&["start", "QM1", "--background"]);
    assert!(out.contains("started"), "{out}");
    assert!(h.ok(&["status", "QM1"]).contains("STATUS(RUNNING)"));
    assert!(h.fails(&["delete", "QM1"]).contains("2042"));
    // MQSC, text and JSON; a failing command makes the exit non-zero.
    let out = h.ok_in(
        &["mqsc", "QM1"],
        Some("DEFINE QLOCAL(APP.Q) MAXDEPTH(3) MAXMSGL(100)\nDISPLAY QLOCAL(APP.Q) MAXDEPTH\n"),
    );
    assert!(out.contains("MAXDEPTH(3)"), "{out}");
    let o = h.run(
        &["mqsc", "QM1", "--json"],
        Some("DISPLAY QLOCAL(APP.Q) ALL\nDEFINE QLOCAL(APP.Q)\n"),
    );
    assert!(!o.status.success());
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json[0]["objects"][0]["MAXMSGL"], "100");
    assert_eq!(json[1]["reason"], 2100);
    // Sample applications and reason codes end to end.
    assert!(
        h.ok(&["put", "QM1", "APP.Q", "--message", "hello"])
            .contains("put 1")
    );
    assert!(
        h.fails(&["put", "QM1", "NO.SUCH.Q", "--message", "x"])
            .contains("2085")
    );
    assert!(
        h.fails(&["put", "QM1", "APP.Q", "--size", "101"])
            .contains("2030")
    );
    h.ok(&["put", "QM1", "APP.Q", "--message", "two", "--count", "2"]);
    assert!(
        h.fails(&["put", "QM1", "APP.Q", "--message", "full"])
            .contains("2053")
    );
    let out = h.ok(&["browse", "QM1", "APP.Q"]);
    assert!(
        out.contains("1: hello") && out.contains("3 message(s)"),
        "{out}"
    );
    assert_eq!(h.ok(&["get", "QM1", "APP.Q"]), "hello\n");
    assert!(
        h.ok(&["get", "QM1", "APP.Q", "--all", "--quiet"])
            .contains("got 2")
    );
    assert!(h.fails(&["get", "QM1", "APP.Q"]).contains("2033"));
    // A remote queue: the message waits on the transmission queue behind a transmission
    // header, which browse shows.
    h.ok_in(
        &["mqsc", "QM1"],
        Some(
            "DEFINE QLOCAL(QM2) USAGE(XMITQ)\nDEFINE QREMOTE(TO.QM2) RNAME(ORDERS) RQMNAME(QM2)\n",
        ),
    );
    h.ok(&["put", "QM1", "TO.QM2", "--message", "far away"]);
    let out = h.ok(&["browse", "QM1", "QM2"]);
    assert!(
        out.contains("for queue ORDERS on QM2") && out.contains("far away"),
        "{out}"
    );
    // Over TCP too.
    h.ok(&["stop", "QM1"]);
    assert!(h.ok(&["status", "QM1"]).contains("ENDED"));
    let out = h.ok(&["start", "QM1", "--background", "--listen", "127.0.0.1:0"]);
    let addr = out
        .split("tcp:")
        .nth(1)
        .unwrap()
        .trim_end_matches(|c: char| c == '.' || c.is_whitespace())
        .to_string();
    // A new queue manager refuses SYSTEM.* channels (the default CHLAUTH rules): the client
    // gets 2035, the error log names the rule and how to allow the channel.
    let refused = h.fails(&["put", "QM1", "APP.Q", "--message", "x", "--conn", &addr]);
    assert!(
        refused.contains("2035") && !refused.contains("CHLAUTH('SYSTEM.*')"),
        "{refused}"
    );
    let log = std::fs::read_to_string(h.qm_dir("QM1").join("qm.log")).unwrap_or_default();
    assert!(log.contains("CHLAUTH('SYSTEM.*')"), "{log}");
    h.mqsc(
        "QM1",
        "SET CHLAUTH('SYSTEM.DEF.SVRCONN') TYPE(ADDRESSMAP) ADDRESS('127.0.0.1') USERSRC(CHANNEL)\n",
    );
    // TCP applications are principal 'tcp' and need authority records.
    assert!(
        h.fails(&["put", "QM1", "APP.Q", "--message", "x", "--conn", &addr])
            .contains("2035")
    );
    h.ok_in(
        &["mqsc", "QM1"],
        Some("SET AUTHREC PROFILE('QM1') OBJTYPE(QMGR) PRINCIPAL('tcp') AUTHADD(CONNECT)\nSET AUTHREC PROFILE('APP.*') OBJTYPE(QUEUE) PRINCIPAL('tcp') AUTHADD(PUT,GET)\n"),
    );
    h.ok(&[
        "put",
        "QM1",
        "APP.Q",
        "--message",
        "via tcp",
        "--conn",
        &addr,
    ]);
    assert_eq!(h.ok(&["get", "QM1", "APP.Q", "--conn", &addr]), "via tcp\n");
    h.ok(&["stop", "QM1"]);
    assert!(
        h.fails(&["put", "QM1", "APP.Q", "--message", "x"])
            .contains("2059")
    );
    h.ok(&["delete", "QM1"]);
    assert!(!h.qm_dir("QM1").exists());
}

#[test]
fn persistent_messages_survive_kill_dash_nine_of_the_queue_manager() {
    survive_kill_dash_nine(&Home::new(), &[]);
}

/// The same with the log encrypted at rest: a torn sealed tail is cut as a clear one is, and
/// every committed message comes back through its data key.
#[test]
fn encrypted_at_rest_messages_survive_kill_dash_nine() {
    let h = Home::new();
    let key = h.dir.path().join("master.key");
    h.ok(&["dse", "keygen", key.to_str().unwrap()]);
    survive_kill_dash_nine(&h, &["--dse", &format!("file:{}", key.display())]);
}

fn survive_kill_dash_nine(h: &Home, create: &[&str]) {
    let mut args = vec!["create", "QMK"];
    args.extend_from_slice(create);
    h.ok(&args);
    h.ok(&["start", "QMK", "--background"]);
    h.ok_in(
        &["mqsc", "QMK"],
        Some("DEFINE QLOCAL(DUR.Q) MAXDEPTH(1000000)\n"),
    );
    let dir = h.qm_dir("QMK");
    let mut expected_min = 0u64;
    let mut expected_max = 0u64;
    for round in 0..4u64 {
        let mut putter = h
            .cmd(&[
                "put",
                "QMK",
                "DUR.Q",
                "--size",
                "256",
                "--count",
                "100000",
                "--persistent",
                "--syncpoint",
                "10",
                "--log-commits",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = putter.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for l in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        // Kill the queue manager after a number of commits that differs per round.
        let want = 5 + round * 17;
        let mut last = 0u64;
        let deadline = Instant::now() + Duration::from_secs(60);
        while last < want * 10 {
            let l = rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .expect("the putter stopped committing");
            if let Some(n) = l.strip_prefix("committed ") {
                last = n.parse().unwrap();
            }
        }
        let status = Command::new("kill")
            .arg("-9")
            .arg(pid(&dir))
            .status()
            .unwrap();
        assert!(status.success());
        let _ = putter.wait();
        for l in rx.try_iter() {
            if let Some(n) = l.strip_prefix("committed ") {
                last = n.parse().unwrap();
            }
        }
        expected_min += last;
        expected_max += last + 10;
        // SIGKILL is asynchronous: wait until the dead process's lock is released.
        common::wait_for(
            Duration::from_secs(20),
            "the killed queue manager to release its lock",
            || !h.ok(&["status", "QMK"]).contains("RUNNING"),
        );
        h.ok(&["start", "QMK", "--background"]);
    }
    let out = h.ok(&["get", "QMK", "DUR.Q", "--all", "--verify"]);
    let got: u64 = out.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(out.contains("corrupt 0 duplicate 0"), "{out}");
    assert!(
        got >= expected_min && got <= expected_max,
        "got {got}, committed at least {expected_min}, at most {expected_max}"
    );
    h.ok(&["stop", "QMK"]);
}

#[test]
fn bench_scenarios_report_rate_and_cpu_split_as_json() {
    let h = Home::new();
    for scenario in ["local-rr", "put1"] {
        let out = h.ok(&["bench", scenario, "--seconds", "1", "--json"]);
        let v: serde_json::Value =
            serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
        assert_eq!(v["scenario"], scenario);
        assert!(v["rate_per_s"].as_f64().unwrap() > 0.0, "{out}");
        assert!(v["transactions"].as_u64().unwrap() > 0, "{out}");
        for k in [
            "qm_cpu_us_per_txn",
            "app_cpu_us_per_txn",
            "pairs",
            "message_bytes",
            "persistent",
            "seconds",
        ] {
            assert!(!v[k].is_null(), "{k} missing: {out}");
        }
    }
    // The report's single-queue test: pairs share one request and one reply queue, persistent,
    // with a get buffer; on a queue manager encrypting at rest.
    let out = h.ok(&[
        "bench",
        "local-rr",
        "--pairs",
        "3",
        "--queues",
        "1",
        "--persistent",
        "--buffer",
        "4096",
        "--dse",
        "--seconds",
        "1",
        "--json",
    ]);
    let v: serde_json::Value =
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(v["transactions"].as_u64().unwrap() > 0, "{out}");
    assert_eq!(
        (&v["queues"], &v["persistent"], &v["buffer"], &v["dse"]),
        (&json!(1), &json!(true), &json!(4096), &json!(true)),
        "{out}"
    );
}

/// Issue 47: a protected run prints what its asymmetric and content-encryption primitives
/// cost per transaction (measured in the same run) and how the applications' CPU beyond the
/// unprotected run's compares with it.
#[test]
fn bench_prints_the_primitives_cost_beside_a_protected_run() {
    let h = Home::new();
    let out = h.ok(&[
        "bench",
        "local-rr",
        "--qop",
        "none,integrity",
        "--key",
        "p256",
        "--seconds",
        "1",
        "--json",
    ]);
    let runs: Vec<serde_json::Value> = out
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {out}")))
        .collect();
    assert_eq!(runs.len(), 2, "{out}");
    assert!(runs[0]["primitives_us_per_txn"].is_null(), "{out}");
    assert!(
        runs[1]["primitives_us_per_txn"].as_f64().unwrap_or(0.0) > 0.0,
        "{out}"
    );
    assert!(
        runs[1]["protection_cpu_vs_primitives"].as_f64().is_some()
            && runs[1]["protection_user_cpu_vs_primitives"]
                .as_f64()
                .is_some(),
        "{out}"
    );
}

/// Issue 47: IBM's Native HA workload as `bench ha --tls` runs it — persistent request/reply
/// over TLS on three instances of a replicated queue manager and on a single one — answers
/// round trips on both, with each side's CPU per round trip.
#[test]
fn bench_ha_tls_measures_request_reply_on_a_replicated_and_a_single_queue_manager() {
    let h = Home::new();
    let out = h.ok(&[
        "bench",
        "ha",
        "--tls",
        "--pairs",
        "2",
        "--seconds",
        "1",
        "--rounds",
        "1",
        "--json",
    ]);
    let line = out.lines().last().unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(
        (&v["scenario"], &v["pairs"]),
        (&json!("ha-rr"), &json!(2)),
        "{out}"
    );
    for k in [
        "rr_single_per_s",
        "rr_replicated_per_s",
        "rr_single_cpu_us",
        "rr_replicated_cpu_us",
    ] {
        assert!(v[k].as_f64().unwrap_or(0.0) > 0.0, "{k}: {out}");
    }
}

/// Statistics (SPEC §8): interval files under the QM directory every STATINT seconds and at
/// stop, with each queue's puts, gets, browses, bytes and depth high-water mark; RESET QSTATS
/// as MQ's command (MSGSIN, MSGSOUT, HIQDEPTH since the last reset).
#[test]
fn statistics_intervals_and_reset_qstats() {
    let h = Home::new();
    h.ok(&["create", "QMS"]);
    h.ok(&["start", "QMS", "--background", "--metrics", "127.0.0.1:0"]);
    h.mqsc("QMS", "DEFINE QLOCAL(STATS.Q)\nALTER QMGR STATINT(1)\n");
    h.ok(&["put", "QMS", "STATS.Q", "--size", "100", "--count", "5"]);
    // Generated payloads are binary: format blank (MQFMT_NONE), not MQSTR.
    let shown = h.ok(&["browse", "QMS", "STATS.Q"]);
    assert!(
        shown.contains("Format('')") && !shown.contains("MQSTR"),
        "{shown}"
    );
    h.ok(&["get", "QMS", "STATS.Q", "--count", "3", "--quiet"]);
    let stats = h.qm_dir("QMS").join("stats");
    // The activity may straddle intervals: add up every file written so far.
    let totals = || -> (u64, u64, u64, u64, u64, u64) {
        let mut t = (0, 0, 0, 0, 0, 0);
        let Ok(dir) = std::fs::read_dir(&stats) else {
            return t;
        };
        for f in dir.flatten() {
            if f.path().extension().is_none_or(|x| x != "json") {
                continue;
            }
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(f.path()).unwrap()).unwrap();
            assert_eq!(v["version"], 1);
            assert_eq!(v["qmgr"], "QMS");
            assert!(v["interval_end_ms"].as_u64() >= v["interval_start_ms"].as_u64());
            let task = &v["chinit_tasks"][0];
            assert!(
                task["task"].is_string() && task["requests"].is_u64(),
                "{task}"
            );
            assert!(v["crypto"]["sign"]["count"].is_u64(), "{}", v["crypto"]);
            for q in v["queues"].as_array().unwrap() {
                if q["name"] == "STATS.Q" {
                    let n = |k: &str| q[k].as_u64().unwrap();
                    t.0 += n("puts");
                    t.1 += n("put_bytes");
                    t.2 += n("gets");
                    t.3 += n("get_bytes");
                    t.4 += n("browses");
                    t.5 = t.5.max(n("hi_depth"));
                }
            }
        }
        t
    };
    common::wait_for(
        Duration::from_secs(20),
        "an interval with every call",
        || totals() == (5, 500, 3, 300, 5, 5),
    );

    // The Prometheus endpoint: running totals, read at each scrape.
    let listeners = std::fs::read_to_string(h.qm_dir("QMS").join("listeners")).unwrap();
    let addr = listeners
        .lines()
        .find_map(|l| l.strip_prefix("metrics:"))
        .unwrap_or_else(|| panic!("no metrics listener in {listeners}"));
    let scrape = |path: &str| -> String {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.0\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    };
    let m = scrape("/metrics");
    assert!(m.starts_with("HTTP/1.") && m.contains(" 200 "), "{m}");
    for line in [
        "# TYPE sealmq_queue_puts_total counter",
        "sealmq_queue_puts_total{qmgr=\"QMS\",queue=\"STATS.Q\"} 5",
        "sealmq_queue_gets_total{qmgr=\"QMS\",queue=\"STATS.Q\"} 3",
        "sealmq_queue_put_bytes_total{qmgr=\"QMS\",queue=\"STATS.Q\"} 500",
        "sealmq_queue_depth{qmgr=\"QMS\",queue=\"STATS.Q\"} 2",
        "sealmq_chinit_task_requests_total{qmgr=\"QMS\",task=\"ADAPTER.1\"} 0",
    ] {
        assert!(m.lines().any(|l| l == line), "no '{line}' in\n{m}");
    }
    assert!(scrape("/other").contains(" 404 "));

    let out = h.mqsc("QMS", "RESET QSTATS(STATS.*)\n");
    for (k, v) in [("MSGSIN", "5"), ("MSGSOUT", "3"), ("HIQDEPTH", "5")] {
        assert_eq!(common::field(&out, k), v, "{out}");
    }
    // Since that reset: nothing in or out, and the high-water mark is the depth now.
    let out = h.mqsc("QMS", "RESET QSTATS(STATS.Q)\n");
    for (k, v) in [("MSGSIN", "0"), ("MSGSOUT", "0"), ("HIQDEPTH", "2")] {
        assert_eq!(common::field(&out, k), v, "{out}");
    }
    // RESET QSTATS has its own counts: neither the endpoint's totals nor the interval files
    // lose anything to it.
    assert!(
        scrape("/metrics")
            .lines()
            .any(|l| l == "sealmq_queue_puts_total{qmgr=\"QMS\",queue=\"STATS.Q\"} 5")
    );
    h.ok(&["get", "QMS", "STATS.Q", "--all", "--quiet"]);
    h.ok(&["stop", "QMS"]);
    assert_eq!(
        totals(),
        (5, 500, 5, 500, 5, 5),
        "the last interval is written at stop"
    );
    let o = h.run(&["mqsc", "QMS"], Some("RESET QSTATS(NO.SUCH.*)\n"));
    assert!(!o.status.success());
}

/// Accounting (SPEC §8): with ACCTMQI(ON), each connection made afterwards writes a JSON line
/// when it ends: its MQI calls with their CPU µs, and the bytes it put and got.
#[test]
fn accounting_records_each_connection_with_acctmqi_on() {
    let h = Home::new();
    h.ok(&["create", "QMA"]);
    h.ok(&["start", "QMA", "--background"]);
    h.mqsc("QMA", "DEFINE QLOCAL(ACCT.Q)\n");
    h.ok(&["put", "QMA", "ACCT.Q", "--size", "100", "--count", "2"]);
    let acct = h.qm_dir("QMA").join("accounting");
    assert!(!acct.exists(), "ACCTMQI is OFF by default");
    let out = h.mqsc(
        "QMA",
        "ALTER QMGR ACCTMQI(ON) ACCTINT(600)\nDISPLAY QMGR ACCTMQI ACCTINT\n",
    );
    assert_eq!(common::field(&out, "ACCTMQI"), "ON", "{out}");
    assert_eq!(common::field(&out, "ACCTINT"), "600", "{out}");
    h.ok(&["put", "QMA", "ACCT.Q", "--size", "200", "--count", "4"]);
    h.ok(&["get", "QMA", "ACCT.Q", "--count", "3", "--quiet"]);
    let records = || -> Vec<serde_json::Value> {
        let mut v = Vec::new();
        for f in std::fs::read_dir(&acct).into_iter().flatten().flatten() {
            for line in std::fs::read_to_string(f.path()).unwrap().lines() {
                v.push(serde_json::from_str(line).unwrap());
            }
        }
        v
    };
    common::wait_for(
        Duration::from_secs(10),
        "the two connections' records",
        || records().len() >= 2,
    );
    let all = records();
    let putter = all
        .iter()
        .find(|r| r["calls"]["put"]["count"] == 4)
        .unwrap_or_else(|| panic!("no record with 4 puts: {all:?}"));
    assert_eq!(putter["version"], 1);
    assert_eq!(putter["qmgr"], "QMA");
    assert_eq!(putter["final"], true);
    assert_eq!(putter["put_bytes"], 800, "{putter}");
    assert_eq!(putter["max_msg_bytes"], 200, "{putter}");
    assert!(putter["calls"]["put"]["cpu_us"].is_u64(), "{putter}");
    assert!(
        putter["calls"]["open"]["count"].as_u64().unwrap() >= 1,
        "{putter}"
    );
    let getter = all
        .iter()
        .find(|r| r["calls"]["get"]["count"].as_u64() >= Some(3))
        .unwrap_or_else(|| panic!("no record with 3 gets: {all:?}"));
    // Two messages of 100 bytes from before, then one of 200: first in, first out.
    assert_eq!(getter["get_bytes"], 400, "{getter}");
    assert!(getter["user"].is_string() && getter["appl"].is_string());
    h.ok(&["stop", "QMA"]);
}
