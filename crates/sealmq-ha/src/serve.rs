//! The serving side of the replication port: another instance's request (Raft's votes, appends
//! and snapshots; a switch, a view, a held election) answered by this instance, over mutual TLS
//! with each peer's certificate checked against the group. The asking side is `net`.

use crate::Group;
use crate::net::{
    Answer, FETCH_CHUNK, FRAME_MAX, HELLO_MAX, Rpc, Tls, instance_dn, peer_dn, read_frame,
    write_frame,
};
use crate::types::Ha;
use openraft::Raft;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// Connections an instance serves at once (two peers, and room for their reconnections).
const MAX_CONNS: usize = 32;
/// Connections from one address at once (the instances of a group on one host share one).
const PER_ADDRESS: usize = 8;
/// How long a caller has to say `Hello`.
const HELLO_WAIT: Duration = Duration::from_secs(5);

/// What an instance's view of the group is, when it is active.
pub(crate) type ViewFn = Arc<dyn Fn() -> Option<crate::Status> + Send + Sync>;

/// Stands for election every 100 ms until elected, for 10 s at most: the others vote once the
/// active instance's lease on them has run out.
pub(crate) fn stand_for_election(raft: Raft<Ha>) {
    tokio::spawn(async move {
        for _ in 0..100 {
            let m = raft.metrics().borrow().clone();
            if m.state == openraft::ServerState::Leader {
                return;
            }
            let _ = raft.trigger().elect().await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}

/// Stands for no election for `d` (it still votes).
pub(crate) fn hold_elections(raft: &Raft<Ha>, d: Duration) {
    raft.runtime_config().elect(false);
    let raft = raft.clone();
    tokio::spawn(async move {
        tokio::time::sleep(d).await;
        raft.runtime_config().elect(true);
    });
}

/// What the instance serves the others with.
pub(crate) struct Served {
    pub(crate) raft: Raft<Ha>,
    pub(crate) group: Arc<Group>,
    pub(crate) qm: String,
    pub(crate) tls: Tls,
    pub(crate) view: ViewFn,
    pub(crate) handover: Arc<crate::switch::Handover>,
    pub(crate) machine: crate::machine::Machine,
}

/// Serves the group's other instances on `listener` until the runtime ends.
pub(crate) async fn serve(listener: TcpListener, served: Served) {
    let served = Arc::new(served);
    let table = sealmq_types::slots::Table::new("high availability", MAX_CONNS, PER_ADDRESS);
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("high availability: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Until its Hello proves it another instance, a connection may be closed to make room
        // (issue 42: sockets that never spoke held every place and delayed failover).
        let evicted = Arc::new(tokio::sync::Notify::new());
        let closer = evicted.clone();
        let (slot, line) = table.admit(peer.ip(), Box::new(move || closer.notify_one()));
        if let Some(line) = line {
            tracing::warn!("{line}");
        }
        let Some(slot) = slot else {
            continue;
        };
        let served = served.clone();
        tokio::spawn(async move {
            let state = slot.state.clone();
            let Some((mut s, from)) = served.greet(tcp, peer, &evicted).await else {
                return;
            };
            let _slot = slot;
            // Another instance: its place is no longer given to a newcomer.
            state.set_busy(true);
            if write_frame(&mut s, &Answer::Hello).await.is_err() {
                return;
            }
            tracing::debug!("high availability: instance {from} connected from {peer}");
            while let Ok(rpc) = read_frame::<Rpc, _>(&mut s, FRAME_MAX).await {
                let answer = served.answer(from, rpc).await;
                if write_frame(&mut s, &answer).await.is_err() {
                    break;
                }
            }
        });
    }
}

/// An instance's connection once its TLS handshake and Hello are done.
type Greeted = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;

impl Served {
    /// A connection's TLS handshake and Hello, each within [`HELLO_WAIT`] (`evicted`: the
    /// connection was closed to make room first): the instance it comes from, when it is
    /// another instance of this group by name and certificate; anything else is refused.
    async fn greet(
        &self,
        tcp: tokio::net::TcpStream,
        peer: std::net::SocketAddr,
        evicted: &tokio::sync::Notify,
    ) -> Option<(Greeted, u64)> {
        let greeted = async {
            let _ = tcp.set_nodelay(true);
            match tokio::time::timeout(HELLO_WAIT, self.tls.acceptor.accept(tcp)).await {
                Ok(Ok(s)) => Some(s),
                Ok(Err(e)) => {
                    tracing::debug!(
                        "high availability: a connection from {peer} refused: TLS: {e}"
                    );
                    None
                }
                Err(_) => None,
            }
        };
        let mut s = tokio::select! {
            s = greeted => s?,
            _ = evicted.notified() => return None,
        };
        let dn = peer_dn(s.get_ref().1.peer_certificates());
        let hello = tokio::select! {
            h = tokio::time::timeout(HELLO_WAIT, read_frame::<Rpc, _>(&mut s, HELLO_MAX)) => h,
            _ = evicted.notified() => return None,
        };
        match hello {
            Ok(Ok(Rpc::Hello { qm: q, from }))
                if q == self.qm
                    && from != self.group.me()
                    && self
                        .group
                        .by_id(from)
                        .is_some_and(|i| dn == instance_dn(&self.qm, &i.name)) =>
            {
                Some((s, from))
            }
            _ => {
                tracing::warn!(
                    "high availability: a connection from {peer} ({dn}) refused: not another \
                     instance of this group"
                );
                let refusal = Answer::Failed("not an instance of this group".into());
                let _ = write_frame(&mut s, &refusal).await;
                None
            }
        }
    }

    /// The answer to one request of instance `from`.
    async fn answer(&self, from: u64, rpc: Rpc) -> Answer {
        let raft = &self.raft;
        match rpc {
            Rpc::Hello { .. } => Answer::Failed("Hello twice".into()),
            Rpc::Append(r) => raft
                .append_entries(r)
                .await
                .map_or_else(|e| Answer::Failed(e.to_string()), Answer::Append),
            Rpc::Vote(r) => raft
                .vote(r)
                .await
                .map_or_else(|e| Answer::Failed(e.to_string()), Answer::Vote),
            Rpc::Snapshot(mut r) => {
                match self
                    .tls
                    .seal
                    .incoming(&r.meta.snapshot_id, r.offset, &mut r.data)
                {
                    Ok(()) => raft
                        .install_snapshot(r)
                        .await
                        .map_or_else(|e| Answer::Failed(e.to_string()), Answer::Snapshot),
                    Err(e) => Answer::Failed(e),
                }
            }
            Rpc::Elect => {
                tracing::info!(
                    "high availability: instance {from} asks this one to stand for election"
                );
                stand_for_election(raft.clone());
                Answer::Elected
            }
            Rpc::Hold(ms) => {
                hold_elections(raft, Duration::from_millis(ms.min(10_000)));
                Answer::Elected
            }
            Rpc::Switch(to) => self
                .handover
                .run(&to)
                .await
                .map_or_else(Answer::Failed, |()| Answer::Elected),
            Rpc::View => match (self.view)() {
                Some(v) => Answer::View(self.handover.live(v).await),
                None => Answer::Failed("this instance is not the active one".into()),
            },
            Rpc::Ping => Answer::Elected,
            Rpc::SnapshotMeta => Answer::SnapshotMeta(self.machine.snapshot_meta()),
            Rpc::SnapshotChunk { id, offset } => {
                snapshot_chunk(&self.machine, &self.tls.seal, id, offset).await
            }
        }
    }
}

/// A chunk of this instance's current snapshot, opened for the wire (the active instance
/// seals it under its own key).
async fn snapshot_chunk(
    machine: &crate::machine::Machine,
    seal: &Arc<crate::snapwire::SnapSeal>,
    id: String,
    offset: u64,
) -> Answer {
    let (machine, seal) = (machine.clone(), seal.clone());
    let read = tokio::task::spawn_blocking(move || {
        let (mut data, mut sealing) = machine.read_snapshot(&id, offset, FETCH_CHUNK)?;
        seal.outgoing(&mut sealing, offset, &mut data)?;
        Ok::<_, String>(data)
    })
    .await;
    match read {
        Ok(Ok(data)) => Answer::SnapshotChunk(data),
        Ok(Err(e)) => Answer::Failed(e),
        Err(e) => Answer::Failed(format!("reading the snapshot failed: {e}")),
    }
}
