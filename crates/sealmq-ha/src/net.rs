//! The network between the instances of a group (docs/ha.md): one TLS connection from each
//! instance to each other (rustls, both sides presenting their keystore identity and checking
//! the other's against their own keystore's trust), frames of a u32 length and a postcard body.
//!
//! An instance's certificate names it: subject `CN=<queue manager>,OU=<instance>`. A
//! connection opens with `Hello` (the queue manager's name and the caller's instance id), in a
//! frame of at most [`HELLO_MAX`] bytes: an instance answers nothing else before it, and refuses
//! a caller that is not another instance of its group or whose certificate is not that
//! instance's; a caller likewise refuses an instance whose certificate is not the one it
//! called. Raft's own errors travel as text (openraft retries); the caller sees an unreachable
//! peer as such and backs off.

use crate::Group;
use crate::types::{Ha, NodeId};
use openraft::BasicNode;
use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError, Unreachable};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

type ClientStream = tokio_rustls::client::TlsStream<TcpStream>;

/// The subject an instance's certificate carries.
pub fn instance_dn(qm: &str, instance: &str) -> String {
    sealmq_protect::dn::Dn::parse(&format!("CN={qm},OU={instance}"))
        .map(|d| d.to_string())
        .unwrap_or_default()
}

/// TLS of the group's connections, from this instance's keystore.
#[derive(Clone)]
pub(crate) struct Tls {
    pub(crate) acceptor: TlsAcceptor,
    pub(crate) connector: TlsConnector,
    /// The instance's data keys, for the snapshots it sends and receives.
    pub(crate) seal: Arc<crate::snapwire::SnapSeal>,
}

impl Tls {
    pub(crate) fn load(
        keystore: &std::path::Path,
        qm: &str,
        dse: Option<Arc<sealmq_storage::dse::Dse>>,
    ) -> Result<Tls, String> {
        let server = sealmq_wire::tls::server_config(keystore)
            .map_err(|e| format!("the instance's TLS identity ({}): {e}", keystore.display()))?;
        let client = sealmq_wire::tls::client_config(keystore, Some(qm))
            .map_err(|e| format!("the instance's TLS identity ({}): {e}", keystore.display()))?;
        Ok(Tls {
            acceptor: TlsAcceptor::from(server),
            connector: TlsConnector::from(client),
            seal: Arc::new(crate::snapwire::SnapSeal::new(dse)),
        })
    }
}

pub(crate) fn peer_dn(certs: Option<&[rustls::pki_types::CertificateDer<'_>]>) -> String {
    sealmq_wire::tls::principal(certs).unwrap_or_default()
}

/// The largest frame before `Hello` is accepted.
pub(crate) const HELLO_MAX: usize = 4096;
/// The largest frame between instances of a group.
pub(crate) const FRAME_MAX: usize = 512 << 20;
/// Bytes of a replica's snapshot the active instance fetches at a time (`Rpc::SnapshotChunk`).
pub(crate) const FETCH_CHUNK: usize = 3 << 20;

#[derive(Serialize, Deserialize)]
pub(crate) enum Rpc {
    Hello {
        qm: String,
        from: NodeId,
    },
    Append(AppendEntriesRequest<Ha>),
    Vote(VoteRequest<NodeId>),
    Snapshot(InstallSnapshotRequest<Ha>),
    /// `sealmq ha switch --to` this instance: stand for election until elected (10 s at most).
    Elect,
    /// Stand for no election for this many milliseconds (the third instance, during a switch).
    Hold(u64),
    /// To the active instance: hand the active role to this instance.
    Switch(String),
    /// Are you there?
    Ping,
    /// The active instance's view of the group (`sealmq ha drain` decides on it).
    View,
    /// From the active instance: the description of this instance's current snapshot.
    SnapshotMeta,
    /// From the active instance: bytes of snapshot `id` from `offset` (in clear, inside TLS).
    SnapshotChunk {
        id: String,
        offset: u64,
    },
}

#[derive(Serialize, Deserialize)]
pub(crate) enum Answer {
    Hello,
    Append(AppendEntriesResponse<NodeId>),
    Vote(VoteResponse<NodeId>),
    Snapshot(InstallSnapshotResponse<NodeId>),
    Elected,
    View(crate::Status),
    SnapshotMeta(Option<crate::machine::Meta>),
    /// At most [`FETCH_CHUNK`] bytes; fewer at the end of the file.
    SnapshotChunk(Vec<u8>),
    /// Refused or failed, and why.
    Failed(String),
}

pub(crate) async fn write_frame<T: Serialize, S: AsyncWrite + Unpin>(
    s: &mut S,
    v: &T,
) -> std::io::Result<()> {
    let body = postcard::to_stdvec(v).map_err(std::io::Error::other)?;
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    s.write_all(&out).await?;
    s.flush().await
}

pub(crate) async fn read_frame<T: for<'de> Deserialize<'de>, S: AsyncRead + Unpin>(
    s: &mut S,
    max: usize,
) -> std::io::Result<T> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await?;
    let len = u32::from_le_bytes(len) as usize;
    if len > max {
        return Err(std::io::Error::other(format!(
            "a frame of {len} bytes is larger than {max}"
        )));
    }
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await?;
    postcard::from_bytes(&body).map_err(std::io::Error::other)
}

/// Makes the connections to the other instances.
#[derive(Clone)]
pub(crate) struct Network {
    pub(crate) group: Arc<Group>,
    pub(crate) qm: String,
    pub(crate) tls: Tls,
}

impl RaftNetworkFactory<Ha> for Network {
    type Network = Peer;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Peer {
        Peer {
            target,
            addr: node.addr.clone(),
            me: self.group.me(),
            qm: self.qm.clone(),
            dn: self
                .group
                .by_id(target)
                .map(|i| instance_dn(&self.qm, &i.name))
                .unwrap_or_default(),
            connector: self.tls.connector.clone(),
            seal: self.tls.seal.clone(),
            sending: None,
            conn: None,
            source: self.group.bind.as_ref().and_then(|b| source_ip(&b.addr)),
        }
    }
}

/// The connection to one other instance, made again after any failure.
pub(crate) struct Peer {
    target: NodeId,
    addr: String,
    me: NodeId,
    qm: String,
    /// The subject the target's certificate must carry.
    dn: String,
    connector: TlsConnector,
    /// This instance's data keys, and what seals the snapshot being sent.
    seal: Arc<crate::snapwire::SnapSeal>,
    sending: Option<(u32, [u8; 8])>,
    conn: Option<ClientStream>,
    /// The local address connections leave from (the host of `--ha-bind`), if any.
    source: Option<std::net::IpAddr>,
}

/// The IP of a `HOST:PORT` that names one (an unspecified one, 0.0.0.0, names none).
fn source_ip(addr: &str) -> Option<std::net::IpAddr> {
    let (h, _) = addr.rsplit_once(':')?;
    let ip: std::net::IpAddr = h.trim_matches(['[', ']']).parse().ok()?;
    (!ip.is_unspecified()).then_some(ip)
}

/// A TCP connection to `addr`, leaving from `source` when given.
async fn dial(addr: &str, source: Option<std::net::IpAddr>) -> std::io::Result<TcpStream> {
    let Some(ip) = source else {
        return TcpStream::connect(addr).await;
    };
    let to = tokio::net::lookup_host(addr)
        .await?
        .find(|a| a.is_ipv4() == ip.is_ipv4())
        .ok_or_else(|| std::io::Error::other(format!("{addr} has no address like {ip}")))?;
    let sock = if ip.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    sock.bind(std::net::SocketAddr::new(ip, 0))?;
    sock.connect(to).await
}

type Rpc_<E> = RPCError<NodeId, BasicNode, RaftError<NodeId, E>>;

impl Peer {
    async fn connect(&mut self) -> Result<ClientStream, std::io::Error> {
        let tcp = dial(&self.addr, self.source).await?;
        tcp.set_nodelay(true)?;
        // Instances have no DNS names: the certificate is checked against the keystore's trust
        // and the queue manager's name, then against the instance called, below.
        let name = rustls::pki_types::ServerName::try_from("sealmq-instance")
            .map_err(std::io::Error::other)?;
        let mut s = self.connector.connect(name, tcp).await?;
        let dn = peer_dn(s.get_ref().1.peer_certificates());
        if dn != self.dn {
            return Err(std::io::Error::other(format!(
                "the instance at {} presents '{dn}', not '{}'",
                self.addr, self.dn
            )));
        }
        write_frame(
            &mut s,
            &Rpc::Hello {
                qm: self.qm.clone(),
                from: self.me,
            },
        )
        .await?;
        match read_frame::<Answer, _>(&mut s, HELLO_MAX).await? {
            Answer::Hello => Ok(s),
            Answer::Failed(why) => Err(std::io::Error::other(format!(
                "instance {} refused this one: {why}",
                self.target
            ))),
            _ => Err(std::io::Error::other("an unexpected answer to Hello")),
        }
    }

    async fn call<E: std::error::Error>(
        &mut self,
        rpc: Rpc,
        ttl: Duration,
    ) -> Result<Answer, Rpc_<E>> {
        let mut s = match self.conn.take() {
            Some(s) => s,
            None => match tokio::time::timeout(ttl, self.connect()).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => return Err(RPCError::Unreachable(Unreachable::new(&e))),
                Err(_) => {
                    let e =
                        std::io::Error::other(format!("no connection to {} in time", self.addr));
                    return Err(RPCError::Unreachable(Unreachable::new(&e)));
                }
            },
        };
        let exchange = async {
            write_frame(&mut s, &rpc).await?;
            read_frame::<Answer, _>(&mut s, FRAME_MAX).await
        };
        match tokio::time::timeout(ttl, exchange).await {
            Ok(Ok(Answer::Failed(why))) => {
                self.conn = Some(s);
                Err(RPCError::Network(NetworkError::new(
                    &std::io::Error::other(why),
                )))
            }
            Ok(Ok(a)) => {
                self.conn = Some(s);
                Ok(a)
            }
            Ok(Err(e)) => Err(RPCError::Network(NetworkError::new(&e))),
            Err(_) => Err(RPCError::Network(NetworkError::new(
                &std::io::Error::other(format!("instance {} did not answer in time", self.target)),
            ))),
        }
    }
}

impl Network {
    /// A connection (made at its first call) to instance `target`.
    async fn peer(&self, target: NodeId) -> Result<Peer, String> {
        let addr = self
            .group
            .by_id(target)
            .map(|i| i.addr.clone())
            .ok_or("no such instance")?;
        Ok(self.clone().new_client(target, &BasicNode::new(addr)).await)
    }

    /// One request to another instance, on a connection of its own.
    async fn ask(&self, target: NodeId, rpc: Rpc) -> Result<Answer, String> {
        let mut p = self.peer(target).await?;
        p.call::<openraft::error::Infallible>(rpc, Duration::from_secs(5))
            .await
            .map_err(|e| e.to_string())
    }

    /// Asks instance `target` to stand for election.
    pub(crate) async fn elect(&self, target: NodeId) -> Result<(), String> {
        self.done(target, Rpc::Elect).await
    }

    /// Asks instance `target` to stand for no election for `ms` milliseconds.
    pub(crate) async fn hold(&self, target: NodeId, ms: u64) -> Result<(), String> {
        self.done(target, Rpc::Hold(ms)).await
    }

    /// Asks the active instance `target` to hand its role to `to`.
    pub(crate) async fn switch(&self, target: NodeId, to: &str) -> Result<(), String> {
        self.done(target, Rpc::Switch(to.to_string())).await
    }

    /// Whether instance `target` answers now.
    pub(crate) async fn ping(&self, target: NodeId) -> bool {
        tokio::time::timeout(Duration::from_secs(2), self.done(target, Rpc::Ping))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    async fn done(&self, target: NodeId, rpc: Rpc) -> Result<(), String> {
        match self.ask(target, rpc).await? {
            Answer::Elected => Ok(()),
            Answer::Failed(e) => Err(e),
            _ => Err("an unexpected answer".into()),
        }
    }

    /// The description of instance `target`'s current snapshot, if it has one.
    pub(crate) async fn snapshot_meta(
        &self,
        target: NodeId,
    ) -> Result<Option<crate::machine::Meta>, String> {
        match self.ask(target, Rpc::SnapshotMeta).await? {
            Answer::SnapshotMeta(m) => Ok(m),
            _ => Err("an unexpected answer".into()),
        }
    }

    /// Fetches instance `target`'s snapshot `id` on one connection, each chunk handed to
    /// `sink` with its offset (in clear: the sink seals it); returns the bytes fetched.
    pub(crate) async fn fetch_snapshot(
        &self,
        target: NodeId,
        id: &str,
        mut sink: impl FnMut(u64, Vec<u8>) -> Result<(), String>,
    ) -> Result<u64, String> {
        let mut p = self.peer(target).await?;
        let mut offset = 0u64;
        loop {
            let rpc = Rpc::SnapshotChunk {
                id: id.to_string(),
                offset,
            };
            let data = match p
                .call::<openraft::error::Infallible>(rpc, Duration::from_secs(30))
                .await
                .map_err(|e| e.to_string())?
            {
                Answer::SnapshotChunk(d) => d,
                _ => return Err("an unexpected answer".into()),
            };
            let (n, last) = (data.len() as u64, data.len() < FETCH_CHUNK);
            sink(offset, data)?;
            offset += n;
            if last {
                return Ok(offset);
            }
        }
    }

    /// The view of the group that instance `target` has as the active one.
    pub(crate) async fn view(&self, target: NodeId) -> Result<crate::Status, String> {
        match self.ask(target, Rpc::View).await? {
            Answer::View(s) => Ok(s),
            _ => Err("an unexpected answer".into()),
        }
    }
}

fn unexpected<E: std::error::Error>() -> Rpc_<E> {
    RPCError::Network(NetworkError::new(&std::io::Error::other(
        "an answer of the wrong kind",
    )))
}

/// A Raft request to the peer, answered by the answer of its kind.
macro_rules! raft_rpc {
    ($name:ident, $req:ty, $resp:ty, $err:ty, $rpc:path, $answer:path) => {
        async fn $name(&mut self, rpc: $req, option: RPCOption) -> Result<$resp, Rpc_<$err>> {
            match self.call($rpc(rpc), option.hard_ttl()).await? {
                $answer(r) => Ok(r),
                _ => Err(unexpected()),
            }
        }
    };
}

impl RaftNetwork<Ha> for Peer {
    raft_rpc!(
        append_entries,
        AppendEntriesRequest<Ha>,
        AppendEntriesResponse<NodeId>,
        openraft::error::Infallible,
        Rpc::Append,
        Answer::Append
    );
    /// A chunk of this instance's snapshot, opened for the wire (the receiver seals it
    /// under its own key).
    async fn install_snapshot(
        &mut self,
        mut rpc: InstallSnapshotRequest<Ha>,
        option: RPCOption,
    ) -> Result<InstallSnapshotResponse<NodeId>, Rpc_<InstallSnapshotError>> {
        let mut sending = self.sending;
        if let Err(e) = self.seal.outgoing(&mut sending, rpc.offset, &mut rpc.data) {
            return Err(RPCError::Network(NetworkError::new(
                &std::io::Error::other(e),
            )));
        }
        self.sending = sending;
        match self.call(Rpc::Snapshot(rpc), option.hard_ttl()).await? {
            Answer::Snapshot(r) => Ok(r),
            _ => Err(unexpected()),
        }
    }
    raft_rpc!(
        vote,
        VoteRequest<NodeId>,
        VoteResponse<NodeId>,
        openraft::error::Infallible,
        Rpc::Vote,
        Answer::Vote
    );
}
