//! Async use of the client: the same calls, run on tokio's blocking pool so an async
//! application never blocks its executor (a get with a long wait included). A client made
//! with [`AsyncClient::connect_reconnecting`] reconnects by itself ([`crate::reconnect`]),
//! its consumers included.

use crate::reconnect::{Connector, Following, Reconnecting};
use crate::{Client, ClientError, Result};
use sealmq_mqi::{GetOptions, OpenOptions};
use sealmq_mqi::{Got, Md};
use sealmq_types::ReasonCode;
use sealmq_types::sync::lock;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// An async handle on a [`Client`]; clones share the one connection (calls take turns).
#[derive(Clone)]
pub struct AsyncClient {
    inner: Arc<Mutex<Reconnecting>>,
}

fn joined(e: tokio::task::JoinError) -> ClientError {
    ClientError {
        reason: ReasonCode::UnexpectedError,
        detail: format!("client task failed: {e}"),
    }
}

impl AsyncClient {
    async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Reconnecting) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || f(&mut lock(&inner)))
            .await
            .map_err(joined)?
    }

    /// Connects through the queue manager's local socket.
    pub async fn connect_local(qm_dir: PathBuf, appl: String) -> Result<AsyncClient> {
        let c = tokio::task::spawn_blocking(move || Client::connect_local(&qm_dir, &appl))
            .await
            .map_err(joined)??;
        Ok(AsyncClient::from(c))
    }

    /// Connects over TCP.
    pub async fn connect_tcp(addr: String, appl: String) -> Result<AsyncClient> {
        let c = tokio::task::spawn_blocking(move || Client::connect_tcp(&addr, &appl))
            .await
            .map_err(joined)??;
        Ok(AsyncClient::from(c))
    }

    /// Connects with `connect`, and again with it whenever the connection is lost
    /// (MQCNO_RECONNECT): handles are reopened and consumers restarted; see
    /// [`crate::reconnect`] for what calls answer when it happens.
    pub async fn connect_reconnecting(connect: Connector) -> Result<AsyncClient> {
        let r = tokio::task::spawn_blocking(move || Reconnecting::connect(connect))
            .await
            .map_err(joined)??;
        Ok(AsyncClient {
            inner: Arc::new(Mutex::new(r)),
        })
    }

    /// How many times the connection was made again.
    pub fn reconnects(&self) -> u64 {
        lock(&self.inner).reconnects()
    }

    pub async fn open(&self, name: &str, opts: OpenOptions) -> Result<(u32, String)> {
        let name = name.to_string();
        self.run(move |c| c.open(&name, opts)).await
    }

    pub async fn put(&self, hobj: u32, md: Md, payload: Vec<u8>, syncpoint: bool) -> Result<Md> {
        self.run(move |c| {
            let mut md = md;
            c.put(hobj, &mut md, &payload, syncpoint).map(|_| md)
        })
        .await
    }

    pub async fn put1(&self, name: &str, md: Md, payload: Vec<u8>, syncpoint: bool) -> Result<Md> {
        let name = name.to_string();
        self.run(move |c| {
            let mut md = md;
            c.put1(&name, &mut md, &payload, syncpoint).map(|_| md)
        })
        .await
    }

    pub async fn get(&self, hobj: u32, gmo: GetOptions) -> Result<Got> {
        self.run(move |c| c.get(hobj, &gmo)).await
    }

    pub async fn commit(&self) -> Result<()> {
        self.run(|c| c.commit()).await
    }

    pub async fn backout(&self) -> Result<()> {
        self.run(|c| c.backout()).await
    }

    pub async fn close(&self, hobj: u32) -> Result<()> {
        self.run(move |c| c.close(hobj)).await
    }

    /// Publishes on `topic` (`retain`: MQPMO_RETAIN); returns the descriptor as filled.
    pub async fn publish(
        &self,
        topic: &str,
        md: Md,
        payload: Vec<u8>,
        syncpoint: bool,
        retain: bool,
    ) -> Result<Md> {
        let topic = topic.to_string();
        self.run(move |c| {
            let mut md = md;
            c.publish(&topic, &mut md, &payload, syncpoint, retain)
                .map(|_| md)
        })
        .await
    }

    /// MQOPEN of a topic to publish: puts through the handle are publications.
    pub async fn open_topic(&self, object: &str, topic: &str) -> Result<(u32, String)> {
        let (object, topic) = (object.to_string(), topic.to_string());
        self.run(move |c| c.open_topic(&object, &topic)).await
    }

    /// MQSUB with a managed queue: the handle to get (or consume) publications through.
    pub async fn subscribe(&self, s: crate::pubsub::Subscription) -> Result<(u32, String)> {
        self.run(move |c| c.subscribe(&s)).await
    }

    /// Ends subscription `name`.
    pub async fn unsubscribe(&self, name: &str) -> Result<()> {
        let name = name.to_string();
        self.run(move |c| c.unsubscribe(&name)).await
    }
}

/// An asynchronous consumer for tokio applications ([`AsyncClient::consume`]): the messages
/// the queue manager pushes, one `next().await` at a time, with the semantics of
/// [`crate::Consumer`] (under syncpoint a message counts as processed at the next call).
pub struct ConsumerStream {
    inner: Arc<Mutex<Option<Following>>>,
    conn: Arc<Mutex<Reconnecting>>,
}

impl From<Client> for AsyncClient {
    /// An async handle on a connection made already (it does not reconnect).
    fn from(c: Client) -> AsyncClient {
        AsyncClient {
            inner: Arc::new(Mutex::new(Reconnecting::plain(c))),
        }
    }
}

impl AsyncClient {
    /// Starts asynchronous consume of `hobj` ([`Client::consume`]); on a reconnecting client
    /// it follows the connection ([`Following`]).
    pub async fn consume(&self, hobj: u32, opts: crate::ConsumeOptions) -> Result<ConsumerStream> {
        let c = self.run(move |c| c.consume_following(hobj, opts)).await?;
        Ok(ConsumerStream {
            inner: Arc::new(Mutex::new(Some(c))),
            conn: self.inner.clone(),
        })
    }
}

impl ConsumerStream {
    /// The next message, waiting up to `wait`; `None` when none came.
    pub async fn next(&mut self, wait: std::time::Duration) -> Result<Option<Got>> {
        let (inner, conn) = (self.inner.clone(), self.conn.clone());
        tokio::task::spawn_blocking(move || match lock(&inner).as_mut() {
            Some(c) => c.next_by(wait, |f| f(&mut lock(&conn))),
            None => Ok(None),
        })
        .await
        .map_err(joined)?
    }

    /// Stops the consumer ([`crate::Consumer::stop`]).
    pub async fn stop(self) -> Result<Vec<Got>> {
        let (inner, conn) = (self.inner.clone(), self.conn.clone());
        tokio::task::spawn_blocking(move || match lock(&inner).take() {
            Some(mut c) => c.stop(&mut lock(&conn)),
            None => Ok(Vec::new()),
        })
        .await
        .map_err(joined)?
    }
}
