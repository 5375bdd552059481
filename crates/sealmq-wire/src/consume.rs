//! Asynchronous consume (wire version 2, docs/wire.md "Asynchronous consume"): the queue
//! manager pushes messages of a handle to the client within a window the client grants, in
//! batches, each got in a unit of work of its own that the client settles (commits or backs
//! out) — MQ's MQCB/MQCTL, and read-ahead.

use sealmq_mqi::Md;
use sealmq_types::coded_struct;

/// How a consumer's batches are settled.
pub mod mode {
    /// Outside a unit of work: the client library settles each batch as soon as it has all
    /// of it, and hands a persistent message to the application only once its batch is
    /// settled (its removal durable). Read-ahead uses this mode.
    pub const AUTO: u8 = 0;
    /// Under syncpoint: the application settles a batch once it has processed it.
    pub const SYNCPOINT: u8 = 1;
    /// Browse: messages are copied, nothing is settled.
    pub const BROWSE: u8 = 2;
    /// Read-ahead of a client's gets outside a unit of work (MQ's DEFREADA/READAHEAD): as
    /// AUTO, but a persistent message ends its batch, so the client can commit the batch
    /// once its application reaches it, never sooner.
    pub const READAHEAD: u8 = 3;
}

/// Starts pushing the messages of a handle (request 16, answered Ok or Err).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumeReq {
    pub hobj: u32,
    /// The client's name for this consumer: deliveries carry it.
    pub tag: u32,
    /// [`mode`].
    pub mode: u8,
    /// Messages pushed and not yet released by the client (credit), at least 1.
    pub window: u32,
    /// Largest batch, messages (at least 1).
    pub batch: u32,
    /// A batch ends this many milliseconds after its first message, however small.
    pub batch_ms: u32,
    pub match_msg_id: Option<[u8; 24]>,
    pub match_correl_id: Option<[u8; 24]>,
}

/// One pushed message (response 136, request id 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub tag: u32,
    pub batch: u32,
    pub md: Md,
    pub payload: Vec<u8>,
}

coded_struct!(ConsumeReq {
    hobj,
    tag,
    mode,
    window,
    batch,
    batch_ms,
    match_msg_id,
    match_correl_id,
});

coded_struct!(Delivery {
    tag,
    batch,
    md,
    payload
});
