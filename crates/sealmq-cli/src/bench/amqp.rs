//! `sealmq bench amqp --messages N --size BYTES [--persistent] [--rounds R] [--json]`: put and
//! get rates over an AMQP channel next to the native protocol, side by side in one run
//! (interleaved rounds, medians), plus request/reply round trips.
//!
//! - put: one application sends N messages. Native: `MQPUT` outside syncpoint, each answered
//!   before the next. AMQP: one sending link, up to [`WINDOW`] transfers unsettled, each
//!   settled (accepted) once the queue manager put it.
//! - get: one application takes N messages. Native: plain `MQGET`s outside syncpoint. AMQP:
//!   one receiving link with credit [`WINDOW`], each message accepted (a unit of work per
//!   message at the queue manager, committed on the outcome).
//! - round trip: a message sent and the same message received, one at a time (latency).
//!
//! The AMQP application is fe2o3-amqp's client; the native one sealmq's own client.
//! `--peer HOST:PORT` measures another broker's AMQP 1.0 (queue `BENCH.AMQP.Q`, SASL
//! ANONYMOUS) with the same client in the same rounds (`benches/artemis-amqp.sh` runs an
//! embedded Apache ActiveMQ Artemis for it).
//!
//! `--qop integrity|privacy|confidentiality` (one, with one `--key`) measures protected
//! messages: the native application protects and unprotects them itself (client-side, its own
//! keystore), the AMQP one goes through a channel with TLS and INTERCEPT(YES), so the queue
//! manager protects and unprotects for it. The queue's policy names both as recipients and
//! each trusts the other, so either side reads what the other put.

use super::app::{open_q, per_second, put_plain};
use super::common::{BenchArgs, Protection, define_deep_queue, mqsc};
use crate::CliResult;
use fe2o3_amqp::connection::ConnectionHandle;
use fe2o3_amqp::session::SessionHandle;
use fe2o3_amqp::types::messaging::{Body, Message, Outcome};
use fe2o3_amqp::types::primitives::{Binary, Value};
use fe2o3_amqp::{Connection, Receiver, Sender, Session};
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use sealmq_engine::{Md, Persistence};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

const QUEUE: &str = "BENCH.AMQP.Q";
const CHANNEL: &str = "BENCH.AMQP";
/// Transfers unsettled at once (AMQP put) and link credit (AMQP get).
const WINDOW: usize = 200;
/// Round trips per measurement.
const ROUND_TRIPS: usize = 500;

fn native_put(
    (dir, prot): (&Path, &Protection),
    n: u64,
    size: usize,
    persistent: bool,
) -> CliResult<f64> {
    let mut c = prot.client(dir, "bench-native")?;
    let h = open_q(&mut c, QUEUE, OpenOptions::output())?;
    let payload = vec![0x61_u8; size];
    let t = Instant::now();
    for _ in 0..n {
        put_plain(&mut c, h, Persistence::of(persistent), &payload, false)?;
    }
    let rate = per_second(n, t);
    let _ = c.close(h);
    Ok(rate)
}

fn native_get((dir, prot): (&Path, &Protection), n: u64) -> CliResult<f64> {
    let mut c = prot.client(dir, "bench-native")?;
    let h = open_q(&mut c, QUEUE, OpenOptions::input())?;
    let t = Instant::now();
    for i in 0..n {
        c.get(h, &GetOptions::default())
            .map_err(|e| format!("native get {} of {n}: {e}", i + 1))?;
    }
    let rate = per_second(n, t);
    let _ = c.close(h);
    Ok(rate)
}

fn native_round_trip((dir, prot): (&Path, &Protection), size: usize) -> CliResult<f64> {
    let mut c = prot.client(dir, "bench-native")?;
    let o = open_q(&mut c, QUEUE, OpenOptions::output())?;
    let i = open_q(&mut c, QUEUE, OpenOptions::input())?;
    let payload = vec![0x61_u8; size];
    let gmo = GetOptions {
        wait: Some(std::time::Duration::from_secs(10)),
        ..Default::default()
    };
    let t = Instant::now();
    for _ in 0..ROUND_TRIPS {
        let mut md = Md::default();
        c.put(o, &mut md, &payload, false)
            .map_err(|e| e.to_string())?;
        c.get(i, &gmo).map_err(|e| e.to_string())?;
    }
    Ok(t.elapsed().as_secs_f64() * 1e6 / ROUND_TRIPS as f64)
}

type AmqpResult<T> = Result<T, String>;

fn s<E: std::fmt::Display>(e: E) -> String {
    format!("AMQP: {e}")
}

/// Where the AMQP application connects: the channel's address, and the TLS configuration
/// (its certificate, trust of the queue manager's) when the channel intercepts.
struct Amqp {
    addr: String,
    tls: Option<Arc<rustls::ClientConfig>>,
}

/// Ends the session and closes the connection (errors do not matter at the end of a run).
async fn amqp_end(mut conn: ConnectionHandle<()>, mut session: SessionHandle<()>) {
    let _ = session.end().await;
    let _ = conn.close().await;
}

async fn amqp_connect(to: &Amqp) -> AmqpResult<(ConnectionHandle<()>, SessionHandle<()>)> {
    // Small frames go at once (as the native client's socket does).
    let stream = tokio::net::TcpStream::connect(&to.addr).await.map_err(s)?;
    stream.set_nodelay(true).map_err(s)?;
    // The channel runs as its MCAUSER: SASL ANONYMOUS is enough.
    let builder = || {
        Connection::builder()
            .container_id("sealmq-bench")
            .hostname("127.0.0.1")
            .sasl_profile(fe2o3_amqp::sasl_profile::SaslProfile::Anonymous)
    };
    let mut conn = match &to.tls {
        None => builder().open_with_stream(stream).await.map_err(s)?,
        Some(cfg) => {
            let name = rustls::pki_types::ServerName::try_from("127.0.0.1").map_err(s)?;
            let tls = tokio_rustls::TlsConnector::from(cfg.clone())
                .connect(name, stream)
                .await
                .map_err(s)?;
            builder().open_with_stream(tls).await.map_err(s)?
        }
    };
    let session = Session::begin(&mut conn).await.map_err(s)?;
    Ok((conn, session))
}

fn amqp_message(payload: &[u8], persistent: bool) -> Message<Body<Value>> {
    Message::builder()
        .header(fe2o3_amqp::types::messaging::Header {
            durable: persistent,
            ..Default::default()
        })
        .body(Body::Value(fe2o3_amqp::types::messaging::AmqpValue(
            Value::Binary(Binary::from(payload.to_vec())),
        )))
        .build()
}

fn accepted<E: std::fmt::Display>(o: Result<Outcome, E>) -> AmqpResult<()> {
    match o.map_err(s)? {
        Outcome::Accepted(_) => Ok(()),
        other => Err(format!("AMQP put not accepted: {other:?}")),
    }
}

async fn amqp_put(to: &Amqp, n: u64, size: usize, persistent: bool) -> AmqpResult<f64> {
    let (conn, mut session) = amqp_connect(to).await?;
    let mut sender = Sender::attach(&mut session, "bench-put", QUEUE)
        .await
        .map_err(s)?;
    let payload = vec![0x61_u8; size];
    let mut pending = std::collections::VecDeque::new();
    let t = Instant::now();
    for _ in 0..n {
        if pending.len() >= WINDOW
            && let Some(f) = pending.pop_front()
        {
            accepted(f.await)?;
        }
        let fut = sender
            .send_batchable(amqp_message(&payload, persistent))
            .await
            .map_err(s)?;
        pending.push_back(fut);
    }
    for f in pending {
        accepted(f.await)?;
    }
    let rate = per_second(n, t);
    let _ = sender.close().await;
    amqp_end(conn, session).await;
    Ok(rate)
}

async fn amqp_get(to: &Amqp, n: u64) -> AmqpResult<f64> {
    let (conn, mut session) = amqp_connect(to).await?;
    let mut receiver = Receiver::builder()
        .name("bench-get")
        .source(QUEUE)
        .credit_mode(fe2o3_amqp::link::receiver::CreditMode::Auto(WINDOW as u32))
        .attach(&mut session)
        .await
        .map_err(s)?;
    let t = Instant::now();
    for _ in 0..n {
        let d = receiver.recv::<Body<Value>>().await.map_err(s)?;
        receiver.accept(&d).await.map_err(s)?;
    }
    let rate = per_second(n, t);
    let _ = receiver.close().await;
    amqp_end(conn, session).await;
    Ok(rate)
}

async fn amqp_round_trip(to: &Amqp, size: usize) -> AmqpResult<f64> {
    let (conn, mut session) = amqp_connect(to).await?;
    let mut sender = Sender::attach(&mut session, "bench-rt-put", QUEUE)
        .await
        .map_err(s)?;
    let mut receiver = Receiver::attach(&mut session, "bench-rt-get", QUEUE)
        .await
        .map_err(s)?;
    let payload = vec![0x61_u8; size];
    let t = Instant::now();
    for _ in 0..ROUND_TRIPS {
        sender
            .send(amqp_message(&payload, false))
            .await
            .map_err(s)?;
        let d = receiver.recv::<Body<Value>>().await.map_err(s)?;
        receiver.accept(&d).await.map_err(s)?;
    }
    let us = t.elapsed().as_secs_f64() * 1e6 / ROUND_TRIPS as f64;
    let _ = sender.close().await;
    let _ = receiver.close().await;
    amqp_end(conn, session).await;
    Ok(us)
}

#[derive(Default)]
struct Figures {
    native_put: Vec<f64>,
    amqp_put: Vec<f64>,
    native_get: Vec<f64>,
    amqp_get: Vec<f64>,
    native_rt: Vec<f64>,
    amqp_rt: Vec<f64>,
    peer_put: Vec<f64>,
    peer_get: Vec<f64>,
    peer_rt: Vec<f64>,
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|x, y| x.total_cmp(y));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Protected runs: the application's keystore and the queue manager's trust each other, the
/// queue's policy names both as recipients. The TLS configuration of the AMQP application.
fn protect(
    dir: &Path,
    prot: &Protection,
) -> CliResult<(String, Option<Arc<rustls::ClientConfig>>)> {
    let (Some(app), Some(policy)) = (&prot.keystore, &prot.policy) else {
        return Ok((String::new(), None));
    };
    let qm_ks = dir.join("keystore");
    let read =
        |p: std::path::PathBuf| std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()));
    let mut qm = sealmq_protect::Keystore::load(&qm_ks)?;
    qm.trust(&read(app.join("identity.pem"))?)?;
    sealmq_protect::Keystore::load(app)?.trust(&read(qm_ks.join("identity.pem"))?)?;
    let qm_dn = qm
        .identity()
        .map(|i| i.cert.subject().clone())
        .ok_or_else(|| "the queue manager's keystore has no identity".to_string())?;
    let mut p = policy.clone();
    p.name = QUEUE.to_string();
    if !p.recipients.is_empty() {
        p.recipients.push(qm_dn);
    }
    let tls = sealmq_wire::tls::client_config(app, None)?;
    let script = format!(
        "REFRESH SECURITY TYPE(SSL)\n{}\n",
        sealmq_mqsc::exec::policy_command(&p)
    );
    Ok((script, Some(tls)))
}

pub fn run(a: &BenchArgs, dir: &Path) -> CliResult {
    let n = a.messages.unwrap_or(20_000);
    let size = a.size.unwrap_or(1024);
    if a.qop.contains(',') || a.key.contains(',') {
        return Err("bench amqp takes one --qop and one --key"
            .to_string()
            .into());
    }
    // A protected run makes the queue manager trust a throw-away bench certificate: never on
    // an administrator's queue manager.
    if a.qm.is_some() && a.qop != "none" {
        return Err(
            "bench amqp --qop runs on a throw-away queue manager only (it makes the queue \
             manager trust a bench certificate): leave out --qm"
                .to_string()
                .into(),
        );
    }
    let work = std::env::temp_dir().join(format!("sealmq-bench-amqp-{}", std::process::id()));
    let prot = Protection::new(&a.qop, &a.key, sealmq_protect::KeyReuse::Disabled, &work)?;
    let r = measure(a, dir, &prot, (n, size));
    let _ = std::fs::remove_dir_all(&work);
    r
}

fn measure(a: &BenchArgs, dir: &Path, prot: &Protection, (n, size): (u64, usize)) -> CliResult {
    let port = super::net::free_port()?;
    define_deep_queue(dir, QUEUE, prot.stored_bytes(size)? + 4096)?;
    let (protect_script, tls) = protect(dir, prot)?;
    // Protected: TLS with the application's certificate, and the queue manager intercepts.
    let secure = if tls.is_some() {
        "SSLCIPH(ANY) SSLCAUTH(REQUIRED) INTERCEPT(YES)"
    } else {
        ""
    };
    mqsc(
        dir,
        &format!(
            "{protect_script}\
             DEFINE CHANNEL({CHANNEL}) CHLTYPE(AMQP) PORT({port}) IPADDR(127.0.0.1) \
             MCAUSER('benchapp') MAXMSGL({}) {secure} REPLACE\n\
             SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('benchapp') AUTHADD(CONNECT)\n\
             SET AUTHREC PROFILE('{QUEUE}') OBJTYPE(QUEUE) PRINCIPAL('benchapp') \
             AUTHADD(PUT,GET,BROWSE,INQ)\n\
             START CHANNEL({CHANNEL})\n",
            size.max(4096) + 4096
        ),
    )?;
    let to = Amqp {
        addr: format!("127.0.0.1:{port}"),
        tls,
    };
    let native = (dir, prot);
    let peer = a.peer.as_ref().map(|addr| Amqp {
        addr: addr.clone(),
        tls: None,
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut f = Figures::default();
    for round in 0..a.rounds.max(1) {
        // Interleaved: each round measures both protocols on the same queue manager.
        f.native_put
            .push(native_put(native, n, size, a.persistent)?);
        f.amqp_get.push(rt.block_on(amqp_get(&to, n))?);
        f.amqp_put
            .push(rt.block_on(amqp_put(&to, n, size, a.persistent))?);
        f.native_get.push(native_get(native, n)?);
        f.amqp_rt.push(rt.block_on(amqp_round_trip(&to, size))?);
        f.native_rt.push(native_round_trip(native, size)?);
        if let Some(p) = &peer {
            f.peer_put
                .push(rt.block_on(amqp_put(p, n, size, a.persistent))?);
            f.peer_get.push(rt.block_on(amqp_get(p, n))?);
            f.peer_rt.push(rt.block_on(amqp_round_trip(p, size))?);
        }
        if a.json {
            let last = |v: &Vec<f64>| v.last().copied().unwrap_or(0.0);
            println!(
                "{}",
                serde_json::json!({"scenario": "amqp", "round": round + 1, "messages": n,
                    "size": size, "persistent": a.persistent, "qop": prot.qop,
                    "native_put_per_s": last(&f.native_put), "amqp_put_per_s": last(&f.amqp_put),
                    "native_get_per_s": last(&f.native_get), "amqp_get_per_s": last(&f.amqp_get),
                    "native_round_trip_us": last(&f.native_rt),
                    "amqp_round_trip_us": last(&f.amqp_rt),
                    "peer_put_per_s": last(&f.peer_put), "peer_get_per_s": last(&f.peer_get),
                    "peer_round_trip_us": last(&f.peer_rt)})
            );
        }
    }
    let _ = mqsc(dir, &format!("STOP CHANNEL({CHANNEL})\n"));
    let (np, ap) = (median(&f.native_put), median(&f.amqp_put));
    let (ng, ag) = (median(&f.native_get), median(&f.amqp_get));
    let (nr, ar) = (median(&f.native_rt), median(&f.amqp_rt));
    let (pp, pg, pr) = (median(&f.peer_put), median(&f.peer_get), median(&f.peer_rt));
    if a.json {
        println!(
            "{}",
            serde_json::json!({"scenario": "amqp", "qop": prot.qop, "median_put_ratio": ap / np.max(1e-9),
                "median_get_ratio": ag / ng.max(1e-9), "median_round_trip_ratio": nr / ar.max(1e-9),
                "median_put_vs_peer": peer.as_ref().map(|_| ap / pp.max(1e-9)),
                "median_get_vs_peer": peer.as_ref().map(|_| ag / pg.max(1e-9)),
                "median_round_trip_vs_peer": peer.as_ref().map(|_| pr / ar.max(1e-9))})
        );
        return Ok(());
    }
    let kind = if a.persistent {
        "persistent"
    } else {
        "non-persistent"
    };
    let protection = if prot.policy.is_some() {
        format!(
            "{} ({}; native: the application protects, AMQP: TLS and INTERCEPT(YES))",
            prot.qop, prot.key
        )
    } else {
        "none".to_string()
    };
    println!(
        "amqp: {n} {kind} messages of {size} bytes, {} round(s) (medians); AMQP window {WINDOW}; \
         protection {protection}",
        a.rounds.max(1)
    );
    println!(
        "{:<12} {:>14} {:>14} {:>12}",
        "", "native", "AMQP", "AMQP/native"
    );
    println!(
        "{:<12} {:>10.0} /s {:>10.0} /s {:>11.2}x",
        "put",
        np,
        ap,
        ap / np.max(1e-9)
    );
    println!(
        "{:<12} {:>10.0} /s {:>10.0} /s {:>11.2}x",
        "get",
        ng,
        ag,
        ag / ng.max(1e-9)
    );
    println!(
        "{:<12} {:>10.0} µs {:>10.0} µs {:>11.2}x",
        "round trip",
        nr,
        ar,
        nr / ar.max(1e-9)
    );
    if let Some(p) = &peer {
        println!(
            "peer {} (same AMQP client): put {pp:.0} /s, get {pg:.0} /s, round trip {pr:.0} µs; \
             sealmq AMQP/peer: put {:.2}x, get {:.2}x, round trip {:.2}x",
            p.addr,
            ap / pp.max(1e-9),
            ag / pg.max(1e-9),
            pr / ar.max(1e-9)
        );
    }
    Ok(())
}
