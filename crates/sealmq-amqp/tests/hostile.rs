//! Bad input on an AMQP channel: random bytes, a truncated header, an oversized frame, a
//! wrong SASL mechanism. Each connection ends; the channel goes on serving others.

use sealmq_amqp::AmqpChannel;
use sealmq_engine::channels::{ChannelDef, ChlType};
use sealmq_engine::{QmConfig, QueueManager};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

fn channel() -> (tempfile::TempDir, Arc<QueueManager>, AmqpChannel) {
    let d = tempfile::tempdir().unwrap();
    let qm = QueueManager::create(QmConfig::new("QH", d.path().join("QH"))).unwrap();
    let mut def = ChannelDef::new("FUZZ.AMQP", ChlType::Amqp);
    def.noted.insert("PORT".into(), "0".into());
    def.noted.insert("IPADDR".into(), "127.0.0.1".into());
    def.mcauser = "app".into();
    let verify: sealmq_amqp::Verify = Arc::new(|_: &str, _: &str| false);
    let ch = AmqpChannel::start(qm.clone(), &def, verify).unwrap();
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
