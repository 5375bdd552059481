//! The queue manager's cache of security policies (SPEC §5.1), read at every open and by
//! channels at the island's edge. What is cached is stored on SYSTEM.PROTECTION.POLICY.QUEUE
//! by `policies.rs`, through the MQI, and read back from there at start.

use super::*;
use sealmq_protect::policy::Policy;
use sealmq_types::sync::{read, write};

impl QueueManager {
    /// The policy of a queue name, if any.
    pub fn policy(&self, name: &str) -> Option<Policy> {
        read(&self.policies).get(name).cloned()
    }

    /// Whether any policy is defined (most queue managers have none: a put need not look).
    pub fn any_policy(&self) -> bool {
        !read(&self.policies).is_empty()
    }

    /// Whether a queue name has a policy (no copy of it).
    pub fn has_policy(&self, name: &str) -> bool {
        read(&self.policies).contains_key(name)
    }

    /// Every policy, sorted by name.
    pub fn policies(&self) -> Vec<Policy> {
        let mut v: Vec<Policy> = read(&self.policies).values().cloned().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// Puts `p` in the cache (it was stored).
    pub(crate) fn cache_policy(&self, p: Policy) {
        let mut m = write(&self.policies);
        m.insert(p.name.clone(), p);
        self.bump_policy_epoch();
    }

    /// Takes `name`'s policy out of the cache (it was removed from the queue).
    pub(crate) fn uncache_policy(&self, name: &str) {
        let mut m = write(&self.policies);
        m.remove(name);
        self.bump_policy_epoch();
    }

    /// The policy epoch: read it before the policies it covers ([`QueueManager::policy_at`]).
    pub fn policy_epoch(&self) -> u64 {
        self.policy_epoch.load(std::sync::atomic::Ordering::Acquire)
    }

    /// A queue's policy and the epoch it holds in, read together (under the policies' lock, so
    /// no change falls between them).
    pub fn policy_at(&self, name: &str) -> (Option<Policy>, u64) {
        let m = read(&self.policies);
        (m.get(name).cloned(), self.policy_epoch())
    }

    /// Changed under the policies' write lock, so that a reader holding the read lock sees
    /// the epoch of the policies it reads.
    fn bump_policy_epoch(&self) {
        self.policy_epoch
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }
}
