//! The bound on nesting that sealmq's patch of fe2o3-amqp looks at before it decodes what a
//! peer sent (vendor/fe2o3-amqp/src/depth.rs; the vendored crate's own tests are not built).

use fe2o3_amqp::depth::{BAD_COMPOUND, MAX_DEPTH, TOO_DEEP, check_all, check_first};
use proptest::prelude::*;

fn nested_lists(n: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for _ in 0..n {
        // (The size is not checked against what follows, only against the count's byte.)
        v.extend_from_slice(&[0xc0, 0x01, 0x01]);
    }
    v.push(0x40);
    v
}

#[test]
fn deep_values_are_refused_and_shallow_ones_pass() {
    assert!(check_all(nested_lists(MAX_DEPTH - 1).iter()).is_ok());
    assert_eq!(check_all(nested_lists(MAX_DEPTH + 1).iter()), Err(TOO_DEEP));
    let described: Vec<u8> = std::iter::repeat_n(0x00u8, 10_000).collect();
    assert_eq!(check_first(&described), Err(TOO_DEEP));
    // A described string, a map of a symbol to a uint, an array of 3 ulongs.
    let ok = [
        0x00, 0x53, 0x77, 0xa1, 0x02, b'h', b'i', 0xc1, 0x06, 0x02, 0xa3, 0x01, b'k', 0x52, 0x07,
        0xe0, 0x04, 0x03, 0x53, 0x01, 0x02, 0x03,
    ];
    assert!(check_all(ok.iter()).is_ok());
    // Truncated or unknown: the decoder's to judge.
    assert!(check_all([0xb1, 0xff].iter()).is_ok());
    assert!(check_all([0x99].iter()).is_ok());
}

proptest! {
    /// Any bytes are walked without a panic, and bytes that cannot be walked are left to the
    /// decoder (refused only for their depth, or for a compound shorter than its header);
    /// what is not refused decodes without a panic.
    #[test]
    fn any_bytes_are_judged_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let all = check_all(bytes.iter());
        let first = check_first(&bytes);
        prop_assert!(all.is_ok() || all == Err(TOO_DEEP) || all == Err(BAD_COMPOUND));
        prop_assert!(first.is_ok() || first == Err(TOO_DEEP) || first == Err(BAD_COMPOUND));
        if first.is_ok() {
            let _ = serde_amqp::from_slice::<serde_amqp::Value>(&bytes);
        }
    }

    /// Lists, maps and described values nested N deep pass up to the bound and are refused
    /// past it, whatever the mix.
    #[test]
    fn nesting_is_counted_whatever_the_containers(kinds in proptest::collection::vec(0u8..3, 1..200)) {
        let mut v = Vec::new();
        for k in &kinds {
            match k {
                0 => v.extend_from_slice(&[0xd0, 0, 0, 0, 4, 0, 0, 0, 1]),
                1 => v.extend_from_slice(&[0xc1, 1, 2, 0x40]),
                _ => v.extend_from_slice(&[0x00, 0x53, 0x01]),
            }
        }
        v.push(0x40);
        let r = check_all(v.iter());
        if kinds.len() < MAX_DEPTH {
            prop_assert!(r.is_ok());
        } else {
            prop_assert_eq!(r, Err(TOO_DEEP));
        }
    }
}
