//! The web console (issue 29): one page, its script and its style sheet, shipped inside the
//! binary (`include_str!`: no build step, nothing fetched) and served at `/ibmmq/console/`.
//! The files hold no data and need no login; everything the page shows comes from the REST
//! API under the user's session, with the user's roles. A content security policy lets the
//! page run only its own script.

use crate::{Body, reply};
use bytes::Bytes;
use hyper::Response;
use hyper::header::HeaderValue;

const INDEX: &str = include_str!("../console/index.html");
const SCRIPT: &str = include_str!("../console/console.js");
const STYLE: &str = include_str!("../console/console.css");

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The console file at `path`, if it is one.
pub(crate) fn file(path: &str) -> Option<Response<Body>> {
    let (body, ctype) = match path {
        "/" | "/ibmmq" | "/ibmmq/" | "/ibmmq/console" => {
            let mut r = reply::with_type(302, Bytes::new(), "text/plain");
            r.headers_mut()
                .insert("location", HeaderValue::from_static("/ibmmq/console/"));
            return Some(r);
        }
        "/ibmmq/console/" | "/ibmmq/console/index.html" => (INDEX, "text/html; charset=utf-8"),
        "/ibmmq/console/console.js" => (SCRIPT, "text/javascript; charset=utf-8"),
        "/ibmmq/console/console.css" => (STYLE, "text/css; charset=utf-8"),
        // Browsers ask for it; there is none.
        "/favicon.ico" => return Some(reply::with_type(204, Bytes::new(), "image/x-icon")),
        _ => return None,
    };
    let mut r = reply::with_type(200, Bytes::from_static(body.as_bytes()), ctype);
    r.headers_mut()
        .insert("content-security-policy", HeaderValue::from_static(CSP));
    Some(r)
}
