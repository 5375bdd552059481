//! Issue 11: the holes hostile testing found, each closed, tried through real processes as an
//! attacker or an administrator would.

mod common;
use common::*;

fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            let state = s.rsplit_once(')').unwrap().1.split_whitespace().next();
            !matches!(state, Some("Z") | Some("X"))
        })
        .unwrap_or(false)
}

#[test]
fn stop_returns_once_the_process_has_exited() {
    let h = Home::new();
    h.ok(&["create", "QS"]);
    for _ in 0..3 {
        h.ok(&["start", "QS", "--background"]);
        let pid = h.pid("QS");
        assert!(alive(&pid));
        h.ok(&["stop", "QS"]);
        assert!(
            !alive(&pid),
            "sealmq stop returned while pid {pid} still runs"
        );
    }
}

#[test]
fn a_checkpoint_that_fails_at_stop_is_reported_and_leaves_no_temporary_file() {
    let h = Home::new();
    h.ok(&["create", "QC"]);
    h.ok(&["start", "QC", "--background"]);
    h.mqsc("QC", "DEFINE QLOCAL(KEEP) DEFPSIST(YES)\n");
    h.ok(&["put", "QC", "KEEP", "--message", "kept", "--persistent"]);
    // The checkpoint directory turns into a file: the final checkpoint cannot be written.
    let cp = h.qm_dir("QC").join("checkpoint");
    let aside = h.qm_dir("QC").join("checkpoint.aside");
    std::fs::rename(&cp, &aside).unwrap();
    std::fs::write(&cp, b"not a directory").unwrap();
    let err = h.fails(&["stop", "QC"]);
    assert!(err.contains("checkpoint"), "{err}");
    std::fs::remove_file(&cp).unwrap();
    std::fs::rename(&aside, &cp).unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(&cp)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // Nothing was lost: the next start replays the log.
    h.ok(&["start", "QC", "--background"]);
    assert_eq!(h.depth("QC", "KEEP"), 1);
    h.ok(&["stop", "QC"]);
}
