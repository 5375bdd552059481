//! `sealmq dump QM`: MQSC that recreates a queue manager's configuration — every queue,
//! channel, listener, process, topic, administrative subscription, AUTHINFO, authority record, CHLAUTH rule and policy, and the
//! queue manager's attributes (MQ's dmpmqcfg). It asks the running queue manager with DISPLAY
//! commands, as an administrator would, and writes each object as one command with every
//! attribute (blank ones as `' '`, so a changed default object cannot leak into a replay).
//! Replayed on a new queue manager, a second dump is identical.

use crate::CliResult;
use crate::home::exists;
use clap::Args;
use sealmq_client::Client;
use serde_json::Value;

#[derive(Args)]
pub struct DumpArgs {
    /// Queue manager name.
    pub qm: String,
}

/// Attributes that are status, not configuration: never written back.
const STATUS: &[&str] = &[
    "CURDEPTH", "IPPROCS", "OPPROCS", "QOP", "QMNAME", "SSLKEYDN", "CMDLEVEL", "PLATFORM",
    "VERSION",
];
/// Keywords that stand alone (their display value is empty).
const FLAGS: &[&str] = &[
    "SHARE",
    "NOSHARE",
    "HARDENBO",
    "NOHARDENBO",
    "TRIGGER",
    "NOTRIGGER",
];

fn quote(v: &str) -> String {
    if v.is_empty() {
        "' '".into()
    } else {
        format!("'{}'", v.replace('\'', "''"))
    }
}

fn values(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) => a
            .iter()
            .filter_map(|x| x.as_str().map(String::from))
            .collect(),
        Value::String(s) => vec![s.clone()],
        _ => vec![],
    }
}

/// `KEY('value') ...` for every attribute of `obj` except `skip`.
fn attrs(obj: &serde_json::Map<String, Value>, skip: &[&str], blanks: bool) -> String {
    let mut out = String::new();
    for (k, v) in obj {
        if skip.contains(&k.as_str()) || STATUS.contains(&k.as_str()) {
            continue;
        }
        for val in values(v) {
            if FLAGS.contains(&k.as_str()) && val.is_empty() {
                out.push_str(&format!(" {k}"));
            } else if !val.is_empty() || blanks {
                out.push_str(&format!(" {k}({})", quote(&val)));
            }
        }
    }
    out
}

pub(crate) fn s<'a>(o: &'a serde_json::Map<String, Value>, k: &str) -> &'a str {
    o.get(k).and_then(|v| v.as_str()).unwrap_or_default()
}

/// The objects of one DISPLAY, from its JSON response.
pub(crate) fn objects(c: &mut Client, cmd: &str) -> CliResult<Vec<serde_json::Map<String, Value>>> {
    let (text, _) = c.mqsc(cmd, true).map_err(|e| e.to_string())?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{cmd}: {e}"))?;
    let r = &v[0];
    if r["ok"] != Value::Bool(true) {
        // Nothing of this kind (a generic name matching none) is not an error.
        if r["objects"].as_array().is_some_and(|a| a.is_empty()) && cmd.contains("(*)") {
            return Ok(vec![]);
        }
        return Err(format!("{cmd}: {}", r["message"].as_str().unwrap_or("failed")).into());
    }
    Ok(r["objects"]
        .as_array()
        .map(|a| a.iter().filter_map(|o| o.as_object().cloned()).collect())
        .unwrap_or_default())
}

/// The dump, as text.
pub fn dump(c: &mut Client, qm: &str) -> CliResult<String> {
    let mut out = format!("* sealmq dump of queue manager {qm}: replay with `sealmq mqsc QM`\n");
    // Objects named by their own keyword, written back with every attribute.
    for (title, obj) in [
        ("AUTHINFO objects", "AUTHINFO"),
        ("Processes", "PROCESS"),
        ("Listeners", "LISTENER"),
        ("Services", "SERVICE"),
        ("Topics", "TOPIC"),
    ] {
        out.push_str(&format!("\n* {title}\n"));
        for o in objects(c, &format!("DISPLAY {obj}(*) ALL"))? {
            out.push_str(&format!(
                "DEFINE {obj}({}){} REPLACE\n",
                quote(s(&o, obj)),
                attrs(&o, &[obj], true)
            ));
        }
    }
    out.push_str("\n* Queues\n");
    for o in objects(c, "DISPLAY QUEUE(*) ALL")? {
        let t = s(&o, "TYPE");
        let deftype = s(&o, "DEFTYPE");
        // Temporary dynamic queues end with their connection; they are not configuration.
        if t == "QLOCAL" && deftype == "TEMPDYN" {
            continue;
        }
        let skip: &[&str] = if t == "QLOCAL" {
            &["QUEUE", "TYPE", "DEFTYPE"]
        } else {
            &["QUEUE", "TYPE"]
        };
        out.push_str(&format!(
            "DEFINE {t}({}){} REPLACE\n",
            quote(s(&o, "QUEUE")),
            attrs(&o, skip, true)
        ));
    }
    out.push_str("\n* Channels\n");
    for o in objects(c, "DISPLAY CHANNEL(*) ALL")? {
        out.push_str(&format!(
            "DEFINE CHANNEL({}) CHLTYPE({}){} REPLACE\n",
            quote(s(&o, "CHANNEL")),
            s(&o, "CHLTYPE"),
            attrs(&o, &["CHANNEL", "CHLTYPE"], true)
        ));
    }
    out.push_str("\n* Subscriptions (administrative and durable)\n");
    for o in objects(c, "DISPLAY SUB(*) ALL")? {
        if s(&o, "SUBTYPE") != "ADMIN" {
            continue;
        }
        out.push_str(&format!(
            "DEFINE SUB({}){} REPLACE\n",
            quote(s(&o, "SUB")),
            attrs(
                &o,
                &["SUB", "SUBID", "SUBTYPE", "TOPICOBJ", "DESTQMGR", "DURABLE"],
                false
            )
        ));
    }
    out.push_str("\n* Authority records\n");
    for o in objects(c, "DISPLAY AUTHREC")? {
        let objtype = s(&o, "OBJTYPE");
        let profile = if objtype == "QMGR" {
            String::new()
        } else {
            format!(" PROFILE({})", quote(s(&o, "PROFILE")))
        };
        let who = if o.contains_key("GROUP") {
            format!("GROUP({})", quote(s(&o, "GROUP")))
        } else {
            format!("PRINCIPAL({})", quote(s(&o, "PRINCIPAL")))
        };
        let list = s(&o, "AUTHLIST");
        if list.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "SET AUTHREC{profile} OBJTYPE({objtype}) {who} AUTHADD({list})\n"
        ));
    }
    out.push_str("\n* Channel authentication records\n");
    for o in objects(c, "DISPLAY CHLAUTH(*) ALL")? {
        out.push_str(&format!(
            "SET CHLAUTH({}){} ACTION(REPLACE)\n",
            quote(s(&o, "CHLAUTH")),
            attrs(&o, &["CHLAUTH"], false)
        ));
    }
    out.push_str("\n* Security policies\n");
    for o in objects(c, "DISPLAY POLICY(*)")? {
        let tolerate = if s(&o, "TOLERATE") == "YES" {
            " TOLERATE"
        } else {
            " ENFORCE"
        };
        out.push_str(&format!(
            "SET POLICY({}){}{tolerate} ACTION(REPLACE)\n",
            quote(s(&o, "POLICY")),
            attrs(&o, &["POLICY", "TOLERATE"], false)
        ));
    }
    out.push_str("\n* Queue manager\n");
    for o in objects(c, "DISPLAY QMGR ALL")? {
        out.push_str(&format!("ALTER QMGR{}\n", attrs(&o, &[], true)));
    }
    Ok(out)
}

pub fn run(a: DumpArgs) -> CliResult {
    let dir = exists(&a.qm)?;
    let mut c = Client::connect_local(&dir, "sealmq-dump").map_err(|e| {
        format!(
            "{e} (dump reads a running queue manager: sealmq start {})",
            a.qm
        )
    })?;
    print!("{}", dump(&mut c, &a.qm)?);
    Ok(())
}
