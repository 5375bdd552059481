//! Confidentiality key reuse (SPEC §5.3).
//!
//! Put side: a content-encryption key (CEK) and its encoded RecipientInfos are cached per
//! (policy, algorithm, recipient set, sender) and reused for up to KEYREUSE messages and no
//! longer than a maximum age. Every message still gets a fresh random 96-bit GCM nonce.
//!
//! The next key of an entry can be made ahead ("standby"): the wrap (one public-key operation,
//! or an ephemeral key pair and an ECDH for EC recipients) then happens while the caller has
//! nothing better to do — the client library does it while the queue manager handles its put —
//! instead of on the message that finds the current key used up. A standby key is a fresh
//! random key like any other, used for no message before it is promoted, and its age counts
//! from when it was made.
//!
//! Get side: a bounded cache maps a SHA-256 digest of the received RecipientInfos to the
//! unwrapped key, so a getter pays one private-key operation per key, not per message.
//!
//! Keys live in aws-lc AEAD contexts (`LessSafeKey`), which aws-lc cleanses when they are
//! freed: on eviction, on replacement and when a cache is dropped. The raw CEK bytes are held
//! only in `Zeroizing` buffers while a key is made or unwrapped.

use crate::dn::Dn;
use crate::policy::EncAlg;
use aws_lc_rs::aead::{AES_128_GCM, AES_256_GCM, LessSafeKey, UnboundKey};
use sealmq_types::sync::lock;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Default maximum age of a reused put-side key.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(3600);
/// Hard ceiling of messages per key even for UNLIMITED (GCM random-nonce safety margin).
pub const HARD_LIMIT: u64 = 1 << 32;
/// Default number of unwrapped keys a getter keeps.
pub const DEFAULT_GET_CAPACITY: usize = 1024;

/// An AES-GCM content key.
pub struct ContentKey {
    pub alg: EncAlg,
    pub aead: LessSafeKey,
}

impl ContentKey {
    pub fn new(alg: EncAlg, cek: &[u8]) -> Option<ContentKey> {
        let a = match alg {
            EncAlg::Aes128 => &AES_128_GCM,
            EncAlg::Aes256 => &AES_256_GCM,
            EncAlg::None => return None,
        };
        let k = UnboundKey::new(a, cek).ok()?;
        Some(ContentKey {
            alg,
            aead: LessSafeKey::new(k),
        })
    }
}

/// What the put side reuses.
pub struct PutEntry {
    pub key: Arc<ContentKey>,
    /// DER of the RecipientInfos SET.
    pub recipient_infos: Arc<Vec<u8>>,
    uses: u64,
    created: Instant,
    /// The key that follows this one, made ahead (see the module documentation).
    standby: Option<Standby>,
    /// A caller is making the standby: others do not make one too.
    claimed: bool,
}

/// A key made ahead, not used yet.
struct Standby {
    key: Arc<ContentKey>,
    recipient_infos: Arc<Vec<u8>>,
    created: Instant,
}

/// A key handed out by [`PutCache::take`].
pub struct Taken {
    pub key: Arc<ContentKey>,
    pub recipient_infos: Arc<Vec<u8>>,
    /// The key was made ahead and this is its first message.
    pub promoted: bool,
}

/// Cache key of the put side, borrowed from the caller so a hit allocates nothing.
#[derive(Debug, Clone, Copy)]
pub struct PutKey<'a> {
    pub policy: &'a str,
    pub alg: EncAlg,
    pub recipients: &'a [Dn],
    /// Sender identity fingerprint.
    pub sender: &'a [u8],
}

impl PutKey<'_> {
    fn hash64(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.policy.hash(&mut h);
        self.alg.hash(&mut h);
        for r in self.recipients {
            r.der().hash(&mut h);
        }
        self.sender.hash(&mut h);
        h.finish()
    }

    fn matches(&self, k: &OwnedKey) -> bool {
        self.policy == k.policy
            && self.alg == k.alg
            && self.sender == k.sender.as_slice()
            && self.recipients.len() == k.recipients.len()
            && self
                .recipients
                .iter()
                .zip(&k.recipients)
                .all(|(a, b)| a.der() == b.as_slice())
    }

    fn to_owned_key(self) -> OwnedKey {
        OwnedKey {
            policy: self.policy.to_string(),
            alg: self.alg,
            recipients: self.recipients.iter().map(|d| d.der().to_vec()).collect(),
            sender: self.sender.to_vec(),
        }
    }
}

struct OwnedKey {
    policy: String,
    alg: EncAlg,
    recipients: Vec<Vec<u8>>,
    sender: Vec<u8>,
}

/// Put-side cache.
pub struct PutCache {
    entries: Mutex<HashMap<u64, Vec<(OwnedKey, PutEntry)>>>,
    max_age: Duration,
}

impl PutCache {
    pub fn new(max_age: Duration) -> PutCache {
        PutCache {
            entries: Mutex::new(HashMap::new()),
            max_age,
        }
    }

    /// A key to use for one more message, if a cached one is within `limit` uses and age;
    /// when the current key is used up, its standby (if made, and young enough) takes over.
    pub fn take(&self, key: &PutKey<'_>, limit: Option<u32>) -> Option<Taken> {
        let limit = limit.map(u64::from).unwrap_or(HARD_LIMIT).min(HARD_LIMIT);
        let h = key.hash64();
        let mut map = lock(&self.entries);
        let bucket = map.get_mut(&h)?;
        let pos = bucket.iter().position(|(k, _)| key.matches(k))?;
        let entry = &mut bucket[pos].1;
        let mut promoted = false;
        if entry.uses >= limit || entry.created.elapsed() >= self.max_age {
            match entry.standby.take() {
                Some(next) if next.created.elapsed() < self.max_age => {
                    // The old key's AEAD context is dropped (and cleansed) here.
                    entry.key = next.key;
                    entry.recipient_infos = next.recipient_infos;
                    entry.created = next.created;
                    entry.uses = 0;
                    promoted = true;
                }
                _ => {
                    bucket.swap_remove(pos);
                    if bucket.is_empty() {
                        map.remove(&h);
                    }
                    return None;
                }
            }
        }
        entry.uses += 1;
        Some(Taken {
            key: entry.key.clone(),
            recipient_infos: entry.recipient_infos.clone(),
            promoted,
        })
    }

    /// Whether the caller should make the standby of the entry for `key`: it is in use under a
    /// count limit (UNLIMITED keys are replaced only at their age limit), has none, and nobody
    /// else is making one. A `true` claims the job: follow it with [`PutCache::set_standby`]
    /// or, on failure, [`PutCache::unclaim`].
    pub fn claim_standby(&self, key: &PutKey<'_>, limit: Option<u32>) -> bool {
        if limit.is_none_or(|n| n < 2) {
            return false;
        }
        self.with_entry(key, |e| {
            let free = e.standby.is_none() && !e.claimed;
            e.claimed |= free;
            free
        })
        .unwrap_or(false)
    }

    /// Gives up a claim (making the standby failed).
    pub fn unclaim(&self, key: &PutKey<'_>) {
        self.with_entry(key, |e| e.claimed = false);
    }

    /// Runs `f` on the entry for `key`, under the cache's lock, if there is one.
    fn with_entry<T>(&self, key: &PutKey<'_>, f: impl FnOnce(&mut PutEntry) -> T) -> Option<T> {
        let mut map = lock(&self.entries);
        map.get_mut(&key.hash64())
            .and_then(|b| b.iter_mut().find(|(k, _)| key.matches(k)))
            .map(|(_, e)| f(e))
    }

    /// Gives the entry for `key` its next key, if it still has none.
    pub fn set_standby(
        &self,
        key: &PutKey<'_>,
        content_key: Arc<ContentKey>,
        recipient_infos: Arc<Vec<u8>>,
    ) {
        self.with_entry(key, |e| {
            if e.standby.is_none() {
                e.claimed = false;
                e.standby = Some(Standby {
                    key: content_key,
                    recipient_infos,
                    created: Instant::now(),
                });
            }
        });
    }

    /// Stores a fresh key that has just been used once.
    pub fn store(
        &self,
        key: &PutKey<'_>,
        content_key: Arc<ContentKey>,
        recipient_infos: Arc<Vec<u8>>,
    ) {
        let h = key.hash64();
        let mut map = lock(&self.entries);
        let bucket = map.entry(h).or_default();
        bucket.retain(|(k, _)| !key.matches(k));
        bucket.push((
            key.to_owned_key(),
            PutEntry {
                key: content_key,
                recipient_infos,
                uses: 1,
                created: Instant::now(),
                standby: None,
                claimed: false,
            },
        ));
    }

    pub fn len(&self) -> usize {
        self.entries
            .lock()
            .map(|m| m.values().map(Vec::len).sum())
            .unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Get-side cache: RecipientInfos digest → unwrapped key, bounded, oldest evicted first.
pub struct GetCache {
    inner: Mutex<GetInner>,
    capacity: usize,
}

struct GetInner {
    map: HashMap<[u8; 32], Arc<ContentKey>>,
    order: VecDeque<[u8; 32]>,
}

impl GetCache {
    pub fn new(capacity: usize) -> GetCache {
        GetCache {
            inner: Mutex::new(GetInner {
                map: HashMap::new(),
                order: VecDeque::new(),
            }),
            capacity: capacity.max(1),
        }
    }

    pub fn get(&self, digest: &[u8; 32]) -> Option<Arc<ContentKey>> {
        let inner = lock(&self.inner);
        inner.map.get(digest).cloned()
    }

    pub fn insert(&self, digest: [u8; 32], key: Arc<ContentKey>) {
        let mut inner = lock(&self.inner);
        if inner.map.insert(digest, key).is_none() {
            inner.order.push_back(digest);
        }
        while inner.order.len() > self.capacity {
            if let Some(old) = inner.order.pop_front() {
                inner.map.remove(&old);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.inner.lock().map(|i| i.map.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pk(recipients: &[Dn]) -> PutKey<'_> {
        PutKey {
            policy: "Q",
            alg: EncAlg::Aes256,
            recipients,
            sender: &[2],
        }
    }

    #[test]
    fn put_cache_respects_count_and_age() {
        let r = [Dn::parse("CN=bob").unwrap()];
        let other = [Dn::parse("CN=carol").unwrap()];
        let c = PutCache::new(Duration::from_secs(60));
        assert!(c.take(&pk(&r), Some(3)).is_none());
        let k = Arc::new(ContentKey::new(EncAlg::Aes256, &[7u8; 32]).unwrap());
        c.store(&pk(&r), k, Arc::new(vec![]));
        assert!(c.take(&pk(&other), Some(3)).is_none()); // another recipient set
        assert!(c.take(&pk(&r), Some(3)).is_some()); // 2nd use
        assert!(c.take(&pk(&r), Some(3)).is_some()); // 3rd use
        assert!(c.take(&pk(&r), Some(3)).is_none()); // limit reached, evicted
        assert!(c.is_empty());

        let aged = PutCache::new(Duration::ZERO);
        let k = Arc::new(ContentKey::new(EncAlg::Aes256, &[7u8; 32]).unwrap());
        aged.store(&pk(&r), k, Arc::new(vec![]));
        assert!(aged.take(&pk(&r), None).is_none());
    }

    #[test]
    fn standby_takes_over_when_the_key_is_used_up() {
        let r = [Dn::parse("CN=bob").unwrap()];
        let c = PutCache::new(Duration::from_secs(60));
        let first = Arc::new(ContentKey::new(EncAlg::Aes256, &[1u8; 32]).unwrap());
        // No entry, or no count limit: nothing to make ahead.
        assert!(!c.claim_standby(&pk(&r), Some(2)));
        c.store(&pk(&r), first.clone(), Arc::new(vec![1]));
        assert!(!c.claim_standby(&pk(&r), None));
        assert!(!c.claim_standby(&pk(&r), Some(1)));
        assert!(c.claim_standby(&pk(&r), Some(2)));
        assert!(!c.claim_standby(&pk(&r), Some(2)), "one maker at a time");
        c.unclaim(&pk(&r));
        assert!(
            c.claim_standby(&pk(&r), Some(2)),
            "claimable again after a failure"
        );
        let next = Arc::new(ContentKey::new(EncAlg::Aes256, &[2u8; 32]).unwrap());
        c.set_standby(&pk(&r), next.clone(), Arc::new(vec![2]));
        assert!(!c.claim_standby(&pk(&r), Some(2)));
        // A second standby does not replace the first.
        let other = Arc::new(ContentKey::new(EncAlg::Aes256, &[3u8; 32]).unwrap());
        c.set_standby(&pk(&r), other, Arc::new(vec![3]));

        let t = c.take(&pk(&r), Some(2)).unwrap(); // 2nd use of the first key
        assert!(Arc::ptr_eq(&t.key, &first) && !t.promoted);
        let t = c.take(&pk(&r), Some(2)).unwrap(); // used up: the standby, first use
        assert!(Arc::ptr_eq(&t.key, &next) && t.promoted);
        assert_eq!(*t.recipient_infos, vec![2]);
        let t = c.take(&pk(&r), Some(2)).unwrap(); // its 2nd use
        assert!(Arc::ptr_eq(&t.key, &next) && !t.promoted);
        assert!(c.claim_standby(&pk(&r), Some(2)));
        assert!(c.take(&pk(&r), Some(2)).is_none()); // used up, no standby: evicted
        assert!(c.is_empty());

        // A standby older than the maximum age is not promoted.
        let aged = PutCache::new(Duration::ZERO);
        aged.store(&pk(&r), first, Arc::new(vec![1]));
        aged.set_standby(&pk(&r), next, Arc::new(vec![2]));
        assert!(aged.take(&pk(&r), Some(5)).is_none());
    }

    #[test]
    fn get_cache_is_bounded() {
        let c = GetCache::new(2);
        for i in 0..5u8 {
            c.insert(
                [i; 32],
                Arc::new(ContentKey::new(EncAlg::Aes128, &[i; 16]).unwrap()),
            );
        }
        assert_eq!(c.len(), 2);
        assert!(c.get(&[0; 32]).is_none());
        assert!(c.get(&[4; 32]).is_some());
    }
}
