//! A message on the policy queue that SET POLICY did not write — a forgery by a principal with
//! authority to put there, or a malformed one — is refused when policies load, and the policy in
//! force stays (issue 11, hole 1).

use sealmq_engine::authority::{AuthObj, AuthRec, auth};
use sealmq_engine::*;
use sealmq_protect::Dn;
use sealmq_protect::policy::{EncAlg, Policy, SignAlg};

fn correl(name: &str) -> [u8; 24] {
    let d = sealmq_protect::digest_sha256(name.as_bytes());
    let mut id = [0u8; 24];
    id.copy_from_slice(&d[..24]);
    id
}

#[test]
fn a_forged_policy_message_is_refused_and_the_policy_stays() {
    let d = tempfile::tempdir().unwrap();
    let mut cfg = QmConfig::new("QMF", d.path().join("QMF"));
    cfg.admin = Some("mqm".into());
    let qm = sealmq_engine::create(cfg.clone()).unwrap();
    qm.define(QueueDef::new("PAY.Q", QType::Local), false)
        .unwrap();
    let mut privacy = Policy::none("PAY.Q");
    privacy.sign_alg = SignAlg::Sha256;
    privacy.enc_alg = EncAlg::Aes256;
    privacy.recipients = vec![Dn::parse("CN=bank").unwrap()];
    sealmq_engine::policies::set(&qm, privacy.clone()).unwrap();
    {
        let c = Connection::connect(&qm, "mqm", "forger").unwrap();
        // Even the administrator's application needs a record naming the system queue...
        let e = c
            .put1(
                "SYSTEM.PROTECTION.POLICY.QUEUE",
                &mut Md::default(),
                b"x",
                PutOptions::default(),
            )
            .unwrap_err();
        assert_eq!(e.reason.code(), 2035, "{e}");
        // ...and with one, what it puts is not a policy the queue manager wrote.
        qm.set_authrec(AuthRec {
            profile: "SYSTEM.PROTECTION.POLICY.QUEUE".into(),
            objtype: AuthObj::Queue,
            principal: "mqm".into(),
            auths: auth::PUT,
            group: false,
        })
        .unwrap();
        let none = Policy::none("PAY.Q");
        for forged in [policies::encode(&none), b"garbage".to_vec()] {
            let mut md = Md {
                persistence: Persistence::Persistent,
                correl_id: correl("PAY.Q"),
                format: policies::FORMAT.into(),
                ..Md::default()
            };
            c.put1(
                "SYSTEM.PROTECTION.POLICY.QUEUE",
                &mut md,
                &forged,
                PutOptions::default(),
            )
            .unwrap();
        }
    }
    qm.shutdown().unwrap();
    drop(qm);
    let (qm, _) = sealmq_engine::start(cfg).unwrap();
    assert_eq!(
        qm.policy("PAY.Q"),
        Some(privacy),
        "the policy in force is unchanged"
    );
    assert_eq!(qm.depth("SYSTEM.PROTECTION.POLICY.QUEUE").unwrap(), 3);
    // Stopped before its directory is removed: its threads would write there meanwhile.
    qm.shutdown().unwrap();
}
