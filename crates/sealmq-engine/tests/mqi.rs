//! Every rule of SPEC §3, asserting the reason code and the resulting queue state.

use sealmq_engine::objects::{MsgDlvSq, Usage};
use sealmq_engine::*;
use std::sync::Arc;
use std::time::Duration;

fn qm() -> (tempfile::TempDir, Arc<QueueManager>) {
    let d = tempfile::tempdir().unwrap();
    let qm = sealmq_engine::create(QmConfig::new("QM1", d.path().join("QM1"))).unwrap();
    (d, qm)
}

fn local(qm: &QueueManager, name: &str) -> QueueDef {
    let def = QueueDef::new(name, QType::Local);
    qm.define(def.clone(), false).unwrap();
    def
}

fn code<T: std::fmt::Debug>(r: MqResult<T>) -> u32 {
    r.expect_err("expected a reason code").reason.code()
}

/// Polls `cond` until it holds, failing after a deadline.
fn poll(cond: impl FnMut() -> bool) {
    sealmq_testkit::wait_for(Duration::from_secs(10), "the condition", cond)
}

fn md() -> Md {
    Md::default()
}

fn put(c: &Connection, q: &str, body: &[u8]) {
    c.put1(q, &mut md(), body, PutOptions::default()).unwrap();
}

fn get(c: &Connection, h: &Hobj) -> MqResult<Got> {
    c.get(h, GetOptions::default())
}

#[test]
fn open_resolution_and_unknown_names() {
    let (_d, qm) = qm();
    let c = Connection::connect(&qm, "app", "test").unwrap();
    assert_eq!(code(c.open("NOPE", OpenOptions::output())), 2085);
    local(&qm, "BASE");
    let mut alias = QueueDef::new("ALIAS", QType::Alias);
    alias.target = "BASE".into();
    qm.define(alias, false).unwrap();
    put(&c, "ALIAS", b"via alias");
    let h = c.open("BASE", OpenOptions::input()).unwrap();
    assert_eq!(get(&c, &h).unwrap().payload, b"via alias");
    let mut dangling = QueueDef::new("DANGLING", QType::Alias);
    dangling.target = "MISSING".into();
    qm.define(dangling, false).unwrap();
    assert_eq!(code(c.open("DANGLING", OpenOptions::output())), 2082);
    // Remote queue → transmission queue.
    let mut xq = QueueDef::new("QM2", QType::Local);
    xq.usage = Usage::Xmitq;
    qm.define(xq, false).unwrap();
    let mut r = QueueDef::new("REMOTE.Q", QType::Remote);
    r.remote_name = "TARGET".into();
    r.remote_qmgr = "QM2".into();
    qm.define(r, false).unwrap();
    put(&c, "REMOTE.Q", b"far");
    assert_eq!(qm.depth("QM2").unwrap(), 1);
    // On the transmission queue: a transmission header with the destination and the
    // original descriptor, then the payload.
    let xh = c.open("QM2", OpenOptions::input()).unwrap();
    let m = get(&c, &xh).unwrap();
    assert_eq!(m.md.format, sealmq_engine::xqh::FORMAT);
    let (h, payload) = sealmq_engine::xqh::TransmissionHeader::unwrap(&m.payload).unwrap();
    assert_eq!(
        (h.remote_q.as_str(), h.remote_qm.as_str()),
        ("TARGET", "QM2")
    );
    assert_eq!(h.md.msg_id, m.md.msg_id);
    assert_ne!(h.md.format, sealmq_engine::xqh::FORMAT);
    assert_eq!(payload, b"far");
    assert_eq!(code(c.open("REMOTE.Q", OpenOptions::input())), 2045);
    let mut bad = QueueDef::new("REMOTE.BAD", QType::Remote);
    bad.remote_qmgr = "QM9".into();
    qm.define(bad, false).unwrap();
    assert_eq!(code(c.open("REMOTE.BAD", OpenOptions::output())), 2087);
}

#[test]
fn put_limits_and_inhibits() {
    let (_d, qm) = qm();
    let c = Connection::connect(&qm, "app", "test").unwrap();
    let mut q = local(&qm, "Q");
    q.max_msg_len = 10;
    q.max_depth = 2;
    qm.alter(q.clone()).unwrap();
    assert_eq!(
        code(c.put1("Q", &mut md(), &[0; 11], PutOptions::default())),
        2030
    );
    let mut qmgr = qm.qmgr();
    qmgr.max_msg_len = 5;
    qm.alter_qmgr(qmgr).unwrap();
    assert_eq!(
        code(c.put1("Q", &mut md(), &[0; 6], PutOptions::default())),
        2031
    );
    put(&c, "Q", b"1");
    put(&c, "Q", b"2");
    assert_eq!(
        code(c.put1("Q", &mut md(), b"3", PutOptions::default())),
        2053
    );
    assert_eq!(qm.depth("Q").unwrap(), 2);
    q.put_enabled = false;
    qm.alter(q.clone()).unwrap();
    assert_eq!(
        code(c.put1("Q", &mut md(), b"x", PutOptions::default())),
        2051
    );
    q.get_enabled = false;
    qm.alter(q).unwrap();
    let h = c.open("Q", OpenOptions::input()).unwrap();
    assert_eq!(code(get(&c, &h)), 2016);
    assert_eq!(qm.depth("Q").unwrap(), 2, "nothing was removed");
    // Not opened for output / input.
    assert_eq!(
        code(c.put(&h, &mut md(), b"x", PutOptions::default())),
        2039
    );
}

#[test]
fn priority_then_fifo_and_fifo_queues() {
    let (_d, qm) = qm();
    let c = Connection::connect(&qm, "app", "test").unwrap();
    local(&qm, "P");
    for (p, body) in [(1, "a"), (5, "b"), (1, "c"), (9, "d"), (5, "e")] {
        let mut m = md();
        m.priority = p;
        c.put1("P", &mut m, body.as_bytes(), PutOptions::default())
            .unwrap();
    }
    let h = c.open("P", OpenOptions::input()).unwrap();
    let order: Vec<String> = (0..5)
        .map(|_| String::from_utf8(get(&c, &h).unwrap().payload).unwrap())
        .collect();
    assert_eq!(order, ["d", "b", "e", "a", "c"]);
    assert_eq!(code(get(&c, &h)), 2033);
    let mut f = local(&qm, "F");
    f.msg_dlv_seq = MsgDlvSq::Fifo;
    qm.alter(f).unwrap();
    for (p, body) in [(1, "a"), (9, "b"), (5, "c")] {
        let mut m = md();
        m.priority = p;
        c.put1("F", &mut m, body.as_bytes(), PutOptions::default())
            .unwrap();
    }
    let h = c.open("F", OpenOptions::input()).unwrap();
    let order: Vec<String> = (0..3)
        .map(|_| String::from_utf8(get(&c, &h).unwrap().payload).unwrap())
        .collect();
    assert_eq!(order, ["a", "b", "c"]);
}

#[test]
fn match_on_msg_id_and_correl_id() {
    let (_d, qm) = qm();
    let c = Connection::connect(&qm, "app", "test").unwrap();
    local(&qm, "Q");
    let mut ids = Vec::new();
    for i in 0..3u8 {
        let mut m = md();
        m.correl_id = [i; 24];
        c.put1("Q", &mut m, &[i], PutOptions::default()).unwrap();
        ids.push(m.msg_id);
    }
    let h = c.open("Q", OpenOptions::input()).unwrap();
    let g = c
        .get(
            &h,
            GetOptions {
                matching: Match {
                    correl_id: Some([2; 24]),
                    msg_id: None,
                    selector: None,
                },
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(g.payload, [2]);
    let g = c
        .get(
            &h,
            GetOptions {
                matching: Match {
                    msg_id: Some(ids[1]),
                    ..Match::default()
                },
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(g.payload, [1]);
    assert_eq!(
        code(c.get(
            &h,
            GetOptions {
                matching: Match {
                    msg_id: Some(ids[1]),
                    ..Match::default()
                },
                ..Default::default()
            }
        )),
        2033
    );
    assert_eq!(qm.depth("Q").unwrap(), 1);
}

#[test]
fn get_wait_wakes_one_waiter_and_the_matching_one_first() {
    let (_d, qm) = qm();
    local(&qm, "W");
    let wait = |matching: Match, ms: u64| {
        let qm = qm.clone();
        std::thread::spawn(move || {
            let c = Connection::connect(&qm, "app", "waiter").unwrap();
            let h = c.open("W", OpenOptions::input()).unwrap();
            c.get(
                &h,
                GetOptions {
                    wait: Some(Duration::from_millis(ms)),
                    matching,
                    ..Default::default()
                },
            )
            .map(|g| g.payload)
            .map_err(|e| e.reason.code())
        })
    };
    // A timeout says 2033.
    let c = Connection::connect(&qm, "app", "putter").unwrap();
    let h = c.open("W", OpenOptions::input()).unwrap();
    assert_eq!(
        code(c.get(
            &h,
            GetOptions {
                wait: Some(Duration::from_millis(50)),
                ..Default::default()
            }
        )),
        2033
    );
    // Two generic waiters and one specific waiter; one message for the specific one, then one
    // message for anybody: exactly one generic waiter gets it, the other times out.
    let generic1 = wait(Match::default(), 3000);
    let generic2 = wait(Match::default(), 1500);
    let specific = wait(
        Match {
            correl_id: Some([7; 24]),
            msg_id: None,
            selector: None,
        },
        3000,
    );
    poll(|| qm.waiting("W") == 3);
    let mut m = md();
    m.correl_id = [7; 24];
    c.put1("W", &mut m, b"for specific", PutOptions::default())
        .unwrap();
    assert_eq!(specific.join().unwrap(), Ok(b"for specific".to_vec()));
    c.put1("W", &mut md(), b"for one", PutOptions::default())
        .unwrap();
    let results = [generic1.join().unwrap(), generic2.join().unwrap()];
    assert_eq!(
        results
            .iter()
            .filter(|r| r.as_ref().is_ok_and(|p| p == b"for one"))
            .count(),
        1,
        "{results:?}"
    );
    assert_eq!(
        results.iter().filter(|r| **r == Err(2033)).count(),
        1,
        "{results:?}"
    );
    assert_eq!(qm.depth("W").unwrap(), 0);
}

/// A get's wait abandoned without `get_resume` (the task awaiting it dropped, as when an
/// asynchronous server drops a request's future) leaves no waiter behind to swallow a put's
/// wake-up: the next getter that waits is the one woken.
#[test]
fn an_abandoned_wait_leaves_no_waiter_behind() {
    use sealmq_engine::mqi::GetStep;
    let (_d, qm) = qm();
    local(&qm, "AW");
    let c = Connection::connect(&qm, "app", "abandons").unwrap();
    let h = c.open("AW", OpenOptions::input()).unwrap();
    let gmo = GetOptions {
        wait: Some(Duration::from_secs(30)),
        ..Default::default()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let GetStep::Wait(w) = c.get_step(&h, &gmo, Some(deadline)) else {
        panic!("an empty queue makes a get wait");
    };
    assert_eq!(qm.waiting("AW"), 1);
    drop(w);
    assert_eq!(qm.waiting("AW"), 0, "the abandoned waiter left the queue");
    let qm2 = qm.clone();
    let waiter = std::thread::spawn(move || {
        let c = Connection::connect(&qm2, "app", "waits").unwrap();
        let h = c.open("AW", OpenOptions::input()).unwrap();
        c.get(
            &h,
            GetOptions {
                wait: Some(Duration::from_secs(20)),
                ..Default::default()
            },
        )
        .map(|g| g.payload)
        .map_err(|e| e.reason.code())
    });
    poll(|| qm.waiting("AW") == 1);
    put(&c, "AW", b"for the live waiter");
    assert_eq!(waiter.join().unwrap(), Ok(b"for the live waiter".to_vec()));
}

#[test]
fn browse_first_next_and_under_cursor() {
    let (_d, qm) = qm();
    let c = Connection::connect(&qm, "app", "test").unwrap();
    local(&qm, "B");
    for b in ["1", "2", "3"] {
        put(&c, "B", b.as_bytes());
    }
    let h = c
        .open(
            "B",
            OpenOptions {
                browse: true,
                input_shared: true,
                ..Default::default()
            },
        )
        .unwrap();
    let first = c
        .get(
            &h,
            GetOptions {
                browse: Browse::First,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(first.payload, b"1");
    let next = c
        .get(
            &h,
            GetOptions {
                browse: Browse::Next,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(next.payload, b"2");
    assert_eq!(qm.depth("B").unwrap(), 3, "browsing removes nothing");
    let taken = c
        .get(
            &h,
            GetOptions {
                browse: Browse::MsgUnderCursor,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(taken.payload, b"2");
    assert_eq!(qm.depth("B").unwrap(), 2);
    let next = c
        .get(
            &h,
            GetOptions {
                browse: Browse::Next,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(next.payload, b"3");
    assert_eq!(
        code(c.get(
            &h,
            GetOptions {
                browse: Browse::Next,
                ..Default::default()
            }
        )),
        2033
    );
    let input_only = c.open("B", OpenOptions::input()).unwrap();
    assert_eq!(
        code(c.get(
            &input_only,
            GetOptions {
                browse: Browse::First,
                ..Default::default()
            }
        )),
        2036
    );
}

#[test]
fn truncation_accepted_or_failed_with_the_message_kept() {
    let (_d, qm) = qm();
    let c = Connection::connect(&qm, "app", "test").unwrap();
    local(&qm, "T");
    put(&c, "T", b"0123456789");
    let h = c.open("T", OpenOptions::input()).unwrap();
    let e = c
        .get(
            &h,
            GetOptions {
                buffer: Some(4),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(e.reason.code(), 2080);
    assert_eq!(qm.depth("T").unwrap(), 1, "2080 keeps the message");
    let g = c
        .get(
            &h,
            GetOptions {
                buffer: Some(4),
                accept_truncated: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(g.payload, b"0123");
    assert_eq!(g.data_len, 10);
    assert_eq!(g.warning.map(|w| w.code()), Some(2079));
    assert_eq!(qm.depth("T").unwrap(), 0, "2079 removes the message");
}

#[test]
fn expired_messages_are_never_returned_and_are_discarded() {
    let (_d, qm) = qm();
    let c = Connection::connect(&qm, "app", "test").unwrap();
    local(&qm, "E");
    let mut m = md();
    m.expiry = 1; // 100 ms
    c.put1("E", &mut m, b"short-lived", PutOptions::default())
        .unwrap();
    put(&c, "E", b"lasting");
    let b = c.open("E", OpenOptions::browse()).unwrap();
    poll(|| {
        c.get(
            &b,
            GetOptions {
                browse: Browse::First,
                ..Default::default()
            },
        )
        .is_ok_and(|g| g.payload == b"lasting")
    });
    let h = c.open("E", OpenOptions::input()).unwrap();
    assert_eq!(get(&c, &h).unwrap().payload, b"lasting");
    assert_eq!(code(get(&c, &h)), 2033);
    assert_eq!(
        qm.depth("E").unwrap(),
        0,
        "the expired message was discarded"
    );
}

#[test]
fn units_of_work_commit_backout_and_backout_count() {
    let (_d, qm) = qm();
    let c = Connection::connect(&qm, "app", "test").unwrap();
    let other = Connection::connect(&qm, "app", "other").unwrap();
    local(&qm, "U");
    let sp = PutOptions {
        syncpoint: true,
        ..Default::default()
    };
    c.put1("U", &mut md(), b"in uow", sp).unwrap();
    let h = other.open("U", OpenOptions::input()).unwrap();
    assert_eq!(code(get(&other, &h)), 2033, "uncommitted put is invisible");
    c.commit().unwrap();
    let gs = GetOptions {
        syncpoint: true,
        ..Default::default()
    };
    let g = other.get(&h, gs.clone()).unwrap();
    assert_eq!(g.md.backout_count, 0);
    assert_eq!(
        code(get(&c, &c.open("U", OpenOptions::input()).unwrap())),
        2033,
        "got under syncpoint: hidden"
    );
    other.backout().unwrap();
    let g = other.get(&h, gs.clone()).unwrap();
    assert_eq!(g.md.backout_count, 1, "backout count +1");
    other.commit().unwrap();
    assert_eq!(qm.depth("U").unwrap(), 0);
    // A put backed out never appears.
    c.put1("U", &mut md(), b"gone", sp).unwrap();
    c.backout().unwrap();
    assert_eq!(qm.depth("U").unwrap(), 0);
    // A connection that ends without commit backs out.
    {
        let c2 = Connection::connect(&qm, "app", "dies").unwrap();
        c2.put1("U", &mut md(), b"never", sp).unwrap();
    }
    assert_eq!(qm.depth("U").unwrap(), 0);
}

#[test]
fn backout_threshold_requeues_to_boqname() {
    let (_d, qm) = qm();
    let c = Connection::connect(&qm, "app", "test").unwrap();
    local(&qm, "BOQ");
    let mut q = local(&qm, "WORK");
    q.backout_threshold = 2;
    q.backout_requeue_q = "BOQ".into();
    qm.alter(q).unwrap();
    let mut m = md();
    m.persistence = Persistence::Persistent;
    c.put1("WORK", &mut m, b"poison", PutOptions::default())
        .unwrap();
    let h = c.open("WORK", OpenOptions::input()).unwrap();
    let gs = GetOptions {
        syncpoint: true,
        ..Default::default()
    };
    c.get(&h, gs.clone()).unwrap();
    c.backout().unwrap();
    assert_eq!(qm.depth("WORK").unwrap(), 1);
    c.get(&h, gs.clone()).unwrap();
    c.backout().unwrap();
    assert_eq!(qm.depth("WORK").unwrap(), 0, "moved at the threshold");
    let b = c.open("BOQ", OpenOptions::input()).unwrap();
    let g = get(&c, &b).unwrap();
    assert_eq!(g.payload, b"poison");
    assert_eq!(g.md.backout_count, 2);
}

#[test]
fn dynamic_queues_from_a_model_vanish_at_close() {
    let (_d, qm) = qm();
    let c = Connection::connect(&qm, "app", "test").unwrap();
    let h = c
        .open_dynamic(
            "SYSTEM.DEFAULT.MODEL.QUEUE",
            OpenOptions {
                input_shared: true,
                output: true,
                ..Default::default()
            },
            "REPLY.*",
        )
        .unwrap();
    assert!(h.resolved.starts_with("REPLY."), "{}", h.resolved);
    c.put(&h, &mut md(), b"reply", PutOptions::default())
        .unwrap();
    assert_eq!(qm.depth(&h.resolved).unwrap(), 1);
    let mut pm = md();
    pm.persistence = Persistence::Persistent;
    assert_eq!(code(c.put(&h, &mut pm, b"x", PutOptions::default())), 2046);
    let name = h.resolved.clone();
    c.close(&h).unwrap();
    assert_eq!(code(qm.depth(&name)), 2085);
    assert_eq!(code(c.close(&h)), 2019);
}

#[test]
fn administration_rules() {
    let (_d, qm) = qm();
    let c = Connection::connect(&qm, "app", "test").unwrap();
    local(&qm, "A");
    assert_eq!(
        code(qm.define(QueueDef::new("A", QType::Local), false)),
        2100
    );
    qm.define(QueueDef::new("A", QType::Local), true).unwrap();
    assert_eq!(
        code(qm.define(QueueDef::new("BAD NAME", QType::Local), false)),
        2152
    );
    put(&c, "A", b"x");
    assert_eq!(code(qm.delete("A")), 2055);
    assert_eq!(qm.clear("A").unwrap(), 1);
    qm.delete("A").unwrap();
    assert_eq!(code(qm.delete("A")), 2085);
    for sys in [
        "SYSTEM.DEAD.LETTER.QUEUE",
        "SYSTEM.PROTECTION.POLICY.QUEUE",
        "SYSTEM.PROTECTION.ERROR.QUEUE",
        "SYSTEM.DEFAULT.MODEL.QUEUE",
        "SYSTEM.CHANNEL.SYNCQ",
    ] {
        qm.queue_def(sys).unwrap();
    }
    assert_eq!(qm.qmgr().dead_letter_q, "SYSTEM.DEAD.LETTER.QUEUE");
    qm.quiesce();
    assert_eq!(
        code(c.open("SYSTEM.DEAD.LETTER.QUEUE", OpenOptions::output())),
        2161
    );
}

#[test]
fn exclusive_input_and_context_fields() {
    let (_d, qm) = qm();
    local(&qm, "X");
    let a = Connection::connect(&qm, "alice", "app-a").unwrap();
    let b = Connection::connect(&qm, "bob", "app-b").unwrap();
    let excl = a
        .open(
            "X",
            OpenOptions {
                input_exclusive: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(code(b.open("X", OpenOptions::input())), 2042);
    a.close(&excl).unwrap();
    let shared = b.open("X", OpenOptions::input()).unwrap();
    assert_eq!(
        code(a.open(
            "X",
            OpenOptions {
                input_exclusive: true,
                ..Default::default()
            }
        )),
        2042
    );
    // The queue manager fills the context: user, application, put time; a new msg id unless
    // one is given.
    let before = sealmq_engine::md::now_ms();
    a.put1("X", &mut md(), b"ctx", PutOptions::default())
        .unwrap();
    let mut given = md();
    given.msg_id = [9; 24];
    a.put1("X", &mut given, b"given", PutOptions::default())
        .unwrap();
    let g = b.get(&shared, GetOptions::default()).unwrap();
    assert_eq!(g.md.user_id, "alice");
    assert_eq!(g.md.put_appl_name, "app-a");
    assert!(g.md.put_time_ms >= before);
    assert_ne!(g.md.msg_id, [0; 24]);
    let g2 = b.get(&shared, GetOptions::default()).unwrap();
    assert_eq!(g2.md.msg_id, [9; 24]);
    assert_ne!(g.md.msg_id, g2.md.msg_id);
}

#[test]
fn noshare_and_defsopt_decide_exclusivity() {
    let (_d, qm) = qm();
    let mut q = sealmq_engine::QueueDef::new("NS", sealmq_engine::QType::Local);
    q.share = false;
    qm.define(q, false).unwrap();
    let mut q = sealmq_engine::QueueDef::new("DX", sealmq_engine::QType::Local);
    q.defsopt_exclusive = true;
    qm.define(q, false).unwrap();
    let a = Connection::connect(&qm, "alice", "app-a").unwrap();
    let b = Connection::connect(&qm, "bob", "app-b").unwrap();
    // NOSHARE: a shared open is made exclusive, so a second one is refused.
    let h = a.open("NS", OpenOptions::input()).unwrap();
    assert_eq!(code(b.open("NS", OpenOptions::input())), 2042);
    a.close(&h).unwrap();
    assert!(b.open("NS", OpenOptions::input()).is_ok());
    // DEFSOPT(EXCL) decides an open "as the queue defines"; an explicit shared open is shared.
    let as_def = OpenOptions {
        input_as_q_def: true,
        ..Default::default()
    };
    let h = a.open("DX", as_def).unwrap();
    assert_eq!(code(b.open("DX", OpenOptions::input())), 2042);
    a.close(&h).unwrap();
    let s1 = a.open("DX", OpenOptions::input()).unwrap();
    let s2 = b.open("DX", OpenOptions::input()).unwrap();
    a.close(&s1).unwrap();
    b.close(&s2).unwrap();
}

/// A handle dropped without MQCLOSE (an AMQP attach refused after its queue was opened, a task
/// that ended) gives back everything its open took: the exclusive open, the open counts, the
/// connection's handle, a temporary dynamic queue.
#[test]
fn a_dropped_handle_is_closed() {
    let (_d, qm) = qm();
    let mut q = local(&qm, "EXCL");
    q.share = false;
    qm.alter(q).unwrap();
    let c = Connection::connect(&qm, "app", "test").unwrap();
    let other = Connection::connect(&qm, "app", "test").unwrap();
    let h = c.open("EXCL", OpenOptions::input()).unwrap();
    assert_eq!(code(other.open("EXCL", OpenOptions::input())), 2042);
    assert_eq!(qm.queue_status("EXCL").unwrap().input_opens, 1);
    drop(h);
    assert_eq!(qm.queue_status("EXCL").unwrap().input_opens, 0);
    let mine = |qm: &QueueManager| {
        qm.connections()
            .into_iter()
            .find(|i| i.id == c.id)
            .map(|i| i.handles.len())
    };
    assert_eq!(mine(&qm), Some(0));
    let h = other.open("EXCL", OpenOptions::input()).unwrap();
    other.close(&h).unwrap();
    assert_eq!(code(other.close(&h)), 2019);
    drop(h); // closed already: nothing is given back twice
    assert_eq!(qm.queue_status("EXCL").unwrap().input_opens, 0);
    // A temporary dynamic queue goes with its dropped handle.
    let t = c
        .open_dynamic("SYSTEM.DEFAULT.MODEL.QUEUE", OpenOptions::input(), "TMP.*")
        .unwrap();
    let name = t.resolved.clone();
    assert!(qm.queue_status(&name).is_ok());
    drop(t);
    assert_eq!(code(qm.queue_status(&name)), 2085);
}

/// MAXHANDS bounds the handles one application connection holds (MQ's default 256); a refused
/// open takes nothing, and a closed handle makes room.
#[test]
fn maxhands_bounds_the_handles_of_a_connection() {
    let (_d, qm) = qm();
    local(&qm, "Q");
    let mut qmgr = qm.qmgr();
    qmgr.noted.insert("MAXHANDS".into(), "3".into());
    qm.alter_qmgr(qmgr).unwrap();
    let c = Connection::connect(&qm, "app", "test").unwrap();
    let mut held: Vec<Hobj> = (0..3)
        .map(|_| c.open("Q", OpenOptions::output()).unwrap())
        .collect();
    assert_eq!(code(c.open("Q", OpenOptions::output())), 2017);
    assert_eq!(
        code(c.open_dynamic("SYSTEM.DEFAULT.MODEL.QUEUE", OpenOptions::input(), "TMP.*")),
        2017
    );
    assert_eq!(qm.queue_status("Q").unwrap().output_opens, 3);
    // Another connection has its own handles; the queue manager's own work is not limited.
    let other = Connection::connect(&qm, "app", "test").unwrap();
    other
        .close(&other.open("Q", OpenOptions::output()).unwrap())
        .unwrap();
    c.close(&held.pop().unwrap()).unwrap();
    let h = c.open("Q", OpenOptions::output()).unwrap();
    c.close(&h).unwrap();
    assert_eq!(qm.qmgr().max_handles(), 3);
    assert_eq!(
        sealmq_engine::objects::QmgrDef::new("QMX").max_handles(),
        256
    );
}
