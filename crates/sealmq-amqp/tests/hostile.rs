//! Bad input on an AMQP channel: random bytes, a truncated header, an oversized frame, a
//! wrong SASL mechanism. Each connection ends; the channel goes on serving others.

use sealmq_amqp::AmqpChannel;
use sealmq_engine::QueueManager;
use sealmq_engine::channels::{ChannelDef, ChlType};
use sealmq_testkit::wait_for;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

/// How long the channels here give a connection to authenticate and open.
const HANDSHAKE: Duration = Duration::from_secs(1);

fn channel() -> (sealmq_testkit::TempQm, Arc<QueueManager>, AmqpChannel) {
    channel_with(|_| {})
}

fn channel_with(
    alter: impl FnOnce(&mut ChannelDef),
) -> (sealmq_testkit::TempQm, Arc<QueueManager>, AmqpChannel) {
    let (d, qm) = sealmq_testkit::running("QH", "");
    let mut def = ChannelDef::new("FUZZ.AMQP", ChlType::Amqp);
    def.noted.insert("PORT".into(), "0".into());
    def.noted.insert("IPADDR".into(), "127.0.0.1".into());
    def.mcauser = "app".into();
    alter(&mut def);
    let mut services = sealmq_amqp::Services::plain(Arc::new(|_: &str, _: &str, _: &str| false));
    services.handshake = HANDSHAKE;
    let ch = AmqpChannel::start(qm.clone(), &def, services).unwrap();
    (d, qm, ch)
}

/// Sends `bytes`, then reads until the channel closes the connection (or 5 s pass).
fn poke(ch: &AmqpChannel, bytes: &[u8]) {
    let mut s = TcpStream::connect(ch.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(bytes);
    let mut buf = [0u8; 4096];
    while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
}

/// The channel still answers a SASL protocol header with its own.
fn serving(ch: &AmqpChannel) -> bool {
    let Ok(mut s) = TcpStream::connect(ch.addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if s.write_all(b"AMQP\x03\x01\x00\x00").is_err() {
        return false;
    }
    let mut head = [0u8; 8];
    s.read_exact(&mut head).is_ok() && &head == b"AMQP\x03\x01\x00\x00"
}

#[test]
fn hostile_bytes_end_their_connection_and_the_channel_serves_on() {
    let (_d, _qm, ch) = channel();
    assert!(serving(&ch));
    // A wrong protocol header, a truncated one, then a SASL header and an oversized frame.
    poke(&ch, b"HTTP/1.1 GET /\r\n\r\n");
    poke(&ch, b"AMQ");
    let mut oversized = b"AMQP\x03\x01\x00\x00".to_vec();
    oversized.extend_from_slice(&u32::MAX.to_be_bytes());
    oversized.extend_from_slice(&[2, 1, 0, 0]);
    poke(&ch, &oversized);
    assert!(serving(&ch), "still serving after hand-made bad input");
}

#[test]
fn a_connection_that_never_authenticates_does_not_keep_its_place() {
    let (_d, _qm, ch) = channel_with(|d| d.maxinst = 1);
    // It connects and sends nothing: the one place (MAXINST(1)) is taken...
    let mut idle = TcpStream::connect(ch.addr).unwrap();
    wait_for(
        Duration::from_secs(5),
        "the connection to be counted",
        || ch.connections() == 1,
    );
    // ...until the handshake time is over: the channel closes it and serves others again.
    idle.set_read_timeout(Some(HANDSHAKE * 10)).unwrap();
    let mut buf = [0u8; 64];
    // (Whatever the channel says first, such as a protocol header, is read past.)
    let mut r = idle.read(&mut buf);
    while matches!(r, Ok(n) if n > 0) {
        r = idle.read(&mut buf);
    }
    assert!(
        matches!(r, Ok(0))
            || r.as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
        "the idle connection is closed: {r:?}"
    );
    wait_for(Duration::from_secs(5), "the idle connection to go", || {
        ch.connections() == 0
    });
    assert!(serving(&ch));
}

/// One AMQP frame: size, data offset 2, `kind` (0 AMQP, 1 SASL), channel 0, then `body`.
fn frame(kind: u8, body: &[u8]) -> Vec<u8> {
    frame_on(kind, 0, body)
}

/// [`frame`] on channel `channel`.
fn frame_on(kind: u8, channel: u16, body: &[u8]) -> Vec<u8> {
    let mut f = ((8 + body.len()) as u32).to_be_bytes().to_vec();
    f.extend_from_slice(&[2, kind]);
    f.extend_from_slice(&channel.to_be_bytes());
    f.extend_from_slice(body);
    f
}

/// Opens a connection by hand (SASL ANONYMOUS, the AMQP open), then sends nothing; what the
/// channel sent, and whether it closed the connection within `wait`.
fn open_then_silence(ch: &AmqpChannel, wait: Duration) -> (Vec<u8>, bool) {
    open_then(ch, &[], wait)
}

/// [`open_then_silence`], sending `then` after the open.
fn open_then(ch: &AmqpChannel, then: &[u8], wait: Duration) -> (Vec<u8>, bool) {
    use fe2o3_amqp::types::performatives::{ChannelMax, MaxFrameSize, Open, Performative};
    use fe2o3_amqp::types::primitives::Symbol;
    use fe2o3_amqp::types::sasl::SaslInit;
    let mut s = TcpStream::connect(ch.addr).unwrap();
    s.write_all(b"AMQP\x03\x01\x00\x00").unwrap();
    let init = SaslInit {
        mechanism: Symbol::from("ANONYMOUS"),
        initial_response: None,
        hostname: None,
    };
    s.write_all(&frame(1, &serde_amqp::to_vec(&init).unwrap()))
        .unwrap();
    s.write_all(b"AMQP\x00\x01\x00\x00").unwrap();
    let open = Performative::Open(Open {
        container_id: "silent".into(),
        hostname: None,
        max_frame_size: MaxFrameSize::default(),
        channel_max: ChannelMax::default(),
        idle_time_out: None,
        outgoing_locales: None,
        incoming_locales: None,
        offered_capabilities: None,
        desired_capabilities: None,
        properties: None,
    });
    s.write_all(&frame(0, &serde_amqp::to_vec(&open).unwrap()))
        .unwrap();
    s.write_all(then).unwrap();
    s.set_read_timeout(Some(wait)).unwrap();
    let (mut seen, mut buf) = (Vec::new(), [0u8; 4096]);
    let closed = loop {
        match s.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
            Err(e) => break e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    };
    (seen, closed)
}

/// The channel's open performative (described type 0x10) among what it sent.
fn opened(seen: &[u8]) -> bool {
    seen.windows(3).any(|w| w == [0x00, 0x53, 0x10])
}

#[test]
fn a_connection_silent_longer_than_amqpka_is_closed() {
    let (_d, _qm, ch) = channel_with(|d| {
        d.noted.insert("AMQPKA".into(), "600".into());
    });
    let started = std::time::Instant::now();
    let (seen, closed) = open_then_silence(&ch, Duration::from_secs(10));
    assert!(opened(&seen), "the channel opened the connection: {seen:?}");
    assert!(
        closed && started.elapsed() < Duration::from_secs(5),
        "closed for silence"
    );
    // Without AMQPKA (AUTO) an open connection may stay silent.
    let (_d2, _qm2, quiet) = channel();
    let (seen, closed) = open_then_silence(&quiet, Duration::from_millis(1500));
    assert!(opened(&seen) && !closed, "{seen:?}");
}

/// Issue 42: the channel advertises channel-max 31 (32 sessions); a Begin on channel 300
/// ends the connection with `amqp:not-allowed` (fe2o3 took it and began the session).
#[test]
fn a_begin_above_the_advertised_channel_max_ends_the_connection() {
    use fe2o3_amqp::types::performatives::{Begin, Performative};
    let (_d, _qm, ch) = channel();
    let begin = |channel: u16| {
        let b = Performative::Begin(Begin {
            remote_channel: None,
            next_outgoing_id: 0,
            incoming_window: 100,
            outgoing_window: 100,
            handle_max: Default::default(),
            offered_capabilities: None,
            desired_capabilities: None,
            properties: None,
        });
        frame_on(0, channel, &serde_amqp::to_vec(&b).unwrap())
    };
    let (seen, _) = open_then(&ch, &begin(300), Duration::from_secs(2));
    assert!(opened(&seen), "{seen:?}");
    // The connection's Close (described type 0x18) with the error, and no Begin back.
    let text = String::from_utf8_lossy(&seen);
    assert!(
        seen.windows(3).any(|w| w == [0x00, 0x53, 0x18])
            && !seen.windows(3).any(|w| w == [0x00, 0x53, 0x11])
            && text.contains("amqp:not-allowed")
            && text.contains("channel-max"),
        "{text:?}"
    );
    // Within channel-max a session begins and the connection stays.
    let (seen, closed) = open_then(&ch, &begin(31), Duration::from_millis(1500));
    assert!(!closed, "{:?}", String::from_utf8_lossy(&seen));
    // The Begin answered: described type 0x11.
    assert!(seen.windows(3).any(|w| w == [0x00, 0x53, 0x11]), "{seen:?}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    #[test]
    fn random_streams_after_the_header_never_stop_the_channel(
        body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512),
        sasl in proptest::prelude::any::<bool>(),
    ) {
        let (_d, _qm, ch) = channel();
        let mut bytes = if sasl { b"AMQP\x03\x01\x00\x00".to_vec() } else { b"AMQP\x00\x01\x00\x00".to_vec() };
        bytes.extend_from_slice(&body);
        poke(&ch, &bytes);
        proptest::prop_assert!(serving(&ch));
    }
}
