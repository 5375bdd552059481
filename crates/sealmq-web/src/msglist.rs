//! `GET .../messaging/qmgr/{qm}/queue/{q}/messagelist` (MQ's, since 9.1.3): a summary of the
//! messages on a queue, browsed as the user (BROWSE authority), none removed and no payload
//! returned: `{"messages": [{"messageId", "correlationId", "format", "persistence",
//! "priority", "putDateTime", "replyToQueue", "replyToQueueManager", "expiry",
//! "messageLength"}]}`. Query: `limit` (at most [`MAX_LIST`]), `correlationId`, `messageId`.

use crate::auth::{Rq, Who};
use crate::params::{bad, id_text, match_param};
use crate::{Body, Ctx, reply};
use hyper::Response;
use sealmq_engine::Connection;
use sealmq_mqi::md::{NONE_ID, Persistence};
use sealmq_mqi::options::{Browse, GetOptions, Match, OpenOptions};
use sealmq_types::ReasonCode;
use serde_json::{Value, json};
use std::sync::Arc;

/// Messages one list answers at most (and by default).
pub const MAX_LIST: usize = 1000;

pub(crate) async fn list(ctx: &Arc<Ctx>, who: &Who, rq: &Rq, q: &str) -> Response<Body> {
    let mut limit = MAX_LIST;
    let mut matching = Match::default();
    for (k, v) in form_urlencoded::parse(rq.query.as_bytes()) {
        match k.as_ref() {
            "limit" => match v.parse::<usize>() {
                Ok(n) if n > 0 => limit = n.min(MAX_LIST),
                _ => return bad(&format!("limit '{v}': a number from 1")),
            },
            other => {
                if let Err(e) = match_param(rq.api, other, &v, &mut matching) {
                    return bad(&e);
                }
            }
        }
    }
    let (qm, user, q2, api) = (ctx.qm.clone(), who.user.clone(), q.to_string(), rq.api);
    let listed = crate::blocking(move || {
        let c = Connection::connect(&qm, &user, "sealmq REST")?;
        let h = c.open(&q2, OpenOptions::browse())?;
        let mut out = Vec::new();
        while out.len() < limit {
            let gmo = GetOptions {
                browse: if out.is_empty() {
                    Browse::First
                } else {
                    Browse::Next
                },
                matching: matching.clone(),
                ..Default::default()
            };
            match c.get(&h, gmo) {
                Ok(g) => out.push(summary(&g.md, g.data_len, api)),
                Err(e) if e.reason == ReasonCode::NoMsgAvailable => break,
                // MQ answers an empty list for a GET-inhibited queue.
                Err(e) if e.reason == ReasonCode::GetInhibited => break,
                Err(e) => return Err(e),
            }
        }
        Ok::<_, sealmq_engine::MqError>(out)
    })
    .await;
    match listed {
        Some(Ok(list)) => reply::json(200, &json!({ "messages": list })),
        Some(Err(e)) => reply::mq(&e),
        None => reply::error(500, "MQWB0000E", "The browse did not run.", "Retry.", 0),
    }
}

/// One message's summary, as MQ's messagelist writes it.
fn summary(md: &sealmq_mqi::md::Md, len: usize, api: u8) -> Value {
    let correl = if md.correl_id == NONE_ID {
        String::new()
    } else {
        id_text(api, &md.correl_id)
    };
    json!({
        "messageId": id_text(api, &md.msg_id),
        "correlationId": correl,
        "format": md.format.trim(),
        "persistence": if md.persistence == Persistence::Persistent { "persistent" } else { "nonPersistent" },
        "priority": md.priority,
        "putDateTime": put_time(md.put_time_ms),
        "replyToQueue": md.reply_to_q.trim(),
        "replyToQueueManager": md.reply_to_qmgr.trim(),
        "expiry": if md.expiry < 0 { json!("unlimited") } else { json!(i64::from(md.expiry) * 100) },
        "messageLength": len,
    })
}

/// A put time (UNIX milliseconds) as MQ's REST API writes times.
fn put_time(ms: i64) -> String {
    let secs = u64::try_from(ms.div_euclid(1000)).unwrap_or(0);
    let t = crate::admin::iso8601(secs);
    format!("{}.{:03}Z", &t[..19], ms.rem_euclid(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_times_keep_their_milliseconds() {
        assert_eq!(put_time(1_795_824_364_123), "2026-11-28T00:06:04.123Z");
        assert_eq!(put_time(0), "1970-01-01T00:00:00.000Z");
    }
}
