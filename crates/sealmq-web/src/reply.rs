//! Responses: JSON bodies, and errors in MQ's REST shape (`{"error":[{type, messageId,
//! message, explanation, action, completionCode, reasonCode}]}`). Message ids are IBM's where
//! MQ has the case (MQWB0009E, MQWB0100E, MQWB0103E, MQWB0104E); sealmq's own use MQWB09nn
//! (docs/rest.md lists them).

use crate::Body;
use bytes::Bytes;
use hyper::Response;
use hyper::header::{CONTENT_TYPE, HeaderValue};

pub(crate) fn json(status: u16, v: &serde_json::Value) -> Response<Body> {
    let text = serde_json::to_string_pretty(v).unwrap_or_else(|_| "{}".into());
    with_type(status, Bytes::from(text), "application/json; charset=utf-8")
}

pub(crate) fn with_type(status: u16, body: Bytes, ctype: &'static str) -> Response<Body> {
    let mut r = Response::new(Body::new(body));
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::OK);
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    security_headers(&mut r);
    r
}

/// What every answer carries: no caching of authenticated content, no framing, no sniffing.
pub(crate) fn security_headers(r: &mut Response<Body>) {
    let h = r.headers_mut();
    h.insert("cache-control", HeaderValue::from_static("no-store"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert(
        "strict-transport-security",
        HeaderValue::from_static("max-age=31536000"),
    );
}

/// An error answer. `reason`: the MQ reason code (0: none); the completion code is 2 with
/// one, else 0 is left out as MQ does for REST-level errors.
pub(crate) fn error(
    status: u16,
    id: &str,
    message: &str,
    action: &str,
    reason: u32,
) -> Response<Body> {
    let mut e = serde_json::json!({
        "type": "rest",
        "messageId": id,
        "message": format!("{id}: {message}"),
        "explanation": message,
        "action": action,
    });
    if reason != 0 {
        e["completionCode"] = 2.into();
        e["reasonCode"] = reason.into();
    }
    json(status, &serde_json::json!({ "error": [e] }))
}

/// An MQ error from the engine: 404 for objects that do not exist, 403 for authority, 409
/// for a queue that cannot take or give now, 503 while the queue manager ends, 500 for its
/// own trouble, else 400 (what the request asked for was refused).
pub(crate) fn mq(e: &sealmq_engine::MqError) -> Response<Body> {
    use sealmq_types::ReasonCode as R;
    let (status, id) = match e.reason {
        R::UnknownObjectName => (404, "MQWB0903E"),
        R::NotAuthorized => (403, "MQWB0103E"),
        R::SecurityError => (403, "MQWB0911E"),
        R::QFull | R::PutInhibited | R::GetInhibited | R::MsgTooBigForQ | R::ObjectInUse => {
            (409, "MQWB0904E")
        }
        R::QMgrQuiescing | R::QMgrStopping => (503, "MQWB0905E"),
        R::ResourceProblem | R::UnexpectedError => (500, "MQWB0004E"),
        _ => (400, "MQWB0906E"),
    };
    error(
        status,
        id,
        &format!("MQRC {} {}: {}", e.reason.code(), e.reason.name(), e.detail),
        "Correct what the reason code names and resubmit the request.",
        e.reason.code(),
    )
}
