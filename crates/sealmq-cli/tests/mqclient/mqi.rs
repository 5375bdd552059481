//! An MQI application (not JMS) on IBM's own MQ classes for Java — MQQueueManager, MQQueue,
//! MQMessage, as a C, .NET or Go application uses MQ's verbs — against a sealmq queue manager:
//! descriptor fields and message properties both ways, the get options that say how
//! properties come back, the queue's PROPCTL, and gets with read-ahead (DEFREADA(YES)).

use super::*;

/// Runs the IBM MQI application through channel APP.SVRCONN; its JSON lines.
fn mqi(port: u16, args: &[&str]) -> Vec<serde_json::Value> {
    let mut cmd = Command::new("java");
    cmd.current_dir(env!("CARGO_TARGET_TMPDIR"));
    cmd.args([
        "-cp",
        &ibm_classpath(),
        "IbmMqi",
        &port.to_string(),
        "APP.SVRCONN",
    ]);
    common::json_lines(cmd, "IBM MQI", args)
}

#[test]
fn an_mqi_application_exchanges_descriptors_and_properties_with_sealmq_both_ways() {
    let h = Home::new();
    let port = setup(&h, "QM");
    // IBM MQI → sealmq: the descriptor and the properties set on the MQMessage.
    assert_eq!(mqi(port, &["put", "APP.Q", "2"])[0]["sent"], 2);
    let mut c = Client::connect_local(&h.qm_dir("QM"), "sealmq-app").unwrap();
    let (q, _) = c.open("APP.Q", OpenOptions::input()).unwrap();
    let g = c.get(q, &GetOptions::default()).unwrap();
    assert_eq!(g.payload, b"mqi 0");
    assert_eq!(g.md.format, "MQSTR");
    assert_eq!(g.md.priority, 3);
    assert_eq!(g.md.persistence, Persistence::Persistent);
    assert_eq!(&g.md.correl_id[..10], b"mqi-corr-0");
    assert_eq!(g.md.reply_to_q.trim(), "REPLY.Q");
    assert!((1..=6000).contains(&g.md.expiry), "{}", g.md.expiry);
    assert_eq!(g.md.put_appl_name, "IbmMqi");
    // MQRO_EXCEPTION | MQRO_PASS_CORREL_ID, MQFB_APPL_FIRST + 7.
    assert_eq!((g.md.report, g.md.feedback), (0x0100_0040, 65536 + 7));
    for (name, want) in [
        ("colour", PropValue::String("blue".into())),
        ("n", PropValue::Int(0)),
        ("big", PropValue::Long(1 << 40)),
        ("ratio", PropValue::Double(0.5)),
        ("flag", PropValue::Bool(true)),
        ("raw", PropValue::Bytes(vec![1, 0xff])),
    ] {
        assert_eq!(g.md.property(name), Some(&want), "{name}");
    }
    c.close(q).unwrap();
    // sealmq → IBM MQI: what it put back, got with each of MQGMO's property options.
    let got = mqi(port, &["get", "APP.Q", "1", "asqdef"]);
    assert_eq!(got[0]["data"], "mqi 1");
    assert_eq!(got[0]["props"]["big"], 1u64 << 40);
    assert_eq!(got[0]["props"]["raw"], "bytes:01ff");
    assert_eq!(got[0]["correl"], "mqi-corr-1");
    assert_eq!(got[0]["replyto"], "REPLY.Q");
    assert_eq!(got[0]["user"], "app");
    assert_eq!(
        (&got[0]["report"], &got[0]["feedback"]),
        (&0x0100_0040.into(), &(65536 + 7).into())
    );
    let (q, _) = c.open("APP.Q", OpenOptions::output()).unwrap();
    for i in 0..4 {
        let mut md = Md {
            format: "MQSTR".into(),
            priority: 8,
            msg_type: sealmq_mqi::MsgType::Reply,
            feedback: 65536 + i as u32,
            ..Md::default()
        };
        md.set_property("region", PropValue::String("emea".into()))
            .unwrap();
        md.set_property("count", PropValue::Long(i)).unwrap();
        c.put(q, &mut md, format!("native {i}").as_bytes(), false)
            .unwrap();
    }
    c.close(q).unwrap();
    let with = |opt: &str| mqi(port, &["get", "APP.Q", "1", opt]).remove(0);
    // A message handle (the MQMessage's properties).
    let m = with("handle");
    assert_eq!(m["data"], "native 0");
    assert_eq!(m["priority"], 8);
    assert_eq!(m["feedback"], 65536);
    assert_eq!(
        (&m["props"]["region"], &m["props"]["count"]),
        (&"emea".into(), &0.into())
    );
    // Forced into an MQRFH2 before the data, which the application reads itself.
    let m = with("force");
    assert_eq!(m["format"], "MQHRF2");
    assert_eq!(
        m["data"],
        "RFH2:<usr><region>emea</region><count dt='i8'>1</count></usr>|native 1"
    );
    // No properties at all.
    let m = with("none");
    assert_eq!(
        (&m["format"], &m["data"]),
        (&"MQSTR".into(), &"native 2".into())
    );
    assert_eq!(m["props"], serde_json::json!({}));
    // MQ's compatibility mode: an MQRFH2, as an application written before properties reads.
    let m = with("compat");
    assert_eq!(m["format"], "MQHRF2");
    assert_eq!(h.depth("QM", "APP.Q"), 0);
}

#[test]
fn propctl_is_kept_inquired_and_followed_and_read_ahead_gets_lose_nothing() {
    let h = Home::new();
    let port = setup(&h, "QP");
    // PROPCTL: MQ's values, shown and inquired (MQIA_PROPERTY_CONTROL, MQPROP_*); a value MQ
    // does not have, or PROPCTL on a remote queue definition, is refused.
    assert_eq!(mqi(port, &["inq", "APP.Q"])[0]["propctl"], 0, "COMPAT");
    h.mqsc("QP", "ALTER QLOCAL(APP.Q) PROPCTL(FORCE) DEFREADA(YES)\n");
    let shown = h.mqsc("QP", "DISPLAY QLOCAL(APP.Q) PROPCTL DEFREADA\n");
    assert!(shown.contains("PROPCTL(FORCE)"), "{shown}");
    let inq = &mqi(port, &["inq", "APP.Q"])[0];
    assert_eq!((&inq["propctl"], &inq["defreada"]), (&3.into(), &1.into()));
    for bad in [
        "ALTER QLOCAL(APP.Q) PROPCTL(SOME)\n",
        "DEFINE QREMOTE(APP.R) RNAME(X) RQMNAME(Y) PROPCTL(ALL)\n",
    ] {
        let o = h.run(&["mqsc", "QP"], Some(bad));
        assert!(!o.status.success(), "{bad} was taken");
    }
    // PROPCTL(FORCE): a get that names no property option is given the MQRFH2 in its data.
    assert_eq!(mqi(port, &["put", "APP.Q", "1"])[0]["sent"], 1);
    let m = &mqi(port, &["get", "APP.Q", "1", "asqdef"])[0];
    assert_eq!(m["format"], "MQHRF2", "{m}");
    assert!(m["data"].as_str().unwrap().starts_with("RFH2:<usr>"), "{m}");
    // DEFREADA(YES): IBM's client gets through read-ahead (REQUEST_MSGS asking to be
    // confirmed, for a get without wait). Each get takes one message, persistent ones are not
    // read ahead, so what the application did not get stays on the queue; an empty queue
    // answers MQRC_NO_MSG_AVAILABLE.
    h.mqsc("QP", "ALTER QLOCAL(APP.Q) PROPCTL(COMPAT)\n");
    assert_eq!(mqi(port, &["get", "APP.Q", "1", "asqdef"])[0]["done"], true);
    assert_eq!(mqi(port, &["put", "APP.Q", "3"])[0]["sent"], 3);
    let got = mqi(port, &["get", "APP.Q", "1", "asqdef"]);
    assert_eq!(got[0]["data"], "mqi 0");
    assert_eq!(got[0]["props"]["n"], 0);
    assert_eq!(got[1]["done"], true);
    assert_eq!(h.depth("QP", "APP.Q"), 2, "nothing read ahead and lost");
    let got = mqi(port, &["get", "APP.Q", "5", "asqdef"]);
    let data: Vec<&str> = got.iter().filter_map(|m| m["data"].as_str()).collect();
    assert_eq!(data, ["mqi 1", "mqi 2"]);
    assert_eq!(h.depth("QP", "APP.Q"), 0);
}
