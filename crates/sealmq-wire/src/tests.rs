use super::*;
use proptest::prelude::*;

#[test]
fn requests_and_responses_round_trip() {
    let reqs = [
        Request::Hello(Hello {
            versions: vec![1],
            max_msg: 4 << 20,
            appl: "t".into(),
            channel: "APP.SVRCONN".into(),
            user: String::new(),
            password: Secret::default(),
        }),
        Request::Hello(Hello {
            versions: vec![1],
            max_msg: 4 << 20,
            appl: "t".into(),
            channel: "APP.SVRCONN".into(),
            user: "alice".into(),
            password: Secret::new("s3cret"),
        }),
        Request::Open {
            name: "Q".into(),
            options: open::OUTPUT,
            dyn_name: "AMQ.*".into(),
        },
        Request::Put1 {
            name: "Q".into(),
            md: Md::default(),
            payload: b"x".to_vec(),
            syncpoint: true,
        },
        Request::Get(GetReq {
            hobj: 1,
            syncpoint: false,
            wait_ms: 10,
            browse: 0,
            match_msg_id: Some([3; 24]),
            match_correl_id: None,
            accept_truncated: true,
            buffer: -1,
            if_persistent: false,
        }),
        Request::Mqsc {
            script: "DIS QMGR".into(),
            json: true,
        },
        Request::Commit,
        Request::Policy {
            name: "APP.Q".into(),
        },
        Request::Consume(ConsumeReq {
            hobj: 2,
            tag: 9,
            mode: consume::mode::SYNCPOINT,
            window: 10_000,
            batch: 100,
            batch_ms: 50,
            match_msg_id: None,
            match_correl_id: Some([4; 24]),
        }),
        Request::Credit { tag: 9, n: 50 },
        Request::Settle {
            tag: 9,
            batch: 3,
            commit: false,
        },
        Request::ConsumeStop { tag: 9 },
        Request::ProtectionError {
            hobj: 7,
            md: Md::default(),
            payload: vec![0x30, 0x80, 1, 2],
            check: "signer-list".into(),
            detail: "signer 'CN=x' is not authorized".into(),
            signer: "CN=x".into(),
            syncpoint: true,
        },
    ];
    // Every frame's bytes, checked against the encoding of the hand-written codec these
    // replaced (wire versions 1 to 3 are unchanged).
    let mut all = Vec::new();
    for (i, r) in reqs.iter().enumerate() {
        let mut buf = Vec::new();
        write_request(&mut buf, i as u32, r).unwrap();
        all.extend_from_slice(&buf);
        let (id, back) = read_request(&mut buf.as_slice(), HELLO_MAX)
            .unwrap()
            .unwrap();
        assert_eq!((id, &back), (i as u32, r));
    }
    let resps = [
        Response::Got {
            md: Md::default(),
            payload: vec![1; 10],
            data_len: 10,
            warning: 0,
        },
        Response::Opened(Opened {
            hobj: 3,
            resolved: "APP.Q".into(),
            policy: vec![9; 20],
            intercepted: true,
            read_ahead: None,
        }),
        Response::Opened(Opened {
            hobj: 4,
            resolved: "APP.Q".into(),
            policy: vec![],
            intercepted: false,
            read_ahead: Some(read_ahead::YES),
        }),
        Response::Policy {
            policy: vec![1, 2, 3],
        },
        Response::Policy { policy: vec![] },
        Response::Delivery(Delivery {
            tag: 9,
            batch: 3,
            md: Md::default(),
            payload: vec![5; 100],
        }),
        Response::BatchEnd {
            tag: 9,
            batch: 3,
            count: 100,
        },
        Response::Settled {
            tag: 9,
            batch: 3,
            reason: 2009,
            detail: "gone".into(),
        },
    ];
    for resp in resps {
        let mut buf = Vec::new();
        write_response(&mut buf, 9, &resp).unwrap();
        all.extend_from_slice(&buf);
        assert_eq!(
            read_response(&mut buf.as_slice(), HELLO_MAX)
                .unwrap()
                .unwrap(),
            (9, resp)
        );
    }
    assert_eq!((all.len(), fnv64(&all)), (GOLDEN_LEN, GOLDEN_FNV));
}

/// Version 7's frames (kept out of the golden list above, whose fingerprint proves the older
/// frames unchanged): each round-trips, and a put1's epoch comes back whole.
#[test]
fn version_7_frames_round_trip() {
    let req = Request::Put1At {
        name: "Q".into(),
        md: Md::default(),
        payload: b"x".to_vec(),
        syncpoint: false,
        epoch: u64::MAX - 1,
    };
    let mut buf = Vec::new();
    write_request(&mut buf, 7, &req).unwrap();
    assert_eq!(buf[4], 25, "request kind 25");
    let got = read_request(&mut buf.as_slice(), HELLO_MAX)
        .unwrap()
        .unwrap();
    assert_eq!(got, (7, req));
    let resp = Response::PolicyAt {
        policy: vec![1, 2],
        epoch: 1_795_971_044_000_000_123,
    };
    let mut buf = Vec::new();
    write_response(&mut buf, 7, &resp).unwrap();
    assert_eq!(buf[4], 139, "response kind 139");
    let got = read_response(&mut buf.as_slice(), HELLO_MAX)
        .unwrap()
        .unwrap();
    assert_eq!(got, (7, resp));
}

/// Version 8's frames (`sealmq reprotect`): each round-trips.
#[test]
fn version_8_frames_round_trip() {
    let req = Request::Reprotect {
        queue: "PAYMENTS".into(),
        keystore: "/home/ops/old-keys".into(),
        start: false,
        rank: 9,
        seq: u64::MAX - 2,
        batch: 512,
        dry_run: true,
    };
    let mut buf = Vec::new();
    write_request(&mut buf, 8, &req).unwrap();
    assert_eq!(buf[4], 26, "request kind 26");
    let got = read_request(&mut buf.as_slice(), HELLO_MAX)
        .unwrap()
        .unwrap();
    assert_eq!(got, (8, req));
    let resp = Response::Reprotected {
        scanned: 512,
        rewritten: 500,
        current: 10,
        other: 1,
        failed: 1,
        detail: "not a recipient".into(),
        more: true,
        rank: 0,
        seq: 1_000_001,
        depth: 100_000,
        unwraps: 3126,
    };
    let mut buf = Vec::new();
    write_response(&mut buf, 8, &resp).unwrap();
    assert_eq!(buf[4], 140, "response kind 140");
    let got = read_response(&mut buf.as_slice(), HELLO_MAX)
        .unwrap()
        .unwrap();
    assert_eq!(got, (8, resp));
}

/// FNV-1a: a fingerprint of the encoded frames.
fn fnv64(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| {
        (h ^ x as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

const GOLDEN_LEN: usize = 1242;
const GOLDEN_FNV: u64 = 0xe0a8_22b0_3a47_c575;

#[test]
fn oversized_and_short_frames_are_protocol_errors() {
    let mut big = Vec::new();
    big.extend_from_slice(&(10_000_000u32).to_le_bytes());
    assert!(matches!(
        read_request(&mut big.as_slice(), HELLO_MAX),
        Err(WireError::Protocol(_))
    ));
    let short = 3u32.to_le_bytes();
    assert!(matches!(
        read_request(&mut short.as_slice(), HELLO_MAX),
        Err(WireError::Protocol(_))
    ));
    assert!(
        read_request(&mut [].as_slice(), HELLO_MAX)
            .unwrap()
            .is_none()
    );
}

proptest! {
    #[test]
    fn arbitrary_frames_never_panic(kind in any::<u8>(), body in proptest::collection::vec(any::<u8>(), 0..300)) {
        let mut buf = Vec::new();
        write_frame(&mut buf, kind, 1, &body).unwrap();
        let _ = read_request(&mut buf.as_slice(), HELLO_MAX);
        let _ = read_response(&mut buf.as_slice(), HELLO_MAX);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = read_request(&mut bytes.as_slice(), HELLO_MAX);
    }
}

#[test]
fn publish_and_subscribe_requests_round_trip() {
    let reqs = [
        Request::Publish {
            topic: "price/fruit/apples".into(),
            md: Md::default(),
            payload: vec![7; 12],
            syncpoint: true,
            retain: true,
        },
        Request::Subscribe {
            name: "AUDIT".into(),
            topic: "orders/#".into(),
            durable: true,
            selector: "colour = 'red'".into(),
            resume: false,
        },
        Request::Unsubscribe {
            name: "AUDIT".into(),
        },
        Request::OpenTopic {
            object: "DEV.BASE.TOPIC".into(),
            topic: "news".into(),
        },
        Request::SubscribeWith {
            name: String::new(),
            topic: "news/#".into(),
            durable: false,
            selector: String::new(),
            resume: false,
            new_only: true,
            dest: "MY.NEWS.Q".into(),
        },
    ];
    for (i, r) in reqs.iter().enumerate() {
        let mut buf = Vec::new();
        write_request(&mut buf, i as u32, r).unwrap();
        let (id, back) = read_request(&mut buf.as_slice(), HELLO_MAX)
            .unwrap()
            .unwrap();
        assert_eq!((id, &back), (i as u32, r));
        // Cut anywhere, it is refused, never misread.
        for cut in 4..buf.len() {
            assert!(read_request(&mut &buf[..cut], HELLO_MAX).is_err());
        }
    }
}

/// MQGMO_SYNCPOINT_IF_PERSISTENT travels as a trailing byte only when set: a get without it
/// encodes as it always did (the golden frames above), one with it round-trips.
#[test]
fn a_get_syncpoint_if_persistent_round_trips_as_a_trailing_byte() {
    let mut g = GetReq {
        hobj: 1,
        syncpoint: false,
        wait_ms: 10,
        browse: 0,
        match_msg_id: None,
        match_correl_id: None,
        accept_truncated: false,
        buffer: -1,
        if_persistent: false,
    };
    let mut plain = Vec::new();
    write_request(&mut plain, 1, &Request::Get(g.clone())).unwrap();
    g.if_persistent = true;
    let mut with = Vec::new();
    write_request(&mut with, 1, &Request::Get(g.clone())).unwrap();
    assert_eq!(with.len(), plain.len() + 1);
    let (_, back) = read_request(&mut with.as_slice(), HELLO_MAX)
        .unwrap()
        .unwrap();
    assert_eq!(back, Request::Get(g));
}
