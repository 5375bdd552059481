//! The authentication gate: every password check of the queue manager (native connections
//! and AMQP SASL PLAIN) passes through one [`Gate`], so that guessing costs the guesser, not
//! the queue manager:
//! - at most `parallel` checks run at once (an Argon2 check takes ~20 MiB, PAM a process's
//!   worth of work); at most `parallel + queue` are under way — running, waiting their turn,
//!   sleeping off a delay they owe or their failure's floor, each on a thread of the event
//!   loop's blocking pool — and past that a check is refused at once as busy (before the
//!   password is looked at), so that failing logins from many addresses cannot take the whole
//!   pool that other applications' requests need;
//! - at most `per_address` checks from one address are under way at once, and the last
//!   `clean_reserve` places are kept for addresses with no recent failure: addresses that
//!   keep failing cannot take every place, and a right password from elsewhere is still
//!   checked while they flood (issue 42);
//! - after failures, an address and a user owe a delay before their next check (doubling
//!   from `base_delay` up to `max_delay`, forgotten `forget_after` the last failure);
//! - every failure is answered `floor` after its check began, whichever way it failed
//!   (an unknown user, a wrong password, PAM or the password file), so timing tells nothing.
//!
//! Locks: one mutex around the counts and the failure table, never held while a check runs
//! or while a caller sleeps.

use sealmq_types::sync::lock;
use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The gate's bounds.
#[derive(Debug, Clone)]
pub struct GateConfig {
    pub parallel: usize,
    pub queue: usize,
    pub per_address: usize,
    /// Places (of `parallel + queue`) only addresses without a remembered failure may take.
    pub clean_reserve: usize,
    pub floor: Duration,
    pub base_delay: Duration,
    pub max_delay: Duration,
    pub forget_after: Duration,
    /// Addresses and users whose failures are remembered at most (oldest forgotten first).
    pub max_tracked: usize,
}

impl Default for GateConfig {
    fn default() -> GateConfig {
        GateConfig {
            parallel: 2,
            // 32 under way at most: half the event loop's blocking pool (64 threads).
            queue: 30,
            per_address: 4,
            clean_reserve: 8,
            floor: Duration::from_millis(1000),
            base_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(10),
            forget_after: Duration::from_secs(15 * 60),
            max_tracked: 10_000,
        }
    }
}

/// What a check came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Accepted,
    Refused,
    /// Too many checks under way (from everywhere, or from this address): not looked at.
    Busy,
}

#[derive(Default)]
struct State {
    running: usize,
    waiting: usize,
    /// Of them, checks from addresses without a remembered failure: they go first.
    clean_waiting: usize,
    /// Checks under way per address (sleeping, waiting or running).
    inflight: HashMap<String, usize>,
    /// Checks under way from every address (the sum of `inflight`).
    under_way: usize,
    /// Recent failures per `a:<address>` and `u:<user>`: how many, and when the last was.
    failures: HashMap<String, (u32, Instant)>,
}

/// The queue manager's authentication gate (one per process's queue manager).
pub struct Gate {
    cfg: GateConfig,
    state: Mutex<State>,
    turn: Condvar,
}

impl Default for Gate {
    fn default() -> Gate {
        Gate::new(GateConfig::default())
    }
}

/// Gives back an address's place when a check ends, however it ends.
struct Inflight<'a> {
    gate: &'a Gate,
    addr: String,
}

impl Drop for Inflight<'_> {
    fn drop(&mut self) {
        let mut st = self.gate.lock();
        st.under_way = st.under_way.saturating_sub(1);
        if let Some(n) = st.inflight.get_mut(&self.addr) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                st.inflight.remove(&self.addr);
            }
        }
    }
}

impl Gate {
    pub fn new(cfg: GateConfig) -> Gate {
        Gate {
            cfg,
            state: Mutex::new(State::default()),
            turn: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Checks `user`'s password from `addr` with `verify` (which looks at the password),
    /// within the gate's bounds.
    pub fn check(&self, addr: &str, user: &str, verify: impl FnOnce() -> bool) -> Verdict {
        let (owed, failing) = {
            let mut st = self.lock();
            let mine = st.inflight.get(addr).copied().unwrap_or(0);
            let places = self.cfg.parallel + self.cfg.queue;
            let failing = st.failures.contains_key(&format!("a:{addr}"));
            let room = if failing {
                places.saturating_sub(self.cfg.clean_reserve)
            } else {
                places
            };
            if mine >= self.cfg.per_address || st.under_way >= room {
                return Verdict::Busy;
            }
            *st.inflight.entry(addr.to_string()).or_default() += 1;
            st.under_way += 1;
            (self.owed(&mut st, addr, user), failing)
        };
        let _place = Inflight {
            gate: self,
            addr: addr.to_string(),
        };
        if !owed.is_zero() {
            std::thread::sleep(owed);
        }
        {
            let mut st = self.lock();
            if st.waiting + st.running >= self.cfg.parallel + self.cfg.queue {
                return Verdict::Busy;
            }
            st.waiting += 1;
            st.clean_waiting += usize::from(!failing);
            // A check from an address that failed lately waits while one from a clean
            // address does (issue 42: a right password is not queued behind a flood).
            while st.running >= self.cfg.parallel || (failing && st.clean_waiting > 0) {
                st = self.turn.wait(st).unwrap_or_else(|p| p.into_inner());
            }
            st.waiting -= 1;
            st.clean_waiting -= usize::from(!failing);
            st.running += 1;
        }
        let began = Instant::now();
        // A panicking check (it should not) still gives its turn back.
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(verify)).unwrap_or(false);
        {
            let mut st = self.lock();
            st.running -= 1;
            // Every waiter looks: the next turn may be a clean address's only.
            self.turn.notify_all();
            if ok {
                st.failures.remove(&format!("u:{user}"));
                st.failures.remove(&format!("a:{addr}"));
            } else {
                self.failed(&mut st, &format!("a:{addr}"));
                self.failed(&mut st, &format!("u:{user}"));
            }
        }
        if ok {
            return Verdict::Accepted;
        }
        let spent = began.elapsed();
        if spent < self.cfg.floor {
            std::thread::sleep(self.cfg.floor - spent);
        }
        Verdict::Refused
    }

    /// The delay `addr` or `user` owes for earlier failures (the larger of the two).
    fn owed(&self, st: &mut State, addr: &str, user: &str) -> Duration {
        let now = Instant::now();
        let mut n = 0;
        for key in [format!("a:{addr}"), format!("u:{user}")] {
            match st.failures.get(&key) {
                Some((_, last)) if now.duration_since(*last) > self.cfg.forget_after => {
                    st.failures.remove(&key);
                }
                Some((count, _)) => n = n.max(*count),
                None => {}
            }
        }
        if n == 0 {
            return Duration::ZERO;
        }
        let doubled = self.cfg.base_delay.saturating_mul(1u32 << (n - 1).min(16));
        doubled.min(self.cfg.max_delay)
    }

    fn failed(&self, st: &mut State, key: &str) {
        let now = Instant::now();
        if !st.failures.contains_key(key) && st.failures.len() >= self.cfg.max_tracked {
            let forget = self.cfg.forget_after;
            st.failures
                .retain(|_, (_, last)| now.duration_since(*last) <= forget);
            if st.failures.len() >= self.cfg.max_tracked {
                let oldest = st
                    .failures
                    .iter()
                    .min_by_key(|(_, (_, last))| *last)
                    .map(|(k, _)| k.clone());
                if let Some(k) = oldest {
                    st.failures.remove(&k);
                }
            }
        }
        let e = st.failures.entry(key.to_string()).or_insert((0, now));
        e.0 = e.0.saturating_add(1);
        e.1 = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn quick() -> GateConfig {
        GateConfig {
            parallel: 2,
            queue: 3,
            per_address: 10,
            clean_reserve: 0,
            floor: Duration::from_millis(200),
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(400),
            forget_after: Duration::from_secs(60),
            max_tracked: 4,
        }
    }

    #[test]
    fn failures_take_the_same_time_and_owe_a_growing_delay() {
        let g = Gate::new(quick());
        // A fast failure and a slow one both answer at the floor.
        let t = Instant::now();
        assert_eq!(g.check("1.1.1.1", "a", || false), Verdict::Refused);
        let fast = t.elapsed();
        assert!(fast >= Duration::from_millis(200), "{fast:?}");
        // The next check from that address owes 100 ms before it runs; then 200, 400, 400.
        for want in [100u64, 200, 400, 400] {
            let t = Instant::now();
            let ran = std::cell::Cell::new(None);
            g.check("1.1.1.1", "b", || {
                ran.set(Some(t.elapsed()));
                false
            });
            let before = ran.get().unwrap();
            assert!(before >= Duration::from_millis(want), "{want}: {before:?}");
            assert!(
                before < Duration::from_millis(want + 150),
                "{want}: {before:?}"
            );
        }
        // Another address and user owe nothing; a success forgets the user's failures.
        let t = Instant::now();
        assert_eq!(g.check("2.2.2.2", "c", || true), Verdict::Accepted);
        assert!(t.elapsed() < Duration::from_millis(100));
    }

    #[test]
    fn checks_run_two_at_a_time_and_a_full_queue_is_busy() {
        let g = Arc::new(Gate::new(GateConfig {
            floor: Duration::ZERO,
            ..quick()
        }));
        let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let verdicts: Vec<Verdict> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..12)
                .map(|i| {
                    let (g, running, most) = (g.clone(), running.clone(), most.clone());
                    s.spawn(move || {
                        g.check(&format!("10.0.0.{i}"), "u", || {
                            let n = running.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(n, Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(100));
                            running.fetch_sub(1, Ordering::SeqCst);
                            true
                        })
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(most.load(Ordering::SeqCst) <= 2);
        let busy = verdicts.iter().filter(|v| **v == Verdict::Busy).count();
        assert!(busy >= 7, "{verdicts:?}");
        assert!(verdicts.contains(&Verdict::Accepted));
    }

    #[test]
    fn checks_sleeping_off_a_delay_count_against_the_bound() {
        let g = Arc::new(Gate::new(GateConfig {
            floor: Duration::ZERO,
            base_delay: Duration::from_millis(400),
            max_delay: Duration::from_millis(400),
            max_tracked: 100,
            ..quick()
        }));
        for i in 0..8 {
            g.check(&format!("10.2.0.{i}"), &format!("v{i}"), || false);
        }
        // Eight addresses that each owe 400 ms check at once: five (parallel 2 + queue 3)
        // are under way, asleep, and the other three are busy at once.
        let t = Instant::now();
        let verdicts: Vec<(Verdict, Duration)> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8)
                .map(|i| {
                    let g = g.clone();
                    s.spawn(move || {
                        let v = g.check(&format!("10.2.0.{i}"), &format!("w{i}"), || true);
                        (v, t.elapsed())
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let busy: Vec<_> = verdicts
            .iter()
            .filter(|(v, _)| *v == Verdict::Busy)
            .collect();
        assert_eq!(busy.len(), 3, "{verdicts:?}");
        assert!(
            busy.iter().all(|(_, d)| *d < Duration::from_millis(300)),
            "{verdicts:?}"
        );
        assert_eq!(g.lock().under_way, 0);
    }

    #[test]
    fn one_address_has_few_checks_under_way_and_the_table_stays_bounded() {
        let g = Arc::new(Gate::new(GateConfig {
            per_address: 1,
            floor: Duration::ZERO,
            ..quick()
        }));
        std::thread::scope(|s| {
            let g2 = g.clone();
            let h = s.spawn(move || {
                g2.check("9.9.9.9", "x", || {
                    std::thread::sleep(Duration::from_millis(200));
                    true
                })
            });
            std::thread::sleep(Duration::from_millis(50));
            assert_eq!(g.check("9.9.9.9", "y", || true), Verdict::Busy);
            assert_eq!(h.join().unwrap(), Verdict::Accepted);
        });
        for i in 0..50 {
            g.check(&format!("10.1.0.{i}"), &format!("u{i}"), || false);
        }
        assert!(g.lock().failures.len() <= 4);
        assert!(g.lock().inflight.is_empty());
    }

    /// Issue 42: addresses that keep failing fill every place but the reserve; a right
    /// password from a clean address is still checked (before the reserve it was Busy).
    #[test]
    fn failing_addresses_leave_the_reserve_to_clean_ones() {
        let g = Arc::new(Gate::new(GateConfig {
            per_address: 2,
            clean_reserve: 2,
            max_delay: Duration::from_secs(2),
            base_delay: Duration::from_secs(2),
            ..quick()
        }));
        // Three addresses fail once each, then hold their places sleeping off the delay.
        for a in ["9.0.0.1", "9.0.0.2", "9.0.0.3"] {
            assert_eq!(g.check(a, "x", || false), Verdict::Refused);
        }
        std::thread::scope(|s| {
            let hs: Vec<_> = ["9.0.0.1", "9.0.0.2", "9.0.0.3"]
                .iter()
                .flat_map(|a| [*a, *a])
                .map(|a| {
                    let g = g.clone();
                    s.spawn(move || g.check(a, "x", || false))
                })
                .collect();
            // 5 places: the failing addresses take 3, the 4th and 5th are refused as busy.
            wait_until(|| g.lock().under_way >= 3);
            assert_eq!(g.lock().under_way, 3);
            let t = Instant::now();
            assert_eq!(g.check("8.0.0.1", "admin", || true), Verdict::Accepted);
            assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
            let v: Vec<Verdict> = hs.into_iter().map(|h| h.join().unwrap()).collect();
            assert_eq!(
                v.iter().filter(|v| **v == Verdict::Busy).count(),
                3,
                "{v:?}"
            );
        });
    }

    fn wait_until(f: impl Fn() -> bool) {
        let end = Instant::now() + Duration::from_secs(5);
        while !f() {
            assert!(Instant::now() < end, "condition not met in 5 s");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
