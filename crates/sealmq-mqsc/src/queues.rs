//! DEFINE, ALTER, DELETE, CLEAR and DISPLAY of queues (QLOCAL, QALIAS, QREMOTE, QMODEL).
//! A DEFINE without LIKE copies the type's default object (SYSTEM.DEFAULT.LOCAL.QUEUE, ...),
//! as MQ does, so altering a default changes later definitions.

use crate::args::{
    Block, Fail, bad, choice, generic_match, num, one, onoff, text, unknown_keywords,
};
use crate::display::Listing;
use crate::known;
use crate::parse::{Attr, Command, Obj, Verb};
use sealmq_engine::QueueManager;
use sealmq_engine::objects::{
    DefType, MsgDlvSq, PropCtl, QType, QueueDef, ReadAhead, TrigType, Usage, default_queue_name,
};
use sealmq_types::ReasonCode;
use sealmq_types::attrs;
use std::sync::Arc;

pub(crate) fn obj_qtype(o: Obj) -> Option<QType> {
    match o {
        Obj::QLocal => Some(QType::Local),
        Obj::QAlias => Some(QType::Alias),
        Obj::QRemote => Some(QType::Remote),
        Obj::QModel => Some(QType::Model),
        _ => None,
    }
}

/// MQ's range of MAXFSIZE, MB.
const MAXFSIZE_MIN_MB: u64 = 20;
const MAXFSIZE_MAX_MB: u64 = 267_386_880;

fn yes(a: &Attr) -> Result<bool, Fail> {
    Ok(choice(a, &["YES", "NO"])? == "YES")
}

/// Applies queue attributes; keywords that are not queue attributes, or not of this type, fail.
fn apply_queue(def: &mut QueueDef, attrs: &[Attr]) -> Result<(), Fail> {
    use QType::{Local, Model};
    let t = def.qtype;
    let mut unknown: Vec<&Attr> = Vec::new();
    for a in attrs {
        let k = Check { t, a };
        if any_queue(def, a, &k)?
            || local_queue(def, a, &k)?
            || triggering(def, a, &k)?
            || alias_remote_model(def, a, &k)?
        {
            continue;
        }
        match a.key.as_str() {
            k if known::LOCAL_QUEUE.contains(&k) && !matches!(t, Local | Model) => {
                return Err(bad(a, format!("is not an attribute of {}", t.name())));
            }
            _ => match known::note(a, known::LOCAL_QUEUE, &mut def.noted)
                .or_else(|| known::note(a, known::ANY_QUEUE, &mut def.noted))
            {
                Some(r) => r?,
                None => unknown.push(a),
            },
        }
    }
    unknown_keywords(&unknown, &format!("{} keyword", t.name()))?;
    Ok(())
}

/// An attribute checked against the type of queue it is given for.
struct Check<'a> {
    t: QType,
    a: &'a Attr,
}

impl Check<'_> {
    /// The attribute belongs to one of `types`.
    fn only(&self, types: &[QType]) -> Result<(), Fail> {
        if types.contains(&self.t) {
            Ok(())
        } else {
            Err(bad(
                self.a,
                format!("is not an attribute of {}", self.t.name()),
            ))
        }
    }

    /// A local or model queue's attribute.
    fn lm(&self) -> Result<(), Fail> {
        self.only(&[QType::Local, QType::Model])
    }
}

/// The attributes of every queue type (`Ok(false)`: not one of them).
fn any_queue(def: &mut QueueDef, a: &Attr, k: &Check) -> Result<bool, Fail> {
    use QType::{Alias, Local, Model};
    match a.key.as_str() {
        "REPLACE" | "NOREPLACE" | "LIKE" | "PURGE" | "NOPURGE" => {}
        "DESCR" => def.descr = one(a)?.trim_end().to_string(),
        "PUT" => def.put_enabled = choice(a, &["ENABLED", "DISABLED"])? == "ENABLED",
        "GET" => {
            k.only(&[Local, Alias, Model])?;
            def.get_enabled = choice(a, &["ENABLED", "DISABLED"])? == "ENABLED"
        }
        "DEFPSIST" => def.def_persistent = yes(a)?,
        "DEFPRTY" => def.def_priority = num(a, 0, 9)? as u8,
        // Kept with the noted attributes (QueueDef::def_read_ahead), where older queue
        // managers stored it; the client library reads ahead (docs/wire.md).
        "DEFREADA" => {
            let v = choice(a, &["NO", "YES", "DISABLED"])?;
            def.noted.insert("DEFREADA".into(), v.to_string());
        }
        // Kept with the noted attributes too (QueueDef::prop_ctl); MQ's client protocol
        // front end gives properties by it.
        "PROPCTL" => {
            k.only(&[Local, Alias, Model])?;
            let v = choice(a, &PropCtl::NAMES)?;
            def.noted.insert("PROPCTL".into(), v.to_string());
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// A local (or model) queue's storage and delivery attributes.
fn local_queue(def: &mut QueueDef, a: &Attr, k: &Check) -> Result<bool, Fail> {
    match a.key.as_str() {
        "MAXDEPTH" => {
            k.lm()?;
            def.max_depth = num(a, 0, 999_999_999)?
        }
        "MAXMSGL" => {
            k.lm()?;
            def.max_msg_len = num(a, 0, 104_857_600)?
        }
        "MSGDLVSQ" => {
            k.lm()?;
            def.msg_dlv_seq = if choice(a, &["PRIORITY", "FIFO"])? == "FIFO" {
                MsgDlvSq::Fifo
            } else {
                MsgDlvSq::Priority
            }
        }
        "USAGE" => {
            k.lm()?;
            def.usage = if choice(a, &["NORMAL", "XMITQ"])? == "XMITQ" {
                Usage::Xmitq
            } else {
                Usage::Normal
            }
        }
        // Kept with the noted attributes (QueueDef::max_file_bytes), where older queue
        // managers stored it; MQ's range in MB, DEFAULT (or -1) for MQ's default.
        "MAXFSIZE" => {
            k.lm()?;
            let v = one(a)?.trim();
            let v = if v.eq_ignore_ascii_case("DEFAULT") || v == "-1" {
                "DEFAULT".to_string()
            } else {
                num(a, MAXFSIZE_MIN_MB, MAXFSIZE_MAX_MB)
                    .map_err(|_| {
                        bad(
                            a,
                            format!(
                                "'{v}' is not DEFAULT or a size in MB in \
                                     {MAXFSIZE_MIN_MB}..{MAXFSIZE_MAX_MB}"
                            ),
                        )
                    })?
                    .to_string()
            };
            def.noted.insert("MAXFSIZE".into(), v);
        }
        "BOTHRESH" => {
            k.lm()?;
            def.backout_threshold = num(a, 0, 999_999_999)?
        }
        "BOQNAME" => {
            k.lm()?;
            def.backout_requeue_q = one(a)?.trim().to_string()
        }
        "SHARE" | "NOSHARE" => {
            k.lm()?;
            def.share = a.key == "SHARE"
        }
        "DEFSOPT" => {
            k.lm()?;
            def.defsopt_exclusive = choice(a, &["SHARED", "EXCL"])? == "EXCL"
        }
        "HARDENBO" | "NOHARDENBO" => {
            k.lm()?;
            def.harden_bo = a.key == "HARDENBO"
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// A local (or model) queue's triggering attributes.
fn triggering(def: &mut QueueDef, a: &Attr, k: &Check) -> Result<bool, Fail> {
    match a.key.as_str() {
        "TRIGGER" | "NOTRIGGER" => {
            k.lm()?;
            def.trigger = a.key == "TRIGGER"
        }
        "TRIGTYPE" => {
            k.lm()?;
            def.trig_type = TrigType::parse(one(a)?)
                .ok_or_else(|| bad(a, "expected FIRST, EVERY, DEPTH or NONE"))?
        }
        "TRIGDPTH" => {
            k.lm()?;
            def.trig_depth = num(a, 1, 999_999_999)?
        }
        "TRIGMPRI" => {
            k.lm()?;
            def.trig_msg_pri = num(a, 0, 9)? as u8
        }
        "TRIGDATA" => {
            k.lm()?;
            def.trig_data = a
                .values
                .first()
                .map(|v| v.trim_end().to_string())
                .unwrap_or_default();
        }
        "INITQ" => {
            k.lm()?;
            def.init_q = text(a)
        }
        "PROCESS" => {
            k.lm()?;
            def.process = text(a)
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// The attributes of alias, remote and model queues.
fn alias_remote_model(def: &mut QueueDef, a: &Attr, k: &Check) -> Result<bool, Fail> {
    use QType::{Alias, Model, Remote};
    match a.key.as_str() {
        // TARGQ is MQ's older name of TARGET.
        "TARGET" | "TARGQ" => {
            k.only(&[Alias])?;
            def.target = one(a)?.trim().to_string()
        }
        "TARGTYPE" => {
            k.only(&[Alias])?;
            if !one(a)?.eq_ignore_ascii_case("QUEUE") {
                return Err(bad(
                    a,
                    "only TARGTYPE(QUEUE): publish/subscribe (topics) is not provided",
                ));
            }
        }
        "RNAME" => {
            k.only(&[Remote])?;
            def.remote_name = text(a)
        }
        "RQMNAME" => {
            k.only(&[Remote])?;
            def.remote_qmgr = one(a)?.trim().to_string()
        }
        "XMITQ" => {
            k.only(&[Remote])?;
            def.xmitq = text(a)
        }
        "DEFTYPE" => {
            k.only(&[Model])?;
            def.def_type = if choice(a, &["TEMPDYN", "PERMDYN"])? == "PERMDYN" {
                DefType::PermanentDynamic
            } else {
                DefType::TemporaryDynamic
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

fn yn(b: bool) -> String {
    if b { "YES" } else { "NO" }.into()
}

/// Every attribute of a queue, in display order.
pub fn queue_block(qm: &QueueManager, d: &QueueDef) -> Block {
    let mut b: Block = attrs![
        "QUEUE" => d.name, "TYPE" => d.qtype.name(), "DESCR" => d.descr,
    ];
    b.push(("PUT".into(), onoff(d.put_enabled)));
    if d.qtype != QType::Remote {
        b.push(("GET".into(), onoff(d.get_enabled)));
    }
    b.push(("DEFPSIST".into(), yn(d.def_persistent)));
    let defreada = match d.def_read_ahead() {
        ReadAhead::No => "NO",
        ReadAhead::Yes => "YES",
        ReadAhead::Disabled => "DISABLED",
    };
    b.push(("DEFREADA".into(), defreada.into()));
    b.push(("DEFPRTY".into(), d.def_priority.to_string()));
    if d.qtype != QType::Remote {
        b.push(("PROPCTL".into(), d.prop_ctl().name().into()));
    }
    match d.qtype {
        QType::Local | QType::Model => {
            b.push(("MAXDEPTH".into(), d.max_depth.to_string()));
            b.push(("MAXMSGL".into(), d.max_msg_len.to_string()));
            let fsize = d.noted.get("MAXFSIZE").map_or("DEFAULT", String::as_str);
            b.push(("MAXFSIZE".into(), fsize.to_string()));
            let fifo = d.msg_dlv_seq == MsgDlvSq::Fifo;
            b.push((
                "MSGDLVSQ".into(),
                if fifo { "FIFO" } else { "PRIORITY" }.into(),
            ));
            let xmitq = d.usage == Usage::Xmitq;
            b.push((
                "USAGE".into(),
                if xmitq { "XMITQ" } else { "NORMAL" }.into(),
            ));
            b.push(("BOTHRESH".into(), d.backout_threshold.to_string()));
            b.push(("BOQNAME".into(), d.backout_requeue_q.clone()));
            b.push((
                if d.share { "SHARE" } else { "NOSHARE" }.into(),
                String::new(),
            ));
            b.push((
                "DEFSOPT".into(),
                if d.defsopt_exclusive {
                    "EXCL"
                } else {
                    "SHARED"
                }
                .into(),
            ));
            b.push((
                if d.harden_bo {
                    "HARDENBO"
                } else {
                    "NOHARDENBO"
                }
                .into(),
                String::new(),
            ));
            b.push((
                if d.trigger { "TRIGGER" } else { "NOTRIGGER" }.into(),
                String::new(),
            ));
            b.push(("TRIGTYPE".into(), d.trig_type.name().into()));
            b.push(("TRIGDPTH".into(), d.trig_depth.to_string()));
            b.push(("TRIGMPRI".into(), d.trig_msg_pri.to_string()));
            b.push(("TRIGDATA".into(), d.trig_data.clone()));
            b.push(("INITQ".into(), d.init_q.clone()));
            b.push(("PROCESS".into(), d.process.clone()));
            if d.qtype == QType::Model {
                let perm = d.def_type == DefType::PermanentDynamic;
                b.push((
                    "DEFTYPE".into(),
                    if perm { "PERMDYN" } else { "TEMPDYN" }.into(),
                ));
            } else {
                if let Ok(s) = qm.queue_status(&d.name) {
                    b.push(("CURDEPTH".into(), s.depth.to_string()));
                    b.push(("IPPROCS".into(), s.input_opens.to_string()));
                    b.push(("OPPROCS".into(), s.output_opens.to_string()));
                }
                let deftype = match d.def_type {
                    DefType::Predefined => "PREDEFINED",
                    DefType::PermanentDynamic => "PERMDYN",
                    DefType::TemporaryDynamic => "TEMPDYN",
                };
                b.push(("DEFTYPE".into(), deftype.into()));
            }
        }
        QType::Alias => {
            b.push(("TARGET".into(), d.target.clone()));
            b.push(("TARGTYPE".into(), "QUEUE".into()));
        }
        QType::Remote => {
            b.push(("RNAME".into(), d.remote_name.clone()));
            b.push(("RQMNAME".into(), d.remote_qmgr.clone()));
            b.push(("XMITQ".into(), d.xmitq.clone()));
        }
    }
    b.extend(
        known::shown(&d.noted)
            .filter(|(k, _)| !matches!(k.as_str(), "MAXFSIZE" | "DEFREADA" | "PROPCTL")),
    );
    b
}

fn wrong_type(name: &str, def: &QueueDef) -> Fail {
    Fail {
        at: None,
        reason: Some(ReasonCode::UnknownObjectName),
        message: format!("'{name}' is a {}", def.qtype.name()),
    }
}

pub(crate) fn queues(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
    let name = c.name.clone().unwrap_or_default();
    let has = |k: &str| c.attrs.iter().any(|a| a.key == k);
    match (c.verb, c.obj) {
        (Verb::Define, o) if obj_qtype(o).is_some() => {
            let Some(qt) = obj_qtype(o) else {
                unreachable!()
            };
            let (like, from_default) = match c.attrs.iter().find(|a| a.key == "LIKE") {
                Some(a) => (Some((one(a)?.to_string(), a)), false),
                None => (None, true),
            };
            let template = match &like {
                Some((n, _)) => Some(qm.queue_def(n)?),
                // MQ copies the type's default object; a queue manager without it (deleted
                // by the administrator) uses MQ's built-in defaults.
                None => qm.queue_def(default_queue_name(qt)).ok(),
            };
            let mut def = match template {
                Some(t) => {
                    if t.qtype != qt {
                        let msg =
                            format!("'{}' is a {}, not a {}", t.name, t.qtype.name(), qt.name());
                        return Err(match &like {
                            Some((_, a)) => bad(a, msg),
                            None => Fail {
                                at: None,
                                reason: None,
                                message: msg,
                            },
                        });
                    }
                    let mut d = t;
                    d.name = name.clone();
                    if from_default {
                        d.descr.clear();
                    }
                    d.def_type = if qt == QType::Model {
                        d.def_type
                    } else {
                        DefType::Predefined
                    };
                    d
                }
                None => QueueDef::new(&name, qt),
            };
            apply_queue(&mut def, &c.attrs)?;
            qm.define(def, has("REPLACE"))?;
            Ok(("AMQ8006I: IBM MQ queue created.".to_string(), vec![]))
        }
        (Verb::Alter, o) if obj_qtype(o).is_some() => {
            let mut def = qm.queue_def(&name)?;
            if Some(def.qtype) != obj_qtype(o) {
                return Err(wrong_type(&name, &def));
            }
            apply_queue(&mut def, &c.attrs)?;
            qm.alter(def)?;
            Ok(("AMQ8008I: IBM MQ queue changed.".to_string(), vec![]))
        }
        (Verb::Delete, o) if obj_qtype(o).is_some() => {
            let def = qm.queue_def(&name)?;
            if Some(def.qtype) != obj_qtype(o) {
                return Err(wrong_type(&name, &def));
            }
            if has("PURGE") && def.qtype == QType::Local {
                qm.clear(&name)?;
            }
            qm.delete(&name)?;
            Ok(("AMQ8007I: IBM MQ queue deleted.".to_string(), vec![]))
        }
        (Verb::Clear, Obj::QLocal) => {
            qm.clear(&name)?;
            // On a full disk, what the clear freed is given back by the next checkpoint.
            qm.maybe_checkpoint();
            Ok(("AMQ8022I: IBM MQ queue cleared.".to_string(), vec![]))
        }
        _ => {
            let type_filter = match c.attrs.iter().find(|a| a.key == "TYPE") {
                Some(a) => match one(a)? {
                    "QLOCAL" => Some(QType::Local),
                    "QALIAS" => Some(QType::Alias),
                    "QREMOTE" => Some(QType::Remote),
                    "QMODEL" => Some(QType::Model),
                    "ALL" => None,
                    v => return Err(bad(a, format!("'{v}' is not a queue type"))),
                },
                None => obj_qtype(c.obj),
            };
            let shown = qm.queue_defs().into_iter().filter(|d| {
                generic_match(&name, &d.name) && type_filter.is_none_or(|t| t == d.qtype)
            });
            Listing {
                ids: &["QUEUE", "TYPE"],
                what: "queue",
                head: "AMQ8409I: Display Queue details.",
                plural: "",
            }
            .answer(shown.map(|d| queue_block(qm, &d)), &c.attrs, &name)
        }
    }
}
