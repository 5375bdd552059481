//! The resource families IBM's exporter turns the queue manager's resource publications into
//! (`$SYS/MQ/INFO/QMGR/.../Monitor/CPU`, `.../DISK`), under the names IBM's dashboards and
//! Grafana's IBM MQ mixin query: platform CPU and memory, the queue manager's share of them,
//! and the file systems of its data, log and error log. Read from `/proc` and `statvfs` at
//! each scrape; a CPU percentage covers the time since the previous scrape (the first, since
//! the process or the machine started).

use super::out::Out;
use sealmq_engine::QueueManager;
use sealmq_types::sync::lock;
use std::sync::Mutex;
use std::time::Instant;

/// The CPU counters of the previous scrape: the machine's (user, system, all, in clock
/// ticks) and the process's (user, system ticks) with the time they were read.
struct Last {
    machine: (u64, u64, u64),
    process: (u64, u64),
    at: Instant,
}

static LAST: Mutex<Option<Last>> = Mutex::new(None);

/// Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux).
const TICKS: f64 = 100.0;

/// The machine's CPU times from /proc/stat's first line: (user+nice, system, all).
fn machine_cpu() -> Option<(u64, u64, u64)> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let line = s.lines().next()?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let (user, nice, system) = (*v.first()?, *v.get(1)?, *v.get(2)?);
    Some((user + nice, system, v.iter().sum()))
}

/// This process's user and system CPU ticks (/proc/self/stat fields 14 and 15).
fn process_cpu() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name may hold spaces: fields count from after its closing parenthesis.
    let rest = s.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some((f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?))
}

/// A value in kB from /proc/meminfo or /proc/self/status, in bytes.
fn kb_field(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

fn pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        (part / whole * 100.0).clamp(0.0, 100.0)
    } else {
        0.0
    }
}

pub(crate) fn render(o: &mut Out, qm: &QueueManager) {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    cpu(o, cpus);
    load(o, cpus);
    memory(o);
    disks(o, qm);
}

/// One gauge of the queue manager's platform.
fn gauge(o: &mut Out, name: &str, help: &str, v: f64) {
    o.family(name, "gauge", help);
    o.sample(name, &[("platform", super::ibm::PLATFORM)], v);
}

/// The machine's and the queue manager's CPU since the previous scrape.
fn cpu(o: &mut Out, cpus: f64) {
    // CPU since the previous scrape.
    let now = Instant::now();
    let (machine, process) = (machine_cpu(), process_cpu());
    if let (Some(m), Some(pr)) = (machine, process) {
        let mut last = lock(&LAST);
        let (dm, dp, secs) = match last.as_ref() {
            Some(l) => (
                (
                    m.0.saturating_sub(l.machine.0),
                    m.1.saturating_sub(l.machine.1),
                    m.2.saturating_sub(l.machine.2),
                ),
                (
                    pr.0.saturating_sub(l.process.0),
                    pr.1.saturating_sub(l.process.1),
                ),
                now.duration_since(l.at).as_secs_f64(),
            ),
            None => (m, pr, 0.0),
        };
        *last = Some(Last {
            machine: m,
            process: pr,
            at: now,
        });
        drop(last);
        gauge(
            o,
            "ibmmq_qmgr_user_cpu_time_percentage",
            "The machine's CPU busy in user state, percent.",
            pct(dm.0 as f64, dm.2 as f64),
        );
        gauge(
            o,
            "ibmmq_qmgr_system_cpu_time_percentage",
            "The machine's CPU busy in system state, percent.",
            pct(dm.1 as f64, dm.2 as f64),
        );
        // The queue manager's share: its CPU time over the elapsed time of all CPUs (the
        // first scrape: over the machine's counters since boot, as a rough figure).
        let whole = if secs > 0.0 {
            secs * TICKS * cpus
        } else {
            dm.2 as f64
        };
        gauge(
            o,
            "ibmmq_qmgr_user_cpu_time_estimate_for_queue_manager_percentage",
            "The queue manager's CPU in user state, percent of the machine.",
            pct(dp.0 as f64, whole),
        );
        gauge(
            o,
            "ibmmq_qmgr_system_cpu_time_estimate_for_queue_manager_percentage",
            "The queue manager's CPU in system state, percent of the machine.",
            pct(dp.1 as f64, whole),
        );
    }
}

/// The machine's load averages per CPU.
fn load(o: &mut Out, cpus: f64) {
    if let Some(load) = std::fs::read_to_string("/proc/loadavg").ok().map(|s| {
        s.split_whitespace()
            .take(3)
            .filter_map(|x| x.parse::<f64>().ok())
            .collect::<Vec<_>>()
    }) && load.len() == 3
    {
        for (name, v) in [
            ("ibmmq_qmgr_cpu_load_one_minute_average_percentage", load[0]),
            (
                "ibmmq_qmgr_cpu_load_five_minute_average_percentage",
                load[1],
            ),
            (
                "ibmmq_qmgr_cpu_load_fifteen_minute_average_percentage",
                load[2],
            ),
        ] {
            gauge(
                o,
                name,
                "The machine's load average per CPU, percent.",
                v / cpus * 100.0,
            );
        }
    }
}

/// The machine's memory and the queue manager's resident memory.
fn memory(o: &mut Out) {
    if let Ok(mem) = std::fs::read_to_string("/proc/meminfo")
        && let (Some(total), Some(avail)) =
            (kb_field(&mem, "MemTotal:"), kb_field(&mem, "MemAvailable:"))
    {
        gauge(
            o,
            "ibmmq_qmgr_ram_total_bytes",
            "The machine's memory, bytes.",
            total as f64,
        );
        gauge(
            o,
            "ibmmq_qmgr_ram_free_percentage",
            "The machine's memory available, percent.",
            pct(avail as f64, total as f64),
        );
    }
    if let Some(rss) = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| kb_field(&s, "VmRSS:"))
    {
        gauge(
            o,
            "ibmmq_qmgr_ram_total_estimate_for_queue_manager_bytes",
            "The queue manager's resident memory, bytes.",
            rss as f64,
        );
    }
}

/// The file systems of the queue manager's data, its log and its error log, and the log's
/// bytes on disk.
fn disks(o: &mut Out, qm: &QueueManager) {
    // The file systems of the queue manager's data, its log and its error log.
    let dir = qm.data_dir();
    for (what, path, help) in [
        (
            "queue_manager",
            dir.to_path_buf(),
            "the queue manager's data directory",
        ),
        ("log", dir.join("log"), "the recovery log"),
        ("mq_errors", dir.join("errors"), "the error log"),
    ] {
        let Some((free, size)) = sealmq_engine::host::free_space(&path) else {
            continue;
        };
        gauge(
            o,
            &format!("ibmmq_qmgr_{what}_file_system_free_space_percentage"),
            &format!("Free space on the file system of {help}, percent."),
            pct(free as f64, size as f64),
        );
        gauge(
            o,
            &format!("ibmmq_qmgr_{what}_file_system_in_use_bytes"),
            &format!("Space in use on the file system of {help}, bytes."),
            size.saturating_sub(free) as f64,
        );
    }
    let log_bytes: u64 = std::fs::read_dir(dir.join("log"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0);
    gauge(
        o,
        "ibmmq_qmgr_log_in_use_bytes",
        "Bytes of the recovery log's segments on disk.",
        log_bytes as f64,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_readings_parse() {
        assert_eq!(
            kb_field("MemTotal:  2048 kB\n", "MemTotal:"),
            Some(2048 * 1024)
        );
        assert_eq!(kb_field("x", "MemTotal:"), None);
        assert!(machine_cpu().is_some_and(|(u, s, all)| u + s <= all));
        assert!(process_cpu().is_some());
        assert_eq!(pct(1.0, 0.0), 0.0);
        assert_eq!(pct(3.0, 2.0), 100.0);
    }
}
