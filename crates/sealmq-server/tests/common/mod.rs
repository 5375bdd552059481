//! What the server's tests share: a queue manager with a queue Q whose default channel the
//! CHLAUTH rules allow, ready for a server; a queue manager served on a loopback port.

#![allow(dead_code)]

use sealmq_engine::{Md, Persistence};
use sealmq_server::ServerConfig;
use std::time::Duration;

pub fn setup(name: &str) -> (sealmq_testkit::TempQm, ServerConfig) {
    // These tests use the default channel, which the default CHLAUTH rules refuse: allowed
    // the documented way (a more specific rule).
    let t = sealmq_testkit::queue_manager(
        name,
        "DEFINE QLOCAL(Q)\n\
         SET CHLAUTH('SYSTEM.DEF.SVRCONN') TYPE(ADDRESSMAP) ADDRESS('*') USERSRC(CHANNEL)\n",
    );
    let cfg = ServerConfig {
        name: name.into(),
        dir: t.dir.clone(),
        listen: None,
        tls: false,
        metrics: None,
        web: None,
        replicator: None,
    };
    (t, cfg)
}

/// A queue manager made from `mqsc`, served on an ephemeral loopback port.
pub fn serving(name: &str, mqsc: &str) -> (sealmq_testkit::TempQm, sealmq_server::Server) {
    let t = sealmq_testkit::queue_manager(name, mqsc);
    let server = sealmq_server::Server::start(&ServerConfig {
        name: name.into(),
        dir: t.dir.clone(),
        listen: Some(([127, 0, 0, 1], 0).into()),
        tls: false,
        metrics: None,
        web: None,
        replicator: None,
    })
    .unwrap();
    (t, server)
}

pub fn persistent() -> Md {
    Md {
        persistence: Persistence::Persistent,
        ..Md::default()
    }
}

pub fn poll(cond: impl FnMut() -> bool) {
    sealmq_testkit::wait_for(Duration::from_secs(20), "the condition", cond)
}
