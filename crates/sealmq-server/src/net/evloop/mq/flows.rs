//! A conversation's MQI flows as `Session` requests: MQOPEN (and the SPI open IBM's Java
//! client uses), MQCLOSE, MQPUT, MQPUT1, MQGET, MQCMIT, MQBACK, MQINQ. Each is read by
//! `sealmq-fap`, served by `Session::serve` exactly as the native protocol's request is
//! (authority, interception, accounting), and answered with MQ's structures; a refusal's reason
//! goes to the client, its detail to the error log.

use super::super::Stream;
use super::conv::Conv;
use super::handles::Obj;
use super::inq::{self, About, Answer};
use super::{Flow, amspolicy, msg, rc_of};
use crate::session::{Client, Flow as Served};
use sealmq_fap::md::Mqmd;
use sealmq_fap::od::{self, Defaults, Od, objtype, oo};
use sealmq_fap::opts::{self, gmo, pmo};
use sealmq_fap::tsh::seg;
use sealmq_fap::{api, spi};
use sealmq_types::ReasonCode;
use sealmq_wire::{GetReq, Request, Response};
use tokio::io::BufReader;

/// The queue IBM's AMS interceptor browses for a queue's policy (issue 45 serves it).
const POLICY_QUEUE: &str = "SYSTEM.PROTECTION.POLICY.QUEUE";
/// The longest wait a get is given (MQWI_UNLIMITED): 100 days.
const WAIT_UNLIMITED_MS: i64 = 100 * 86_400_000;

/// A reader that never yields: a conversation's get watches its socket's end (notified by
/// the socket's task), not the socket itself, which other conversations share.
struct Never;

impl tokio::io::AsyncRead for Never {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        _: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Pending
    }
}

/// MQOO_* to the wire's open options.
fn open_options(o: u32) -> u8 {
    use sealmq_wire::open as w;
    [
        (oo::INPUT_AS_Q_DEF, w::INPUT_AS_Q_DEF),
        (oo::INPUT_SHARED, w::INPUT_SHARED),
        (oo::INPUT_EXCLUSIVE, w::INPUT_EXCLUSIVE),
        (oo::BROWSE, w::BROWSE),
        (oo::OUTPUT, w::OUTPUT),
        (oo::INQUIRE, w::INQUIRE),
        (oo::SET, w::SET),
    ]
    .iter()
    .filter(|(m, _)| o & m != 0)
    .fold(0, |acc, (_, w)| acc | w)
}

impl<S: Stream> Conv<S> {
    /// One MQI flow of a connected conversation.
    pub(super) async fn mqi(&mut self, f: Flow) -> bool {
        let order = f.tsh.order;
        let h = match api::ApiHeader::parse(&f.body, order) {
            Ok(h) => h,
            Err(e) => return self.protocol(&e.0),
        };
        let body = f.body[api::API_LEN..].to_vec();
        match f.tsh.seg_type {
            seg::MQOPEN => match od::parse_open(&body, order) {
                Ok((od, options)) => {
                    let (rc, hobj, resolved, d) = self.open(&od, options).await;
                    let mut out = Od::reply(&body, &od, &resolved, &self.qm.name(), order);
                    self.dynamic_name(&od, &resolved, &mut out, order);
                    out.extend_from_slice(&body[od.wire_len..od.wire_len + 4]);
                    out.extend_from_slice(&od::fopa(d, order));
                    self.reply(&f, rc, hobj, &out).await
                }
                Err(e) => self.protocol(&e.0),
            },
            seg::SPI => self.spi(&f, &body).await,
            seg::MQCLOSE => {
                let options = sealmq_fap::bytes::Fields::new(&body, order)
                    .u32(0)
                    .unwrap_or(0);
                let rc = self.close(h.hobj, options).await;
                self.reply(&f, rc, 0, body.get(..4).unwrap_or_default())
                    .await
            }
            seg::MQINQ => self.inquire(&f, h.hobj, &body).await,
            seg::MQPUT | seg::MQPUT1 => self.put(&f, h.hobj, &body).await,
            seg::MQGET => self.get(&f, h.hobj, &body).await,
            seg::MQCMIT | seg::MQBACK => {
                let rc = self.settle_held(f.tsh.seg_type == seg::MQCMIT).await;
                self.reply(&f, rc, 0, &[]).await
            }
            _ => {
                self.reply(&f, ReasonCode::FunctionNotSupported.code(), h.hobj, &[])
                    .await
            }
        }
    }

    pub(super) fn protocol(&self, why: &str) -> bool {
        self.ctx.security.events.log(&format!(
            "MQ client {} conversation {}: {why}; conversation closed",
            self.sock.peer.describe(),
            self.id
        ));
        false
    }

    /// One request through the session, as the native protocol serves it.
    pub(super) async fn serve(&mut self, req: Request) -> Response {
        let Some(session) = self.session.as_mut() else {
            return Response::Err {
                reason: ReasonCode::HconnError.code(),
                detail: "not connected".into(),
            };
        };
        let mut never = BufReader::new(Never);
        let mut client = Client::new(&mut never, &self.sock.ended);
        let r = match session.serve(0, req, &mut client).await {
            Served::Reply(r) | Served::Behind(r) => r,
            Served::End => Response::Ok,
            Served::Silent => Response::Ok,
        };
        if let Response::Err { reason, detail } = &r {
            tracing::info!(peer = %self.sock.peer.describe(), conv = self.id, appl = %self.appl, "MQ client request refused ({reason}): {detail}");
        }
        r
    }

    /// MQOPEN: (reason, handle, resolved name, the object's defaults).
    async fn open(&mut self, od: &Od, options: u32) -> (u32, u32, String, Defaults) {
        let d = Defaults {
            persistence: 0,
            put_response: 1,
            read_ahead: 0,
            prop_ctl: 0,
        };
        let me = self.qm.name();
        if od.obj_type == objtype::Q_MGR {
            return (0, self.handles.own(Obj::Qmgr), me, d);
        }
        // IBM's client looks up each queue's AMS policy by browsing this queue: it is
        // answered from the queue manager's policies (`policy_browse`).
        if od.obj_type == objtype::Q
            && od.name == POLICY_QUEUE
            && options & (oo::OUTPUT | oo::INPUT_SHARED | oo::INPUT_EXCLUSIVE | oo::INPUT_AS_Q_DEF)
                == 0
        {
            return (0, self.handles.own(Obj::PolicyQueue), od.name.clone(), d);
        }
        let req = match od.obj_type {
            objtype::Q if !od.qmgr.is_empty() && od.qmgr != me => Request::OpenAt {
                name: od.name.clone(),
                qmgr: od.qmgr.clone(),
                options: open_options(options),
            },
            objtype::Q => Request::Open {
                name: od.name.clone(),
                options: open_options(options),
                dyn_name: od.dyn_name.clone(),
            },
            objtype::TOPIC if options & oo::OUTPUT != 0 => Request::OpenTopic {
                object: od.name.clone(),
                topic: od.object_string.clone(),
            },
            _ => {
                return (
                    ReasonCode::OptionNotValidForType.code(),
                    0,
                    String::new(),
                    d,
                );
            }
        };
        match self.serve(req).await {
            Response::Opened(o) => {
                let def = self.qm.queue_def(&o.resolved).ok();
                // PROPCTL of the queue named (an alias's own), else of the one it resolved to.
                let named = (od.name != o.resolved)
                    .then(|| self.qm.queue_def(&od.name).ok())
                    .flatten();
                let propctl = named
                    .as_ref()
                    .or(def.as_ref())
                    .map(|q| q.prop_ctl())
                    .unwrap_or_default();
                // DEFREADA answers as MQ's MQREADA_* (the same numbers as the wire's), PROPCTL
                // as MQPROP_*: IBM's client asks for properties by it.
                let d = Defaults {
                    persistence: def.as_ref().map_or(0, |q| i32::from(q.def_persistent)),
                    read_ahead: o.read_ahead.map_or(0, i32::from),
                    prop_ctl: propctl.number() as i32,
                    ..d
                };
                self.handles.map.insert(
                    o.hobj,
                    Obj::Session {
                        resolved: o.resolved.clone(),
                        propctl,
                    },
                );
                (0, o.hobj, o.resolved, d)
            }
            r => (rc_of(&r), 0, String::new(), d),
        }
    }

    /// A model queue opened: as MQ does, the descriptor's ObjectName becomes the dynamic
    /// queue's name (a JMS temporary queue is known by it).
    fn dynamic_name(
        &self,
        od: &Od,
        resolved: &str,
        out: &mut [u8],
        order: sealmq_fap::bytes::Order,
    ) {
        let model = self
            .qm
            .queue_def(&od.name)
            .is_ok_and(|q| q.qtype == sealmq_engine::objects::QType::Model);
        if model && out.len() >= 60 && !resolved.is_empty() {
            let mut o = sealmq_fap::bytes::Out::new(order);
            o.name(resolved, 48);
            out[12..60].copy_from_slice(&o.buf);
        }
    }

    async fn spi(&mut self, f: &Flow, body: &[u8]) -> bool {
        let order = f.tsh.order;
        match spi::verb(body, order) {
            Ok(spi::VERB_QUERY) => self.reply(f, 0, 0, &spi::query_reply(order)).await,
            Ok(spi::VERB_OPEN) => match spi::parse_open(body, order) {
                Ok(op) => {
                    let (rc, hobj, _, d) = self.open(&op.od, op.options).await;
                    self.reply(f, rc, hobj, &spi::open_reply(body, &op, d, order))
                        .await
                }
                Err(e) => self.protocol(&e.0),
            },
            Ok(sealmq_fap::sub::VERB_SUBSCRIBE) => self.subscribe(f, body).await,
            Ok(_) => {
                self.reply(f, ReasonCode::FunctionNotSupported.code(), 0, body)
                    .await
            }
            Err(e) => self.protocol(&e.0),
        }
    }

    async fn close(&mut self, hobj: u32, options: u32) -> u32 {
        self.consumers.forget(hobj);
        match self.handles.map.remove(&hobj) {
            Some(Obj::Session { .. }) => rc_of(&self.serve(Request::Close { hobj }).await),
            Some(Obj::Sub {
                name,
                durable,
                queue,
            }) => {
                tracing::debug!(
                    conv = self.id,
                    hobj,
                    queue,
                    "MQ client closes a subscription"
                );
                self.close_sub(name, durable, queue, options).await
            }
            Some(_) => 0,
            None => ReasonCode::HobjError.code(),
        }
    }

    async fn inquire(&mut self, f: &Flow, hobj: u32, body: &[u8]) -> bool {
        let order = f.tsh.order;
        let q = match sealmq_fap::inq::parse(body, order) {
            Ok(q) => q,
            Err(e) => return self.protocol(&e.0),
        };
        let about = match self.handles.map.get(&hobj) {
            Some(Obj::Qmgr) => About::Qmgr,
            Some(Obj::Session { resolved, .. }) => About::Queue(resolved),
            Some(Obj::PolicyQueue) => About::Queue(POLICY_QUEUE),
            Some(Obj::Sub { .. } | Obj::Gone) | None => {
                return self
                    .reply(f, ReasonCode::HobjError.code(), hobj, body)
                    .await;
            }
        };
        let (mut ints, mut chars, mut rc) = (Vec::new(), String::new(), 0);
        for s in &q.selectors {
            match inq::answer(&self.qm, &about, *s) {
                Ok(Answer::Int(v)) => ints.push(v),
                Ok(Answer::Chars(v, n)) => chars.push_str(&format!("{v:<n$.n$}")),
                Err(r) => {
                    tracing::info!(selector = *s, "MQINQ selector not answered ({r})");
                    rc = r;
                    if sealmq_fap::inq::is_char(*s) {
                        chars.push_str(&" ".repeat(48));
                    } else {
                        ints.push(-1);
                    }
                }
            }
        }
        let out = sealmq_fap::inq::reply(&q, &ints, &chars, order);
        self.reply(f, rc, hobj, &out).await
    }

    async fn put(&mut self, f: &Flow, hobj: u32, body: &[u8]) -> bool {
        let order = f.tsh.order;
        let put1 = f.tsh.seg_type == seg::MQPUT1;
        let (od, p) = match opts::parse_put(body, order, put1) {
            Ok(x) => x,
            Err(e) => return self.protocol(&e.0),
        };
        let (mut md, payload) = match msg::put_message(&p.md, &p.data, order) {
            Ok(x) => x,
            Err((rc, why)) => {
                tracing::info!(peer = %self.sock.peer.describe(), "MQPUT refused ({rc}): {why}");
                return self
                    .reply(f, rc, hobj, &opts::put_reply(&p.md, &p.pmo, "", "", order))
                    .await;
            }
        };
        if p.pmo.options & pmo::NEW_MSG_ID != 0 {
            md.msg_id = sealmq_mqi::md::NONE_ID;
        }
        if p.pmo.options & pmo::NEW_CORREL_ID != 0 {
            md.correl_id = self.qm.unique_id();
        }
        let syncpoint = p.pmo.options & pmo::SYNCPOINT != 0;
        let (req, queue) = match &od {
            Some(od) => (
                Request::Put1 {
                    name: od.name.clone(),
                    md,
                    payload,
                    syncpoint,
                },
                od.name.clone(),
            ),
            None => {
                let queue = match self.handles.map.get(&hobj) {
                    Some(Obj::Session { resolved, .. }) => resolved.clone(),
                    _ => return self.reply(f, ReasonCode::HobjError.code(), hobj, &[]).await,
                };
                (
                    Request::Put {
                        hobj,
                        md,
                        payload,
                        syncpoint,
                    },
                    queue,
                )
            }
        };
        let r = self.serve(req).await;
        let mut out = Vec::new();
        if let Some(od) = &od {
            out = Od::reply(body, od, &queue, &self.qm.name(), order);
        }
        let rc = rc_of(&r);
        let mut m = p.md.clone();
        if let Response::Put { md } = &r {
            put_back(&mut m, md);
        }
        out.extend_from_slice(&opts::put_reply(&m, &p.pmo, &queue, &self.qm.name(), order));
        self.reply(f, rc, hobj, &out).await
    }

    /// A browse of SYSTEM.PROTECTION.POLICY.QUEUE by IBM's AMS interceptor: the index or a
    /// policy's message, made from the queue manager's policies (`amspolicy`), in the byte
    /// order the getter asked for; none on an intercepting channel, and only those of queues
    /// the principal may use.
    async fn policy_browse(&mut self, f: &Flow, hobj: u32, g: &opts::Get) -> bool {
        let order = f.tsh.order;
        let by_correl = g.gmo.match_options & 2 != 0;
        let first = g.gmo.options & gmo::BROWSE_FIRST != 0;
        // On an INTERCEPT(YES) channel the queue manager protects for the client, so IBM's
        // interceptor is told of no policy and sends its messages as they are.
        // Only the policies of queues the principal may use are told (a policy names its
        // recipients and signers).
        let policies = match self.session.as_ref() {
            Some(s) if !s.intercept => {
                let mut all = self.qm.policies();
                all.retain(|p| s.may_learn_policy_of(&p.name));
                all
            }
            _ => Vec::new(),
        };
        let found = amspolicy::answer(&policies, by_correl.then_some(&g.md.correl_id), first);
        let Some((pcf, id)) = found else {
            let r = opts::get_reply(&g.md, &g.gmo, "", 0, &[], order);
            return self
                .reply(f, ReasonCode::NoMsgAvailable.code(), hobj, &r)
                .await;
        };
        let mut md = g.md.clone();
        md.format = "MQADMIN ".into();
        md.ccsid = 1208;
        if md.encoding == 0 {
            md.encoding = 273;
        }
        md.correl_id = id;
        md.msg_id = id;
        let data = pcf.encode(amspolicy::order_for(md.encoding));
        if data.len() > g.buffer as usize {
            let r = opts::get_reply(&md, &g.gmo, "", data.len() as u32, &[], order);
            return self
                .reply(f, ReasonCode::TruncatedMsgFailed.code(), hobj, &r)
                .await;
        }
        let r = opts::get_reply(&md, &g.gmo, "", data.len() as u32, &data, order);
        self.reply(f, 0, hobj, &r).await
    }

    async fn get(&mut self, f: &Flow, hobj: u32, body: &[u8]) -> bool {
        let order = f.tsh.order;
        let g = match opts::parse_get(body, order) {
            Ok(g) => g,
            Err(e) => return self.protocol(&e.0),
        };
        let echo = |_| opts::get_reply(&g.md, &g.gmo, "", 0, &[], order);
        let (queue, propctl) = match self.handles.map.get(&hobj) {
            Some(Obj::Session { resolved, propctl }) => (resolved.clone(), *propctl),
            Some(Obj::PolicyQueue) => return self.policy_browse(f, hobj, &g).await,
            _ => {
                return self
                    .reply(f, ReasonCode::HobjError.code(), hobj, &echo(0))
                    .await;
            }
        };
        let req = match get_request(hobj, &g) {
            Ok(r) => r,
            Err(rc) => return self.reply(f, rc, hobj, &echo(rc)).await,
        };
        // The MQRFH2 the answer puts before the payload must fit the client's buffer too.
        let rfh2 = msg::wants_rfh2(g.gmo.options, propctl);
        if let Some(s) = self.session.as_mut() {
            s.get_header = rfh2.then_some(sealmq_mqi::HeaderLen(msg::rfh2_len));
        }
        let served = self.serve(Request::Get(req)).await;
        if let Some(s) = self.session.as_mut() {
            s.get_header = None;
        }
        match served {
            Response::Got {
                md,
                payload,
                data_len,
                warning,
            } => {
                let (m, data) = msg::got_message(&md, &payload, g.md.version, rfh2, order);
                let full = data_len as usize + (data.len() - payload.len());
                let out = opts::get_reply(&m, &g.gmo, &queue, full as u32, &data, order);
                self.reply(f, warning, hobj, &out).await
            }
            r => {
                let rc = rc_of(&r);
                self.reply(f, rc, hobj, &echo(rc)).await
            }
        }
    }
}

/// An MQGET's options as the wire's get request.
fn get_request(hobj: u32, g: &opts::Get) -> Result<GetReq, u32> {
    let o = g.gmo.options;
    if o & gmo::BROWSE_MSG_UNDER_CURSOR != 0 {
        return Err(ReasonCode::OptionsError.code());
    }
    let browse = if o & gmo::BROWSE_FIRST != 0 {
        1
    } else if o & gmo::BROWSE_NEXT != 0 {
        2
    } else if o & gmo::MSG_UNDER_CURSOR != 0 {
        3
    } else {
        0
    };
    let wait_ms = if o & gmo::WAIT == 0 {
        -1
    } else if g.gmo.wait < 0 {
        WAIT_UNLIMITED_MS
    } else {
        i64::from(g.gmo.wait)
    };
    let none = [0u8; 24];
    let m = g.gmo.match_options;
    Ok(GetReq {
        hobj,
        syncpoint: o & gmo::SYNCPOINT != 0,
        if_persistent: o & gmo::SYNCPOINT_IF_PERSISTENT != 0,
        wait_ms,
        browse,
        match_msg_id: (m & gmo::MATCH_MSG_ID != 0 && g.md.msg_id != none).then_some(g.md.msg_id),
        match_correl_id: (m & gmo::MATCH_CORREL_ID != 0 && g.md.correl_id != none)
            .then_some(g.md.correl_id),
        accept_truncated: o & gmo::ACCEPT_TRUNCATED_MSG != 0,
        // MQRFH2 bytes come on top of the payload: the buffer bounds the payload.
        buffer: i64::from(g.buffer),
    })
}

/// What the queue manager set on a put, into the client's descriptor.
fn put_back(m: &mut Mqmd, md: &sealmq_mqi::Md) {
    m.msg_id = md.msg_id;
    m.correl_id = md.correl_id;
    m.user_id = md.user_id.clone();
    m.put_appl_name = md.put_appl_name.clone();
    let (d, t) = msg::put_date_time(md.put_time_ms);
    m.put_date = d;
    m.put_time = t;
}
