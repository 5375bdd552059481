//! A channel's connection cut by a relay between the queue managers: after the receiver
//! committed a batch (the sender left in doubt, settled at restart or by RESOLVE CHANNEL) and in
//! the middle of a batch (nothing lost or duplicated; RESET CHANNEL renumbers).

use super::*;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Where a [`Cutter`] cuts its first connection.
#[derive(Clone, Copy)]
enum Cut {
    /// After the first batch: the receiver's confirmation is swallowed (the sender is left in
    /// doubt about a batch the receiver committed).
    AfterCommit,
    /// After this many bytes from the sender: in the middle of a batch.
    MidBatch(usize),
}

/// A TCP relay that cuts its first connection (see [`Cut`]) and passes later ones through
/// while `open`.
struct Cutter {
    port: u16,
    open: Arc<AtomicBool>,
    conns: Arc<AtomicUsize>,
}

impl Cutter {
    fn new(target: u16) -> Cutter {
        Cutter::cutting(target, Cut::AfterCommit)
    }

    fn cutting(target: u16, cut: Cut) -> Cutter {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let open = Arc::new(AtomicBool::new(true));
        let conns = Arc::new(AtomicUsize::new(0));
        let (o, c) = (open.clone(), conns.clone());
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(client) = s else { continue };
                let n = c.fetch_add(1, Ordering::SeqCst);
                if n > 0 && !o.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                relay(client, server, (n == 0).then_some(cut));
            }
        });
        Cutter { port, open, conns }
    }
}

fn relay(client: TcpStream, server: TcpStream, cut: Option<Cut>) {
    let (mut c2, mut s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    let (mut c3, mut s3) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        let mut sent = 0usize;
        while let Ok(n) = c2.read(&mut buf) {
            if n == 0 {
                break;
            }
            if let Some(Cut::MidBatch(limit)) = cut
                && sent + n > limit
            {
                // Forward part of this read, then cut both ways mid-batch.
                let _ = s2.write_all(&buf[..limit - sent]);
                let _ = c2.shutdown(Shutdown::Both);
                break;
            }
            sent += n;
            if s2.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = s2.shutdown(Shutdown::Both);
    });
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        let mut reads = 0;
        while let Ok(n) = s3.read(&mut buf) {
            if n == 0 {
                break;
            }
            reads += 1;
            if matches!(cut, Some(Cut::AfterCommit)) && reads == 2 {
                // The first batch's BatchOk: drop it and cut.
                let _ = s3.shutdown(Shutdown::Both);
                let _ = c3.shutdown(Shutdown::Both);
                break;
            }
            if c3.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = c3.shutdown(Shutdown::Both);
    });
}

#[test]
fn a_cut_connection_leaves_a_batch_in_doubt_settled_at_restart_or_by_resolve() {
    let h = Home::new();
    let ports = qms(&h, &["QMS", "QMR"]);
    h.mqsc("QMR", "DEFINE QLOCAL(DEST) MAXDEPTH(100000)\n");
    h.mqsc(
        "QMS",
        "DEFINE QREMOTE(DEST) RNAME(DEST) RQMNAME(QMR) XMITQ(QMR)\n",
    );

    // 1. Settled automatically: the sender reconnects and learns the batch was committed.
    let cut = Cutter::new(ports[1]);
    link(&h, "QMS", "QMR", cut.port, "BATCHSZ(50)");
    h.ok(&[
        "put",
        "QMS",
        "DEST",
        "--size",
        "100",
        "--count",
        "50",
        "--persistent",
        "--syncpoint",
        "50",
    ]);
    h.mqsc("QMS", "START CHANNEL(QMS.QMR)\n");
    wait_for(LONG, "a second connection", || {
        cut.conns.load(Ordering::SeqCst) >= 2
    });
    wait_for(LONG, "the in-doubt batch to be settled", || {
        h.depth("QMS", "QMR") == 0
    });
    assert_eq!(h.depth("QMR", "DEST"), 50);
    verify_all(&h, "QMR", "DEST", 50);
    h.mqsc("QMS", "STOP CHANNEL(QMS.QMR)\n");

    // 2. Settled by hand: the partner stays unreachable after the cut.
    let cut = Cutter::new(ports[1]);
    cut.open.store(false, Ordering::SeqCst);
    h.mqsc(
        "QMS",
        &format!(
            "ALTER CHANNEL(QMS.QMR) CONNAME('127.0.0.1({})')\n",
            cut.port
        ),
    );
    h.ok(&[
        "put",
        "QMS",
        "DEST",
        "--size",
        "100",
        "--count",
        "50",
        "--persistent",
        "--syncpoint",
        "50",
    ]);
    h.mqsc("QMS", "START CHANNEL(QMS.QMR)\n");
    wait_for(LONG, "the channel to retry", || {
        field(&chstatus(&h, "QMS", "QMS.QMR"), "STATUS") == "RETRYING"
            && cut.conns.load(Ordering::SeqCst) >= 2
    });
    h.mqsc("QMS", "STOP CHANNEL(QMS.QMR)\n");
    let st = chstatus(&h, "QMS", "QMS.QMR");
    assert_eq!(field(&st, "INDOUBT"), "YES", "{st}");
    // The messages are back on the transmission queue, and the receiver has them too.
    assert_eq!(h.depth("QMS", "QMR"), 50);
    assert_eq!(h.depth("QMR", "DEST"), 50);
    // A restart forgets the instance, not what it committed: the saved status (from the
    // channel's synchronisation record) still shows the batch in doubt.
    h.ok(&["stop", "QMS"]);
    h.start_tcp("QMS", ports[0]);
    let saved = h.mqsc("QMS", "DISPLAY CHSTATUS(QMS.*) SAVED\n");
    assert_eq!(field(&saved, "INDOUBT"), "YES", "{saved}");
    assert_eq!(field(&saved, "CURMSGS"), "50", "{saved}");
    let (cur, lst): (u64, u64) = (
        field(&saved, "CURSEQNO").parse().unwrap(),
        field(&saved, "LSTSEQNO").parse().unwrap(),
    );
    assert!(
        cur > lst,
        "the in-doubt batch is past the committed number: {saved}"
    );
    assert_ne!(field(&saved, "CURLUWID"), field(&saved, "LSTLUWID"));
    let out = h.mqsc("QMS", "RESOLVE CHANNEL(QMS.QMR) ACTION(COMMIT)\n");
    assert!(
        out.contains("in-doubt batch of 50 message(s) committed"),
        "{out}"
    );
    assert_eq!(h.depth("QMS", "QMR"), 0);
    let out = h.mqsc("QMS", "RESOLVE CHANNEL(QMS.QMR) ACTION(BACKOUT)\n");
    assert!(out.contains("not in doubt"), "{out}");
    let saved = h.mqsc("QMS", "DISPLAY CHSTATUS(QMS.QMR) SAVED ALL\n");
    assert_eq!(field(&saved, "INDOUBT"), "NO", "{saved}");
    assert_eq!(field(&saved, "CURSEQNO"), field(&saved, "LSTSEQNO"));
    assert_eq!(
        field(&saved, "STOPREQ"),
        "YES",
        "stopped by STOP CHANNEL: {saved}"
    );
    // Back on the direct route: new messages flow, nothing is sent twice.
    h.mqsc(
        "QMS",
        &format!(
            "ALTER CHANNEL(QMS.QMR) CONNAME('127.0.0.1({})')\nSTART CHANNEL(QMS.QMR)\n",
            ports[1]
        ),
    );
    h.ok(&[
        "put",
        "QMS",
        "DEST",
        "--size",
        "100",
        "--count",
        "10",
        "--persistent",
    ]);
    wait_for(LONG, "the last messages", || h.depth("QMR", "DEST") == 60);
    h.ok(&["stop", "QMS"]);
    h.ok(&["stop", "QMR"]);
}

#[test]
fn a_socket_cut_mid_batch_loses_and_duplicates_nothing_and_reset_renumbers() {
    let h = Home::new();
    let ports = qms(&h, &["QMS", "QMR"]);
    h.mqsc("QMR", "DEFINE QLOCAL(DEST) MAXDEPTH(100000)\n");
    h.mqsc(
        "QMS",
        "DEFINE QREMOTE(DEST) RNAME(DEST) RQMNAME(QMR) XMITQ(QMR)\n",
    );
    // 1 KB messages in batches of 50: the cut at 20,000 bytes falls inside the first batch.
    let cut = Cutter::cutting(ports[1], Cut::MidBatch(20_000));
    link(&h, "QMS", "QMR", cut.port, "BATCHSZ(50)");
    h.ok(&[
        "put",
        "QMS",
        "DEST",
        "--size",
        "1000",
        "--count",
        "500",
        "--persistent",
        "--syncpoint",
        "500",
    ]);
    h.mqsc("QMS", "START CHANNEL(QMS.QMR)\n");
    wait_for(LONG, "all 500 after the cut", || {
        h.depth("QMR", "DEST") == 500
    });
    assert!(
        cut.conns.load(Ordering::SeqCst) >= 2,
        "the connection was cut"
    );
    assert_eq!(h.depth("QMS", "QMR"), 0);
    verify_all(&h, "QMR", "DEST", 500);
    let st = chstatus(&h, "QMR", "QMS.QMR");
    assert_eq!(field(&st, "LSTSEQNO"), "500", "{st}");
    // The channel initiator's tasks did the work and say so.
    let ci = h.mqsc("QMR", "DISPLAY CHINIT\n");
    assert!(
        ci.contains("TASK(ADAPTER.1)") && ci.contains("TASK(DISPATCHER.1)"),
        "{ci}"
    );
    let served: u64 = ci
        .split("REQUESTS(")
        .skip(1)
        .map(|r| r[..r.find(')').unwrap()].parse::<u64>().unwrap())
        .sum();
    assert!(served > 0, "{ci}");

    // RESET CHANNEL: the sender renumbers from 1000, and the receiver follows at the next start.
    assert!(
        h.mqsc(
            "QMS",
            "STOP CHANNEL(QMS.QMR)\nRESET CHANNEL(QMS.QMR) SEQNUM(1000)\n"
        )
        .contains("reset to sequence number 1000")
    );
    h.mqsc("QMS", "START CHANNEL(QMS.QMR)\n");
    h.ok(&[
        "put",
        "QMS",
        "DEST",
        "--size",
        "100",
        "--count",
        "5",
        "--persistent",
    ]);
    wait_for(LONG, "5 more", || h.depth("QMR", "DEST") == 5);
    wait_for(LONG, "the receiver at 1005", || {
        field(&chstatus(&h, "QMR", "QMS.QMR"), "LSTSEQNO") == "1005"
    });
    h.ok(&["stop", "QMS"]);
    h.ok(&["stop", "QMR"]);
}
