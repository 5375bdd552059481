//! A raw MQ client (MQ's client protocol as IBM's Java client frames it), for tests that must
//! send what no real client sends: the battery's wrong logins, hostile segments.

use sealmq_fap::bytes::{Order, Out};
use sealmq_fap::tsh::{Kind, Tsh, seg};
use std::io::{Read, Write};
use std::net::TcpStream;

/// A segment as IBM's Java client frames it: big-endian, CCSID 819, whole.
pub fn frame(kind: Kind, seg_type: u8, conv: u32, req: u32, body: &[u8]) -> Vec<u8> {
    Tsh::answer(kind, seg_type, conv, req, 819).frame(body)
}

/// The initial data exchange as IBM's Java client makes it (docs/fap.md) for `channel`; `None`
/// if the queue manager did not answer it.
pub fn initial(s: &mut TcpStream, channel: &str) -> Option<()> {
    let mut id = Out::new(Order::Big);
    id.raw(b"ID  ")
        .raw(&[17, 0x26, 0, 0, 0, 0, 0, 0])
        .u32(32748)
        .u32(104_857_600)
        .u32(0)
        .name(channel, 20)
        .raw(&[0x51, 0])
        .u16(819)
        .name("", 48)
        .u32(1)
        .u16(138)
        .raw(&[0, 0, 0, 0xff, 0])
        .raw(&[0xff; 15])
        .raw(&[0; 6])
        .u32(999_999_999)
        .raw(&[0x28, 0, 0, 0])
        .u32(7458)
        .u32(1)
        .u32(1)
        .name("MQJM09040400", 12)
        .name("CANNED_DATA", 48)
        .raw(&[0, 1, 0, 0])
        .raw(&[0xff; 16])
        .raw(&[0; 12]);
    s.write_all(&frame(Kind::Tsh, seg::INITIAL_DATA, 0, 0, &id.buf))
        .ok()?;
    let answer = read_segment(s)?;
    (answer.get(9) == Some(&seg::INITIAL_DATA)).then_some(())
}

/// An MQCONN on conversation 1, request `req`; its reason, `None` if none came.
pub fn mqconn(s: &mut TcpStream, req: u32) -> Option<u32> {
    let mut conn = Out::new(Order::Big);
    conn.u32(36 + 16 + 120).u32(0).u32(0).u32(0);
    conn.name("", 48)
        .name("raw", 28)
        .i32(28)
        .raw(&[0; 32])
        .u32(0)
        .u32(0);
    s.write_all(&frame(Kind::Multiplexed, seg::MQCONN, 1, req, &conn.buf))
        .ok()?;
    let reply = read_segment(s)?;
    let rc = reply.get(36 + 8..36 + 12)?;
    Some(u32::from_be_bytes(rc.try_into().ok()?))
}

/// An MQ client's login as IBM's Java client makes it: the initial data, the user and
/// password (CAUT), MQCONN; the MQCONN's reason, `None` if the exchange broke off.
pub fn login(s: &mut TcpStream, channel: &str, user: &str, pw: &str) -> Option<u32> {
    initial(s, channel)?;
    let (u, p) = (user.len() as u32, pw.len() as u32);
    let mut caut = Out::new(Order::Big);
    caut.raw(b"CAUT").u32(1).u32(u).u32(p).u32(u).u32(p);
    caut.u32(0).u32(0).raw(user.as_bytes()).raw(pw.as_bytes());
    s.write_all(&frame(
        Kind::Multiplexed,
        seg::CONAUTH_INFO,
        1,
        1,
        &caut.buf,
    ))
    .ok()?;
    read_segment(s)?;
    mqconn(s, 2)
}

/// One segment the queue manager sent: its header's id and length, then the rest.
pub fn read_segment(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = [0u8; 8];
    s.read_exact(&mut head).ok()?;
    let len = u32::from_be_bytes(head[4..8].try_into().ok()?) as usize;
    if !(8..=1 << 20).contains(&len) {
        return None;
    }
    let mut seg = head.to_vec();
    seg.resize(len, 0);
    s.read_exact(&mut seg[8..]).ok()?;
    Some(seg)
}
