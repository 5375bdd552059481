//! Hostile MQ flows after the handshake, from a raw client: each limit of the front end holds
//! (a flow for a conversation never started, a segment type no conversation serves, a flow's
//! segments past MAXMSGL, a conversation past SHARECNV), each refusal logged, and the
//! listener goes on serving.

use super::{Home, NONE, closed_within, ibm, setup};
use common::mqraw::{frame, initial, mqconn};
use sealmq_fap::tsh::{Kind, Tsh, flags, seg};
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use super::common;

const CLOSED: Duration = Duration::from_secs(10);

/// A socket past the initial data on `channel`, and (`connect`) MQCONN on conversation 1.
fn opened(port: u16, channel: &str, connect: bool) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(CLOSED)).unwrap();
    initial(&mut s, channel).expect("the initial data is answered");
    if connect {
        assert_eq!(
            mqconn(&mut s, 1),
            Some(0),
            "MQCONN as the channel's MCAUSER"
        );
    }
    s
}

/// One segment of a flow on conversation 1: `first` and/or `last`.
fn part(seg_type: u8, first: bool, last: bool, body: &[u8]) -> Vec<u8> {
    let mut t = Tsh::answer(Kind::Multiplexed, seg_type, 1, 3, 819);
    t.flags1 = if first { flags::FIRST } else { 0 } | if last { flags::LAST } else { 0 };
    t.frame(body)
}

#[test]
fn hostile_flows_after_the_handshake_end_the_conversation_or_socket_at_each_limit() {
    let h = Home::new();
    let port = setup(&h, "QY");
    h.mqsc(
        "QY",
        "DEFINE CHANNEL(TIGHT.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app') MAXMSGL(2048) SHARECNV(1)\n",
    );
    // A flow for a conversation that was never started.
    let mut s = opened(port, "APP.SVRCONN", false);
    s.write_all(&frame(Kind::Multiplexed, seg::MQCONN, 7, 1, &[0; 172]))
        .unwrap();
    assert!(
        closed_within(&mut s, CLOSED),
        "conversation 7 was never started"
    );
    // A segment type no conversation serves: the conversation ends, and a flow for it after
    // that closes the socket.
    let mut s = opened(port, "APP.SVRCONN", true);
    s.write_all(&frame(Kind::Multiplexed, 0x55, 1, 2, &[0; 16]))
        .unwrap();
    let _ = s.write_all(&frame(Kind::Multiplexed, seg::MQDISC, 1, 3, &[0; 16]));
    assert!(closed_within(&mut s, CLOSED), "segment type 0x55");
    // A flow whose segments pass MAXMSGL(2048) and the room for its structures: refused at the
    // segment that passes it, not after the whole of it.
    let mut s = opened(port, "TIGHT.SVRCONN", true);
    let chunk = vec![0u8; 30_000];
    let mut sent = 0;
    for i in 0..40 {
        if s.write_all(&part(seg::MQPUT, i == 0, false, &chunk))
            .is_err()
        {
            break;
        }
        sent += 1;
    }
    assert!(closed_within(&mut s, CLOSED), "a flow past MAXMSGL");
    assert!(sent >= 3, "the refusal came at the limit ({sent} segments)");
    // A second conversation on a SHARECNV(1) channel.
    let mut s = opened(port, "TIGHT.SVRCONN", true);
    let start = [0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2];
    s.write_all(&frame(Kind::Common, seg::SOCKET_ACTION, 0, 0, &start))
        .unwrap();
    assert!(
        closed_within(&mut s, CLOSED),
        "a conversation past SHARECNV(1)"
    );
    // Each refusal is in the error log, and the listener still serves IBM's client.
    let log =
        std::fs::read_to_string(h.qm_dir("QY").join("errors/SEALMQ01.LOG")).unwrap_or_default();
    for said in [
        "conversation 7 that was never started",
        "segment type 0x55 is not served on a conversation",
        "MAXMSGL",
        "SHARECNV(1)",
    ] {
        assert!(log.contains(said), "no '{said}' in the error log:\n{log}");
    }
    assert_eq!(ibm(port, NONE, &["send", "APP.Q", "1"])[0]["sent"], 1);
}

#[test]
fn a_client_that_stops_answering_is_ended_within_twice_hbint() {
    let h = Home::new();
    let port = setup(&h, "QV");
    h.mqsc(
        "QV",
        "DEFINE CHANNEL(BEAT.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app') HBINT(1)\n",
    );
    // Connected, then silent: it reads the heartbeat the queue manager sends after HBINT but
    // never answers it.
    let mut s = opened(port, "BEAT.SVRCONN", true);
    let began = std::time::Instant::now();
    assert!(closed_within(&mut s, CLOSED), "a silent client is ended");
    let took = began.elapsed();
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(5),
        "ended after {took:?}: a heartbeat after HBINT(1), the end after another"
    );
    let log =
        std::fs::read_to_string(h.qm_dir("QV").join("errors/SEALMQ01.LOG")).unwrap_or_default();
    assert!(log.contains("answered no heartbeat within HBINT"), "{log}");
}
