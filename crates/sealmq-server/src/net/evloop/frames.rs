//! Frames read without a thread: a request's bytes are gathered by the event loop and handed
//! whole to the wire decoder (`sealmq-wire`), which checks them as it checks a blocking read.

use sealmq_wire::WireError;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

/// How a wait for a frame's first byte ended.
pub(crate) enum Waited {
    /// A byte is here.
    Ready,
    /// The peer closed.
    Closed,
    /// The connection failed.
    Failed,
}

/// Waits until a frame's first byte is readable.
pub(crate) async fn first_byte<R: AsyncRead + Unpin>(r: &mut BufReader<R>) -> Waited {
    match r.fill_buf().await {
        Ok([]) => Waited::Closed,
        Ok(_) => Waited::Ready,
        Err(_) => Waited::Failed,
    }
}

/// Reads one whole frame (`Ok(None)`: a clean end of stream): its length first, checked
/// against `max` before anything is allocated, then the rest, which must come within `rest`.
pub(crate) async fn read<R: AsyncRead + Unpin>(
    r: &mut BufReader<R>,
    max: usize,
    rest: Duration,
) -> Result<Option<Vec<u8>>, WireError> {
    match read_len(r, rest).await? {
        Some(len) => read_after(r, len, max, rest).await.map(Some),
        None => Ok(None),
    }
}

/// A frame's four length bytes (`Ok(None)`: a clean end of stream): the first may take as
/// long as the caller allows, the others must come within `rest`. MQ's client protocol is
/// told apart from the native one by these bytes (a segment header's id).
pub(crate) async fn read_len<R: AsyncRead + Unpin>(
    r: &mut BufReader<R>,
    rest: Duration,
) -> Result<Option<[u8; 4]>, WireError> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got == 0 {
        match r.read(&mut len).await? {
            0 => return Ok(None),
            n => got = n,
        }
    }
    let gather = async {
        while got < 4 {
            match r.read(&mut len[got..]).await? {
                0 => return Err(eof(got, 4)),
                n => got += n,
            }
        }
        Ok(len)
    };
    match super::out::within(rest, gather).await {
        Some(r) => r.map(Some),
        None => Err(timed_out()),
    }
}

/// The rest of a frame whose length bytes were read.
pub(crate) async fn read_after<R: AsyncRead + Unpin>(
    r: &mut BufReader<R>,
    len: [u8; 4],
    max: usize,
    rest: Duration,
) -> Result<Vec<u8>, WireError> {
    let gather = async {
        let n = u32::from_le_bytes(len) as usize;
        if n < 5 || n > max {
            // The decoder words the refusal (too short, or past the negotiated size).
            return Err(match sealmq_wire::read_request(&mut &len[..], max) {
                Err(e) => e,
                Ok(_) => WireError::Protocol(format!("frame length {n} refused")),
            });
        }
        // Grown as bytes arrive, not allocated from the length a peer claims.
        let mut buf = Vec::with_capacity((4 + n).min(64 * 1024));
        buf.extend_from_slice(&len);
        (&mut *r).take(n as u64).read_to_end(&mut buf).await?;
        if buf.len() != 4 + n {
            return Err(eof(buf.len() - 4, n));
        }
        Ok(buf)
    };
    match super::out::within(rest, gather).await {
        Some(r) => r,
        None => Err(timed_out()),
    }
}

fn timed_out() -> WireError {
    WireError::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "the rest of the frame did not arrive in time",
    ))
}

fn eof(got: usize, want: usize) -> WireError {
    WireError::Io(std::io::Error::new(
        std::io::ErrorKind::UnexpectedEof,
        format!("the frame ended after {got} of {want} bytes"),
    ))
}

/// A response as the bytes of its frame.
pub(crate) fn encode(id: u32, resp: &sealmq_wire::Response) -> Vec<u8> {
    let mut v = Vec::with_capacity(256 + resp_payload_len(resp));
    // Writing to a Vec cannot fail short of a frame over 4 GiB, which no response is.
    let _ = sealmq_wire::write_response_unflushed(&mut v, id, resp);
    v
}

/// The payload a response carries (a message got), to size its frame once.
fn resp_payload_len(resp: &sealmq_wire::Response) -> usize {
    match resp {
        sealmq_wire::Response::Got { payload, .. } => payload.len(),
        _ => 0,
    }
}
