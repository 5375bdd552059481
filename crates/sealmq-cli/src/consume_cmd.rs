//! `sealmq get --async`: the queue manager pushes the messages (asynchronous consume,
//! docs/wire.md) within `--window`; with `--syncpoint K` every K processed messages are
//! committed together, else each pushed batch is committed as it arrives (one log force per
//! batch) before a persistent message of it is handed over.

use crate::CliResult;
use crate::app_cmd::{GetArgs, Tally, open_for_get};
use sealmq_client::{ConsumeMode, ConsumeOptions};
use sealmq_types::ReasonCode;
use std::time::Duration;

/// The least a consumer waits for the next push before it takes the queue as empty.
const EMPTY_AFTER: Duration = Duration::from_millis(200);

pub fn get_async(a: GetArgs) -> CliResult {
    let (mut c, h, limit) = open_for_get(&a)?;
    let sync = a.syncpoint.filter(|k| *k > 0);
    let window = a.window.max(1);
    let opts = ConsumeOptions {
        mode: if sync.is_some() {
            ConsumeMode::Syncpoint
        } else {
            ConsumeMode::Auto
        },
        window,
        batch: sync.map_or((window / 4).clamp(1, 500), |k| {
            k.min(u64::from(u32::MAX)) as u32
        }),
        batch_ms: 50,
        limit: (!a.all).then_some(limit),
        ..Default::default()
    };
    let syncpoint = opts.mode == ConsumeMode::Syncpoint;
    let mut consumer = c.consume_following(h, opts).map_err(|e| e.to_string())?;
    let wait = Duration::from_millis(a.wait).max(EMPTY_AFTER);
    let mut t = Tally::new(&a);
    loop {
        while t.got < limit {
            if syncpoint {
                t.uncommitted(consumer.uncommitted());
            }
            match consumer.next(&mut c, wait) {
                Ok(Some(m)) => t.take(&m),
                Ok(None) => break,
                // Reconnected (--reconnect): what was handed out since the last commit comes
                // again.
                Err(e) if e.reason == ReasonCode::BackedOut && a.c.reconnect => {
                    eprintln!("{e}");
                    t.come_again(&mut c, &a.c.queue)?;
                }
                Err(e) => return Err(e.to_string().into()),
            }
        }
        // Committed for this application but not handed over yet: still ours to print.
        match consumer.stop(&mut c) {
            Ok(rest) => {
                for m in rest {
                    t.take(&m);
                }
                break;
            }
            Err(e) if e.reason == ReasonCode::BackedOut && a.c.reconnect => {
                eprintln!("{e}");
                t.come_again(&mut c, &a.c.queue)?;
            }
            Err(e) => return Err(e.to_string().into()),
        }
    }
    let _ = c.close(h);
    let _ = c.disconnect();
    t.finish(&a, limit)
}
