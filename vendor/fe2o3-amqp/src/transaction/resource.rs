//! sealmq patch: the application as the transactional resource.
//!
//! Without a resource, the session keeps a transaction's posted transfers and retiring
//! dispositions and hands them to the links at a commit discharge; the links cannot tell them
//! from work outside a transaction, nor wait with the discharge's answer until the work is
//! done. A [`TxnResource`] set on the [`ControlLinkAcceptor`](super::coordinator::ControlLinkAcceptor)
//! is told, at a commit, which deliveries belong to the transaction before they are handed to
//! the links, and the discharge is answered only when it says the work is done. At a rollback
//! (with or without a resource) the deliveries the transaction retired are handed back to their
//! links as `modified` with `delivery-failed` (the resource redelivers them); its posted
//! transfers are dropped.

use std::{fmt::Debug, future::Future, pin::Pin};

use fe2o3_amqp_types::{
    definitions::{DeliveryNumber, DeliveryTag},
    transaction::TransactionId,
};

/// The work of a transaction being committed, by delivery.
#[derive(Debug, Default, Clone)]
pub struct CommitWork {
    /// Delivery ids of the transfers the controller posted in the transaction (deliveries to
    /// the application's receiving links).
    pub posted: Vec<DeliveryNumber>,
    /// Link name and delivery tag of each delivery the controller accepted in the transaction
    /// (deliveries from the application's sending links).
    pub accepted: Vec<(String, DeliveryTag)>,
}

/// A future a resource answers a discharge with: `Err` rolls the transaction back, with the
/// text as the transaction error's description.
pub type DischargeFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// The application's part in local transactions.
pub trait TxnResource: Send + Sync + Debug + 'static {
    /// A transaction is about to be committed: its work, before the session hands it to the
    /// links. Called on the session's task: must not block.
    fn prepare(&self, txn_id: &TransactionId, work: CommitWork);

    /// The session has handed the transaction's work to the links (`commit`) or dropped it
    /// (rollback). The discharge is answered when the future ends.
    fn discharge(&self, txn_id: TransactionId, commit: bool) -> DischargeFuture;
}
