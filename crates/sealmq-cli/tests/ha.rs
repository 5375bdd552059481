//! A replicated queue manager (issue 26, docs/ha.md): three instances of one queue manager,
//! each its own `sealmq start` process with its own home, on loopback ports. Applications
//! put and get persistent messages in units of work while the active instance is killed with
//! `kill -9` at random moments; after each failover every committed message is there exactly
//! once and no unit of work is seen in part.
//!
//! `SEALMQ_HA_KILLS=N cargo test -p sealmq --test ha -- --nocapture` runs N kills (3 by
//! default) and prints the longest time without an active instance.

mod common;
#[path = "ha/follow.rs"]
mod follow;
#[path = "ha/keys.rs"]
mod keys;
#[path = "ha/large.rs"]
mod large;
#[path = "ha/partition.rs"]
mod partition;
#[path = "ha/snapshot.rs"]
mod snapshot;

use common::Home;
use sealmq_client::Client;
use sealmq_engine::{GetOptions, Md, OpenOptions, Persistence};
use sealmq_testkit::{free_port, wait_for};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const QM: &str = "HAQM";
const LONG: Duration = Duration::from_secs(60);

struct Instance {
    name: &'static str,
    home: Home,
    app_port: u16,
    metrics_port: u16,
}

struct Group {
    _one: std::sync::MutexGuard<'static, ()>,
    instances: Vec<Instance>,
    /// Environment the instances are created and started with (a master key's variable).
    env: Vec<(String, String)>,
    /// Where the CA keystore that signs every instance's identity lives.
    _ca: Home,
}

/// Runs a command that must succeed; its standard output.
/// The password of `ops`, the read-only REST user of every instance.
const OPS_PASSWORD: &str = "ops-horse-battery";

fn run_ok(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().expect("run sealmq");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// One group at a time: nine instances and their applications on a two-core machine would
/// time each other out.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Group {
    fn new() -> Group {
        Group::at(|_| (format!("127.0.0.1:{}", free_port()), None))
    }

    /// A group whose instances have encryption at rest, each its master key from the
    /// environment variable SEALMQ_HA_MK (`--dse env:SEALMQ_HA_MK`).
    fn with_env_master_key() -> Group {
        let env = vec![("SEALMQ_HA_MK".to_string(), "ab".repeat(32))];
        Group::build(|_| (format!("127.0.0.1:{}", free_port()), None), env)
    }

    /// A group whose instance `i` has the replication address and `--ha-bind` that
    /// `addr(i)` gives.
    fn at(addr: impl Fn(usize) -> (String, Option<String>)) -> Group {
        Group::build(addr, Vec::new())
    }

    fn build(
        addr: impl Fn(usize) -> (String, Option<String>),
        env: Vec<(String, String)>,
    ) -> Group {
        let one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let names = ["a", "b", "c"];
        let addrs: Vec<(String, Option<String>)> = (0..3).map(addr).collect();
        let spec: Vec<String> = names
            .iter()
            .zip(&addrs)
            .map(|(n, (a, _))| format!("{n}@{a}"))
            .collect();
        let spec = spec.join(",");
        // One CA signs the instances' identities, so that each trusts the others (TLS).
        let ca_home = Home::new();
        let ca = ca_home.dir.path().join("ca");
        let ca = ca.to_str().unwrap();
        ca_home.ca(std::path::Path::new(ca), "CN=HA CA");
        let instances: Vec<Instance> = names
            .iter()
            .zip(&addrs)
            .map(|(n, (_, bind))| {
                let home = Home::new();
                let mut args = vec!["create", QM, "--ha", &spec, "--instance", n, "--ca", ca];
                if let Some(b) = bind {
                    args.extend(["--ha-bind", b.as_str()]);
                }
                let dse = env
                    .iter()
                    .find(|(k, _)| k == "SEALMQ_HA_MK")
                    .map(|(k, _)| format!("env:{k}"));
                if let Some(d) = &dse {
                    args.extend(["--dse", d.as_str()]);
                }
                run_ok(home.cmd(&args).envs(env.iter().cloned()));
                home.passwd(QM, "ops", OPS_PASSWORD);
                Instance {
                    name: n,
                    home,
                    app_port: free_port(),
                    metrics_port: free_port(),
                }
            })
            .collect();
        let g = Group {
            _one: one,
            instances,
            env,
            _ca: ca_home,
        };
        for i in 0..3 {
            g.start(i);
        }
        g
    }

    /// A group whose active instance defined HA.Q; that instance.
    fn with_queue() -> (Group, usize) {
        let g = Group::new();
        let a = g.wait_active();
        g.instances[a]
            .home
            .ok_in(&["mqsc", QM], Some("DEFINE QLOCAL(HA.Q) DEFPSIST(YES)\n"));
        (g, a)
    }

    fn start(&self, i: usize) {
        let x = &self.instances[i];
        let listen = format!("127.0.0.1:{}", x.app_port);
        let metrics = format!("127.0.0.1:{}", x.metrics_port);
        run_ok(
            x.home
                .cmd(&[
                    "start",
                    QM,
                    "--background",
                    "--listen",
                    &listen,
                    "--metrics",
                    &metrics,
                    "--web",
                    "127.0.0.1:0",
                    "--web-readonly",
                    "ops",
                ])
                .envs(self.env.iter().cloned()),
        );
    }

    fn dir(&self, i: usize) -> std::path::PathBuf {
        self.instances[i].home.qm_dir(QM)
    }

    /// The instance that serves applications now, if one does (a paused one is passed over:
    /// it would hold the probe until it wakes).
    fn active(&self) -> Option<usize> {
        (0..3)
            .find(|i| !self.paused(*i) && Client::connect_local(&self.dir(*i), "ha-probe").is_ok())
    }

    /// Whether instance `i`'s process is stopped (SIGSTOP).
    fn paused(&self, i: usize) -> bool {
        std::fs::read_to_string(self.dir(i).join("qm.pid"))
            .ok()
            .and_then(|p| std::fs::read_to_string(format!("/proc/{}/stat", p.trim())).ok())
            .and_then(|st| {
                st.rsplit_once(')')
                    .and_then(|(_, r)| r.split_whitespace().next().map(|s| s == "T"))
            })
            .unwrap_or(false)
    }

    /// `sealmq ha switch` from instance `from` to `to`, then waits until `to` is active. On a
    /// loaded machine the switch may outlast the command's own 60 s wait; whether `to` became
    /// active is what the wait (LONG) after it decides.
    fn switch(&self, from: usize, to: usize) {
        let o = self.instances[from]
            .home
            .run(&["ha", "switch", QM, "--to", self.instances[to].name], None);
        if !o.status.success() {
            eprintln!("ha switch: {}", String::from_utf8_lossy(&o.stderr));
        }
        wait_for(LONG, "the switched-to instance to become active", || {
            self.active() == Some(to)
        });
    }

    fn wait_active(&self) -> usize {
        let mut found = None;
        wait_for(LONG, "an active instance", || {
            found = self.active();
            found.is_some()
        });
        found.unwrap_or_default()
    }

    fn status(&self, i: usize) -> String {
        self.instances[i].home.ok(&["status", QM])
    }

    /// Waits until the active instance sees every instance in sync.
    fn wait_in_sync(&self) {
        let in_sync = || {
            self.active()
                .is_some_and(|a| self.status(a).contains("QUORUM(3/3)"))
        };
        if !sealmq_testkit::poll(LONG, Duration::from_millis(50), in_sync) {
            let all: Vec<String> = (0..3).map(|i| self.status(i)).collect();
            let errs: Vec<String> = (0..3)
                .map(|i| {
                    std::fs::read_to_string(self.dir(i).join("errors").join("SEALMQ01.LOG"))
                        .unwrap_or_default()
                        .lines()
                        .filter(|l| l.contains("ERROR") || l.contains("WARN"))
                        .rev()
                        .take(5)
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .collect();
            panic!(
                "not every instance in sync:\n{}\n{}",
                all.join("\n"),
                errs.join("\n--\n")
            );
        }
    }

    /// The instances, the active one `a` last (a list must pass over the replicas).
    fn replicas_first(&self, a: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..3).filter(|i| *i != a).collect();
        order.push(a);
        order
    }

    /// The connection list (MQ's form) of the instances in `order`.
    fn list(&self, order: &[usize]) -> String {
        let list: Vec<String> = order
            .iter()
            .map(|i| format!("127.0.0.1({})", self.instances[*i].app_port))
            .collect();
        list.join(",")
    }

    fn client(&self, i: usize) -> Client {
        Client::connect_local(&self.dir(i), "ha-app").expect("connect to the active instance")
    }
}

impl Drop for Group {
    /// Whatever state a failed test left them in (a paused process answers no stop), the
    /// instances go: woken, then killed.
    fn drop(&mut self) {
        for x in &self.instances {
            if let Ok(pid) = std::fs::read_to_string(x.home.qm_dir(QM).join("qm.pid")) {
                for sig in ["-CONT", "-9"] {
                    let _ = std::process::Command::new("kill")
                        .args([sig, pid.trim()])
                        .status();
                }
            }
        }
    }
}

/// Puts numbered persistent messages in units of 10 until told to stop or the connection
/// breaks; returns the numbers of the units whose commit was acknowledged.
fn putter(mut c: Client, from: u64, stop: Arc<AtomicBool>, acked: Arc<AtomicU64>) -> u64 {
    let Ok((h, _)) = c.open("HA.Q", OpenOptions::output()) else {
        return from;
    };
    let mut n = from;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..10 {
            let mut md = Md {
                persistence: Persistence::Persistent,
                ..Md::default()
            };
            if let Err(e) = c.put(h, &mut md, &n.to_le_bytes(), true) {
                eprintln!("putter: put {n}: {e}");
                return n;
            }
            n += 1;
        }
        if let Err(e) = c.commit() {
            eprintln!("putter: commit at {n}: {e}");
            return n;
        }
        acked.store(n, Ordering::Relaxed);
    }
    n
}

/// Gets every message from HA.Q of the active instance: number → times seen.
fn drain(c: &mut Client) -> HashMap<u64, u32> {
    let (h, _) = c.open("HA.Q", OpenOptions::input()).unwrap();
    let mut seen = HashMap::new();
    while let Ok(m) = c.get(h, &GetOptions::default()) {
        let n = u64::from_le_bytes(m.payload[..8].try_into().unwrap());
        *seen.entry(n).or_insert(0) += 1;
    }
    seen
}

/// After a failover: every acknowledged unit (`from..acked`) is there exactly once; the unit
/// whose commit was cut off (`acked..tried`) is there whole or not at all; nothing else is.
fn check_round(c: &mut Client, from: u64, acked: u64, tried: u64) -> HashMap<u64, u32> {
    let seen = drain(c);
    assert!(seen.values().all(|&k| k == 1), "duplicates");
    for n in from..acked {
        assert!(seen.contains_key(&n), "committed {n} lost");
    }
    let extra: Vec<u64> = (acked..tried).filter(|n| seen.contains_key(n)).collect();
    assert!(
        extra.is_empty() || extra.len() as u64 == (tried - acked).min(10),
        "a unit of work seen in part: {extra:?}"
    );
    assert!(
        seen.keys().all(|n| *n >= from && *n < tried),
        "a message from nowhere"
    );
    seen
}

#[test]
fn committed_messages_survive_kill_9_of_the_active_instance_exactly_once() {
    let kills: usize = std::env::var("SEALMQ_HA_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let g = Group::new();
    let a = g.wait_active();
    // Administration goes to the active instance and reaches every other through the log.
    let defined = g.instances[a].home.ok_in(
        &["mqsc", QM],
        Some(
            "DEFINE QLOCAL(HA.Q) DEFPSIST(YES) MAXDEPTH(1000000)\n\
             SET POLICY(HA.SIGNED) SIGNALG(SHA256)\n\
             DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app')\n\
             SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
             SET AUTHREC PROFILE('HA.Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET)\n",
        ),
    );
    assert!(
        defined.contains("All valid MQSC commands were processed."),
        "{defined}"
    );
    // A replica refuses applications and names the active instance.
    let r = (a + 1) % 3;
    let named = format!("the active instance is {}", g.instances[a].name);
    wait_for(
        LONG,
        "a replica to refuse naming the active instance",
        || {
            let refused = g.instances[r]
                .home
                .fails(&["put", QM, "HA.Q", "--count", "1"]);
            assert!(refused.contains("2059"), "{refused}");
            refused.contains(&named)
        },
    );
    g.wait_in_sync();
    // The REST API (and so the web console) of the active instance shows the group's roles.
    let web = g.instances[a].home.listener(QM, "web");
    let o = std::process::Command::new("curl")
        .args(["-s", "-k", "--max-time", "30", "-u"])
        .arg(format!("ops:{OPS_PASSWORD}"))
        .arg(format!("https://{web}/ibmmq/rest/v2/admin/qmgr/{QM}/ha"))
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
    assert_eq!(v["ha"]["replicated"], true, "{v}");
    assert_eq!(v["ha"]["role"], "active", "{v}");
    assert_eq!(v["ha"]["instance"], g.instances[a].name, "{v}");
    assert_eq!(
        v["ha"]["instances"].as_array().map(Vec::len),
        Some(3),
        "{v}"
    );
    let mut rng = 0x9e37_79b9_7f4a_7c15_u64 ^ u64::from(std::process::id());
    let mut next = 0u64;
    let mut expected: Vec<u64> = Vec::new();
    let mut worst = Duration::ZERO;
    let mut times = Vec::new();
    for _ in 0..kills {
        let a = g.wait_active();
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(AtomicU64::new(next));
        let t = {
            let (c, stop, acked) = (g.client(a), stop.clone(), acked.clone());
            let from = next;
            std::thread::spawn(move || putter(c, from, stop, acked))
        };
        // A random moment in the next 0.2 to 1 s.
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        std::thread::sleep(Duration::from_millis(200 + rng % 800));
        g.instances[a].home.kill9(QM);
        let killed = Instant::now();
        let b = g.wait_active();
        let gap = killed.elapsed();
        times.push(gap);
        worst = worst.max(gap);
        assert_ne!(a, b);
        stop.store(true, Ordering::Relaxed);
        let tried = t.join().unwrap();
        let seen = check_round(&mut g.client(b), next, acked.load(Ordering::Relaxed), tried);
        expected.extend(seen.keys());
        next = tried;
        // The killed instance comes back as a replica and catches up.
        g.start(a);
        g.wait_in_sync();
    }
    eprintln!(
        "ha: {kills} kills, {} messages committed; without an active instance: worst {:.2} s, each {:?}",
        expected.len(),
        worst.as_secs_f64(),
        times
    );
    // A network application given the instances as a connection list reaches the active one,
    // the replicas before it in the list passing it on (each answers 2059).
    let b = g.wait_active();
    let list = g.list(&g.replicas_first(b));
    let put = g.instances[b].home.ok(&[
        "put",
        QM,
        "HA.Q",
        "--message",
        "by list",
        "--conn",
        &list,
        "--channel",
        "APP.SVRCONN",
    ]);
    assert!(put.contains("put 1"), "{put}");
    let got = g.instances[b].home.ok(&[
        "get",
        QM,
        "HA.Q",
        "--conn",
        &list,
        "--channel",
        "APP.SVRCONN",
    ]);
    assert!(got.contains("by list"), "{got}");
    // What the first active instance set is on whichever is active now.
    let shown = g.instances[b]
        .home
        .ok_in(&["mqsc", QM], Some("DISPLAY POLICY(HA.SIGNED)\n"));
    assert!(shown.contains("SIGNALG(SHA256)"), "{shown}");
}

#[test]
fn a_switch_under_load_loses_nothing_and_a_drain_that_would_break_quorum_is_refused() {
    let (g, a) = Group::with_queue();
    g.wait_in_sync();
    // Readiness: the active instance and a healthy replica are both ready, and say which.
    for i in 0..3 {
        wait_for(LONG, "every instance ready", || {
            g.instances[i]
                .home
                .run(&["ha", "ready", QM], None)
                .status
                .success()
        });
        let said = g.instances[i].home.ok(&["ha", "ready", QM]);
        let role = if i == a {
            "ready: active"
        } else {
            "ready: replica"
        };
        assert!(said.contains(role), "{said}");
    }
    // A controlled switch while an application puts: it sees its connection end, and
    // nothing it committed is lost or doubled.
    let to = (a + 1) % 3;
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(AtomicU64::new(0));
    let t = {
        let (c, stop, acked) = (g.client(a), stop.clone(), acked.clone());
        std::thread::spawn(move || putter(c, 0, stop, acked))
    };
    wait_for(LONG, "some units committed", || {
        acked.load(Ordering::Relaxed) >= 50
    });
    let name = g.instances[to].name;
    let said = g.instances[a].home.ok(&["ha", "switch", QM, "--to", name]);
    assert!(
        said.contains(&format!("Instance {name} of {QM} is active")),
        "{said}"
    );
    let b = g.wait_active();
    assert_eq!(b, to);
    stop.store(true, Ordering::Relaxed);
    let tried = t.join().unwrap();
    check_round(&mut g.client(b), 0, acked.load(Ordering::Relaxed), tried);
    g.wait_in_sync();
    // With one replica gone, draining the other would leave one instance: refused.
    let (r1, r2) = ((b + 1) % 3, (b + 2) % 3);
    g.instances[r1].home.kill9(QM);
    let refused =
        g.instances[r2]
            .home
            .fails(&["ha", "drain", QM, "--instance", g.instances[r2].name]);
    assert!(refused.contains("would leave 1 of 3"), "{refused}");
    assert!(g.status(r2).contains("ROLE(replica)"));
    // With all three in sync it is drained, and the group goes on.
    g.start(r1);
    g.wait_in_sync();
    let drained = g.instances[r2]
        .home
        .ok(&["ha", "drain", QM, "--instance", g.instances[r2].name]);
    assert!(drained.contains("drained"), "{drained}");
    assert!(g.status(r2).contains("STATUS(ENDED)"));
    let put = g.instances[b]
        .home
        .ok(&["put", QM, "HA.Q", "--count", "5", "--persistent"]);
    assert!(put.contains("put 5"), "{put}");
}

fn signal(g: &Group, i: usize, sig: &str) {
    let pid = g.instances[i].home.pid(QM);
    let ok = std::process::Command::new("kill")
        .args([sig, &pid])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig} {pid}");
    // A stop takes effect once each of the process's threads is next scheduled: until then
    // it still answers, and a probe could take it for the active instance.
    if sig == "-STOP" {
        wait_for(LONG, "the instance to stop", || g.paused(i));
    }
}

/// Puts `n` messages in one unit of work at the active instance; refused at the connect
/// (2059: the group elected another meanwhile, nothing was done) it goes to the new one.
fn put_n(g: &Group, n: u32) {
    let deadline = Instant::now() + LONG;
    loop {
        let i = g.wait_active();
        let o = put_at(g, i, n);
        let err = String::from_utf8_lossy(&o.stderr);
        if o.status.success() || !err.contains("2059") || Instant::now() > deadline {
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(out.contains(&format!("put {n}")), "{out}{err}");
            return;
        }
    }
}

/// Puts `n` messages in one unit of work at instance `i`.
fn put_at(g: &Group, i: usize, n: u32) -> std::process::Output {
    let count = n.to_string();
    g.instances[i].home.run(
        &[
            "put",
            QM,
            "HA.Q",
            "--size",
            "100",
            "--count",
            &count,
            "--persistent",
            "--syncpoint",
            &count,
        ],
        None,
    )
}

/// Gets everything, as an application that reconnects does: a call refused while the group
/// elects (2009, 2059, 2102) is made again.
fn got_all(g: &Group, i: usize) -> String {
    let mut got = String::new();
    wait_for(LONG, "the messages", || {
        let o = g.instances[i]
            .home
            .run(&["get", QM, "HA.Q", "--all", "--verify"], None);
        got = String::from_utf8_lossy(&o.stdout).into_owned();
        o.status.success()
    });
    got
}

#[test]
fn a_paused_replica_a_torn_raft_log_a_wiped_instance_and_a_hung_active_one_lose_nothing() {
    let (g, a) = Group::with_queue();
    put_n(&g, 100);
    g.wait_in_sync();
    let (r1, r2) = ((a + 1) % 3, (a + 2) % 3);
    // A replica paused: the other one keeps the majority; resumed, it catches up.
    signal(&g, r1, "-STOP");
    put_n(&g, 100);
    signal(&g, r1, "-CONT");
    g.wait_in_sync();
    // A replica whose Raft log ends in a torn write: the torn entry is cut, the rest comes
    // again from the active instance.
    g.instances[r2].home.ok(&["stop", QM]);
    let raft_log = g.dir(r2).join("ha").join("raft.log");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&raft_log)
        .unwrap();
    std::io::Write::write_all(&mut f, &[0x40, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3]).unwrap();
    drop(f);
    put_n(&g, 100);
    g.start(r2);
    g.wait_in_sync();
    // An instance whose disk was wiped (its data gone, its identity and group kept) is
    // rebuilt from the group's log, and can then serve everything.
    g.instances[r1].home.kill9(QM);
    for d in ["log", "ha", "checkpoint", "queues", "policy.key"] {
        let p = g.dir(r1).join(d);
        let _ = std::fs::remove_dir_all(&p);
        let _ = std::fs::remove_file(&p);
    }
    put_n(&g, 100);
    g.start(r1);
    g.wait_in_sync();
    // (In sync, QUORUM(3/3): it holds every entry of the group's log.)
    // The active instance hangs (SIGSTOP): the others elect one of them and go on; woken, the
    // old one acknowledges nothing and rejoins as a replica.
    let h = g.wait_active();
    signal(&g, h, "-STOP");
    let b = {
        let mut found = None;
        wait_for(LONG, "another active instance", || {
            found = (0..3)
                .filter(|i| *i != h)
                .find(|i| Client::connect_local(&g.dir(*i), "ha-probe").is_ok());
            found.is_some()
        });
        found.unwrap_or_default()
    };
    // The paused instance is not probed (its status file still says what it was).
    let o = put_at(&g, b, 100);
    assert!(o.status.success(), "{o:?}");
    signal(&g, h, "-CONT");
    wait_for(
        LONG,
        "the old active instance to rejoin as a replica",
        || g.status(h).contains("ROLE(replica)"),
    );
    g.wait_in_sync();
    let got = got_all(&g, b);
    assert!(
        got.contains("got 500 ok 500 corrupt 0 duplicate 0"),
        "{got}"
    );
}
