//! The wire protocol under hostile input, against a real server on loopback: captured
//! sessions with lying lengths, truncations and flipped bytes. The server answers or closes —
//! never panics, never hangs — and goes on serving a good client. A peer that stops in the
//! middle of a frame is dropped at the deadline (`sealmq_server::HANDSHAKE`).

use proptest::prelude::*;
use sealmq_client::Client;
use sealmq_engine::{Md, OpenOptions};
mod common;
use sealmq_server::Server;
use sealmq_wire::{GetReq, Request, Secret, open};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static PANICS: AtomicUsize = AtomicUsize::new(0);

struct Live {
    _d: sealmq_testkit::TempQm,
    server: Server,
    addr: String,
}

/// One server for the whole suite (its connection threads run while proptest feeds it).
fn live() -> &'static Live {
    static L: OnceLock<Live> = OnceLock::new();
    L.get_or_init(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |i| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            prev(i)
        }));
        let (t, server) = common::serving(
            "QMF",
            "DEFINE QLOCAL(Q)\n\
             DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app')\n\
             SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
             SET AUTHREC PROFILE('Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(ALLMQI)\n",
        );
        let addr = server.tcp_addr().unwrap().to_string();
        Live {
            _d: t,
            server,
            addr,
        }
    })
}

/// A session as a client sends it: Hello, open, put, get, close, disconnect.
fn captured() -> Vec<u8> {
    let mut b = Vec::new();
    let reqs = [
        Request::Hello(sealmq_wire::Hello {
            versions: vec![1],
            max_msg: 1 << 20,
            appl: "fuzz".into(),
            channel: "APP.SVRCONN".into(),
            user: String::new(),
            password: Secret::default(),
        }),
        Request::Open {
            name: "Q".into(),
            options: open::OUTPUT | open::INPUT_SHARED,
            dyn_name: String::new(),
        },
        Request::Put {
            hobj: 1,
            md: Md::default(),
            payload: b"fuzzed payload".to_vec(),
            syncpoint: false,
        },
        Request::Get(GetReq {
            hobj: 1,
            syncpoint: false,
            wait_ms: 0,
            browse: 0,
            match_msg_id: None,
            match_correl_id: None,
            accept_truncated: false,
            buffer: -1,
            if_persistent: false,
        }),
        Request::Close { hobj: 1 },
        Request::Disconnect,
    ];
    for (i, r) in reqs.iter().enumerate() {
        sealmq_wire::write_request(&mut b, i as u32 + 1, r).unwrap();
    }
    b
}

/// Sends `bytes`, closes the sending side, and reads until the server closes. Returns how
/// long the server took to close.
fn send(bytes: &[u8]) -> Duration {
    let t = Instant::now();
    let mut s = TcpStream::connect(&live().addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let _ = s.write_all(bytes);
    let _ = s.shutdown(Shutdown::Write);
    let mut sink = Vec::new();
    let r = s.read_to_end(&mut sink);
    assert!(
        !matches!(&r, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut),
        "the server neither answered nor closed within 20 s"
    );
    t.elapsed()
}

fn still_serves() {
    let mut c = Client::connect_tcp_channel(&live().addr, "APP.SVRCONN", "check").unwrap();
    c.put1("Q", &mut Md::default(), b"after the fuzz", false)
        .unwrap();
    let (h, _) = c.open("Q", OpenOptions::input()).unwrap();
    while c.get(h, &Default::default()).is_ok() {}
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a server thread panicked");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn truncated_sessions(cut in 0usize..400) {
        let b = captured();
        send(&b[..cut.min(b.len())]);
    }

    #[test]
    fn flipped_bytes(flips in proptest::collection::vec((0usize..400, any::<u8>()), 1..8)) {
        let mut b = captured();
        for (at, x) in flips {
            let n = b.len();
            b[at % n] ^= x | 1;
        }
        send(&b);
    }

    #[test]
    fn lying_lengths(frame in 0usize..6, len in any::<u32>()) {
        // Rewrite the length word of one frame of the session.
        let mut b = captured();
        let mut at = 0;
        for _ in 0..frame {
            let l = u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
            at += 4 + l;
        }
        b[at..at + 4].copy_from_slice(&len.to_le_bytes());
        send(&b);
    }

    #[test]
    fn garbage_first_frames(b in proptest::collection::vec(any::<u8>(), 0..300)) {
        send(&b);
    }
}

#[test]
fn the_server_goes_on_after_hostile_sessions() {
    // Some hostile sessions first (this test may run before or after the proptests).
    let b = captured();
    for cut in [3, 9, 40, b.len() - 1] {
        send(&b[..cut]);
    }
    let mut huge = b.clone();
    huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
    send(&huge);
    still_serves();
}

#[test]
fn a_protocol_error_before_hello_is_answered_with_2195() {
    let mut s = TcpStream::connect(&live().addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    // A frame length shorter than any frame header.
    s.write_all(&[2, 0, 0, 0, 9, 9]).unwrap();
    let answer = sealmq_wire::read_response(&mut s, 1 << 16)
        .unwrap()
        .unwrap();
    match answer.1 {
        sealmq_wire::Response::Err { reason, .. } => assert_eq!(reason, 2195),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_peer_that_stops_mid_frame_is_dropped_at_the_deadline() {
    let b = captured();
    let hello_len = 4 + u32::from_le_bytes(b[..4].try_into().unwrap()) as usize;
    for stop_at in [2, hello_len + 7] {
        let t = Instant::now();
        let mut s = TcpStream::connect(&live().addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
        s.write_all(&b[..stop_at]).unwrap();
        // Not closed by us: the server must give up on its own.
        let mut sink = Vec::new();
        let r = s.read_to_end(&mut sink);
        assert!(r.is_ok() || t.elapsed() < Duration::from_secs(39), "{r:?}");
        let took = t.elapsed();
        assert!(
            took >= sealmq_server::HANDSHAKE - Duration::from_secs(1)
                && took < sealmq_server::HANDSHAKE + Duration::from_secs(10),
            "closed after {took:?}"
        );
    }
    still_serves();
    let _ = &live().server;
}

#[test]
fn a_first_frame_trickled_in_is_cut_at_the_total_deadline() {
    let b = captured();
    let t = Instant::now();
    let mut s = TcpStream::connect(&live().addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    // One byte every 2 s: never silent for 10 s, but never done either.
    let mut closed = false;
    for byte in b.iter().take(30) {
        if s.write_all(&[*byte]).is_err() {
            closed = true;
            break;
        }
        let mut sink = [0u8; 64];
        match s.read(&mut sink) {
            Ok(0) => {
                closed = true;
                break;
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => {
                closed = true;
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(1900));
    }
    assert!(
        closed,
        "the server kept a trickling peer for {:?}",
        t.elapsed()
    );
    assert!(t.elapsed() < Duration::from_secs(35), "{:?}", t.elapsed());
}
