//! The network between the instances of a group (docs/ha.md): one TCP connection from each
//! instance to each other, frames of a u32 length and a postcard body.
//!
//! A connection opens with `Hello` (the queue manager's name and the caller's instance id),
//! in a frame of at most [`HELLO_MAX`] bytes: an instance answers nothing else before it, and
//! refuses a caller that is not another instance of its group. Raft's own errors travel as
//! text (openraft retries); the caller sees an unreachable peer as such and backs off.

use crate::Group;
use crate::types::{Ha, NodeId};
use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError, Unreachable};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{BasicNode, Raft};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The largest frame before `Hello` is accepted.
pub(crate) const HELLO_MAX: usize = 4096;
/// The largest frame between instances of a group.
pub(crate) const FRAME_MAX: usize = 512 << 20;
/// Connections an instance serves at once (two peers, and room for their reconnections).
const MAX_CONNS: usize = 16;
/// How long a caller has to say `Hello`.
const HELLO_WAIT: Duration = Duration::from_secs(5);

#[derive(Serialize, Deserialize)]
enum Rpc {
    Hello { qm: String, from: NodeId },
    Append(AppendEntriesRequest<Ha>),
    Vote(VoteRequest<NodeId>),
    Snapshot(InstallSnapshotRequest<Ha>),
}

#[derive(Serialize, Deserialize)]
enum Answer {
    Hello,
    Append(AppendEntriesResponse<NodeId>),
    Vote(VoteResponse<NodeId>),
    Snapshot(InstallSnapshotResponse<NodeId>),
    /// Refused or failed, and why.
    Failed(String),
}

async fn write_frame<T: Serialize>(s: &mut TcpStream, v: &T) -> std::io::Result<()> {
    let body = postcard::to_stdvec(v).map_err(std::io::Error::other)?;
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    s.write_all(&out).await
}

async fn read_frame<T: for<'de> Deserialize<'de>>(
    s: &mut TcpStream,
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

/// Serves the group's other instances on `listener` until the runtime ends.
pub(crate) async fn serve(listener: TcpListener, raft: Raft<Ha>, group: Arc<Group>, qm: String) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNS));
    loop {
        let (mut s, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("high availability: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!(
                "high availability: a connection from {peer} refused: {MAX_CONNS} served"
            );
            continue;
        };
        let (raft, group, qm) = (raft.clone(), group.clone(), qm.clone());
        tokio::spawn(async move {
            let _slot = slot;
            let _ = s.set_nodelay(true);
            let hello =
                tokio::time::timeout(HELLO_WAIT, read_frame::<Rpc>(&mut s, HELLO_MAX)).await;
            let from = match hello {
                Ok(Ok(Rpc::Hello { qm: q, from }))
                    if q == qm && from != group.me() && group.by_id(from).is_some() =>
                {
                    from
                }
                _ => {
                    tracing::warn!(
                        "high availability: a connection from {peer} refused: not an instance of this group"
                    );
                    let _ = write_frame(
                        &mut s,
                        &Answer::Failed("not an instance of this group".into()),
                    )
                    .await;
                    return;
                }
            };
            if write_frame(&mut s, &Answer::Hello).await.is_err() {
                return;
            }
            tracing::debug!("high availability: instance {from} connected from {peer}");
            while let Ok(rpc) = read_frame::<Rpc>(&mut s, FRAME_MAX).await {
                let answer = match rpc {
                    Rpc::Hello { .. } => Answer::Failed("Hello twice".into()),
                    Rpc::Append(r) => raft
                        .append_entries(r)
                        .await
                        .map_or_else(|e| Answer::Failed(e.to_string()), Answer::Append),
                    Rpc::Vote(r) => raft
                        .vote(r)
                        .await
                        .map_or_else(|e| Answer::Failed(e.to_string()), Answer::Vote),
                    Rpc::Snapshot(r) => raft
                        .install_snapshot(r)
                        .await
                        .map_or_else(|e| Answer::Failed(e.to_string()), Answer::Snapshot),
                };
                if write_frame(&mut s, &answer).await.is_err() {
                    break;
                }
            }
        });
    }
}

/// Makes the connections to the other instances.
pub(crate) struct Network {
    pub(crate) group: Arc<Group>,
    pub(crate) qm: String,
}

impl RaftNetworkFactory<Ha> for Network {
    type Network = Peer;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Peer {
        Peer {
            target,
            addr: node.addr.clone(),
            me: self.group.me(),
            qm: self.qm.clone(),
            conn: None,
        }
    }
}

/// The connection to one other instance, made again after any failure.
pub(crate) struct Peer {
    target: NodeId,
    addr: String,
    me: NodeId,
    qm: String,
    conn: Option<TcpStream>,
}

type Rpc_<E> = RPCError<NodeId, BasicNode, RaftError<NodeId, E>>;

impl Peer {
    async fn connect(&mut self) -> Result<TcpStream, std::io::Error> {
        let mut s = TcpStream::connect(&self.addr).await?;
        s.set_nodelay(true)?;
        write_frame(
            &mut s,
            &Rpc::Hello {
                qm: self.qm.clone(),
                from: self.me,
            },
        )
        .await?;
        match read_frame::<Answer>(&mut s, HELLO_MAX).await? {
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
            read_frame::<Answer>(&mut s, FRAME_MAX).await
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

fn unexpected<E: std::error::Error>() -> Rpc_<E> {
    RPCError::Network(NetworkError::new(&std::io::Error::other(
        "an answer of the wrong kind",
    )))
}

impl RaftNetwork<Ha> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<Ha>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, Rpc_<openraft::error::Infallible>> {
        match self.call(Rpc::Append(rpc), option.hard_ttl()).await? {
            Answer::Append(r) => Ok(r),
            _ => Err(unexpected()),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<Ha>,
        option: RPCOption,
    ) -> Result<InstallSnapshotResponse<NodeId>, Rpc_<InstallSnapshotError>> {
        match self.call(Rpc::Snapshot(rpc), option.hard_ttl()).await? {
            Answer::Snapshot(r) => Ok(r),
            _ => Err(unexpected()),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, Rpc_<openraft::error::Infallible>> {
        match self.call(Rpc::Vote(rpc), option.hard_ttl()).await? {
            Answer::Vote(r) => Ok(r),
            _ => Err(unexpected()),
        }
    }
}
