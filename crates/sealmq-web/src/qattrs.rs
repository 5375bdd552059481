//! The query of MQ's `GET .../admin/qmgr/{qm}/queue` — `name`, `type`, `attributes`,
//! `status`; anything else refused — and a queue's attributes in IBM's named JSON objects
//! (`general.description`, `storage.maximumDepth`, `remote.qmgrName`, ...) from its DISPLAY
//! QUEUE keywords. Which of IBM's objects and attributes sealmq answers is listed in
//! docs/rest.md.

use serde_json::{Map, Value, json};

/// What a queue list asks for.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Query {
    /// A name or generic name (`APP.*`), instead of the path's.
    pub name: Option<String>,
    /// The MQSC type the list keeps (`QLOCAL`...); `None`: every type.
    pub qtype: Option<&'static str>,
    /// IBM's attributes asked for: `(object, attribute)`, attribute `*` for the whole object.
    pub attributes: Vec<(String, String)>,
    /// Status attributes asked for (`*`: all); `None`: sealmq's default (all, for local queues).
    pub status: Option<Vec<String>>,
}

/// IBM's object, its attribute, the DISPLAY keyword it comes from and how its value is read.
const MAP: &[(&str, &str, &str, Kind)] = &[
    ("general", "description", "descr", Kind::Text),
    ("general", "inhibitGet", "get", Kind::Disabled),
    ("general", "inhibitPut", "put", Kind::Disabled),
    ("general", "isTransmissionQueue", "usage", Kind::Is("XMITQ")),
    ("storage", "maximumDepth", "maxdepth", Kind::Number),
    ("storage", "maximumMessageLength", "maxmsgl", Kind::Number),
    (
        "storage",
        "messageDeliverySequence",
        "msgdlvsq",
        Kind::Lower,
    ),
    ("applicationDefaults", "persistent", "defpsist", Kind::Yes),
    ("applicationDefaults", "priority", "defprty", Kind::Number),
    (
        "applicationDefaults",
        "sharedInput",
        "defsopt",
        Kind::Is("SHARED"),
    ),
    ("extended", "allowSharedInput", "share", Kind::Flag),
    ("extended", "backoutThreshold", "bothresh", Kind::Number),
    ("extended", "backoutRequeueQueueName", "boqname", Kind::Text),
    ("extended", "hardenGetBackout", "hardenbo", Kind::Flag),
    ("trigger", "enabled", "trigger", Kind::Flag),
    ("trigger", "type", "trigtype", Kind::Lower),
    ("trigger", "depth", "trigdpth", Kind::Number),
    ("trigger", "messagePriority", "trigmpri", Kind::Number),
    ("trigger", "data", "trigdata", Kind::Text),
    ("trigger", "processName", "process", Kind::Text),
    ("trigger", "initiationQueueName", "initq", Kind::Text),
    ("remote", "qmgrName", "rqmname", Kind::Text),
    ("remote", "queueName", "rname", Kind::Text),
    ("remote", "transmissionQueueName", "xmitq", Kind::Text),
    ("alias", "targetName", "target", Kind::Text),
    ("alias", "targetType", "targtype", Kind::Lower),
    ("model", "type", "deftype", Kind::DefType),
];

#[derive(Clone, Copy)]
enum Kind {
    Text,
    Number,
    Lower,
    /// YES/NO.
    Yes,
    /// ENABLED/DISABLED, read as "inhibited".
    Disabled,
    /// A keyword shown alone, or negated (SHARE/NOSHARE, TRIGGER/NOTRIGGER): read from which
    /// of the two keys is there.
    Flag,
    /// True when the value is this one.
    Is(&'static str),
    /// PERMDYN/TEMPDYN/PREDEFINED.
    DefType,
}

fn read(kind: Kind, v: &Value) -> Value {
    let s = match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    match kind {
        Kind::Text => json!(s.trim_end()),
        Kind::Number => s.parse::<i64>().map_or(json!(s), |n| json!(n)),
        Kind::Lower => json!(s.to_ascii_lowercase()),
        Kind::Yes => json!(s.eq_ignore_ascii_case("YES")),
        Kind::Disabled => json!(s.eq_ignore_ascii_case("DISABLED")),
        Kind::Flag => v.clone(),
        Kind::Is(x) => json!(s.eq_ignore_ascii_case(x)),
        Kind::DefType => json!(match s.to_ascii_uppercase().as_str() {
            "PERMDYN" => "permanentDynamic",
            "TEMPDYN" => "temporaryDynamic",
            "SHAREDYN" => "sharedDynamic",
            _ => "predefined",
        }),
    }
}

impl Query {
    /// The query string of a queue list; `Err` names what is wrong.
    pub(crate) fn parse(query: &str) -> Result<Query, String> {
        let mut q = Query::default();
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            match k.as_ref() {
                "name" => q.name = Some(v.trim().to_string()),
                "type" => {
                    q.qtype = match v.to_ascii_lowercase().as_str() {
                        "all" => None,
                        "local" => Some("QLOCAL"),
                        "alias" => Some("QALIAS"),
                        "remote" => Some("QREMOTE"),
                        "model" => Some("QMODEL"),
                        "cluster" => return Err("type 'cluster': clusters are not provided".into()),
                        other => {
                            return Err(format!(
                                "type '{other}' is not one of all, local, alias, remote, model"
                            ));
                        }
                    }
                }
                "attributes" => {
                    for a in v.split(',').map(str::trim).filter(|a| !a.is_empty()) {
                        q.attributes.push(attribute(a)?);
                    }
                }
                "status" => {
                    let mut want = Vec::new();
                    for a in v.split(',').map(str::trim).filter(|a| !a.is_empty()) {
                        match a {
                            "*" | "status" => want.push("*".to_string()),
                            other => match other.strip_prefix("status.") {
                                Some(s) if STATUS.contains(&s) => want.push(s.to_string()),
                                _ => {
                                    return Err(format!(
                                        "'{other}' is not a queue status attribute"
                                    ));
                                }
                            },
                        }
                    }
                    q.status = Some(want);
                }
                other => {
                    return Err(format!(
                        "'{other}' is not a query parameter of the queue resource (name, type, \
                         attributes, status)"
                    ));
                }
            }
        }
        Ok(q)
    }

    /// The named objects of one queue (its DISPLAY keywords in lower case, as `params` gives
    /// them) that the query asks for; those that do not apply to its type are left out.
    pub(crate) fn objects(&self, flat: &Map<String, Value>) -> Map<String, Value> {
        let mut out = Map::new();
        for (object, attr, key, kind) in MAP {
            let flag = |k: &str| flat.contains_key(k);
            let v = match kind {
                Kind::Flag if flag(key) => json!(true),
                Kind::Flag if flag(&format!("no{key}")) => json!(false),
                Kind::Flag => continue,
                _ => match flat.get(*key) {
                    Some(v) => v.clone(),
                    None => continue,
                },
            };
            let asked = self
                .attributes
                .iter()
                .any(|(o, a)| o == "*" || (o == object && (a == "*" || a == attr)));
            if !asked {
                continue;
            }
            let group = out
                .entry(object.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(g) = group {
                g.insert(attr.to_string(), read(*kind, &v));
            }
        }
        out
    }

    /// The status attributes to keep (`None`: all).
    pub(crate) fn status_kept(&self) -> Option<Vec<&str>> {
        let s = self.status.as_ref()?;
        if s.iter().any(|a| a == "*") {
            return None;
        }
        Some(s.iter().map(String::as_str).collect())
    }
}

/// The status attributes of a queue sealmq answers (IBM's names).
const STATUS: &[&str] = &[
    "currentDepth",
    "openInputCount",
    "openOutputCount",
    "uncommittedMessages",
    "currentFileSize",
    "oldestMessageAge",
    "putCount",
    "getCount",
];

/// One entry of `attributes`: `*`, an object (`general`), or `object.attribute`.
fn attribute(a: &str) -> Result<(String, String), String> {
    if a == "*" {
        return Ok(("*".into(), "*".into()));
    }
    let (object, attr) = a.split_once('.').unwrap_or((a, "*"));
    let known = MAP
        .iter()
        .any(|(o, at, _, _)| *o == object && (attr == "*" || *at == attr));
    if !known {
        return Err(format!(
            "'{a}' is not a queue attribute sealmq answers (docs/rest.md lists them)"
        ));
    }
    Ok((object.to_string(), attr.to_string()))
}

/// The MQSC keywords for IBM's named objects in a create or change body (`{"general":
/// {"description": "..."}, "storage": {"maximumDepth": 100}}`); `Err` names what is wrong.
/// Keys other than the objects (`name`, `type`) are the caller's.
pub(crate) fn keywords(body: &Map<String, Value>) -> Result<String, String> {
    let mut out = String::new();
    for (object, attrs) in body {
        if matches!(object.as_str(), "name" | "type") {
            continue;
        }
        let Value::Object(attrs) = attrs else {
            return Err(format!("'{object}' is not an object of queue attributes"));
        };
        for (attr, v) in attrs {
            let Some((_, _, key, kind)) = MAP.iter().find(|(o, a, _, _)| o == object && a == attr)
            else {
                return Err(format!(
                    "'{object}.{attr}' is not a queue attribute sealmq takes"
                ));
            };
            let bad = || format!("'{object}.{attr}': {v} is not a value it takes");
            let k = key.to_ascii_uppercase();
            let word = match (kind, v) {
                (Kind::Text, Value::String(s)) if !s.chars().any(char::is_control) => {
                    format!("{k}('{}')", s.replace('\'', "''"))
                }
                (Kind::Number, Value::Number(n)) if n.is_i64() => format!("{k}({n})"),
                (Kind::Lower, Value::String(s))
                    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric()) =>
                {
                    format!("{k}({})", s.to_ascii_uppercase())
                }
                (Kind::Yes, Value::Bool(b)) => format!("{k}({})", if *b { "YES" } else { "NO" }),
                (Kind::Disabled, Value::Bool(b)) => {
                    format!("{k}({})", if *b { "DISABLED" } else { "ENABLED" })
                }
                (Kind::Flag, Value::Bool(b)) => format!("{}{k}", if *b { "" } else { "NO" }),
                (Kind::Is(x), Value::Bool(b)) => {
                    let other = match *x {
                        "XMITQ" => "NORMAL",
                        _ => "EXCL",
                    };
                    format!("{k}({})", if *b { *x } else { other })
                }
                (Kind::DefType, Value::String(s)) => match s.as_str() {
                    "permanentDynamic" => format!("{k}(PERMDYN)"),
                    "temporaryDynamic" => format!("{k}(TEMPDYN)"),
                    _ => return Err(bad()),
                },
                _ => return Err(bad()),
            };
            out.push(' ');
            out.push_str(&word);
        }
    }
    Ok(out)
}

/// MQSC's queue type for IBM's (`local` when none is given).
pub(crate) fn mqsc_type(t: Option<&str>) -> Result<&'static str, String> {
    Ok(match t.unwrap_or("local") {
        "local" => "QLOCAL",
        "alias" => "QALIAS",
        "remote" => "QREMOTE",
        "model" => "QMODEL",
        other => {
            return Err(format!(
                "type '{other}' is not one of local, alias, remote, model"
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ibms_query_and_builds_its_objects() {
        let q = Query::parse(
            "type=local&attributes=general.description,storage&status=status.currentDepth",
        )
        .unwrap();
        assert_eq!(q.qtype, Some("QLOCAL"));
        assert_eq!(q.status_kept(), Some(vec!["currentDepth"]));
        let flat: Map<String, Value> = serde_json::from_value(json!({
            "descr": "orders ", "maxdepth": 5000, "maxmsgl": "4194304", "msgdlvsq": "PRIORITY",
            "get": "DISABLED", "notrigger": ""
        }))
        .unwrap();
        assert_eq!(
            Value::Object(q.objects(&flat)),
            json!({"general": {"description": "orders"},
                   "storage": {"maximumDepth": 5000, "maximumMessageLength": 4194304,
                               "messageDeliverySequence": "priority"}})
        );
        let all = Query::parse("attributes=*").unwrap();
        let o = all.objects(&flat);
        assert_eq!(o["general"]["inhibitGet"], true);
        assert_eq!(o["trigger"]["enabled"], false);
        let body: Map<String, Value> = serde_json::from_value(json!({
            "name": "Q1", "general": {"description": "it's", "inhibitPut": true},
            "extended": {"allowSharedInput": false}, "model": {"type": "temporaryDynamic"}
        }))
        .unwrap();
        assert_eq!(
            keywords(&body).unwrap(),
            " NOSHARE DESCR('it''s') PUT(DISABLED) DEFTYPE(TEMPDYN)"
        );
        for bad in [
            json!({"general": {"description": "a\nDELETE QLOCAL(X)"}}),
            json!({"storage": {"maximumDepth": "lots"}}),
            json!({"storage": {"colour": 1}}),
            json!({"general": 5}),
        ] {
            let m: Map<String, Value> = serde_json::from_value(bad.clone()).unwrap();
            assert!(keywords(&m).is_err(), "{bad}");
        }
        for bad in [
            "bogus=1",
            "type=cluster",
            "type=odd",
            "attributes=general.colour",
            "status=x",
        ] {
            assert!(Query::parse(bad).is_err(), "{bad}");
        }
    }
}
