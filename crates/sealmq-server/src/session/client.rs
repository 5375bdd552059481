//! What a get that waits watches beside its queue: its client's socket (gone, or sending
//! more) and the connection's end from outside (a stop, a write that failed).

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::Notify;

/// The client side of a request being served.
pub(crate) struct Client<'a, R> {
    rd: &'a mut BufReader<R>,
    ended: &'a Notify,
    /// The client sent more while a get waited: it is alive, and its bytes stay buffered.
    more: bool,
}

/// What happened to the client while a get waited.
pub(super) enum Seen {
    /// It sent more (it is alive; the bytes wait in the buffer for the next request).
    More,
    /// Its socket closed or failed, or the connection was ended.
    Gone,
}

impl<'a, R: AsyncRead + Unpin> Client<'a, R> {
    pub(crate) fn new(rd: &'a mut BufReader<R>, ended: &'a Notify) -> Self {
        Client {
            rd,
            ended,
            more: false,
        }
    }

    /// Whether the client already sent more since the request (no need to watch it).
    pub(super) fn sent_more(&self) -> bool {
        self.more
    }

    /// Completes when the client sends more, goes away, or the connection is ended.
    pub(super) async fn seen(&mut self) -> Seen {
        tokio::select! {
            r = self.rd.fill_buf() => match r {
                Ok([]) | Err(_) => Seen::Gone,
                Ok(_) => {
                    self.more = true;
                    Seen::More
                }
            },
            _ = self.ended.notified() => Seen::Gone,
        }
    }

    /// What is notified when the connection is ended from outside (held apart from the
    /// client, so that a wait may watch it while the socket is not watched).
    pub(super) fn ended(&self) -> &'a Notify {
        self.ended
    }
}
