//! Counters of cryptographic operations, so callers can report operations per message and the
//! time each primitive takes (SPEC §8).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The primitives counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Private-key signature.
    Sign,
    /// Public-key signature verification.
    Verify,
    /// Public-key key wrap for one recipient (RSA-OAEP encrypt or ECDH + AES key wrap).
    KeyWrap,
    /// Private-key unwrap (RSA-OAEP decrypt or ECDH + AES key unwrap).
    KeyUnwrap,
    /// AES-GCM encryption (bytes counted separately).
    Encrypt,
    /// AES-GCM decryption.
    Decrypt,
}

const N: usize = 6;

fn index(op: Op) -> usize {
    match op {
        Op::Sign => 0,
        Op::Verify => 1,
        Op::KeyWrap => 2,
        Op::KeyUnwrap => 3,
        Op::Encrypt => 4,
        Op::Decrypt => 5,
    }
}

/// Thread-safe operation counters.
#[derive(Debug, Default)]
pub struct Counters {
    count: [AtomicU64; N],
    nanos: [AtomicU64; N],
    sym_bytes: AtomicU64,
    put_reuse_hits: AtomicU64,
    put_reuse_misses: AtomicU64,
    get_reuse_hits: AtomicU64,
    get_reuse_misses: AtomicU64,
}

/// A point-in-time copy of [`Counters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub sign: u64,
    pub verify: u64,
    pub key_wrap: u64,
    pub key_unwrap: u64,
    pub encrypt: u64,
    pub decrypt: u64,
    pub sign_nanos: u64,
    pub verify_nanos: u64,
    pub key_wrap_nanos: u64,
    pub key_unwrap_nanos: u64,
    pub encrypt_nanos: u64,
    pub decrypt_nanos: u64,
    pub sym_bytes: u64,
    pub put_reuse_hits: u64,
    pub put_reuse_misses: u64,
    pub get_reuse_hits: u64,
    pub get_reuse_misses: u64,
}

impl Snapshot {
    /// Private-key operations (signatures and unwraps).
    pub fn private_key_ops(&self) -> u64 {
        self.sign + self.key_unwrap
    }

    /// Public-key operations (verifications and wraps).
    pub fn public_key_ops(&self) -> u64 {
        self.verify + self.key_wrap
    }
}

impl Counters {
    /// Times `f` and counts it as one `op`.
    pub fn time<T>(&self, op: Op, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        let i = index(op);
        self.count[i].fetch_add(1, Ordering::Relaxed);
        self.nanos[i].fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        out
    }

    pub fn add_sym_bytes(&self, n: usize) {
        self.sym_bytes.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub fn put_reuse(&self, hit: bool) {
        let c = if hit {
            &self.put_reuse_hits
        } else {
            &self.put_reuse_misses
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub fn get_reuse(&self, hit: bool) {
        let c = if hit {
            &self.get_reuse_hits
        } else {
            &self.get_reuse_misses
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> Snapshot {
        let c = |op| self.count[index(op)].load(Ordering::Relaxed);
        let n = |op| self.nanos[index(op)].load(Ordering::Relaxed);
        Snapshot {
            sign: c(Op::Sign),
            verify: c(Op::Verify),
            key_wrap: c(Op::KeyWrap),
            key_unwrap: c(Op::KeyUnwrap),
            encrypt: c(Op::Encrypt),
            decrypt: c(Op::Decrypt),
            sign_nanos: n(Op::Sign),
            verify_nanos: n(Op::Verify),
            key_wrap_nanos: n(Op::KeyWrap),
            key_unwrap_nanos: n(Op::KeyUnwrap),
            encrypt_nanos: n(Op::Encrypt),
            decrypt_nanos: n(Op::Decrypt),
            sym_bytes: self.sym_bytes.load(Ordering::Relaxed),
            put_reuse_hits: self.put_reuse_hits.load(Ordering::Relaxed),
            put_reuse_misses: self.put_reuse_misses.load(Ordering::Relaxed),
            get_reuse_hits: self.get_reuse_hits.load(Ordering::Relaxed),
            get_reuse_misses: self.get_reuse_misses.load(Ordering::Relaxed),
        }
    }
}
