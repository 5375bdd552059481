//! Who a connection is and what it may do: the authentication gate in front of every
//! listener (`authgate`), CONNAUTH's user ids and passwords (`connauth`, checked by PAM or the
//! queue manager's own password file), `pam`, the files and sockets private to the queue
//! manager's user (`perms`), the security settings every listener reads (`security`) and the
//! security events written to the error log (`events`).

pub mod authgate;
pub mod connauth;
pub mod events;
mod pam;
pub mod perms;
pub mod security;
