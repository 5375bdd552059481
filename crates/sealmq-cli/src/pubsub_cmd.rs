//! `sealmq pub QM TOPICSTR` and `sealmq sub QM TOPICSTR` (issue 28): publish messages on a
//! topic string; subscribe (non-durable, or durable by name, resumable) and print what is
//! published, one message per line.

use crate::CliResult;
use crate::app_cmd::{ConnArgs, connect};
use clap::Args;
use sealmq_client::pubsub::Subscription;
use sealmq_engine::md::{Md, Persistence};
use sealmq_engine::mqi::GetOptions;
use sealmq_types::ReasonCode;
use std::io::Write;
use std::time::Duration;

#[derive(Args)]
pub struct PubArgs {
    /// The queue manager, and the topic string to publish on (in place of a queue name).
    #[command(flatten)]
    pub c: ConnArgs,
    /// Message text (default: `message <n>`).
    #[arg(long)]
    pub message: Option<String>,
    #[arg(long, default_value_t = 1)]
    pub count: u64,
    /// Persistent publications (default: the topic's DEFPSIST).
    #[arg(long, conflicts_with = "nonpersistent")]
    pub persistent: bool,
    #[arg(long)]
    pub nonpersistent: bool,
    /// Publish under syncpoint and commit at the end (all or none).
    #[arg(long)]
    pub syncpoint: bool,
    /// Back out instead of committing (with --syncpoint): nothing is delivered.
    #[arg(long, requires = "syncpoint")]
    pub backout: bool,
    /// Keep the (last) publication for subscriptions made later (MQPMO_RETAIN).
    #[arg(long, conflicts_with = "topic_object")]
    pub retain: bool,
    /// Open this topic object to publish (MQOPEN of MQOT_TOPIC), the topic string joined
    /// under its TOPICSTR (give '' to publish on the object's own), and put through it.
    #[arg(long)]
    pub topic_object: Option<String>,
    /// A message property, `name=value` or `name:TYPE=value` (as `sealmq put`); repeatable.
    #[arg(long = "property", value_name = "NAME[:TYPE]=VALUE", value_parser = sealmq_mqi::props::parse_assignment)]
    pub properties: Vec<sealmq_mqi::Property>,
}

#[derive(Args)]
pub struct SubArgs {
    /// The queue manager, and the topic string to subscribe to (`#` and `+` wildcards).
    #[command(flatten)]
    pub c: ConnArgs,
    /// The subscription's name (required with --durable).
    #[arg(long, default_value = "")]
    pub name: String,
    /// A durable subscription: kept when this program ends, resumed with --resume.
    #[arg(long)]
    pub durable: bool,
    /// Resume the durable subscription --name (and get what was published meanwhile).
    #[arg(long, requires = "name")]
    pub resume: bool,
    /// A message selector on the publications' properties.
    #[arg(long, default_value = "")]
    pub selector: String,
    /// Stop after this many publications.
    #[arg(long)]
    pub count: Option<u64>,
    /// Wait this many milliseconds for each publication (0: take what is there).
    #[arg(long, default_value_t = 0)]
    pub wait: u64,
    /// Remove the (durable) subscription at the end.
    #[arg(long)]
    pub remove: bool,
    /// Only what is published from now on: not the retained publications
    /// (MQSO_NEW_PUBLICATIONS_ONLY).
    #[arg(long)]
    pub new_publications_only: bool,
    /// Copies go to this queue of yours instead of a managed one (needs PUT and GET on it).
    #[arg(long, default_value = "")]
    pub dest: String,
}

fn text(e: impl std::fmt::Display) -> crate::CliError {
    e.to_string().into()
}

pub fn publish(a: PubArgs) -> CliResult {
    let mut c = connect(&a.c, "sealmq-pub")?;
    // With --topic-object: one open, then a put through the handle per publication.
    let opened = match &a.topic_object {
        Some(o) => Some(c.open_topic(o, &a.c.queue).map_err(text)?),
        None => None,
    };
    let topic = opened.as_ref().map_or(&a.c.queue, |(_, t)| t);
    let persistence = if a.persistent {
        Persistence::Persistent
    } else if a.nonpersistent {
        Persistence::NotPersistent
    } else {
        Persistence::AsQueueDef
    };
    for i in 0..a.count {
        let payload = match &a.message {
            Some(m) => m.as_bytes().to_vec(),
            None => format!("message {i}").into_bytes(),
        };
        let mut md = Md {
            persistence,
            format: "MQSTR".into(),
            properties: a.properties.clone(),
            ..Md::default()
        };
        match &opened {
            Some((h, _)) => c.put(*h, &mut md, &payload, a.syncpoint),
            None => c.publish_with(topic, &mut md, &payload, a.syncpoint, a.retain),
        }
        .map_err(text)?;
    }
    if let Some((h, _)) = &opened {
        c.close(*h).map_err(text)?;
    }
    if a.syncpoint {
        if a.backout {
            c.backout().map_err(text)?;
        } else {
            c.commit().map_err(text)?;
        }
    }
    let done = if a.backout { "backed out" } else { "published" };
    println!("{} message(s) {done} on '{topic}'", a.count);
    Ok(())
}

pub fn subscribe(a: SubArgs) -> CliResult {
    let mut c = connect(&a.c, "sealmq-sub")?;
    let s = Subscription {
        name: a.name.clone(),
        topic: a.c.queue.clone(),
        durable: a.durable,
        selector: a.selector.clone(),
        resume: a.resume,
        new_only: a.new_publications_only,
        dest: a.dest.clone(),
    };
    let (h, queue) = c.subscribe(&s).map_err(text)?;
    eprintln!("subscribed to '{}' (queue {queue})", a.c.queue);
    let gmo = GetOptions {
        wait: (a.wait > 0).then(|| Duration::from_millis(a.wait)),
        ..GetOptions::default()
    };
    let mut out = std::io::stdout().lock();
    let mut got = 0u64;
    while a.count.is_none_or(|n| got < n) {
        match c.get(h, &gmo) {
            Ok(m) => {
                got += 1;
                writeln!(out, "{}", String::from_utf8_lossy(&m.payload)).map_err(text)?;
            }
            Err(e) if e.reason == ReasonCode::NoMsgAvailable => break,
            Err(e) => return Err(text(e)),
        }
    }
    out.flush().map_err(text)?;
    if a.remove {
        c.unsubscribe(&s.name).map_err(text)?;
    } else {
        c.close(h).map_err(text)?;
    }
    eprintln!("{got} publication(s) received");
    Ok(())
}
