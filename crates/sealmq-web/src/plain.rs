//! Plain HTTP on the same stack as the REST API (hyper, the same connection table and
//! timeouts), for the Prometheus endpoint (`sealmq start --metrics HOST:PORT`): a runtime of
//! one worker thread, [`MAX_CONNECTIONS`] connections ([`MAX_PER_ADDRESS`] from one address;
//! past them the oldest idle one is closed), [`HEADER_TIMEOUT`](crate::HEADER_TIMEOUT) for a
//! request's headers, and the answer made on at most [`RENDERERS`] blocking threads. So a flood
//! of sockets costs it a bounded number of descriptors and no thread (issue 42: the endpoint
//! once took a thread and descriptors per connection, outside the queue manager's budget).

use crate::Web;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Response};
use hyper_util::rt::TokioIo;
use sealmq_types::slots::Table;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::{Notify, Semaphore};

/// Connections held at once.
pub const MAX_CONNECTIONS: usize = 16;
/// Connections from one address at once.
pub const MAX_PER_ADDRESS: usize = 4;
/// Answers made at once (each reads the queue manager on a blocking thread).
pub const RENDERERS: usize = 2;

/// What the endpoint answers: the status, content type and text for a GET of a path.
pub type Handler = dyn Fn(&str) -> (u16, &'static str, String) + Send + Sync;

/// Binds `addr` (port 0: any) and serves GETs with `handler` on a thread of its own;
/// `name` names it in the log.
pub fn start(addr: SocketAddr, name: &'static str, handler: Arc<Handler>) -> Result<Web, String> {
    crate::spawn_server(addr, name, RENDERERS, move |listener, stop| {
        serve(listener, name, handler, stop)
    })
}

async fn serve(
    listener: tokio::net::TcpListener,
    name: &'static str,
    handler: Arc<Handler>,
    stop: Arc<Notify>,
) {
    let table = Table::new(name, MAX_CONNECTIONS, MAX_PER_ADDRESS);
    let renderers = Arc::new(Semaphore::new(RENDERERS));
    crate::accept(listener, table, stop, move |tcp, _peer, state| {
        let (handler, renderers) = (handler.clone(), renderers.clone());
        async move {
            let svc = hyper::service::service_fn(move |rq: hyper::Request<_>| {
                let (handler, renderers, state) =
                    (handler.clone(), renderers.clone(), state.clone());
                async move {
                    state.set_busy(true);
                    let r = answer(&handler, &renderers, rq.method(), rq.uri().path()).await;
                    state.set_busy(false);
                    Ok::<_, std::convert::Infallible>(r)
                }
            });
            let _ = crate::http1()
                .serve_connection(TokioIo::new(tcp), svc)
                .await;
        }
    })
    .await;
}

async fn answer(
    handler: &Arc<Handler>,
    renderers: &Arc<Semaphore>,
    method: &Method,
    path: &str,
) -> Response<Full<Bytes>> {
    let (status, ctype, text) = if method != Method::GET {
        (405, "text/plain", "only GET is served\n".to_string())
    } else {
        let (h, p) = (handler.clone(), path.to_string());
        let made = match renderers.clone().acquire_owned().await {
            Ok(permit) => tokio::task::spawn_blocking(move || {
                let _permit = permit;
                h(&p)
            })
            .await
            .ok(),
            Err(_) => None,
        };
        made.unwrap_or((500, "text/plain", "the answer failed\n".to_string()))
    };
    let mut r = Response::new(Full::new(Bytes::from(text)));
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or_default();
    if let Ok(v) = hyper::header::HeaderValue::from_str(ctype) {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}
