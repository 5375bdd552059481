//! What the benchmarks' applications do with a client, with errors as the benchmarks report
//! them (a message, not a reason code to act on).

use sealmq_client::Client;
use sealmq_mqi::{GetOptions, Match, Md, OpenOptions, Persistence};
use std::time::Duration;

/// Opens a queue; its handle.
pub(crate) fn open_q(c: &mut Client, name: &str, opts: OpenOptions) -> Result<u32, String> {
    c.open(name, opts)
        .map(|(h, _)| h)
        .map_err(|e| e.to_string())
}

/// Puts `payload` with a default descriptor of the given persistence.
pub(crate) fn put_plain(
    c: &mut Client,
    hobj: u32,
    persistence: Persistence,
    payload: &[u8],
    syncpoint: bool,
) -> Result<(), String> {
    let mut md = Md {
        persistence,
        ..Md::default()
    };
    c.put(hobj, &mut md, payload, syncpoint)
        .map_err(|e| e.to_string())
}

/// Messages per second for `n` done since `t` (never a division by zero).
pub(crate) fn per_second(n: u64, t: std::time::Instant) -> f64 {
    n as f64 / t.elapsed().as_secs_f64().max(1e-9)
}

/// Waits for every thread; the first error (or panic) of any.
pub(crate) fn join_all(
    threads: Vec<std::thread::JoinHandle<Result<(), String>>>,
) -> Result<(), String> {
    let mut first = Ok(());
    for t in threads {
        let r = t
            .join()
            .unwrap_or_else(|_| Err("a bench thread panicked".to_string()));
        if first.is_ok() {
            first = r;
        }
    }
    first
}

/// Runs `sealmq ARGS` as `cmd` is set up (program, environment); its output is the error when
/// it fails.
pub(crate) fn run_sealmq(cmd: &mut std::process::Command, args: &[&str]) -> Result<(), String> {
    let out = cmd.args(args).output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "bench: sealmq {} failed: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// A responder: gets requests from queue `BENCH.REQ.{i}` and puts each one's payload back as
/// a reply (correlated by the request's message id) to `BENCH.REP.{i}` until `halt`; with
/// `gmo.syncpoint`, each get and its reply are one unit of work, committed.
pub(crate) fn respond(
    c: &mut Client,
    i: usize,
    gmo: &GetOptions,
    persistence: Persistence,
    halt: &std::sync::atomic::AtomicBool,
) -> Result<(), String> {
    let req = open_q(c, &format!("BENCH.REQ.{i}"), OpenOptions::input())?;
    let rep = open_q(c, &format!("BENCH.REP.{i}"), OpenOptions::output())?;
    while !halt.load(std::sync::atomic::Ordering::Relaxed) {
        match c.get(req, gmo) {
            Ok(m) => {
                let mut md = Md {
                    correl_id: m.md.msg_id,
                    msg_type: sealmq_mqi::MsgType::Reply,
                    persistence,
                    ..Md::default()
                };
                c.put(rep, &mut md, &m.payload, gmo.syncpoint)
                    .map_err(|e| e.to_string())?;
                if gmo.syncpoint {
                    c.commit().map_err(|e| e.to_string())?;
                }
            }
            Err(e) if e.reason == sealmq_types::ReasonCode::NoMsgAvailable => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(())
}

/// Puts the request `md` to `req` and waits up to `wait` for its reply on `rep` (correlated by
/// the request's message id), read with a buffer of `buffer` bytes (`None`: large enough).
pub(crate) fn request_reply(
    c: &mut Client,
    (req, rep): (u32, u32),
    mut md: Md,
    payload: &[u8],
    wait: Duration,
    buffer: Option<usize>,
) -> Result<(), String> {
    c.put(req, &mut md, payload, false)
        .map_err(|e| e.to_string())?;
    let gmo = GetOptions {
        wait: Some(wait),
        matching: Match {
            correl_id: Some(md.msg_id),
            ..Match::default()
        },
        buffer,
        ..Default::default()
    };
    c.get(rep, &gmo).map(|_| ()).map_err(|e| e.to_string())
}
