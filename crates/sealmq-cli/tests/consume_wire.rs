//! Asynchronous consume on the wire itself (docs/wire.md, version 2), with a raw client
//! against real queue manager processes: the order of answers and pushes a client relies
//! on, what a pushed batch may hold, and a client that stops reading.

mod common;

use common::{Home, uncom, wait_for};
use sealmq_client::Client;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use sealmq_wire::consume::mode;
use sealmq_wire::{ConsumeReq, Hello, Request, Response, Secret};
use std::net::TcpStream;
use std::time::Duration;

const APP: &str = "DEFINE QLOCAL(C.Q) MAXDEPTH(100000)\n\
     DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app')\n\
     SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
     SET AUTHREC PROFILE('C.Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(GET,PUT)\n";

/// The next frame, whatever it is (a push has id 0).
fn next(s: &mut TcpStream) -> (u32, Response) {
    sealmq_wire::read_response(s, 8 << 20)
        .expect("a frame within the read timeout")
        .expect("the connection still open")
}

/// A frame in a line: its id, and a push's consumer and batch (not its bytes).
fn brief((id, r): &(u32, Response)) -> String {
    match r {
        Response::Delivery(d) => format!("id {id}: Delivery tag {} batch {}", d.tag, d.batch),
        Response::BatchEnd { tag, batch, count } => {
            format!("id {id}: BatchEnd tag {tag} batch {batch} count {count}")
        }
        other => format!("id {id}: {other:?}"),
    }
}

/// Sends request `id` and returns its answer; a push read meanwhile fails the test (none is
/// expected while these are asked).
fn call(s: &mut TcpStream, id: u32, r: &Request) -> Response {
    sealmq_wire::write_request(s, id, r).unwrap();
    match next(s) {
        (got, resp) if got == id => resp,
        other => panic!(
            "request {id}: a frame came before its answer: {}",
            brief(&other)
        ),
    }
}

/// A raw wire client on APP.SVRCONN at `port` with C.Q open for input: the stream and the
/// handle.
fn raw_open(port: u16, appl: &str) -> (TcpStream, u32) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let hello = Request::Hello(Hello {
        versions: sealmq_wire::VERSIONS.to_vec(),
        max_msg: 4 << 20,
        appl: appl.into(),
        channel: "APP.SVRCONN".into(),
        user: String::new(),
        password: Secret::new(""),
    });
    assert!(matches!(call(&mut s, 1, &hello), Response::HelloOk { .. }));
    let open = Request::Open {
        name: "C.Q".into(),
        options: sealmq_wire::open::INPUT_SHARED,
        dyn_name: String::new(),
    };
    let Response::Opened(o) = call(&mut s, 2, &open) else {
        panic!("not opened");
    };
    (s, o.hobj)
}

/// A syncpoint consumer `tag` on `hobj` (0: filled in by `raw_consumer`).
fn syncpoint(hobj: u32, tag: u32, window: u32, batch: u32, batch_ms: u32) -> ConsumeReq {
    ConsumeReq {
        hobj,
        tag,
        mode: mode::SYNCPOINT,
        window,
        batch,
        batch_ms,
        match_msg_id: None,
        match_correl_id: None,
    }
}

/// A raw client that opened C.Q and started consumer `req` on it (`req.hobj` filled in).
fn raw_consumer(port: u16, appl: &str, mut req: ConsumeReq) -> TcpStream {
    let (mut s, hobj) = raw_open(port, appl);
    req.hobj = hobj;
    assert!(matches!(
        call(&mut s, 3, &Request::Consume(req)),
        Response::Ok
    ));
    s
}

/// docs/wire.md: a Consume is "answered Ok, then the pushes begin", and a ConsumeStop is
/// answered "once nothing more will be pushed for the consumer (everything pushed was written
/// before the Ok)"; a client that drops a stopped consumer's route relies on it. A consumer's
/// pushes come from a task of their own, so both answers go through the pushers' channel:
/// here a consumer is started and stopped at once forty times on a full queue, and every push
/// falls between its consumer's two answers. The close of a handle whose consumer is still pushing is
/// answered after its pushes too.
#[test]
fn consume_and_stop_answers_frame_every_push() {
    let h = Home::new();
    let port = common::free_port();
    h.ok(&["create", "QO"]);
    let o = h
        .cmd(&["start", "QO", "--background", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    h.mqsc("QO", APP);
    h.ok(&["put", "QO", "C.Q", "--size", "200", "--count", "3000"]);
    let (mut s, hobj) = raw_open(port, "order");
    let mut pushed_total = 0u32;
    for round in 0..40u32 {
        let tag = round + 1;
        let (start_id, stop_id) = (100 + 2 * round, 101 + 2 * round);
        let req = syncpoint(hobj, tag, 100, 4, 0);
        sealmq_wire::write_request(&mut s, start_id, &Request::Consume(req)).unwrap();
        match next(&mut s) {
            (id, Response::Ok) if id == start_id => {}
            other => panic!("round {round}: before the Consume's Ok: {}", brief(&other)),
        }
        sealmq_wire::write_request(&mut s, stop_id, &Request::ConsumeStop { tag }).unwrap();
        let mut batches = Vec::new();
        loop {
            match next(&mut s) {
                (id, Response::Ok) if id == stop_id => break,
                (0, Response::Delivery(d)) => {
                    assert_eq!(d.tag, tag, "a push of another consumer");
                    pushed_total += 1;
                }
                (
                    0,
                    Response::BatchEnd {
                        tag: t,
                        batch,
                        count,
                    },
                ) if count > 0 => {
                    assert_eq!(t, tag);
                    batches.push(batch);
                }
                (0, Response::BatchEnd { .. }) => {}
                other => panic!("round {round}: unexpected {}", brief(&other)),
            }
        }
        // Whatever comes next is the answer asked for: nothing of the stopped consumer.
        for (k, b) in batches.into_iter().enumerate() {
            let id = 10_000 + round * 1_000 + k as u32;
            let settle = Request::Settle {
                tag,
                batch: b,
                commit: false,
            };
            let r = call(&mut s, id, &settle);
            assert!(matches!(r, Response::Settled { reason: 0, .. }), "{r:?}");
        }
    }
    assert!(pushed_total > 0, "the consumers pushed nothing");
    // A consumer still pushing when its handle closes: the close's answer follows its
    // pushes.
    let req = syncpoint(hobj, 999, 100, 4, 0);
    assert!(matches!(
        call(&mut s, 90, &Request::Consume(req)),
        Response::Ok
    ));
    sealmq_wire::write_request(&mut s, 91, &Request::Close { hobj }).unwrap();
    loop {
        match next(&mut s) {
            (91, Response::Ok) => break,
            (0, Response::Delivery(_) | Response::BatchEnd { .. }) => {}
            other => panic!("before the Close's Ok: {}", brief(&other)),
        }
    }
    assert!(matches!(
        call(&mut s, 92, &Request::Heartbeat),
        Response::Ok
    ));
    drop(s);
    // Every message backed out: all 3,000 still there, none uncommitted.
    common::wait_for(Duration::from_secs(30), "the backouts", || {
        h.mqsc("QO", "DISPLAY QSTATUS(C.Q) UNCOM\n")
            .contains("UNCOM(0)")
    });
    assert_eq!(h.depth("QO", "C.Q"), 3_000);
    h.ok(&["stop", "QO"]);
}

/// Issue 27: a consumer whose client stops reading does not hold the queue manager. Its
/// pushes fill the socket; once writes make no progress for the channel's HBINT (HBINT(5);
/// one to three intervals, as the last bytes drip into the buffers) the connection ends, so
/// its pusher is freed and its unsettled batches go back to the queue — while the client
/// still holds its socket open.
#[test]
fn a_consumer_whose_client_stops_reading_is_ended_and_its_messages_return() {
    let h = Home::new();
    let port = common::free_port();
    h.ok(&["create", "QR"]);
    h.start_tcp("QR", port);
    h.mqsc("QR", APP);
    h.mqsc(
        "QR",
        "ALTER CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) HBINT(5)\n",
    );
    // 128 MiB: far more than the socket buffers hold.
    h.ok(&["put", "QR", "C.Q", "--size", "65536", "--count", "2000"]);
    let s = raw_consumer(port, "stalled", syncpoint(0, 1, 10_000, 100, 50));
    // From now on the client reads nothing; its socket stays open.
    let t = std::time::Instant::now();
    wait_for(
        Duration::from_secs(60),
        "the stalled connection to end",
        || {
            !h.mqsc("QR", "DISPLAY CONN(*) APPLTAG\n")
                .contains("stalled")
        },
    );
    let ended = t.elapsed();
    wait_for(Duration::from_secs(30), "its batches backed out", || {
        uncom(&h, "QR", "C.Q") == 0
    });
    assert_eq!(h.depth("QR", "C.Q"), 2_000, "every message back");
    eprintln!("a consumer that stopped reading was ended after {ended:?}");
    // One to three HBINTs without progress, and a little for the end itself.
    assert!(
        ended >= Duration::from_secs(4) && ended < Duration::from_secs(25),
        "{ended:?}"
    );
    drop(s);
    h.ok(&["stop", "QR"]);
}

/// A pushed batch ends at 1 MiB of frames whatever batch size the client asked for, so what a
/// connection's pushers gather for a client is bounded in bytes: 300 messages of 64 KiB on the
/// queue, batches of up to 1,000 asked for, and none holds more than 17 of them.
#[test]
fn a_pushed_batch_is_bounded_in_bytes_whatever_the_batch_size_asked() {
    let h = Home::new();
    let port = common::free_port();
    h.ok(&["create", "QZ"]);
    h.start_tcp("QZ", port);
    h.mqsc("QZ", APP);
    h.ok(&["put", "QZ", "C.Q", "--size", "65536", "--count", "300"]);
    let mut s = raw_consumer(port, "big-batches", syncpoint(0, 1, 1000, 1000, 5000));
    let (mut counts, mut delivered) = (Vec::new(), 0u32);
    while counts.iter().sum::<u32>() < 300 {
        match sealmq_wire::read_response(&mut s, 8 << 20)
            .unwrap()
            .unwrap()
            .1
        {
            Response::Delivery(_) => delivered += 1,
            Response::BatchEnd { count, .. } if count > 0 => counts.push(count),
            _ => {}
        }
    }
    eprintln!("batches pushed: {counts:?}");
    assert_eq!(delivered, 300);
    assert!(counts.iter().all(|c| *c <= 17), "{counts:?}");
    assert!(counts.len() >= 300 / 17, "{counts:?}");
    drop(s);
    h.ok(&["stop", "QZ"]);
}

/// A client that stops reading and then stops its consumer (or closes its handle) holds none
/// of the queue manager's threads while its pushes wait for room: 12 connections — more than
/// the blocking pools of both event loops hold threads (4 each here) — each start a consumer,
/// read nothing more (about 4 MiB each: the sockets' buffers and the pushers' channel full),
/// and send ConsumeStop; an application that connects afterwards (its Hello and open need a
/// pool thread) connects, opens, puts and gets within 15 s, and each stalled consumer's last
/// batch, never handed over, is back on the queue within a second or so.
#[test]
fn stalled_clients_stopping_their_consumers_hold_no_thread() {
    let h = Home::new();
    let port = common::free_port();
    h.ok(&["create", "QS"]);
    // Blocking pools of 4 threads on each of 2 loops: 12 stalled stops are more than they hold.
    let o = h
        .cmd(&["start", "QS", "--background", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .env("SEALMQ_NET_THREADS", "2")
        .env("SEALMQ_BLOCKING_THREADS", "8")
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    h.mqsc("QS", APP);
    // No heartbeat: the write-stall limit never ends these connections during the test.
    h.mqsc(
        "QS",
        "ALTER CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) HBINT(0)\n",
    );
    h.mqsc("QS", "DEFINE QLOCAL(LEGIT.Q)\nSET AUTHREC PROFILE('LEGIT.Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(GET,PUT)\n");
    h.ok(&["put", "QS", "C.Q", "--size", "8192", "--count", "12000"]);
    let mut stalled = Vec::new();
    for _ in 0..12 {
        stalled.push(raw_consumer(port, "stalled", syncpoint(0, 1, 10_000, 1, 0)));
    }
    // Until every pusher waits for room: the count of messages got stops moving.
    let mut last = u64::MAX;
    wait_for(Duration::from_secs(60), "the pushes to stall", || {
        let now = uncom(&h, "QS", "C.Q");
        let still = now == last;
        last = now;
        still
    });
    eprintln!("{last} messages pushed and held before the stops");
    for s in &mut stalled {
        sealmq_wire::write_request(s, 4, &Request::ConsumeStop { tag: 1 }).unwrap();
    }
    let t = std::time::Instant::now();
    let addr = format!("127.0.0.1:{port}");
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = (|| -> Result<(), String> {
            let mut c = Client::connect_tcp_channel(&addr, "APP.SVRCONN", "legit")
                .map_err(|e| e.to_string())?;
            let (ho, _) = c
                .open("LEGIT.Q", OpenOptions::output())
                .map_err(|e| e.to_string())?;
            let mut md = sealmq_engine::Md::default();
            c.put(ho, &mut md, b"still served", false)
                .map_err(|e| e.to_string())?;
            let (hi, _) = c
                .open("LEGIT.Q", OpenOptions::input())
                .map_err(|e| e.to_string())?;
            c.get(hi, &GetOptions::default())
                .map_err(|e| e.to_string())?;
            Ok(())
        })();
        let _ = done_tx.send(r);
    });
    let r = done_rx.recv_timeout(Duration::from_secs(15));
    assert!(
        matches!(r, Ok(Ok(()))),
        "an application beside 12 stalled consumers being stopped: {r:?} after {:?}",
        t.elapsed()
    );
    eprintln!("served after {:?}", t.elapsed());
    // Each stopped pusher's batch that found no room went back to the queue.
    wait_for(
        Duration::from_secs(15),
        "the batches never handed over backed out",
        || uncom(&h, "QS", "C.Q") <= last - 12,
    );
    drop(stalled);
    wait_for(Duration::from_secs(30), "every batch backed out", || {
        uncom(&h, "QS", "C.Q") == 0
    });
    assert_eq!(h.depth("QS", "C.Q"), 12_000);
    h.ok(&["stop", "QS"]);
}

/// What the queue manager holds for a client that stopped reading is bounded in bytes per
/// connection (docs/wire.md): a consumer asking for batches of up to 1,000 messages of 64 KiB
/// (1 MiB each, the batch bound) stops being pushed to once about 8 MiB wait for its writer
/// beside the sockets' buffers — the pushers' channel alone held 64 such batches before.
#[test]
fn a_client_that_stops_reading_holds_a_bounded_number_of_bytes() {
    let h = Home::new();
    let port = common::free_port();
    h.ok(&["create", "QB"]);
    h.start_tcp("QB", port);
    h.mqsc("QB", APP);
    h.mqsc(
        "QB",
        "ALTER CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) HBINT(0)\n",
    );
    h.ok(&["put", "QB", "C.Q", "--size", "65536", "--count", "2000"]);
    let s = raw_consumer(port, "reads-nothing", syncpoint(0, 1, 10_000, 1_000, 5_000));
    // Until the pusher waits for room: the count of messages got stays put for 1 s.
    let last = common::once_steady("the pushes to stall", || uncom(&h, "QB", "C.Q"));
    let held = last * 65_536;
    eprintln!(
        "a client that reads nothing: {last} messages ({} MiB) got for it",
        held >> 20
    );
    assert!(
        held <= 24 << 20,
        "{} MiB held for a client that reads nothing",
        held >> 20
    );
    drop(s);
    wait_for(Duration::from_secs(30), "its batches backed out", || {
        uncom(&h, "QB", "C.Q") == 0
    });
    h.ok(&["stop", "QB"]);
}
