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
        write(&self.policies).insert(p.name.clone(), p);
    }

    /// Takes `name`'s policy out of the cache (it was removed from the queue).
    pub(crate) fn uncache_policy(&self, name: &str) {
        write(&self.policies).remove(name);
    }
}
