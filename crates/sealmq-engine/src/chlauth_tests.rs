use super::*;
use proptest::prelude::*;

fn partner<'a>(channel: &'a str, address: &'a str) -> Partner<'a> {
    Partner {
        channel,
        svrconn: true,
        address,
        ..Default::default()
    }
}

fn user(d: Decision) -> String {
    match d {
        Decision::Allow { user, .. } => user,
        Decision::Block { detail, .. } => panic!("blocked: {detail}"),
    }
}

fn blocked(d: Decision) -> String {
    match d {
        Decision::Block { rule, detail } => format!("{rule}: {detail}"),
        Decision::Allow { user, .. } => panic!("allowed as {user}"),
    }
}

#[test]
fn the_default_rules_refuse_system_channels_and_the_administrator() {
    let rules = default_rules();
    let why = blocked(evaluate(
        &rules,
        &partner("SYSTEM.DEF.SVRCONN", "127.0.0.1"),
        "app",
        "mqm",
    ));
    assert!(
        why.contains("SYSTEM.*") && why.contains("NOACCESS"),
        "{why}"
    );
    let why = blocked(evaluate(
        &rules,
        &partner("TO.QM2", "127.0.0.1"),
        "mqm",
        "mqm",
    ));
    assert!(
        why.contains("*MQADMIN") && why.contains("USERLIST('nobody')"),
        "{why}"
    );
    assert_eq!(
        user(evaluate(
            &rules,
            &partner("APP.SVRCONN", "10.1.2.3"),
            "app",
            "mqm"
        )),
        "app"
    );
    // The documented ways to allow: a more specific rule.
    let mut r = rules.clone();
    let mut allow = ChlAuthRec::new("SYSTEM.DEF.SVRCONN", RuleType::AddressMap);
    allow.address = "*".into();
    allow.usersrc = UserSrc::Channel;
    r.push(allow);
    let mut nobody = ChlAuthRec::new("TO.QM2", RuleType::BlockUser);
    nobody.userlist = vec!["nobody".into()];
    r.push(nobody);
    assert_eq!(
        user(evaluate(
            &r,
            &partner("SYSTEM.DEF.SVRCONN", "127.0.0.1"),
            "app",
            "mqm"
        )),
        "app"
    );
    assert_eq!(
        user(evaluate(&r, &partner("TO.QM2", "127.0.0.1"), "mqm", "mqm")),
        "mqm"
    );
}

#[test]
fn an_address_backstop_with_specific_exceptions() {
    let mut all = ChlAuthRec::new("*", RuleType::AddressMap);
    all.address = "*".into();
    all.usersrc = UserSrc::NoAccess;
    let mut lan = ChlAuthRec::new("APP.*", RuleType::AddressMap);
    lan.address = "192.168.1.*".into();
    lan.usersrc = UserSrc::Map;
    lan.mcauser = "appuser".into();
    let rules = vec![all, lan];
    assert_eq!(
        user(evaluate(
            &rules,
            &partner("APP.ONE", "192.168.1.77"),
            "x",
            "mqm"
        )),
        "appuser"
    );
    blocked(evaluate(
        &rules,
        &partner("APP.ONE", "192.168.2.77"),
        "x",
        "mqm",
    ));
    blocked(evaluate(
        &rules,
        &partner("OTHER", "192.168.1.77"),
        "x",
        "mqm",
    ));
}

#[test]
fn an_identity_outranks_an_address_and_the_most_specific_profile_decides() {
    let mut addr = ChlAuthRec::new("APP.SVRCONN", RuleType::AddressMap);
    addr.address = "*".into();
    addr.usersrc = UserSrc::NoAccess;
    let mut peer = ChlAuthRec::new("APP.SVRCONN", RuleType::SslPeerMap);
    peer.sslpeer = "CN=alice,O=Example".into();
    peer.mcauser = "alice".into();
    let mut generic = ChlAuthRec::new("*", RuleType::SslPeerMap);
    generic.sslpeer = "CN=*".into();
    generic.mcauser = "anyone".into();
    let rules = vec![addr, peer, generic];
    let mut p = partner("APP.SVRCONN", "10.0.0.1");
    p.sslpeer = Some("CN=alice,O=Example");
    assert_eq!(user(evaluate(&rules, &p, "x", "mqm")), "alice");
    p.sslpeer = Some("CN=bob,O=Example");
    // The APP.SVRCONN address rule beats the '*' peer rule: the profile comes first.
    blocked(evaluate(&rules, &p, "x", "mqm"));
    let mut other = partner("OTHER.SVRCONN", "10.0.0.1");
    other.sslpeer = Some("CN=bob,O=Example");
    assert_eq!(user(evaluate(&rules, &other, "x", "mqm")), "anyone");
}

#[test]
fn blocked_addresses_users_and_warnings() {
    let mut ba = ChlAuthRec::new("*", RuleType::BlockAddr);
    ba.addrlist = vec!["10.9.*".into(), "172.16.0.1-10".into()];
    let mut bu = ChlAuthRec::new("APP.*", RuleType::BlockUser);
    bu.userlist = vec!["guest".into()];
    let rules = vec![ba.clone(), bu];
    blocked(evaluate(&rules, &partner("APP.A", "10.9.1.1"), "u", "mqm"));
    blocked(evaluate(
        &rules,
        &partner("APP.A", "172.16.0.5"),
        "u",
        "mqm",
    ));
    user(evaluate(
        &rules,
        &partner("APP.A", "172.16.0.11"),
        "u",
        "mqm",
    ));
    blocked(evaluate(
        &rules,
        &partner("APP.A", "127.0.0.1"),
        "guest",
        "mqm",
    ));
    ba.warn = true;
    match evaluate(&[ba], &partner("APP.A", "10.9.1.1"), "u", "mqm") {
        Decision::Allow { warnings, .. } => assert_eq!(warnings.len(), 1),
        d => panic!("{d:?}"),
    }
}

#[test]
fn usermap_applies_to_client_channels_and_qmgrmap_to_message_channels() {
    let mut um = ChlAuthRec::new("*", RuleType::UserMap);
    um.clntuser = "jdoe".into();
    um.mcauser = "app1".into();
    let mut qm = ChlAuthRec::new("*", RuleType::QmgrMap);
    qm.qmname = "PARTNER*".into();
    qm.mcauser = "partner".into();
    let rules = vec![um, qm];
    let mut p = partner("APP", "127.0.0.1");
    p.clntuser = Some("jdoe");
    assert_eq!(user(evaluate(&rules, &p, "x", "mqm")), "app1");
    let mut m = partner("FROM.P", "127.0.0.1");
    m.svrconn = false;
    m.qmname = Some("PARTNER1");
    m.clntuser = Some("jdoe");
    assert_eq!(user(evaluate(&rules, &m, "x", "mqm")), "partner");
}

#[test]
fn malformed_rules_are_refused() {
    let mut r = ChlAuthRec::new("A*", RuleType::BlockAddr);
    r.addrlist = vec!["1.2.3.4".into()];
    assert!(r.validate().is_err(), "BLOCKADDR profile must be '*'");
    let mut r = ChlAuthRec::new("X", RuleType::AddressMap);
    assert!(r.validate().is_err(), "ADDRESS is mandatory");
    for bad in ["1.2.3.999", "a.b.c.d", "1..2", "1.2.3.4-1", "10.*.1"] {
        r.address = bad.into();
        r.usersrc = UserSrc::Channel;
        assert!(r.validate().is_err(), "{bad}");
    }
    r.address = "10.*".into();
    r.validate().unwrap();
    let mut r = ChlAuthRec::new("X", RuleType::SslPeerMap);
    r.sslpeer = "CN=x".into();
    assert!(r.validate().is_err(), "USERSRC(MAP) without MCAUSER");
    let r = ChlAuthRec::new("THIS.PROFILE.IS.FAR.TOO.LONG", RuleType::BlockUser);
    assert!(r.validate().is_err());
}

#[test]
fn addresses_match_as_mq_patterns() {
    assert!(address_matches("*", "1.2.3.4"));
    assert!(address_matches("1.2.*", "1.2.3.4"));
    assert!(address_matches("1.2.3.1-9", "1.2.3.4"));
    assert!(!address_matches("1.2.3.5-9", "1.2.3.4"));
    assert!(address_matches("1.*.3.4", "1.200.3.4"));
    assert!(!address_matches("1.2.3", "1.2.3.4"));
    assert!(address_matches("::1", "::1"));
}

proptest! {
    #[test]
    fn records_round_trip_and_garbage_never_panics(
        b in proptest::collection::vec(any::<u8>(), 0..200),
        users in proptest::collection::vec("[a-z]{1,8}", 1..4),
    ) {
        let _ = ChlAuthRec::decode(&mut Dec::new(&b, "chlauth"));
        let mut r = ChlAuthRec::new("APP.*", RuleType::BlockUser);
        r.userlist = users;
        let mut e = Enc::new();
        r.encode(&mut e);
        prop_assert_eq!(ChlAuthRec::decode(&mut Dec::new(&e.buf, "c")).unwrap(), r);
    }
}
