//! What the queue manager tells its operator: statistics and accounting records (`stats`,
//! `acct`, MQ's STATMQI/ACCTMQI), the Prometheus endpoint in sealmq's names and IBM's
//! (`metrics`), and the rotated error log (`errlog`).

pub(crate) mod acct;
pub mod errlog;
pub mod metrics;
pub mod stats;
