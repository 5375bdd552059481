//! `sealmq bench deep --messages N --size BYTES [--persistent] [--dse] [--json]`: fills one
//! queue with N messages and reports the put rate as the queue deepens (each tenth), the
//! queue manager's peak RSS, the disk used, the restart time with the queue full, then the
//! get rate as it empties (each tenth).

use super::app::{open_q, per_second, put_plain};
use super::common::BenchArgs;
use crate::CliResult;
use sealmq_client::Client;
use sealmq_engine::Persistence;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use std::path::Path;
use std::time::{Duration, Instant};

const QUEUE: &str = "BENCH.DEEP";
/// Messages per unit of work (puts and gets).
const BATCH: u64 = 500;

/// Peak resident set of a process (VmHWM), bytes.
fn peak_rss(pid: &str) -> u64 {
    super::common::proc_status(pid, "VmHWM") * 1024
}

fn disk_used(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

/// Rates per tenth of the run (messages per second).
fn tenths(n: u64, mut step: impl FnMut(u64) -> CliResult) -> CliResult<Vec<f64>> {
    let tenth = (n / 10).max(1);
    let mut rates = Vec::new();
    let mut done = 0;
    while done < n {
        let k = tenth.min(n - done);
        let t = Instant::now();
        step(k)?;
        rates.push(per_second(k, t));
        done += k;
    }
    Ok(rates)
}

pub fn run(a: &BenchArgs, dir: &Path, pid: &str) -> CliResult {
    let n = a.messages.unwrap_or(100_000);
    let size = a.size.unwrap_or(2048);
    super::common::define_deep_queue(dir, QUEUE, size)?;
    let persistence = Persistence::of(a.persistent);
    let payload = vec![0x5a_u8; size];
    let mut c = Client::connect_local(dir, "bench-deep").map_err(|e| e.to_string())?;
    let h = open_q(&mut c, QUEUE, OpenOptions::output())?;
    let put_rates = tenths(n, |k| {
        for i in 0..k {
            put_plain(&mut c, h, persistence, &payload, true)?;
            if i % BATCH == BATCH - 1 {
                c.commit().map_err(|e| e.to_string())?;
            }
        }
        c.commit().map_err(|e| e.to_string())?;
        Ok(())
    })?;
    drop(c);
    let rss_fill = peak_rss(pid);
    let disk = disk_used(dir);
    // Restart with the queue full: stop, start, first connection.
    let mut c = Client::connect_local(dir, "bench-stop").map_err(|e| e.to_string())?;
    let _ = c.stop(false);
    drop(c);
    let deadline = Instant::now() + Duration::from_secs(600);
    while crate::home::running(dir) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let home = dir
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| "bench: no SEALMQ_HOME above the queue manager".to_string())?;
    let t = Instant::now();
    let out = std::process::Command::new(&exe)
        .args(["start", "BENCH.QM", "--background"])
        .env("SEALMQ_HOME", home)
        .env(
            "SEALMQ_BENCH_DSE_KEY",
            std::env::var("SEALMQ_BENCH_DSE_KEY").unwrap_or_default(),
        )
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "bench: restart failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let mut c = loop {
        match Client::connect_local(dir, "bench-deep") {
            Ok(c) => break c,
            Err(e) if t.elapsed() > Duration::from_secs(600) => return Err(e.to_string().into()),
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    let restart_s = t.elapsed().as_secs_f64();
    let pid2 = std::fs::read_to_string(dir.join("qm.pid"))
        .map_err(|e| e.to_string())?
        .trim()
        .to_string();
    let depth_after = c
        .mqsc(&format!("DISPLAY QLOCAL({QUEUE}) CURDEPTH\n"), false)
        .map(|(o, _)| o)
        .unwrap_or_default();
    let h = open_q(&mut c, QUEUE, OpenOptions::input())?;
    let gmo = GetOptions {
        syncpoint: true,
        buffer: Some(size.max(4096) * 2),
        ..Default::default()
    };
    let get_rates = tenths(n, |k| {
        for i in 0..k {
            c.get(h, &gmo).map_err(|e| e.to_string())?;
            if i % BATCH == BATCH - 1 {
                c.commit().map_err(|e| e.to_string())?;
            }
        }
        c.commit().map_err(|e| e.to_string())?;
        Ok(())
    })?;
    let rss_drain = peak_rss(&pid2);
    drop(c);
    let fmt = |v: &[f64]| {
        v.iter()
            .map(|r| format!("{r:.0}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    if a.json {
        println!(
            "{{\"scenario\":\"deep\",\"messages\":{n},\"size\":{size},\"persistent\":{},\"dse\":{},\
             \"put_rates\":[{}],\"get_rates\":[{}],\"peak_rss_fill_bytes\":{rss_fill},\
             \"peak_rss_drain_bytes\":{rss_drain},\"disk_bytes\":{disk},\"restart_seconds\":{restart_s:.3}}}",
            a.persistent,
            a.dse,
            fmt(&put_rates),
            fmt(&get_rates)
        );
        return Ok(());
    }
    println!(
        "deep: {n} messages of {size} bytes, {}{}",
        if a.persistent {
            "persistent"
        } else {
            "non-persistent"
        },
        if a.dse { ", encrypted at rest" } else { "" }
    );
    println!("{:>8} {:>12} {:>12}", "tenth", "put msg/s", "get msg/s");
    for i in 0..put_rates.len().max(get_rates.len()) {
        println!(
            "{:>8} {:>12.0} {:>12.0}",
            i + 1,
            put_rates.get(i).copied().unwrap_or(0.0),
            get_rates.get(i).copied().unwrap_or(0.0)
        );
    }
    println!(
        "peak RSS filling {:.1} MiB, after restart and draining {:.1} MiB",
        rss_fill as f64 / 1048576.0,
        rss_drain as f64 / 1048576.0
    );
    println!("disk used full {:.1} MiB", disk as f64 / 1048576.0);
    println!(
        "restart with the queue full {restart_s:.2} s ({})",
        depth_after
            .split_whitespace()
            .find(|w| w.starts_with("CURDEPTH"))
            .unwrap_or("")
    );
    Ok(())
}
