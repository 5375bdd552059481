//! The sending end's connection: TCP to CONNAME, TLS when the channel has SSLCIPH (the queue
//! manager's keystore identity; the partner must be trusted by it), and SSLRKEYC: a TLS 1.3
//! KeyUpdate every that many bytes sent.

#![allow(unsafe_code)]

use sealmq_engine::channels::ChannelDef;
use sealmq_types::sync::lock;
use sealmq_wire::chl::{ChlFrame, read_answer, write_chl};
use sealmq_wire::tls::Shared;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

type Tls = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// `host(port)` as MQ writes it, or `host:port`.
pub fn parse_conname(c: &str) -> Result<String, String> {
    let c = c.trim();
    if let Some((host, rest)) = c.split_once('(') {
        let port = rest.trim_end_matches(')').trim();
        if port.parse::<u16>().is_err() {
            return Err(format!("CONNAME '{c}': '{port}' is not a port"));
        }
        return Ok(format!("{}:{port}", host.trim()));
    }
    if c.rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        return Ok(c.to_string());
    }
    Err(format!(
        "CONNAME '{c}' must be host(port) or host:port (the listener of the partner queue manager)"
    ))
}

/// A CONNAME list, `h1(p1),h2(p2),h3(p3)` as MQ writes it (or `h1:p1,h2:p2`): the addresses
/// of a partner that may be at one of several places (the instances of a replicated queue
/// manager), tried in order.
pub fn parse_connames(c: &str) -> Result<Vec<String>, String> {
    let list: Vec<String> = c
        .split(',')
        .filter(|a| !a.trim().is_empty())
        .map(parse_conname)
        .collect::<Result<_, _>>()?;
    if list.is_empty() {
        return Err("the channel has no CONNAME (the partner's host(port))".into());
    }
    Ok(list)
}

/// How long a partner has to answer the first frame before the next address is tried.
const FIRST_ANSWER: Duration = Duration::from_secs(30);

/// The answer a partner gave to the first frame of a channel.
pub struct Answered {
    pub link: Link,
    pub answer: ChlFrame,
    /// The address that answered (for CHSTATUS's CONNAME).
    pub addr: String,
}

/// Sends `first` and reads the partner's answer. A replica of a replicated queue manager
/// answers every connection with an application's 2059 (docs/ha.md): that is read as a
/// channel refusal with the same reason.
pub fn exchange(link: &mut Link, first: &ChlFrame) -> Result<ChlFrame, String> {
    write_chl(&mut link.w, first)
        .and_then(|_| link.w.flush())
        .map_err(|e| format!("sending: {e}"))?;
    let _ = link.tcp.set_read_timeout(Some(FIRST_ANSWER));
    let got = read_answer(&mut link.r, sealmq_wire::HELLO_MAX);
    let _ = link.tcp.set_read_timeout(None);
    got.map_err(|e| e.to_string())?
        .ok_or_else(|| "the partner closed the connection".to_string())
}

/// Whether an answer means "not here, try the next address": a replica's 2059.
fn not_here(answer: &ChlFrame) -> bool {
    matches!(
        answer,
        ChlFrame::Refused { reason, .. }
            if *reason == sealmq_types::ReasonCode::QMgrNotAvailable.code()
    )
}

impl Link {
    /// Connects to the channel's CONNAME, each address of a list in turn, sends `first` and
    /// returns the first answer that is not a replica's (nor a failed connection). When every
    /// address fails, the error names each one's failure.
    pub fn connect_first(
        def: &ChannelDef,
        keystore_dir: &Path,
        first: &ChlFrame,
    ) -> Result<Answered, String> {
        let addrs = parse_connames(&def.conname)?;
        let mut failed = Vec::new();
        for addr in addrs {
            let mut link = match Link::connect_to(def, keystore_dir, &addr) {
                Ok(l) => l,
                Err(e) => {
                    failed.push(e);
                    continue;
                }
            };
            match exchange(&mut link, first) {
                Ok(answer) if !not_here(&answer) => return Ok(Answered { link, answer, addr }),
                Ok(ChlFrame::Refused { reason, detail }) => {
                    failed.push(format!("{addr} [{reason}]: {detail}"))
                }
                Ok(_) => {}
                Err(e) => failed.push(format!("{addr}: {e}")),
            }
        }
        Err(failed.join("; "))
    }
}

pub struct Link {
    pub r: BufReader<Box<dyn Read + Send>>,
    pub w: BufWriter<Box<dyn Write + Send>>,
    pub tcp: TcpStream,
    tls: Option<Shared<Tls>>,
    rkeyc: u64,
    since_rekey: u64,
    pub rekeys: u64,
    pub suite: String,
    /// What TLS negotiated (SECPROT, SSLGROUP); empty without TLS.
    pub negotiated: sealmq_wire::tls::Agreed,
}

impl Link {
    fn connect_to(def: &ChannelDef, keystore_dir: &Path, addr: &str) -> Result<Link, String> {
        let sa = addr
            .to_socket_addrs()
            .map_err(|e| format!("CONNAME '{addr}': {e}"))?
            .next()
            .ok_or_else(|| format!("CONNAME '{addr}' resolves to no address"))?;
        let tcp = TcpStream::connect_timeout(&sa, Duration::from_secs(10))
            .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
        let _ = tcp.set_nodelay(true);
        keepalive(&tcp, def.kaint);
        let k = tcp
            .try_clone()
            .map_err(|e| format!("connection to {addr}: {e}"))?;
        if def.sslciph.is_empty() {
            let w = tcp
                .try_clone()
                .map_err(|e| format!("connection to {addr}: {e}"))?;
            return Ok(Link {
                r: BufReader::with_capacity(256 * 1024, Box::new(tcp)),
                w: BufWriter::with_capacity(256 * 1024, Box::new(w)),
                tcp: k,
                tls: None,
                rkeyc: 0,
                since_rekey: 0,
                rekeys: 0,
                suite: String::new(),
                negotiated: Default::default(),
            });
        }
        let cfg = sealmq_wire::tls::client_config(keystore_dir, None)
            .map_err(|e| format!("channel {} TLS: {e}", def.name))?;
        let name =
            rustls::pki_types::ServerName::try_from("sealmq.invalid").map_err(|e| e.to_string())?;
        let conn = rustls::ClientConnection::new(cfg, name).map_err(|e| e.to_string())?;
        let mut s = rustls::StreamOwned::new(conn, tcp);
        let _ = s.sock.set_read_timeout(Some(Duration::from_secs(30)));
        while s.conn.is_handshaking() {
            s.conn
                .complete_io(&mut s.sock)
                .map_err(|e| format!("TLS handshake with {addr}: {e}"))?;
        }
        let _ = s.sock.set_read_timeout(None);
        let suite = s
            .conn
            .negotiated_cipher_suite()
            .map(|c| format!("{:?}", c.suite()))
            .unwrap_or_default();
        let dn = sealmq_wire::tls::principal(s.conn.peer_certificates()).unwrap_or_default();
        sealmq_engine::channels::tls_requirements(def, Some((&dn, &suite)), "the partner")?;
        let negotiated = sealmq_wire::tls::negotiated(&s.conn);
        let shared = Shared(std::sync::Arc::new(std::sync::Mutex::new(s)));
        Ok(Link {
            r: BufReader::with_capacity(256 * 1024, Box::new(shared.clone())),
            w: BufWriter::with_capacity(256 * 1024, Box::new(shared.clone())),
            tcp: k,
            tls: Some(shared),
            rkeyc: def.sslrkeyc,
            since_rekey: 0,
            rekeys: 0,
            suite,
            negotiated,
        })
    }

    /// A link over a connection the listener accepted (a requester connected to a server
    /// channel); TLS, if any, was set up by the listener, which tells what it `negotiated`.
    pub fn accepted(
        r: Box<dyn Read + Send>,
        w: Box<dyn Write + Send>,
        tcp: TcpStream,
        negotiated: sealmq_wire::tls::Agreed,
    ) -> Link {
        Link {
            r: BufReader::with_capacity(256 * 1024, r),
            w: BufWriter::with_capacity(256 * 1024, w),
            tcp,
            tls: None,
            rkeyc: 0,
            since_rekey: 0,
            rekeys: 0,
            suite: String::new(),
            negotiated,
        }
    }

    /// Counts bytes sent; past SSLRKEYC, refreshes the TLS traffic keys (TLS 1.3 KeyUpdate).
    pub fn sent(&mut self, n: u64) -> io::Result<()> {
        self.since_rekey += n;
        if self.rkeyc > 0 && self.since_rekey >= self.rkeyc {
            self.since_rekey = 0;
            if let Some(t) = &self.tls {
                self.w.flush()?;
                let mut g = lock(&t.0);
                g.conn
                    .refresh_traffic_keys()
                    .map_err(|e| io::Error::other(format!("TLS key update: {e}")))?;
                g.flush()?;
                self.rekeys += 1;
            }
        }
        Ok(())
    }
}

/// KAINT: TCP keepalive on a channel's socket, probing after `secs` idle seconds (AUTO, -1:
/// on, with the system's interval; 0: off).
pub(crate) fn keepalive(tcp: &TcpStream, secs: i32) {
    use std::os::fd::AsRawFd;
    let fd = tcp.as_raw_fd();
    let on: libc::c_int = i32::from(secs != 0);
    // SAFETY: setsockopt reads one c_int from a live local for a socket this stream owns.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_KEEPALIVE,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        if secs > 0 {
            let idle: libc::c_int = secs;
            libc::setsockopt(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_KEEPIDLE,
                (&idle as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conname_list_is_read_in_both_forms_and_bad_ones_refused() {
        assert_eq!(
            parse_connames("h1(1414), h2(1415),10.0.0.3:1416").unwrap(),
            vec!["h1:1414", "h2:1415", "10.0.0.3:1416"]
        );
        assert_eq!(parse_connames("h(1)").unwrap(), vec!["h:1"]);
        for bad in ["", ",", "h1(x)", "h1", "h1(1414),h2"] {
            assert!(parse_connames(bad).is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_conname_is_read_or_refused_without_panic(s in ".{0,120}") {
            let _ = parse_connames(&s);
        }
    }
}
