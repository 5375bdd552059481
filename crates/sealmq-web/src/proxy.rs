//! The installation's server's way to a queue manager: the request, its body already read,
//! sent on over HTTP/1.1 to the queue manager's private socket ([`crate::local`]) with the
//! principal and roles the installation's server authenticated, and the answer sent back.
//! Credentials (the basic header, the session cookie) never go on: the socket trusts only its
//! own user's assertion.

use crate::auth::{Rq, Who};
use crate::local;
use crate::{Body, MAX_WAIT};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::HeaderValue;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::path::Path;
use std::time::Duration;

/// Time to reach a queue manager's socket.
const CONNECT: Duration = Duration::from_secs(5);
/// Time for its answer: a get's longest wait and then some.
const ANSWER: Duration = Duration::from_secs(MAX_WAIT.as_secs() + 15);
/// Largest answer taken (a message of 4 MiB, browsed as JSON, base64).
const MAX_ANSWER: usize = 16 << 20;

/// Request headers that belong to one hop, or carry credentials, or are the socket's own.
fn dropped(name: &str) -> bool {
    matches!(
        name,
        "host"
            | "authorization"
            | "cookie"
            | "connection"
            | "keep-alive"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "content-length"
            | "proxy-authorization"
    ) || name.starts_with("x-sealmq-")
}

/// A path segment as it goes in a URL.
pub(crate) fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Sends `rq` on to queue manager `qm` and returns its answer.
pub(crate) async fn forward(
    home: &Path,
    qm: &str,
    who: &Who,
    rq: &Rq,
) -> Result<Response<Body>, String> {
    let target = if rq.query.is_empty() {
        rq.path.clone()
    } else {
        format!("{}?{}", rq.path, rq.query)
    };
    send(home, qm, who, rq, &rq.method, &target, rq.body.clone()).await
}

/// `GET path` of queue manager `qm` as `who`, its answer's JSON when it is a 200.
pub(crate) async fn get_json(
    home: &Path,
    qm: &str,
    who: &Who,
    rq: &Rq,
    path: &str,
) -> Option<serde_json::Value> {
    let r = send(home, qm, who, rq, &hyper::Method::GET, path, Bytes::new())
        .await
        .ok()?;
    if r.status() != 200 {
        return None;
    }
    let b = r.into_body().collect().await.ok()?.to_bytes();
    serde_json::from_slice(&b).ok()
}

async fn send(
    home: &Path,
    qm: &str,
    who: &Who,
    rq: &Rq,
    method: &hyper::Method,
    target: &str,
    body: Bytes,
) -> Result<Response<Body>, String> {
    let sock = home.join("qmgrs").join(qm).join(local::SOCKET);
    let stream = match tokio::time::timeout(CONNECT, tokio::net::UnixStream::connect(&sock)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(format!("{}: {e}", sock.display())),
        Err(_) => return Err(format!("{}: no answer within {CONNECT:?}", sock.display())),
    };
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut out = Request::builder().method(method.clone()).uri(target);
    if let Some(h) = out.headers_mut() {
        for (k, v) in &rq.headers {
            if !dropped(k.as_str()) {
                h.append(k.clone(), v.clone());
            }
        }
        h.insert("host", HeaderValue::from_static("localhost"));
        let mut put = |k: &'static str, v: &str| {
            if let Ok(v) = HeaderValue::from_str(v) {
                h.insert(k, v);
            }
        };
        put(local::USER, &who.user);
        put(local::ROLES, &who.role_names().join(","));
        put(local::VIA, who.via);
        put(local::PEER, &rq.peer.ip().to_string());
    }
    let out = out.body(Full::new(body)).map_err(|e| e.to_string())?;
    let answer = match tokio::time::timeout(ANSWER, sender.send_request(out)).await {
        Ok(Ok(a)) => a,
        Ok(Err(e)) => return Err(e.to_string()),
        Err(_) => return Err(format!("no answer within {ANSWER:?}")),
    };
    let (mut parts, body) = answer.into_parts();
    let body = match tokio::time::timeout(ANSWER, Limited::new(body, MAX_ANSWER).collect()).await {
        Ok(Ok(b)) => b.to_bytes(),
        Ok(Err(e)) => return Err(format!("its answer: {e}")),
        Err(_) => return Err("its answer was cut short".into()),
    };
    for h in [
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-length",
        "set-cookie",
    ] {
        parts.headers.remove(h);
    }
    Ok(Response::from_parts(parts, Full::new(body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_and_assertions_never_go_on() {
        for h in [
            "authorization",
            "cookie",
            "x-sealmq-user",
            "x-sealmq-roles",
            "host",
        ] {
            assert!(dropped(h), "{h}");
        }
        for h in [
            "ibm-mq-rest-csrf-token",
            "content-type",
            "ibm-mq-md-correlationid",
        ] {
            assert!(!dropped(h), "{h}");
        }
        assert_eq!(encode("QM.1/x%"), "QM%2E1%2Fx%25");
    }
}
