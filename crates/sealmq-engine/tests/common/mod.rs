//! What the engine's integration tests share.

#![allow(dead_code)]

use sealmq_engine::*;
use std::sync::Arc;

/// A descriptor asking for a persistent message.
pub fn persistent() -> Md {
    Md {
        persistence: Persistence::Persistent,
        ..Md::default()
    }
}

/// The payloads on queue `q`, browsed in queue order.
pub fn bodies(qm: &Arc<QueueManager>, q: &str) -> Vec<Vec<u8>> {
    let c = Connection::connect(qm, "t", "t").unwrap();
    let h = c.open(q, OpenOptions::browse()).unwrap();
    let mut out = Vec::new();
    let mut opt = GetOptions {
        browse: Browse::First,
        ..Default::default()
    };
    while let Ok(g) = c.get(&h, opt.clone()) {
        out.push(g.payload);
        opt.browse = Browse::Next;
    }
    out
}
