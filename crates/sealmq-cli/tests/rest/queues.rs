//! MQ's REST queue, topic and subscription resources in IBM's shapes (issue 46): lists with
//! IBM's query and named attribute objects, queues created, changed and deleted in IBM's body
//! shape, and what is not IBM's refused.

use super::*;

/// `GET .../queue` with IBM's documented query: `type`, `name`, `attributes` (IBM's named
/// objects: general, storage, remote...), `status`; an unknown parameter is refused.
#[test]
fn queue_lists_take_ibms_query_and_answer_in_its_attribute_objects() {
    let w = web();
    w.h.mqsc(
        "QW",
        "DEFINE QLOCAL(APP.ORDERS) DESCR('orders in') MAXDEPTH(5000) GET(DISABLED)\n\
         DEFINE QALIAS(APP.ALIAS) TARGET(APP.ORDERS)\n\
         DEFINE QREMOTE(APP.REMOTE) RNAME(ORDERS) RQMNAME(QM2) XMITQ(QM2.XMIT)\n",
    );
    let get = |path: &str| {
        let r = w.curl(&["-u", READER], path);
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        r.json()["queue"].as_array().cloned().unwrap_or_default()
    };
    let names = |l: &[Value]| -> Vec<String> {
        l.iter()
            .filter_map(|q| q["name"].as_str().map(String::from))
            .collect()
    };
    let local = get(
        "admin/qmgr/QW/queue?type=local&name=APP.*&attributes=general.description,\
         storage.maximumDepth,general.inhibitGet&status=status.currentDepth",
    );
    assert_eq!(names(&local), ["APP.ORDERS", "APP.Q"], "{local:?}");
    let o = &local[0];
    assert_eq!(o["type"], "local");
    assert_eq!(o["general"]["description"], "orders in", "{o}");
    assert_eq!(o["general"]["inhibitGet"], true, "{o}");
    assert_eq!(o["storage"]["maximumDepth"], 5000, "{o}");
    assert!(o["storage"].get("maximumMessageLength").is_none(), "{o}");
    assert_eq!(o["status"], serde_json::json!({"currentDepth": 0}), "{o}");
    let aliases = get("admin/qmgr/QW/queue?type=alias&name=APP.*&attributes=alias");
    assert_eq!(names(&aliases), ["APP.ALIAS"], "{aliases:?}");
    assert_eq!(aliases[0]["alias"]["targetName"], "APP.ORDERS");
    assert_eq!(aliases[0]["alias"]["targetType"], "queue");
    let remote = get("admin/qmgr/QW/queue/APP.REMOTE?attributes=*");
    assert_eq!(remote[0]["type"], "remote");
    assert_eq!(
        remote[0]["remote"],
        serde_json::json!({"qmgrName": "QM2", "queueName": "ORDERS",
                           "transmissionQueueName": "QM2.XMIT"}),
        "{remote:?}"
    );
    // Topics and subscriptions, as resources of their own.
    w.h.mqsc(
        "QW",
        "DEFINE TOPIC(APP.PRICES) TOPICSTR('prices')\n\
         DEFINE SUB(APP.AUDIT) TOPICSTR('prices/#') DEST(APP.ORDERS)\n",
    );
    let r = w.curl(&["-u", READER], "admin/qmgr/QW/topic?name=APP.*");
    assert_eq!(r.status, 200, "{}", r.body);
    let t = &r.json()["topic"];
    assert_eq!(t[0]["name"], "APP.PRICES", "{t}");
    assert_eq!(t[0]["type"], "local", "{t}");
    assert_eq!(t[0]["attributes"]["topicstr"], "prices", "{t}");
    let r = w.curl(&["-u", READER], "admin/qmgr/QW/subscription/APP.AUDIT");
    assert_eq!(r.status, 200, "{}", r.body);
    let sub = &r.json()["subscription"];
    assert_eq!(sub[0]["name"], "APP.AUDIT", "{sub}");
    assert_eq!(sub[0]["type"], "admin", "{sub}");
    assert_eq!(sub[0]["attributes"]["dest"], "APP.ORDERS", "{sub}");
    // Channel, topic and subscription lists take IBM's type, attributes and status too.
    w.h.mqsc(
        "QW",
        "DEFINE QLOCAL(P.XMIT) USAGE(XMITQ)\n\
         DEFINE CHANNEL(TO.P) CHLTYPE(SDR) CONNAME('127.0.0.1(1),h2(1415)') XMITQ(P.XMIT) \
         DESCR('partner')\n\
         DEFINE SUB(APP.EXACT) TOPICSTR('prices') DEST(APP.ORDERS)\n",
    );
    let r = w.curl(
        &["-u", READER],
        "admin/qmgr/QW/channel?type=sender&attributes=sender,general.description&status=*",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let chs = r.json()["channel"].clone();
    assert!(
        chs.as_array()
            .unwrap()
            .iter()
            .all(|c| c["type"] == "sender"),
        "{chs}"
    );
    let c = chs
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "TO.P")
        .cloned()
        .unwrap();
    assert_eq!(c["general"]["description"], "partner", "{c}");
    assert_eq!(c["sender"]["transmissionQueueName"], "P.XMIT", "{c}");
    assert_eq!(
        c["sender"]["connection"],
        serde_json::json!([{"host": "127.0.0.1", "port": 1}, {"host": "h2", "port": 1415}]),
        "{c}"
    );
    assert!(c["status"][0]["state"].is_string(), "{c}");
    let r = w.curl(
        &["-u", READER],
        "admin/qmgr/QW/channel?type=serverConnection",
    );
    assert!(
        r.json()["channel"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["type"] == "serverConnection")
    );
    let r = w.curl(
        &["-u", READER],
        "admin/qmgr/QW/topic?name=APP.*&type=local&attributes=general.topicString&status=*",
    );
    let t = &r.json()["topic"][0];
    assert_eq!(t["general"]["topicString"], "prices", "{t}");
    assert_eq!(t["status"]["subscriptionCount"], 1, "{t}");
    let r = w.curl(
        &["-u", READER],
        "admin/qmgr/QW/subscription?type=admin&attributes=destination&status=status.messageCount",
    );
    let s = &r.json()["subscription"][0];
    assert_eq!(s["destination"]["name"], "APP.ORDERS", "{s}");
    assert_eq!(s["status"], serde_json::json!({"messageCount": 0}), "{s}");
    let r = w.curl(&["-u", READER], "admin/qmgr/QW/subscription?type=api");
    assert_eq!(r.json()["subscription"], serde_json::json!([]));
    // Create, change and delete a queue in IBM's body shape (the admin role).
    let send = |method: &str, path: &str, body: &str| {
        w.curl(
            &[
                "-u",
                ADMIN,
                "-X",
                method,
                "-H",
                "ibm-mq-rest-csrf-token: x",
                "-H",
                "Content-Type: application/json",
                "--data",
                body,
            ],
            path,
        )
    };
    let r = send(
        "POST",
        "admin/qmgr/QW/queue",
        r#"{"name": "APP.NEW", "type": "local", "general": {"description": "made by REST"},
            "storage": {"maximumDepth": 77}, "extended": {"backoutThreshold": 3}}"#,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let d =
        w.h.mqsc("QW", "DISPLAY QLOCAL(APP.NEW) DESCR MAXDEPTH BOTHRESH\n");
    assert!(
        d.contains("DESCR(made by REST)")
            && d.contains("MAXDEPTH(77)")
            && d.contains("BOTHRESH(3)"),
        "{d}"
    );
    let r = send("POST", "admin/qmgr/QW/queue", r#"{"name": "APP.NEW"}"#);
    assert_eq!(r.status, 400, "created twice: {}", r.body);
    let r = send(
        "PATCH",
        "admin/qmgr/QW/queue/APP.NEW",
        r#"{"storage": {"maximumDepth": 88}, "general": {"inhibitPut": true}}"#,
    );
    assert_eq!(r.status, 204, "{}", r.body);
    let d = w.h.mqsc("QW", "DISPLAY QLOCAL(APP.NEW) MAXDEPTH PUT\n");
    assert!(
        d.contains("MAXDEPTH(88)") && d.contains("PUT(DISABLED)"),
        "{d}"
    );
    let r = send(
        "PATCH",
        "admin/qmgr/QW/queue/APP.NEW",
        r#"{"storage": {"colour": 1}}"#,
    );
    assert_eq!(r.status, 400, "{}", r.body);
    let delete = |user: &str, path: &str| {
        w.curl(
            &[
                "-u",
                user,
                "-X",
                "DELETE",
                "-H",
                "ibm-mq-rest-csrf-token: x",
            ],
            path,
        )
    };
    let r = delete(READER, "admin/qmgr/QW/queue/APP.NEW");
    assert_eq!(r.status, 403, "a reader deleted: {}", r.body);
    let r = delete(ADMIN, "admin/qmgr/QW/queue/APP.NEW?purge=true");
    assert_eq!(r.status, 204, "{}", r.body);
    assert!(!w.h.mqsc("QW", "DISPLAY QUEUE(APP.*)\n").contains("APP.NEW"));
    let r = delete(ADMIN, "admin/qmgr/QW/queue/APP.NEW");
    assert_eq!(r.status, 404, "{}", r.body);
    for bad in [
        "admin/qmgr/QW/queue?bogus=1",
        "admin/qmgr/QW/queue?type=cluster",
        "admin/qmgr/QW/queue?attributes=general.colour",
        "admin/qmgr/QW/channel?type=odd",
        "admin/qmgr/QW/channel?attributes=general.colour",
        "admin/qmgr/QW/topic?status=status.depth",
        "admin/qmgr/QW/subscription?bogus=1",
    ] {
        let r = w.curl(&["-u", READER], bad);
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
        assert_eq!(
            r.json()["error"][0]["messageId"],
            "MQWB0910E",
            "{bad}: {}",
            r.body
        );
    }
    w.h.ok(&["stop", "QW"]);
}
