//! Bad input on an AMQP channel: random bytes, a truncated header, an oversized frame, a
//! wrong SASL mechanism. Each connection ends; the channel goes on serving others.

use sealmq_amqp::AmqpChannel;
use sealmq_engine::channels::{ChannelDef, ChlType};
use sealmq_engine::{QmConfig, QueueManager};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

/// How long the channels here give a connection to authenticate and open.
const HANDSHAKE: Duration = Duration::from_secs(1);

fn channel() -> (tempfile::TempDir, Arc<QueueManager>, AmqpChannel) {
    channel_with(|_| {})
}

fn channel_with(
    alter: impl FnOnce(&mut ChannelDef),
) -> (tempfile::TempDir, Arc<QueueManager>, AmqpChannel) {
    let d = tempfile::tempdir().unwrap();
    let qm = QueueManager::create(QmConfig::new("QH", d.path().join("QH"))).unwrap();
    let mut def = ChannelDef::new("FUZZ.AMQP", ChlType::Amqp);
    def.noted.insert("PORT".into(), "0".into());
    def.noted.insert("IPADDR".into(), "127.0.0.1".into());
    def.mcauser = "app".into();
    alter(&mut def);
    let mut services = sealmq_amqp::Services::plain(Arc::new(|_: &str, _: &str| false));
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
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while ch.connections() == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(ch.connections(), 1);
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
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while ch.connections() > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(serving(&ch));
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
