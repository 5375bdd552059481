//! The battery's attacks (`battery.rs` says what each does): each runs until `stop`, counting
//! what it did in `done`.

use super::*;

/// The attackers' source addresses.
pub fn attacker(i: usize) -> [u8; 4] {
    [127, 0, 0, 2 + (i % 8) as u8]
}

/// An attack: runs until `stop`, counting what it did in `done`.
pub type Attack = fn(&Target, &AtomicBool, &AtomicU64);

pub fn idle(t: &Target, stop: &AtomicBool, done: &AtomicU64) {
    if t.kind == Kind::Unix {
        return as_nobody(t, "idle", stop, done);
    }
    let mut held = Vec::new();
    for i in 0..640 {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if let Some(s) = connect_from(attacker(i), t.port()) {
            held.push(s);
            done.fetch_add(1, Ordering::Relaxed);
        }
    }
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn trickle(t: &Target, stop: &AtomicBool, done: &AtomicU64) {
    if t.kind == Kind::Unix {
        return as_nobody(t, "trickle", stop, done);
    }
    let bytes = t.first_bytes();
    let mut socks: Vec<(TcpStream, usize)> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        // Keep 64 trickling: re-open those the listener closed.
        while socks.len() < 64 {
            match connect_from(attacker(socks.len()), t.port()) {
                Some(s) => socks.push((s, 0)),
                None => break,
            }
        }
        socks.retain_mut(|(s, at)| {
            let b = bytes[*at % bytes.len()];
            *at += 1;
            let ok = s.write_all(&[b]).is_ok();
            if ok {
                done.fetch_add(1, Ordering::Relaxed);
            }
            ok
        });
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub fn reopen(t: &Target, stop: &AtomicBool, done: &AtomicU64) {
    if t.kind == Kind::Unix {
        return as_nobody(t, "reopen", stop, done);
    }
    std::thread::scope(|s| {
        for th in 0..4 {
            s.spawn(move || {
                let mut i = th;
                while !stop.load(Ordering::Relaxed) {
                    if let Some(c) = connect_from(attacker(i), t.port()) {
                        done.fetch_add(1, Ordering::Relaxed);
                        drop(c);
                    }
                    i += 1;
                    std::thread::sleep(Duration::from_millis(2));
                }
            });
        }
    });
}

pub fn wrong_login(t: &Target, stop: &AtomicBool, done: &AtomicU64) {
    std::thread::scope(|s| {
        for th in 0..16 {
            s.spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let pw = format!("wrong-{th}-{n}");
                    match t.kind {
                        // A Hello with mqadmin's user id and a guessed password, from an
                        // attacker's address (the legitimate client is app, from 127.0.0.1).
                        Kind::Native => {
                            let Some(mut s) = connect_from(attacker(th), t.port()) else {
                                continue;
                            };
                            let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
                            let hello = sealmq_wire::Request::Hello(sealmq_wire::Hello {
                                versions: sealmq_wire::VERSIONS.to_vec(),
                                max_msg: 1 << 20,
                                appl: "battery".into(),
                                channel: "APP.SVRCONN".into(),
                                user: "mqadmin".into(),
                                password: sealmq_wire::Secret::new(&pw),
                            });
                            let _ = sealmq_wire::write_request(&mut s, 1, &hello);
                            let _ = sealmq_wire::read_response(&mut s, 1 << 20);
                        }
                        // MQ's client protocol: initial data, a CAUT with mqadmin and the
                        // guess, an MQCONN (answered 2035).
                        Kind::MqClient => {
                            let Some(mut s) = connect_from(attacker(th), t.port()) else {
                                continue;
                            };
                            let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
                            let _ = common::mqraw::login(&mut s, "APP.SVRCONN", "mqadmin", &pw);
                        }
                        Kind::Rest | Kind::Installation => {
                            let ip = attacker(th);
                            let ip = format!("{}.{}.{}.{}", ip[0], ip[1], ip[2], ip[3]);
                            let body = format!(r#"{{"username":"app","password":"{pw}"}}"#);
                            // (The legitimate client here is mqadmin, from 127.0.0.1.)
                            let _ = curl(
                                &[
                                    "--interface",
                                    &ip,
                                    "-H",
                                    "Content-Type: application/json",
                                    "--data-binary",
                                    &body,
                                ],
                                &format!("https://{}/ibmmq/rest/v2/login", t.addr),
                            );
                        }
                        _ => return,
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
}

/// The Unix socket's attacks, made by a process of user `nobody` (a member of the group the
/// queue manager was created for) until `stop`; it prints how many steps it made.
pub fn as_nobody(t: &Target, mode: &str, stop: &AtomicBool, done: &AtomicU64) {
    use std::os::unix::process::CommandExt;
    const SCRIPT: &str = r#"
import socket, sys, time
path, mode = sys.argv[1], sys.argv[2]
first = bytes.fromhex(sys.argv[3])
n, socks = 0, []
def conn():
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    return s
while True:
    if mode == "idle" and len(socks) < 640:
        try:
            socks.append(conn()); n += 1
        except OSError:
            time.sleep(0.05)
        if len(socks) < 640:
            continue
    elif mode == "trickle":
        while len(socks) < 64:
            try:
                socks.append([conn(), 0])
            except OSError:
                break
        keep = []
        for s, i in socks:
            try:
                s.send(first[i % len(first):i % len(first) + 1]); n += 1; keep.append([s, i + 1])
            except OSError:
                s.close()
        socks = keep
    elif mode == "reopen":
        for _ in range(100):
            try:
                conn().close(); n += 1
            except OSError:
                pass
            time.sleep(0.002)
    print(n, flush=True)
    time.sleep(0.2)
"#;
    let hex: String = t.first_bytes().iter().map(|b| format!("{b:02x}")).collect();
    let mut child = std::process::Command::new("python3")
        .args(["-c", SCRIPT, &t.addr, mode, &hex])
        .uid(NOBODY)
        .gid(NOBODY)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs as nobody");
    let out = child.stdout.take().expect("its output");
    std::thread::scope(|s| {
        s.spawn(|| {
            use std::io::BufRead;
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if let Ok(n) = line.trim().parse::<u64>() {
                    done.store(n, Ordering::Relaxed);
                }
            }
        });
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    });
}

/// REST: 32 clients trickling request bodies (100 bytes a second) from the attackers'
/// addresses — half of them logins, whose body is read before anyone is authenticated, half
/// commands without credentials, whose body is never read.
pub fn body_trickle(t: &Target, stop: &AtomicBool, done: &AtomicU64) {
    let body = t.h.dir.path().join("trickled.json");
    let mut text = String::from(r#"{"username":"app","password":""#);
    text.push_str(&"x".repeat(3000));
    text.push_str(r#""}"#);
    std::fs::write(&body, text).unwrap();
    let body = format!("@{}", body.display());
    std::thread::scope(|s| {
        for th in 0..32 {
            let body = &body;
            s.spawn(move || {
                let ip = attacker(th);
                let ip = format!("{}.{}.{}.{}", ip[0], ip[1], ip[2], ip[3]);
                let path = if th % 2 == 0 {
                    "login"
                } else {
                    "admin/action/qmgr/QB/mqsc"
                };
                let url = format!("https://{}/ibmmq/rest/v2/{path}", t.addr);
                while !stop.load(Ordering::Relaxed) {
                    let args = [
                        "--interface",
                        &ip,
                        "--limit-rate",
                        "100",
                        "-H",
                        "Content-Type: application/json",
                        "-H",
                        "ibm-mq-rest-csrf-token: x",
                        "--data-binary",
                        body,
                    ];
                    let _ = curl(&args, &url);
                    done.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
}

/// One authenticated user logs in again and again (each login a session); the
/// administrator's session, opened before, must outlive the attack.
pub fn sessions(t: &Target, stop: &AtomicBool, done: &AtomicU64) {
    let jar = t.h.dir.path().join("admin.jar");
    let jar = jar.to_string_lossy();
    let url = format!("https://{}/ibmmq/rest/v2/login", t.addr);
    let login = |user: &str, pw: &str, jar: &str| {
        let body = format!(r#"{{"username":"{user}","password":"{pw}"}}"#);
        let args = [
            "-c",
            jar,
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            &body,
        ];
        curl(&args, &url).0
    };
    assert_eq!(login("mqadmin", ADMIN_PW, &jar), 204);
    while !stop.load(Ordering::Relaxed) {
        if login("app", APP_PW, "/dev/null") == 204 {
            done.fetch_add(1, Ordering::Relaxed);
        }
    }
    let (status, body) = curl(&["-b", &jar], &url);
    assert_eq!(status, 200, "the administrator's session outlived: {body}");
}
