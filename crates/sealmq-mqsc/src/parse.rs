//! MQSC command structure: `VERB OBJTYPE(name) KEYWORD(value) ...`.

use crate::lexer::{Tok, Token, tokens};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Define,
    Alter,
    Display,
    Delete,
    Clear,
    Start,
    Stop,
    Resolve,
    Reset,
    Set,
    Refresh,
    Ping,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Obj {
    QLocal,
    QAlias,
    QRemote,
    QModel,
    /// Any queue type (DISPLAY QUEUE).
    Queue,
    QStatus,
    /// A queue's statistics (RESET QSTATS).
    QStats,
    Qmgr,
    Channel,
    ChStatus,
    Policy,
    AuthRec,
    /// The channel initiator (DISPLAY CHINIT).
    Chinit,
    /// The queue manager's security data (REFRESH SECURITY).
    Security,
    /// Channel authentication records (SET/DISPLAY CHLAUTH).
    ChlAuth,
    /// Authentication information objects (AUTHINFO).
    AuthInfo,
    /// A principal's authority on objects (DISPLAY ENTAUTH).
    EntAuth,
    /// TCP listeners (LISTENER) and their status (LSSTATUS).
    Listener,
    LsStatus,
    /// Programs a trigger monitor starts (PROCESS).
    Process,
    /// Programs the queue manager starts and stops (SERVICE) and their status (SVSTATUS).
    Service,
    SvStatus,
    /// Connections (DISPLAY CONN).
    Conn,
    /// The queue manager's status (DISPLAY QMSTATUS).
    QmStatus,
    /// Topic objects (TOPIC) and the topic tree's status (TPSTATUS).
    Topic,
    TpStatus,
    /// Subscriptions (SUB) and their status (SBSTATUS).
    Sub,
    SbStatus,
    /// A topic string (CLEAR TOPICSTR ... CLRTYPE(RETAINED)).
    TopicStr,
    /// The publish/subscribe engine's status (DISPLAY PUBSUB).
    PubSub,
    /// An MQ object type of a feature sealmq does not provide (TOPIC, SUB, NAMELIST, ...):
    /// refused naming the feature.
    NotProvided(&'static str),
}

/// A `KEYWORD` or `KEYWORD(value ...)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attr {
    pub key: String,
    pub values: Vec<String>,
    pub has_parens: bool,
    pub at: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub verb: Verb,
    pub obj: Obj,
    pub name: Option<String>,
    pub attrs: Vec<Attr>,
}

/// A parse error: the offset of the token that is wrong and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub at: usize,
    pub message: String,
}

fn verb(w: &str) -> Option<Verb> {
    Some(match w {
        "DEFINE" | "DEF" => Verb::Define,
        "ALTER" | "ALT" => Verb::Alter,
        "DISPLAY" | "DIS" => Verb::Display,
        "DELETE" | "DEL" => Verb::Delete,
        "CLEAR" => Verb::Clear,
        "START" | "STA" => Verb::Start,
        "STOP" => Verb::Stop,
        "RESOLVE" => Verb::Resolve,
        "RESET" => Verb::Reset,
        "SET" => Verb::Set,
        "REFRESH" | "REF" => Verb::Refresh,
        "PING" => Verb::Ping,
        _ => return None,
    })
}

fn obj(w: &str) -> Option<Obj> {
    Some(match w {
        "QLOCAL" | "QL" => Obj::QLocal,
        "QALIAS" | "QA" => Obj::QAlias,
        "QREMOTE" | "QR" => Obj::QRemote,
        "QMODEL" | "QM" => Obj::QModel,
        "QUEUE" | "Q" => Obj::Queue,
        "QSTATUS" | "QS" => Obj::QStatus,
        "QSTATS" => Obj::QStats,
        "QMGR" => Obj::Qmgr,
        "CHANNEL" | "CHL" => Obj::Channel,
        "CHSTATUS" | "CHS" => Obj::ChStatus,
        "POLICY" => Obj::Policy,
        "AUTHREC" => Obj::AuthRec,
        "CHINIT" => Obj::Chinit,
        "SECURITY" | "SEC" => Obj::Security,
        "CHLAUTH" => Obj::ChlAuth,
        "AUTHINFO" => Obj::AuthInfo,
        "ENTAUTH" => Obj::EntAuth,
        "LISTENER" => Obj::Listener,
        "LSSTATUS" => Obj::LsStatus,
        "PROCESS" | "PRO" => Obj::Process,
        "SERVICE" => Obj::Service,
        "SVSTATUS" => Obj::SvStatus,
        "CONN" => Obj::Conn,
        "QMSTATUS" => Obj::QmStatus,
        "TOPIC" => Obj::Topic,
        "TPSTATUS" | "TOPICSTATUS" => Obj::TpStatus,
        "SUB" | "SUBSCRIPTION" => Obj::Sub,
        "SBSTATUS" => Obj::SbStatus,
        "TOPICSTR" => Obj::TopicStr,
        "PUBSUB" => Obj::PubSub,
        _ => return None,
    })
}

/// An MQ object type sealmq does not provide, kept by its name so the refusal can say so.
fn not_provided(w: &str) -> Option<Obj> {
    const NAMES: [&str; 13] = [
        "NAMELIST", "NL", "COMMINFO", "CLUSQMGR", "CFSTRUCT", "STGCLASS", "CFSTATUS", "ARCHIVE",
        "LOG", "USAGE", "SMDS", "CLNTCONN", "RQMNAME",
    ];
    NAMES.iter().find(|n| **n == w).map(|n| Obj::NotProvided(n))
}

fn word(t: &Token) -> Option<&str> {
    match &t.tok {
        Tok::Word(w) => Some(w),
        _ => None,
    }
}

/// Reads `( value ... )` starting at `i` (which is the opening parenthesis).
fn values(ts: &[Token], mut i: usize) -> Result<(Vec<String>, usize), ParseError> {
    let open_at = ts[i].at;
    i += 1;
    let mut v = Vec::new();
    loop {
        match ts.get(i) {
            None => {
                return Err(ParseError {
                    at: open_at,
                    message: "'(' is not closed".into(),
                });
            }
            Some(t) => match &t.tok {
                Tok::Close => return Ok((v, i + 1)),
                Tok::Word(w) => v.push(w.clone()),
                Tok::Quoted(q) => v.push(q.clone()),
                Tok::Open => {
                    return Err(ParseError {
                        at: t.at,
                        message: "unexpected '('".into(),
                    });
                }
            },
        }
        i += 1;
    }
}

/// Parses one command.
pub fn parse(text: &str) -> Result<Command, ParseError> {
    let ts = tokens(text).map_err(|(at, message)| ParseError { at, message })?;
    let Some(first) = ts.first() else {
        return Err(ParseError {
            at: 0,
            message: "empty command".into(),
        });
    };
    let v = word(first).and_then(verb).ok_or_else(|| ParseError {
        at: first.at,
        message: "expected a verb: DEFINE, ALTER, DISPLAY, DELETE, CLEAR, START, STOP, PING, RESOLVE, RESET, SET or REFRESH".into(),
    })?;
    let second = ts.get(1).ok_or_else(|| ParseError {
        at: text.len(),
        message: "expected an object type after the verb".into(),
    })?;
    let o = word(second)
        .and_then(|w| obj(w).or_else(|| not_provided(w)))
        .ok_or_else(|| ParseError {
        at: second.at,
        message: "expected an object type: QLOCAL, QALIAS, QREMOTE, QMODEL, QUEUE, QSTATUS, QSTATS, QMGR, QMSTATUS, CHANNEL, CHSTATUS, CHINIT, LISTENER, LSSTATUS, PROCESS, SERVICE, SVSTATUS, CONN, POLICY, AUTHREC, AUTHINFO, CHLAUTH, ENTAUTH or SECURITY".into(),
    })?;
    let mut i = 2;
    let mut name = None;
    // SECURITY takes an optional name, `REFRESH SECURITY(*)` as MQ writes it.
    // START/STOP LISTENER without a name mean the default listener, as MQ.
    let optional_name = matches!(o, Obj::Security | Obj::Listener)
        && !matches!(ts.get(i).map(|t| &t.tok), Some(Tok::Open));
    if !matches!(
        o,
        Obj::Qmgr | Obj::AuthRec | Obj::Chinit | Obj::EntAuth | Obj::QmStatus | Obj::PubSub
    ) && !optional_name
    {
        match ts.get(i).map(|t| &t.tok) {
            Some(Tok::Open) => {
                let (vals, next) = values(&ts, i)?;
                if vals.len() != 1 {
                    return Err(ParseError {
                        at: ts[i].at,
                        message: "expected exactly one object name in parentheses".into(),
                    });
                }
                name = vals.into_iter().next();
                i = next;
            }
            _ => {
                return Err(ParseError {
                    at: ts.get(i).map(|t| t.at).unwrap_or(text.len()),
                    message: "expected the object name in parentheses, e.g. QLOCAL(APP.Q)".into(),
                });
            }
        }
    }
    let mut attrs = Vec::new();
    while i < ts.len() {
        let t = &ts[i];
        let Some(k) = word(t) else {
            return Err(ParseError {
                at: t.at,
                message: "expected a keyword".into(),
            });
        };
        let key = k.to_string();
        if matches!(ts.get(i + 1).map(|t| &t.tok), Some(Tok::Open)) {
            let (vals, next) = values(&ts, i + 1)?;
            attrs.push(Attr {
                key,
                values: vals,
                has_parens: true,
                at: t.at,
            });
            i = next;
        } else {
            attrs.push(Attr {
                key,
                values: Vec::new(),
                has_parens: false,
                at: t.at,
            });
            i += 1;
        }
    }
    Ok(Command {
        verb: v,
        obj: o,
        name,
        attrs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let c = parse("define qlocal(app.q) descr('Orders') maxdepth(100) replace").unwrap();
        assert_eq!(c.verb, Verb::Define);
        assert_eq!(c.obj, Obj::QLocal);
        assert_eq!(c.name.as_deref(), Some("APP.Q"));
        assert_eq!(c.attrs[0].values, vec!["Orders"]);
        assert!(!c.attrs[2].has_parens);
        let c = parse("DIS QMGR ALL").unwrap();
        assert_eq!(c.obj, Obj::Qmgr);
        let e = parse("DEFINE QLOCAL APP.Q").unwrap_err();
        assert_eq!(e.at, 14);
        assert_eq!(parse("FROB QLOCAL(A)").unwrap_err().at, 0);
        assert_eq!(parse("DEFINE QLOCAL(A) MAXDEPTH(1").unwrap_err().at, 25);
        let c = parse("REFRESH SECURITY TYPE(SSL)").unwrap();
        assert_eq!(
            (c.verb, c.obj, c.name.clone()),
            (Verb::Refresh, Obj::Security, None)
        );
        assert_eq!(c.attrs[0].values, vec!["SSL"]);
        let c = parse("ref sec(*) type(ssl)").unwrap();
        assert_eq!(c.name.as_deref(), Some("*"));
    }
}
