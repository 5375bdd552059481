//! IBM's JMS client (MQ's protocol) and Qpid JMS (AMQP) on one queue manager read each other's
//! messages: a TextMessage's header fields and properties, and MapMessages and
//! StreamMessages holding every JMS type, each value read back with its Java type.

use super::*;
use common::qpid_jms;

/// What both programs' `alltypes` put in their MapMessage, as `receive` prints it back.
fn every_type_map() -> serde_json::Value {
    serde_json::json!({
        "bo": "Boolean:true",
        "by": "Byte:-5",
        "sh": "Short:-300",
        "ch": "Character:<",
        "in": "Integer:70000",
        "lo": "Long:-9000000000",
        "fl": "Float:1.25",
        "do": "Double:1.0E300",
        "nan": "Double:NaN",
        "inf": "Double:-Infinity",
        "st": "String:a<b&c\"d'e>\u{e9}\u{4e2d}",
        "bi": "byte[]:0001abff",
        "empty": "String:",
        "k&y <1>": "String:v",
        "nul": "null",
    })
}

/// ... and in their StreamMessage.
fn every_type_stream() -> serde_json::Value {
    serde_json::json!([
        "Boolean:false",
        "Byte:7",
        "Short:8",
        "Character:z",
        "Integer:9",
        "Long:10",
        "Float:2.5",
        "Double:-0.0",
        "String:s<&>",
        "byte[]:0908",
        "null",
        "String:",
    ])
}

#[test]
fn ibm_jms_and_qpid_jms_read_each_others_text_map_and_stream_messages() {
    let h = Home::new();
    let port = setup(&h, "QX");
    let amqp = free_port();
    h.mqsc(
        "QX",
        &format!(
            "DEFINE CHANNEL(APP.AMQP) CHLTYPE(AMQP) PORT({amqp}) IPADDR(127.0.0.1) MCAUSER('app')\n\
             START CHANNEL(APP.AMQP)\n"
        ),
    );
    let url = format!("amqp://127.0.0.1:{amqp}");

    // IBM JMS → Qpid JMS: a TextMessage's fields and properties.
    assert_eq!(ibm(port, NONE, &["send", "APP.Q", "1"])[0]["sent"], 1);
    let got = qpid_jms(&url, &["receive", "APP.Q", "1"]);
    let m = &got[0];
    assert_eq!(m["type"], "text", "{m}");
    assert_eq!(m["body"], "ibm 0");
    assert_eq!(m["correlation_id"], "corr-0");
    assert_eq!(m["persistent"], true);
    assert_eq!(m["priority"], 4);
    assert_eq!(m["properties"]["n"], 0);
    assert_eq!(m["properties"]["n.type"], "Integer");
    assert_eq!(m["properties"]["colour"], "red");

    // Qpid JMS → IBM JMS.
    assert_eq!(qpid_jms(&url, &["send", "APP.Q", "1"])[0]["sent"], 1);
    let got = ibm(port, NONE, &["receive", "APP.Q", "1", "5000"]);
    let m = &got[0];
    assert_eq!(m["type"], "JMSTextMessage", "{m}");
    assert_eq!(m["text"], "jms 0");
    assert_eq!(m["correl"], "jms-corr-0");
    assert_eq!(m["persistent"], true);
    assert_eq!(m["priority"], 6);
    let p = &m["props"];
    assert_eq!(
        (&p["colour"], &p["n"], &p["big"], &p["ok"], &p["ratio"]),
        (
            &serde_json::json!("red"),
            &serde_json::json!(0),
            &serde_json::json!(1u64 << 40),
            &serde_json::json!(true),
            &serde_json::json!(0.25)
        ),
        "{m}"
    );

    // Maps and streams of every JMS type, IBM → Qpid: stored as IBM MQ stores them, given to
    // AMQP as a map and a sequence.
    assert_eq!(ibm(port, NONE, &["alltypes", "APP.Q"])[0]["sent"], 2);
    let got = qpid_jms(&url, &["receive", "APP.Q", "2"]);
    assert_eq!(
        (&got[0]["type"], &got[1]["type"]),
        (&"map".into(), &"stream".into())
    );
    assert_eq!(got[0]["map"], every_type_map(), "{}", got[0]);
    assert_eq!(got[1]["stream"], every_type_stream(), "{}", got[1]);
    assert!(
        got[0]["properties"].get("mcd.Msd").is_none(),
        "the body's type is said by its AMQP section, not a property: {}",
        got[0]
    );

    // Qpid → IBM: an AMQP map and sequence of JMS's types are kept as IBM MQ keeps a
    // MapMessage and a StreamMessage.
    assert_eq!(qpid_jms(&url, &["alltypes", "APP.Q"])[0]["sent"], 2);
    let mut c = Client::connect_local(&h.qm_dir("QX"), "sealmq-app").unwrap();
    let (q, _) = c
        .open(
            "APP.Q",
            OpenOptions {
                browse: true,
                ..Default::default()
            },
        )
        .unwrap();
    let first = GetOptions {
        browse: sealmq_engine::mqi::Browse::First,
        ..Default::default()
    };
    let g = c.get(q, &first).unwrap();
    assert_eq!(g.md.format, "MQSTR");
    assert_eq!(
        g.md.property("mcd.Msd"),
        Some(&PropValue::String("jms_map".into()))
    );
    assert!(
        g.payload
            .starts_with(b"<map><elt name=\"bo\" dt='boolean'>1</elt>")
    );
    c.close(q).unwrap();
    let got = ibm(port, NONE, &["receive", "APP.Q", "2", "5000"]);
    assert_eq!(
        (&got[0]["type"], &got[1]["type"]),
        (&"JMSMapMessage".into(), &"JMSStreamMessage".into())
    );
    assert_eq!(got[0]["map"], every_type_map(), "{}", got[0]);
    assert_eq!(got[1]["stream"], every_type_stream(), "{}", got[1]);
    assert_eq!(h.depth("QX", "APP.Q"), 0);
}
