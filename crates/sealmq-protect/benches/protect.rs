//! protect + unprotect per QoP × key type × payload size × key reuse (issue 2).
//!
//! Run: `cargo bench -p sealmq-protect --bench protect` (add a filter such as `conf/` to run a
//! part). Each iteration protects one message with the sender's keystore and unprotects it
//! with the recipient's, so a figure is the cost of one message end to end on one core.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sealmq_protect::identity::IdentitySpec;
use sealmq_protect::{
    Dn, EncAlg, KeyKind, KeyReuse, Keystore, Original, Policy, Protector, SignAlg,
};
use std::path::Path;
use std::time::Duration;

const KINDS: [(&str, KeyKind); 6] = [
    ("rsa2048", KeyKind::Rsa(2048)),
    ("rsa3072", KeyKind::Rsa(3072)),
    ("rsa4096", KeyKind::Rsa(4096)),
    ("p256", KeyKind::P256),
    ("p384", KeyKind::P384),
    ("ed25519", KeyKind::Ed25519),
];

fn dn(n: &str) -> Dn {
    Dn::parse(&format!("CN={n},O=Bench")).expect("dn")
}

fn setup(dir: &Path) {
    let mut ca = IdentitySpec::new(dn("ca"), KeyKind::P256, 30);
    ca.authority = true;
    Keystore::init(&dir.join("ca"), &ca, None).expect("ca");
    for (n, k) in KINDS {
        Keystore::init(
            &dir.join(n),
            &IdentitySpec::new(dn(n), k, 30),
            Some(&dir.join("ca")),
        )
        .expect("identity");
    }
    for (n, _) in KINDS {
        let mut ks = Keystore::load(&dir.join(n)).expect("load");
        for (m, _) in KINDS {
            ks.trust(&std::fs::read(dir.join(m).join("identity.pem")).expect("cert"))
                .expect("trust");
        }
    }
}

fn protector(dir: &Path, n: &str) -> Protector {
    Protector::new(Keystore::load(&dir.join(n)).expect("load"))
}

fn policy(sign: SignAlg, enc: EncAlg, recip: Option<&str>, reuse: KeyReuse) -> Policy {
    let mut p = Policy::none("BENCH.Q");
    p.sign_alg = sign;
    p.enc_alg = enc;
    p.recipients = recip.map(|r| vec![dn(r)]).unwrap_or_default();
    p.key_reuse = reuse;
    p
}

fn sign_alg(k: KeyKind) -> SignAlg {
    if k == KeyKind::P384 {
        SignAlg::Sha384
    } else {
        SignAlg::Sha256
    }
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    setup(dir);
    let run = |c: &mut Criterion,
               group: &str,
               id: String,
               size: usize,
               pol: Policy,
               from: &str,
               to: &str| {
        let put = protector(dir, from);
        let get = protector(dir, to);
        let payload = vec![0x5au8; size];
        let mut g = c.benchmark_group(group);
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_function(BenchmarkId::from_parameter(id), |b| {
            b.iter(|| {
                let m = put
                    .protect(&pol, &payload, Original::default())
                    .expect("protect");
                get.unprotect(&pol, &m).expect("unprotect")
            })
        });
        g.finish();
    };
    for size in [1024usize, 32 * 1024] {
        for (n, k) in KINDS {
            let pol = policy(sign_alg(k), EncAlg::None, None, KeyReuse::Disabled);
            run(c, "integrity", format!("{n}/{size}"), size, pol, n, "p256");
            // Privacy: signed by n, encrypted to n (an Ed25519 signer encrypts to P-256).
            let recip = if k == KeyKind::Ed25519 { "p256" } else { n };
            let pol = policy(sign_alg(k), EncAlg::Aes256, Some(recip), KeyReuse::Disabled);
            run(c, "privacy", format!("{n}/{size}"), size, pol, n, recip);
        }
        for (n, k) in KINDS {
            if k == KeyKind::Ed25519 {
                continue;
            }
            for (r, reuse) in [
                ("1", KeyReuse::Disabled),
                ("32", KeyReuse::Count(32)),
                ("unlimited", KeyReuse::Unlimited),
            ] {
                let pol = policy(SignAlg::None, EncAlg::Aes256, Some(n), reuse);
                run(
                    c,
                    "confidentiality",
                    format!("{n}/{size}/reuse-{r}"),
                    size,
                    pol,
                    "p256",
                    n,
                );
            }
        }
    }
    // The target of issue 2: Confidentiality, key reuse 32, 2 KB, ≤ 10 µs per message.
    let pol = policy(
        SignAlg::None,
        EncAlg::Aes256,
        Some("rsa2048"),
        KeyReuse::Count(32),
    );
    run(
        c,
        "target",
        "conf-reuse32-rsa2048/2048".into(),
        2048,
        pol,
        "p256",
        "rsa2048",
    );
    // Raw RSA-2048 sign + verify through aws-lc-rs, to compare with `openssl speed rsa2048`
    // and with Integrity above.
    raw_rsa(c);
}

fn raw_rsa(c: &mut Criterion) {
    use aws_lc_rs::rand::SystemRandom;
    use aws_lc_rs::signature::{self, KeyPair, RsaKeyPair, UnparsedPublicKey};
    let kp = RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).expect("rsa");
    let rng = SystemRandom::new();
    let msg = [7u8; 100];
    let mut sig = vec![0u8; kp.public_modulus_len()];
    c.bench_function("raw/rsa2048-sign-verify", |b| {
        b.iter(|| {
            kp.sign(&signature::RSA_PKCS1_SHA256, &rng, &msg, &mut sig)
                .expect("sign");
            UnparsedPublicKey::new(
                &signature::RSA_PKCS1_2048_8192_SHA256,
                kp.public_key().as_ref(),
            )
            .verify(&msg, &sig)
            .expect("verify")
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
