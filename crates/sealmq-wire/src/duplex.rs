//! One TLS connection read by one thread while others write to it (issue 27): asynchronous
//! consume pushes messages while the connection's reader waits for the next request.
//!
//! [`crate::tls::Shared`] holds its lock through a whole read, waiting for the peer inside it:
//! a writer then waits for the peer's next request. Here the lock is held only to move bytes
//! through rustls; waiting for the peer's bytes happens outside it (a `peek` on the socket,
//! which honours the socket's read timeout as a plain read does).

use rustls::{ConnectionCommon, SideData};
use sealmq_types::sync::lock;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::ops::DerefMut;
use std::sync::{Arc, Mutex};

/// A TLS connection (after its handshake) and its socket, shared by a reader and writers.
pub struct Duplex<C> {
    conn: Arc<Mutex<C>>,
    sock: TcpStream,
}

impl<C> Duplex<C> {
    /// The connection from a finished handshake (`rustls::StreamOwned`'s parts).
    pub fn new(conn: C, sock: TcpStream) -> Duplex<C> {
        Duplex {
            conn: Arc::new(Mutex::new(conn)),
            sock,
        }
    }

    /// Another handle on the same connection (its socket cloned).
    pub fn handle(&self) -> std::io::Result<Duplex<C>> {
        Ok(Duplex {
            conn: self.conn.clone(),
            sock: self.sock.try_clone()?,
        })
    }

    /// Runs `f` on the rustls connection (peer certificates, cipher suite).
    pub fn with<T>(&self, f: impl FnOnce(&C) -> T) -> T {
        f(&lock(&self.conn))
    }
}

fn flush_tls<D: SideData>(c: &mut ConnectionCommon<D>, sock: &TcpStream) -> std::io::Result<()> {
    let mut s = sock;
    while c.wants_write() {
        c.write_tls(&mut s)?;
    }
    Ok(())
}

impl<C, D> Read for Duplex<C>
where
    C: DerefMut<Target = ConnectionCommon<D>>,
    D: SideData,
{
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            {
                let mut c = lock(&self.conn);
                match c.reader().read(buf) {
                    Ok(n) => return Ok(n),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                flush_tls(&mut c, &self.sock)?;
            }
            // Wait for the peer without the lock (writers go on meanwhile). The socket's
            // read timeout applies: its error goes to the caller as a plain read's would.
            let mut probe = [0u8; 1];
            let peeked = self.sock.peek(&mut probe)?;
            let mut c = lock(&self.conn);
            if peeked == 0 {
                // The peer closed: rustls says whether it did so cleanly.
                let mut s = &self.sock;
                let _ = c.read_tls(&mut s);
            } else {
                // Bytes are there: this read returns at once with what has arrived.
                let mut s = &self.sock;
                match c.read_tls(&mut s) {
                    Ok(_) => {}
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
            }
            if let Err(e) = c.process_new_packets() {
                // Send the alert rustls prepared, then fail.
                let _ = flush_tls(&mut c, &self.sock);
                return Err(std::io::Error::new(ErrorKind::InvalidData, e));
            }
            if peeked == 0 {
                return match c.reader().read(buf) {
                    Ok(n) => Ok(n),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(0),
                    Err(e) => Err(e),
                };
            }
        }
    }
}

impl<C, D> Write for Duplex<C>
where
    C: DerefMut<Target = ConnectionCommon<D>>,
    D: SideData,
{
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut c = lock(&self.conn);
        let n = c.writer().write(buf)?;
        flush_tls(&mut c, &self.sock)?;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let mut c = lock(&self.conn);
        c.writer().flush()?;
        flush_tls(&mut c, &self.sock)
    }
}
