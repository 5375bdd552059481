//! `sealmq bench SCENARIO`: the workloads of the reports against a real queue manager process,
//! with the rate and the CPU per transaction of the queue manager and of the applications
//! measured separately (SPEC §9), under each quality of protection asked for.
//!
//! - `local-rr`: request/reply, 2 KB non-persistent (or `--persistent`), N requester/server
//!   pairs, each pair its own request and reply queues (or `--queues N` pairs of queues shared,
//!   the report's single- and 21-queue tests); a transaction is one round trip (two messages).
//! - `put1`: 1 KB put1 + commit loop (persistent unless `--nonpersistent`); a transaction is
//!   one put1 and its commit.
//! - `reprotect`: a backlog re-protected for a new reader and back (`sealmq reprotect`).
//!
//! `--qop` and `--key` take comma-separated lists; every combination runs in the same
//! invocation, side by side, and the table shows each rate against the first row's.
//! Without `--qm`, a throw-away queue manager is created and started in a temporary home.
//!
//! The scenarios: one file each; what they share (the arguments, the queue manager under test,
//! CPU readings, protection set-up, medians) is `common`, a leaf.

mod amqp;
mod app;
mod chl;
mod common;
mod conns;
mod deep;
mod drain;
mod fanout;
mod ha;
mod ha_rr;
mod jms;
mod local;
mod net;
mod prims;
mod reprotect;
mod servers;

use crate::CliResult;
pub use common::BenchArgs;

pub fn run(a: BenchArgs) -> CliResult {
    let shown = crate::progress::spinner(&format!("bench {}", a.scenario));
    let r = scenario(a);
    shown.finish_and_clear();
    r
}

fn scenario(a: BenchArgs) -> CliResult {
    if matches!(a.scenario.as_str(), "mover-rr" | "stream" | "partner") {
        return chl::run(&a);
    }
    if a.scenario == "ha" && a.tls {
        return ha_rr::run(&a);
    }
    if a.scenario == "ha" {
        return ha::run(&a);
    }
    if a.scenario == "connections" {
        return conns::run(&a);
    }
    if a.scenario == "servers" {
        return servers::run(&a);
    }
    if matches!(
        a.scenario.as_str(),
        "deep" | "drain" | "amqp" | "fanout" | "jms" | "reprotect"
    ) {
        let qm = common::prepare(&a)?;
        let r = if a.scenario == "fanout" {
            fanout::run(&a, &qm.dir, &qm.pid)
        } else if a.scenario == "deep" {
            deep::run(&a, &qm.dir, &qm.pid)
        } else if a.scenario == "amqp" {
            amqp::run(&a, &qm.dir)
        } else if a.scenario == "jms" {
            jms::run(&a, &qm.dir)
        } else if a.scenario == "reprotect" {
            reprotect::run(&a, &qm.dir)
        } else {
            drain::run(&a, &qm.dir, &qm.pid)
        };
        drop(qm);
        return r;
    }
    local::run(&a)
}
