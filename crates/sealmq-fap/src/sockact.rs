//! Flows of the socket rather than of one conversation (docs/fap.md, "A further conversation on
//! the socket"): socket actions (20 bytes: conversation id, request id, type, two parameters)
//! and the STATUS_DATA answer to a CONAUTH_INFO.

use crate::bytes::{Fields, Order, Out};
use crate::{Result, err};

/// Socket action types, as IBM's Java client names them in its trace.
pub mod kind {
    pub const START_CONV: u32 = 1;
    pub const END_CONV: u32 = 2;
    pub const STOP_QUIESCE: u32 = 3;
    pub const PAUSE_DATA_SENDS: u32 = 4;
    pub const DATA_SENDS_PAUSED: u32 = 5;
    pub const RESUME_DATA_SENDS: u32 = 6;
    pub const QM_QUIESCE: u32 = 7;
    /// The queue manager's answer to START_CONV, on `TSHM` for the new conversation.
    pub const ACCEPT_CONV: u32 = 8;
    pub const RECONNECT_CLIENTS: u32 = 9;
}

/// A socket action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketAction {
    pub conv: u32,
    pub req: u32,
    pub kind: u32,
    pub parm1: u32,
    pub parm2: u32,
}

/// The size of a socket action's body.
pub const LEN: usize = 20;

impl SocketAction {
    pub fn parse(body: &[u8], order: Order) -> Result<SocketAction> {
        if body.len() < LEN {
            return err(format!(
                "a socket action of {} bytes is shorter than {LEN}",
                body.len()
            ));
        }
        let f = Fields::new(body, order);
        Ok(SocketAction {
            conv: f.u32(0)?,
            req: f.u32(4)?,
            kind: f.u32(8)?,
            parm1: f.u32(12)?,
            parm2: f.u32(16)?,
        })
    }

    pub fn encode(&self, order: Order) -> Vec<u8> {
        let mut o = Out::new(order);
        o.u32(self.conv)
            .u32(self.req)
            .u32(self.kind)
            .u32(self.parm1)
            .u32(self.parm2);
        o.buf
    }

    /// The answer that accepts this START_CONV.
    pub fn accepted(&self) -> SocketAction {
        SocketAction {
            kind: kind::ACCEPT_CONV,
            ..*self
        }
    }
}

/// A STATUS_DATA body: length 8 and `code` (0: none). The client needs one after its
/// CONAUTH_INFO and does not act on the code (docs/fap.md).
pub fn status(code: u32, order: Order) -> Vec<u8> {
    let mut o = Out::new(order);
    o.u32(8).u32(code);
    o.buf
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_the_java_clients_start_conv() {
        // conversation 3, request 0, START_CONV, 1, 2: as IBM's Java client sent it.
        let body = [0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2];
        let a = SocketAction::parse(&body, Order::Big).unwrap();
        assert_eq!(
            (a.conv, a.kind, a.parm1, a.parm2),
            (3, kind::START_CONV, 1, 2)
        );
        let ok = a.accepted().encode(Order::Big);
        assert_eq!(&ok[8..12], &[0, 0, 0, 8]);
        assert_eq!(&ok[..8], &body[..8], "same conversation and request");
        assert!(SocketAction::parse(&body[..19], Order::Big).is_err());
        assert_eq!(status(0, Order::Big), [0, 0, 0, 8, 0, 0, 0, 0]);
    }

    proptest! {
        #[test]
        fn round_trips(v in proptest::collection::vec(any::<u32>(), 5), little in any::<bool>()) {
            let order = if little { Order::Little } else { Order::Big };
            let a = SocketAction { conv: v[0], req: v[1], kind: v[2], parm1: v[3], parm2: v[4] };
            prop_assert_eq!(SocketAction::parse(&a.encode(order), order).unwrap(), a);
        }
    }
}
