//! A conversation's object handles: the session's (queues and topics it opened, with the name
//! each resolved to) and the front end's own (the queue manager opened to inquire, the policy
//! queue IBM's AMS interceptor browses, subscriptions' handles).

use sealmq_engine::objects::PropCtl;
use std::collections::HashMap;

/// Handles the front end answers itself are numbered from here, apart from the session's.
pub(super) const OWN_HANDLES: u32 = 0x7000_0000;

/// What a handle of this conversation is.
pub(super) enum Obj {
    Qmgr,
    PolicyQueue,
    /// A queue or topic the session opened: the name it resolved to, and how gets through it
    /// are given properties (the opened queue's PROPCTL).
    Session {
        resolved: String,
        propctl: PropCtl,
    },
    /// A subscription's queue closed with its subscription (MQCO_REMOVE_SUB): the client's
    /// own MQCLOSE of it that follows is answered as done.
    Gone,
    /// A subscription (MQSUB's hSub): its name, and the handle of its queue.
    Sub {
        name: String,
        durable: bool,
        queue: u32,
    },
}

/// The conversation's handles.
#[derive(Default)]
pub(super) struct Handles {
    pub(super) map: HashMap<u32, Obj>,
    next_own: u32,
}

impl Handles {
    pub(super) fn own(&mut self, o: Obj) -> u32 {
        self.next_own += 1;
        let h = OWN_HANDLES + self.next_own;
        self.map.insert(h, o);
        h
    }
}
