//! The query of MQ's channel, topic and subscription lists (`GET .../channel`, `.../topic`,
//! `.../subscription`) — `name`, `type`, `attributes`, `status`; anything else refused — and
//! each object's attributes in IBM's named JSON objects (`general.description`,
//! `sender.transmissionQueueName`, `sender.connection: [{host, port}]`, `destination.name`...)
//! and its status from DISPLAY CHSTATUS, TPSTATUS or SBSTATUS. The queue list's are in
//! qattrs.rs; docs/rest.md lists what each answers.

use serde_json::{Map, Value, json};

/// What a channel, topic or subscription list asks for.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ListQuery {
    pub name: Option<String>,
    /// The MQSC type kept (`SDR`, `LOCAL`, `ADMIN`...); `None`: every type.
    pub mqsc_type: Option<&'static str>,
    /// `(object, attribute)` asked for; `*` for every one.
    pub attributes: Vec<(String, String)>,
    /// Status asked for: `None` no status, `Some([])` all of it, else those attributes.
    pub status: Option<Vec<String>>,
}

/// IBM's type names and MQSC's, per resource.
fn types(kind: &str) -> &'static [(&'static str, &'static str)] {
    match kind {
        "channel" => &[
            ("sender", "SDR"),
            ("receiver", "RCVR"),
            ("server", "SVR"),
            ("requester", "RQSTR"),
            ("clusterSender", "CLUSSDR"),
            ("clusterReceiver", "CLUSRCVR"),
            ("serverConnection", "SVRCONN"),
            ("clientConnection", "CLNTCONN"),
            ("amqp", "AMQP"),
        ],
        "topic" => &[("local", "LOCAL"), ("cluster", "CLUSTER")],
        _ => &[("api", "API"), ("admin", "ADMIN"), ("proxy", "PROXY")],
    }
}

/// An object's type as MQ's REST API names it.
pub(crate) fn ibm_type(kind: &str, mqsc: &str) -> String {
    types(kind)
        .iter()
        .find(|(_, m)| m.eq_ignore_ascii_case(mqsc))
        .map(|(i, _)| i.to_string())
        .unwrap_or_else(|| mqsc.to_ascii_lowercase())
}

/// How a value is read.
#[derive(Clone, Copy)]
enum Read {
    Text,
    Number,
    /// `true` when the keyword's value is this one.
    Is(&'static str),
    /// CONNAME as `[{host, port}]`.
    Connection,
}

/// Per resource: IBM's object (`[type]`: the channel's type name), its attribute, the DISPLAY
/// keyword it comes from, how it is read.
const ATTRS: &[(&str, &str, &str, &str, Read)] = &[
    ("channel", "general", "description", "descr", Read::Text),
    (
        "channel",
        "general",
        "maximumMessageLength",
        "maxmsgl",
        Read::Number,
    ),
    (
        "channel",
        "[type]",
        "transmissionQueueName",
        "xmitq",
        Read::Text,
    ),
    (
        "channel",
        "[type]",
        "connection",
        "conname",
        Read::Connection,
    ),
    ("channel", "[type]", "userId", "mcauser", Read::Text),
    ("topic", "general", "description", "descr", Read::Text),
    ("topic", "general", "topicString", "topicstr", Read::Text),
    (
        "topic",
        "general",
        "inhibitPublications",
        "pub",
        Read::Is("DISABLED"),
    ),
    (
        "topic",
        "general",
        "inhibitSubscriptions",
        "sub",
        Read::Is("DISABLED"),
    ),
    (
        "topic",
        "general",
        "durableSubscriptions",
        "dursub",
        Read::Text,
    ),
    (
        "subscription",
        "general",
        "topicString",
        "topicstr",
        Read::Text,
    ),
    (
        "subscription",
        "general",
        "topicObject",
        "topicobj",
        Read::Text,
    ),
    (
        "subscription",
        "general",
        "selector",
        "selector",
        Read::Text,
    ),
    (
        "subscription",
        "general",
        "durable",
        "durable",
        Read::Is("YES"),
    ),
    ("subscription", "destination", "name", "dest", Read::Text),
    (
        "subscription",
        "destination",
        "qmgrName",
        "destqmgr",
        Read::Text,
    ),
    ("subscription", "user", "userId", "subuser", Read::Text),
];

/// Per resource: IBM's status attribute and the status DISPLAY keyword it comes from.
const STATUS: &[(&str, &str, &str, Read)] = &[
    ("channel", "state", "status", Read::Text),
    ("channel", "connectionName", "conname", Read::Text),
    ("channel", "messages", "msgs", Read::Number),
    ("channel", "bytesSent", "bytssent", Read::Number),
    ("channel", "bytesReceived", "bytsrcvd", Read::Number),
    ("channel", "batches", "batches", Read::Number),
    ("channel", "lastMessageDate", "lstmsgda", Read::Text),
    ("channel", "lastMessageTime", "lstmsgti", Read::Text),
    ("topic", "publisherCount", "pubcount", Read::Number),
    ("topic", "subscriptionCount", "subcount", Read::Number),
    ("topic", "retainedPublication", "retained", Read::Is("YES")),
    ("subscription", "messageCount", "nummsgs", Read::Number),
    ("subscription", "lastMessageDate", "lmsgdate", Read::Text),
    ("subscription", "lastMessageTime", "lmsgtime", Read::Text),
];

impl ListQuery {
    /// The query string of a `kind` list; `Err` names what is wrong.
    pub(crate) fn parse(kind: &str, query: &str) -> Result<ListQuery, String> {
        let mut q = ListQuery::default();
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            match k.as_ref() {
                "name" => q.name = Some(v.trim().to_string()),
                "type" if v.eq_ignore_ascii_case("all") => q.mqsc_type = None,
                "type" => {
                    let Some((_, m)) = types(kind).iter().find(|(i, _)| i.eq_ignore_ascii_case(&v))
                    else {
                        let names: Vec<&str> = types(kind).iter().map(|(i, _)| *i).collect();
                        return Err(format!(
                            "type '{v}' is not one of all, {}",
                            names.join(", ")
                        ));
                    };
                    q.mqsc_type = Some(m);
                }
                "attributes" => {
                    for a in v.split(',').map(str::trim).filter(|a| !a.is_empty()) {
                        q.attributes.push(attribute(kind, a)?);
                    }
                }
                "status" => {
                    let mut want = Vec::new();
                    for a in v.split(',').map(str::trim).filter(|a| !a.is_empty()) {
                        match a.strip_prefix("status.") {
                            _ if a == "*" || a == "status" => {}
                            Some(s) if STATUS.iter().any(|(k, n, _, _)| *k == kind && *n == s) => {
                                want.push(s.to_string())
                            }
                            _ => return Err(format!("'{a}' is not a {kind} status attribute")),
                        }
                    }
                    q.status = Some(want);
                }
                other => {
                    return Err(format!(
                        "'{other}' is not a query parameter of the {kind} resource (name, type, \
                         attributes, status)"
                    ));
                }
            }
        }
        Ok(q)
    }

    /// The named objects of one object (its DISPLAY keywords in lower case) that the query
    /// asks for; `ty` is its IBM type name (a channel's `[type]` object).
    pub(crate) fn objects(
        &self,
        kind: &str,
        ty: &str,
        flat: &Map<String, Value>,
    ) -> Map<String, Value> {
        let mut out = Map::new();
        for (k, object, attr, key, read) in ATTRS {
            if *k != kind {
                continue;
            }
            let object = if *object == "[type]" { ty } else { object };
            let asked = self
                .attributes
                .iter()
                .any(|(o, a)| o == "*" || (o == object && (a == "*" || a == attr)));
            let Some(v) = flat.get(*key).filter(|_| asked) else {
                continue;
            };
            if let Value::Object(g) = out
                .entry(object.to_string())
                .or_insert_with(|| Value::Object(Map::new()))
            {
                g.insert(attr.to_string(), value(*read, v));
            }
        }
        out
    }

    /// One status block (its DISPLAY keywords in lower case) in IBM's names, as asked.
    pub(crate) fn status_of(&self, kind: &str, flat: &Map<String, Value>) -> Map<String, Value> {
        let want = self.status.as_deref().unwrap_or(&[]);
        STATUS
            .iter()
            .filter(|(k, n, _, _)| *k == kind && (want.is_empty() || want.iter().any(|w| w == n)))
            .filter_map(|(_, n, key, read)| Some((n.to_string(), value(*read, flat.get(*key)?))))
            .collect()
    }
}

/// The status blocks of the `objects` listed (DISPLAY blocks of `kind`), by object name, in
/// DISPLAY's lower-case keywords: a channel's instances (DISPLAY CHSTATUS), a topic's topic
/// string (DISPLAY TPSTATUS), a subscription's (DISPLAY SBSTATUS). What cannot be read is
/// left out.
pub(crate) async fn statuses(
    ctx: &std::sync::Arc<crate::Ctx>,
    kind: &str,
    pattern: &str,
    objects: &[sealmq_mqsc::exec::Block],
) -> std::collections::HashMap<String, Vec<Map<String, Value>>> {
    let field = |b: &sealmq_mqsc::exec::Block, k: &str| {
        b.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone())
    };
    let (script, key) = match kind {
        "channel" => (
            format!("DISPLAY CHSTATUS({}) ALL\n", crate::params::quote(pattern)),
            "CHANNEL",
        ),
        "subscription" => (
            format!("DISPLAY SBSTATUS({}) ALL\n", crate::params::quote(pattern)),
            "SUB",
        ),
        _ => (
            objects
                .iter()
                .filter_map(|b| field(b, "TOPICSTR").filter(|t| !t.is_empty()))
                .map(|t| format!("DISPLAY TPSTATUS({}) ALL\n", crate::params::quote(&t)))
                .collect(),
            "TOPICSTR",
        ),
    };
    let qm = ctx.qm.clone();
    let out = crate::blocking(move || sealmq_mqsc::run(&qm, &script))
        .await
        .unwrap_or_default();
    let mut by = std::collections::HashMap::<String, Vec<Map<String, Value>>>::new();
    for b in out.iter().filter(|r| r.ok).flat_map(|r| r.objects.iter()) {
        let Some(name) = field(b, key) else { continue };
        // A topic's status is found by its topic string: keyed by the topic object's name.
        let names: Vec<String> = if kind == "topic" {
            objects
                .iter()
                .filter(|o| field(o, "TOPICSTR").is_some_and(|t| t.eq_ignore_ascii_case(&name)))
                .filter_map(|o| field(o, "TOPIC"))
                .collect()
        } else {
            vec![name]
        };
        let flat: Map<String, Value> = b
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), json!(v)))
            .collect();
        for n in names {
            by.entry(n).or_default().push(flat.clone());
        }
    }
    by
}

/// One entry of `attributes`: `*`, an object, or `object.attribute`.
fn attribute(kind: &str, a: &str) -> Result<(String, String), String> {
    if a == "*" {
        return Ok(("*".into(), "*".into()));
    }
    let (object, attr) = a.split_once('.').unwrap_or((a, "*"));
    let channel_type = kind == "channel" && types(kind).iter().any(|(i, _)| *i == object);
    let known = ATTRS.iter().any(|(k, o, at, _, _)| {
        *k == kind
            && (*o == object || (*o == "[type]" && channel_type))
            && (attr == "*" || *at == attr)
    });
    if !known {
        return Err(format!(
            "'{a}' is not a {kind} attribute sealmq answers (docs/rest.md lists them)"
        ));
    }
    Ok((object.to_string(), attr.to_string()))
}

fn value(read: Read, v: &Value) -> Value {
    let s = v
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| v.to_string());
    match read {
        Read::Text => json!(s),
        Read::Number => s.parse::<i64>().map(|n| json!(n)).unwrap_or(json!(s)),
        Read::Is(yes) => json!(s.eq_ignore_ascii_case(yes)),
        Read::Connection => json!(connections(&s)),
    }
}

/// CONNAME's addresses as `[{host, port}]` (a host without a port has none; the whole value
/// as the host when it has no such form), as MQ's REST API gives them.
fn connections(conname: &str) -> Vec<Value> {
    conname
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(
            |c| match c.strip_suffix(')').and_then(|c| c.split_once('(')) {
                Some((h, p)) => match p.trim().parse::<u16>() {
                    Ok(port) => json!({"host": h.trim(), "port": port}),
                    Err(_) => json!({"host": c}),
                },
                None => json!({"host": c}),
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ibms_query_parameters_and_only_them() {
        let q = ListQuery::parse(
            "channel",
            "type=sender&attributes=sender.connection&status=*",
        )
        .unwrap();
        assert_eq!(q.mqsc_type, Some("SDR"));
        assert_eq!(q.attributes, [("sender".into(), "connection".into())]);
        assert_eq!(q.status, Some(vec![]));
        assert!(ListQuery::parse("channel", "type=bogus").is_err());
        assert!(ListQuery::parse("topic", "attributes=sender.connection").is_err());
        assert!(ListQuery::parse("subscription", "bogus=1").is_err());
        assert!(ListQuery::parse("subscription", "status=status.nope").is_err());
        let q = ListQuery::parse("subscription", "status=status.messageCount").unwrap();
        assert_eq!(q.status, Some(vec!["messageCount".to_string()]));
    }

    #[test]
    fn a_channel_in_ibms_named_objects() {
        let q = ListQuery::parse("channel", "attributes=*").unwrap();
        let mut flat = Map::new();
        flat.insert("descr".into(), json!("to the partner"));
        flat.insert(
            "conname".into(),
            json!("mq1.example.com(1414), 10.0.0.5(1415)"),
        );
        flat.insert("xmitq".into(), json!("PARTNER.XMIT"));
        let o = q.objects("channel", "sender", &flat);
        assert_eq!(o["general"]["description"], "to the partner");
        assert_eq!(o["sender"]["transmissionQueueName"], "PARTNER.XMIT");
        assert_eq!(
            o["sender"]["connection"],
            json!([{"host": "mq1.example.com", "port": 1414}, {"host": "10.0.0.5", "port": 1415}])
        );
        assert_eq!(connections("odd"), [json!({"host": "odd"})]);
        assert_eq!(ibm_type("channel", "SVRCONN"), "serverConnection");
    }

    proptest! {
        #[test]
        fn no_query_panics(kind in prop::sample::select(vec!["channel", "topic", "subscription"]), s in ".{0,80}") {
            let _ = ListQuery::parse(kind, &s);
            let _ = connections(&s);
        }
    }
}
