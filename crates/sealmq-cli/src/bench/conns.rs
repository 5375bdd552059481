//! `sealmq bench connections` (issue 27): what idle client connections cost the queue manager
//! and whether they slow the busy ones. A throw-away queue manager on a loopback port; in
//! each round, `--pairs` requester/responder pairs (2 KB non-persistent request/reply over
//! TCP through a SVRCONN channel) run `--seconds` alone, then again with `--connections`
//! idle clients connected (each said Hello and holds its connection). Printed: the queue
//! manager's resident memory and threads per idle connection, and the request/reply rate with
//! them as a ratio of the rate without (medians of the rounds).

#![allow(unsafe_code)]

use super::app::{join_all, open_q, request_reply};
use super::common::{BenchArgs, proc_status as status};
use crate::CliResult;
use sealmq_client::Client;
use sealmq_engine::Md;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const QM: &str = "BENCH.CONNS";
pub(crate) const CHANNEL: &str = "BENCH.SVRCONN";

/// Lets this process hold the idle connections' sockets, and the queue manager it starts
/// (which inherits the limit) serve them: the hard limit is raised to `want` where this
/// process may (as root), else the soft limit to the hard one. Returns the limit in force.
fn raise_fd_limit(want: u64) -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write one rlimit struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 0;
        }
        if lim.rlim_max < want {
            let more = libc::rlimit {
                rlim_cur: want,
                rlim_max: want,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &more) == 0 {
                return want;
            }
        }
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        lim.rlim_cur
    }
}

/// Request/reply over `pairs` pairs for `secs`: round trips per second.
pub(crate) fn rr(addr: &str, pairs: usize, secs: f64) -> CliResult<f64> {
    // Requesters stop first, then responders: a request in flight gets its reply.
    let stop = Arc::new(AtomicBool::new(false));
    let stop_responders = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let (mut threads, mut responders) = (Vec::new(), Vec::new());
    for p in 0..pairs {
        let req_q = format!("RR.REQ.{p}");
        let rep_q = format!("RR.REP.{p}");
        let mut requester = Client::connect_tcp_channel(addr, CHANNEL, "bench-requester")
            .map_err(|e| e.to_string())?;
        let mut responder = Client::connect_tcp_channel(addr, CHANNEL, "bench-responder")
            .map_err(|e| e.to_string())?;
        let (stop_a, stop_b, count) = (stop_responders.clone(), stop.clone(), count.clone());
        let (rq, rp) = (req_q.clone(), rep_q.clone());
        responders.push(std::thread::spawn(move || -> Result<(), String> {
            let hin = open_q(&mut responder, &rq, OpenOptions::input())?;
            let hout = open_q(&mut responder, &rp, OpenOptions::output())?;
            let gmo = GetOptions {
                wait: Some(Duration::from_millis(200)),
                ..Default::default()
            };
            while !stop_a.load(Ordering::Relaxed) {
                let Ok(g) = responder.get(hin, &gmo) else {
                    continue;
                };
                let mut md = Md {
                    correl_id: g.md.msg_id,
                    ..Md::default()
                };
                responder
                    .put(hout, &mut md, &g.payload, false)
                    .map_err(|e| e.to_string())?;
            }
            Ok(())
        }));
        threads.push(std::thread::spawn(move || -> Result<(), String> {
            let hreq = open_q(&mut requester, &req_q, OpenOptions::output())?;
            let hrep = open_q(&mut requester, &rep_q, OpenOptions::input())?;
            let payload = vec![0x52u8; 2048];
            while !stop_b.load(Ordering::Relaxed) {
                request_reply(
                    &mut requester,
                    (hreq, hrep),
                    Md::default(),
                    &payload,
                    Duration::from_secs(10),
                    None,
                )?;
                count.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        }));
    }
    let rate = per_second_after_warmup(&count, secs);
    stop.store(true, Ordering::Relaxed);
    let requesters = join_all(threads);
    stop_responders.store(true, Ordering::Relaxed);
    join_all(responders)?;
    requesters?;
    Ok(rate)
}

/// What `count` gains per second over `secs`, after 300 ms in which the first operations warm
/// the connections up.
pub(crate) fn per_second_after_warmup(count: &AtomicU64, secs: f64) -> f64 {
    std::thread::sleep(Duration::from_millis(300));
    let (t, n0) = (Instant::now(), count.load(Ordering::Relaxed));
    std::thread::sleep(Duration::from_secs_f64(secs));
    let n = count.load(Ordering::Relaxed) - n0;
    n as f64 / t.elapsed().as_secs_f64()
}

/// An idle application connection as the bench holds it: a socket that said Hello on the
/// bench's channel and was answered (one descriptor in this process, where a `Client` keeps
/// three, so that 10,000 fit under the bench's own open-file limit).
fn idle_conn(addr: &str) -> Result<std::net::TcpStream, String> {
    use sealmq_wire::{Hello, Request, Response};
    let mut s = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
    let hello = Request::Hello(Hello {
        versions: sealmq_wire::VERSIONS.to_vec(),
        max_msg: 4 << 20,
        appl: "bench-idle".into(),
        channel: CHANNEL.into(),
        user: String::new(),
        password: Default::default(),
    });
    sealmq_wire::write_request(&mut s, 1, &hello).map_err(|e| e.to_string())?;
    match sealmq_wire::read_response(&mut s, 1 << 20) {
        Ok(Some((_, Response::HelloOk { .. }))) => Ok(s),
        Ok(Some((_, Response::Err { reason, detail }))) => Err(format!("{reason}: {detail}")),
        Ok(other) => Err(format!("unexpected answer to Hello: {other:?}")),
        Err(e) => Err(e.to_string()),
    }
}

pub(crate) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// The channel, authority and request/reply queues of `pairs` pairs, with MAXCHL `maxchl`.
pub(crate) fn setup_script(maxchl: usize, pairs: usize) -> String {
    let mut script = format!(
        "ALTER QMGR MAXCHL({maxchl})\n\
         DEFINE CHANNEL({CHANNEL}) CHLTYPE(SVRCONN) MCAUSER('bench') MAXINST(999999999) MAXINSTC(999999999)\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('bench') AUTHADD(CONNECT)\n\
         SET AUTHREC PROFILE('RR.**') OBJTYPE(QUEUE) PRINCIPAL('bench') AUTHADD(PUT,GET)\n"
    );
    for p in 0..pairs {
        script.push_str(&format!(
            "DEFINE QLOCAL(RR.REQ.{p})\nDEFINE QLOCAL(RR.REP.{p})\n"
        ));
    }
    script
}

pub fn run(a: &BenchArgs) -> CliResult {
    let idle_n = a.connections.max(1);
    let pairs = a.pairs.max(1);
    // The queue manager budgets a descriptor a connection (6 with SEALMQ_SERVER=threads) and
    // keeps a reserve (docs/wire.md).
    let fds = raise_fd_limit(((idle_n + 2 * pairs) as u64 * 8 + 8192).max(65_536));
    println!("open-file limit {fds} (the queue manager caps MAXCHL by it)");
    let secs = a.seconds.max(1) as f64;
    let mut net = super::net::Net::new("conns")?;
    net.create(QM, None)?;
    let port = super::net::free_port()?;
    net.start(QM, port, false)?;
    let script = setup_script(idle_n + 2 * pairs + 64, pairs);
    net.mqsc(QM, &script)?;
    let pid = std::fs::read_to_string(net.dir(QM).join("qm.pid"))
        .map_err(|e| e.to_string())?
        .trim()
        .to_string();
    let addr = format!("127.0.0.1:{port}");
    let (mut alone, mut busy, mut per_conn_kib, mut threads_per_conn) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut opened = 0;
    let fds_of = |pid: &str| std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    for round in 0..a.rounds.max(1) {
        // Idle connections first: in the first round the queue manager is fresh, so what they
        // take is not hidden in memory the busy pairs allocated and freed before.
        let (rss0, thr0, fds0) = (status(&pid, "VmRSS"), status(&pid, "Threads"), fds_of(&pid));
        let t = Instant::now();
        let mut idle = Vec::with_capacity(idle_n);
        for i in 0..idle_n {
            match idle_conn(&addr) {
                Ok(c) => idle.push(c),
                Err(e) => {
                    // Past what the descriptors allow: room is left for the busy pairs.
                    println!("idle connection {i} refused: {e}");
                    idle.truncate(idle.len().saturating_sub(2 * pairs + 8));
                    break;
                }
            }
        }
        opened = idle.len();
        let connect_s = t.elapsed().as_secs_f64();
        // Let the queue manager settle (threads parked, buffers in place).
        std::thread::sleep(Duration::from_millis(500));
        let (rss1, thr1) = (status(&pid, "VmRSS"), status(&pid, "Threads"));
        let n = opened.max(1) as f64;
        per_conn_kib.push(rss1.saturating_sub(rss0) as f64 / n);
        threads_per_conn.push(thr1.saturating_sub(thr0) as f64 / n);
        busy.push(rr(&addr, pairs, secs)?);
        drop(idle);
        // The idle connections end before the same pairs are measured alone.
        let deadline = Instant::now() + Duration::from_secs(60);
        while fds_of(&pid) > fds0 + 8 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        alone.push(rr(&addr, pairs, secs)?);
        println!(
            "round {}/{}: {opened} idle connections opened in {connect_s:.1} s; queue manager \
             {} MiB resident (+{} KiB), threads {thr0} -> {thr1}; request/reply {:.0}/s beside \
             them, {:.0}/s alone",
            round + 1,
            a.rounds.max(1),
            rss1 >> 10,
            rss1.saturating_sub(rss0),
            busy[round],
            alone[round]
        );
    }
    let (r0, r1) = (median(&mut alone), median(&mut busy));
    // The first round's (a fresh process) is the honest figure; later rounds reuse memory.
    let kib = per_conn_kib.iter().copied().fold(0.0, f64::max);
    let thr = median(&mut threads_per_conn);
    println!(
        "{opened} idle connections: {kib:.1} KiB resident (the most of any round) and {thr:.2} \
         threads each in the queue manager (targets: at most 32 KiB; threads independent of the connection count); \
         request/reply of {pairs} pair(s) beside them {r1:.0}/s against {r0:.0}/s alone, ratio \
         {:.2} (target at least 0.9)",
        r1 / r0.max(1e-9)
    );
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "idle_connections": opened,
                "kib_per_idle_connection": kib,
                "threads_per_idle_connection": thr,
                "rr_alone": r0,
                "rr_beside_idle": r1,
                "ratio": r1 / r0.max(1e-9),
            })
        );
    }
    net.stop(QM)?;
    Ok(())
}
