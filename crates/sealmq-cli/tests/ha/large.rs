//! Large units of work (issue 26): a batch of the log is replicated as Raft entries of at
//! most 256 KiB, 16 to an AppendEntries, because openraft gives an AppendEntries one
//! heartbeat interval (100 ms). One entry per batch stalled both the live replication of a
//! unit of work of tens of MiB and the catch-up of a replica behind by such units.

use super::{Group, QM};

#[test]
fn units_of_work_of_tens_of_mib_replicate_and_a_replica_catches_up_on_them() {
    let (g, a) = Group::with_queue();
    g.wait_in_sync();
    let r = (0..3).find(|i| *i != a).unwrap_or(0);
    g.instances[r].home.ok(&["stop", QM]);
    // 160 MiB in units of work of 8 MiB while a replica is stopped: far more than one
    // AppendEntries may carry in 100 ms.
    let put = g.instances[a].home.ok(&[
        "put",
        "--size",
        "1048576",
        "--count",
        "160",
        "--persistent",
        "--syncpoint",
        "8",
        QM,
        "HA.Q",
    ]);
    assert!(put.contains("put 160"), "{put}");
    g.start(r);
    g.wait_in_sync();
    // Its catching up is reported (on a terminal as a progress bar; in the error log once).
    let log = g.dir(r).join("errors").join("SEALMQ01.LOG");
    sealmq_testkit::wait_for(
        std::time::Duration::from_secs(30),
        "the replica's catching up in its error log",
        || {
            std::fs::read_to_string(&log)
                .is_ok_and(|l| l.contains("caught up with the group's log"))
        },
    );
    let a = g.wait_active();
    // The replica holds it all: made active, it serves every message.
    if a != r {
        g.switch(a, r);
    }
    let got = g.instances[r]
        .home
        .ok(&["get", QM, "HA.Q", "--all", "--verify", "--quiet"]);
    assert!(
        got.contains("got 160 ok 160 corrupt 0 duplicate 0"),
        "every large message there once: {got}"
    );
}
