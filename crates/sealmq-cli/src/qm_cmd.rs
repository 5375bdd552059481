//! `sealmq create|delete|start|stop|status|passwd`: queue manager lifecycle.

use crate::home::{exists, home, qm_dir, running};
use crate::{CliError, CliResult};
use clap::Args;
use sealmq_client::Client;
use sealmq_engine::QmConfig;
use sealmq_protect::identity::IdentitySpec;
use sealmq_protect::{Dn, KeyKind, Keystore};
use sealmq_server::{Server, ServerConfig};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct NameArg {
    /// Queue manager name.
    pub qm: String,
}

#[derive(Args)]
pub struct CreateArgs {
    /// Queue manager name.
    pub qm: String,
    /// Encrypt the recovery log and checkpoints at rest, with the master key from
    /// file:PATH (64 hex digits, mode 600; `sealmq dse keygen PATH` makes one), env:VAR or
    /// passphrase-env:VAR. Every start needs the same source.
    #[arg(long)]
    pub dse: Option<String>,
    /// Let local applications of this OS group reach the queue manager's socket (the
    /// directory becomes 0750 for it); authority records still decide what they may do.
    #[arg(long)]
    pub group: Option<String>,
    /// Make one instance of a replicated queue manager (docs/ha.md): the group's three
    /// instances as NAME@HOST:PORT (their replication addresses), comma-separated.
    #[arg(long, requires = "instance", value_name = "NAME@HOST:PORT,...")]
    pub ha: Option<String>,
    /// With --ha: which of the group's instances this one is.
    #[arg(long, requires = "ha")]
    pub instance: Option<String>,
    /// With --ha: listen for the other instances here instead of at this instance's address
    /// in --ha (behind a NAT or a proxy); connections to them leave from this host.
    #[arg(long, requires = "ha", value_name = "HOST:PORT")]
    pub ha_bind: Option<String>,
    /// Sign the queue manager's identity with this CA keystore (`sealmq keystore init DIR
    /// --authority`), which its keystore then trusts: the instances of a replicated queue
    /// manager made with one CA trust each other.
    #[arg(long, value_name = "CA_KEYSTORE")]
    pub ca: Option<PathBuf>,
    /// With --ha: the group exists already (this instance replaces one whose disk was lost);
    /// it receives the group's log from the active instance instead of forming the group.
    #[arg(long, requires = "ha")]
    pub rejoin: bool,
    /// Host names and IP addresses the queue manager's certificate names (subjectAltName),
    /// comma-separated, beside localhost, 127.0.0.1 and ::1: HTTPS clients of the REST API
    /// (`start --web`) check the server by them.
    #[arg(long, value_delimiter = ',', value_name = "HOST,...")]
    pub host: Vec<String>,
}

/// The names every queue manager's certificate carries, so that a local HTTPS client can
/// check it by name (`curl --cacert <QM dir>/keystore/identity.pem https://localhost:PORT`).
pub(crate) const LOCAL_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

#[derive(Args)]
pub struct StartArgs {
    pub qm: String,
    /// Return once the queue manager accepts work, leaving it running.
    #[arg(long)]
    pub background: bool,
    /// Also listen for client applications on TCP, e.g. 127.0.0.1:1414 (port 0: any).
    #[arg(long)]
    pub listen: Option<String>,
    /// Require TLS with client certificates on the TCP listener (the QM keystore's identity
    /// and trust); applications are known by their certificate's subject DN.
    #[arg(long, requires = "listen")]
    pub tls: bool,
    /// Serve Prometheus metrics on HTTP at this address, e.g. 127.0.0.1:9157 (port 0: any);
    /// scrape `/metrics`.
    #[arg(long)]
    pub metrics: Option<String>,
    /// Serve IBM MQ's REST API over HTTPS at this address, e.g. 127.0.0.1:9443 (port 0: any;
    /// the queue manager's keystore certificate; docs/rest.md).
    #[arg(long)]
    pub web: Option<String>,
    /// --web: users (comma-separated; `*`: any authenticated user; `group:NAME`: the members
    /// of operating-system group NAME) in the admin role (any MQSC command). The queue
    /// manager's administrator always is.
    #[arg(long, requires = "web", value_delimiter = ',')]
    pub web_admin: Vec<String>,
    /// --web: users in the read-only role (DISPLAY and GET).
    #[arg(long, requires = "web", value_delimiter = ',')]
    pub web_readonly: Vec<String>,
    /// --web: users in the messaging role (put, get and browse, as their authority allows).
    #[arg(long, requires = "web", value_delimiter = ',')]
    pub web_messaging: Vec<String>,
    /// --web: log in a client certificate the keystore trusts as the user its subject's CN
    /// names, without a password (docs/rest.md).
    #[arg(long, requires = "web")]
    pub web_client_certs: bool,
    /// --web: protect and unprotect messages on queues and topics with a policy with the
    /// queue manager's identity for REST users, as a channel with INTERCEPT(YES) does.
    #[arg(long, requires = "web")]
    pub web_intercept: bool,
}

#[derive(Args)]
pub struct StatusArgs {
    pub qm: Option<String>,
}

pub fn create(a: CreateArgs) -> CliResult {
    sealmq_engine::objects::validate_name(&a.qm).map_err(|e| e.to_string())?;
    // Checked before anything is made: a name a certificate cannot carry is refused here.
    for h in &a.host {
        let h = h.trim();
        let name = |h: &str| {
            (1..=253).contains(&h.len())
                && h.split('.').all(|l| {
                    (1..=63).contains(&l.len())
                        && l.chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '*')
                })
        };
        if !(h.parse::<std::net::IpAddr>().is_ok() || name(h)) {
            return Err(format!(
                "--host '{h}': a host name (letters, digits, '-', '.') or an IP address"
            )
            .into());
        }
    }
    let dir = qm_dir(&a.qm);
    if dir.join("log").exists() {
        return Err(crate::refused(
            sealmq_types::ReasonCode::ObjectAlreadyExists,
            format!(
                "queue manager '{}' already exists in {}",
                a.qm,
                dir.display()
            ),
        ));
    }
    // Private from the first byte: the directory 0700 (0750 for a named group), every file
    // in it 0600.
    sealmq_server::perms::private_umask();
    if let Some(g) = &a.group
        && sealmq_server::perms::group_gid(g).is_none()
    {
        return Err(format!("--group {g}: no such group").into());
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    if let Some(g) = &a.group {
        use std::os::unix::fs::PermissionsExt;
        let gid = sealmq_server::perms::group_gid(g);
        std::os::unix::fs::chown(&dir, None, gid)
            .and_then(|_| std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o750)))
            .and_then(|_| std::fs::write(dir.join(sealmq_server::perms::GROUP_FILE), g))
            .map_err(|e| format!("cannot share {} with group {g}: {e}", dir.display()))?;
    }
    let group = match (&a.ha, &a.instance) {
        (Some(spec), Some(me)) => {
            let g = sealmq_ha::Group::parse(spec, me)?;
            Some(match &a.ha_bind {
                Some(b) => g.with_bind(b)?,
                None => g,
            })
        }
        _ => None,
    };
    let mut cfg = QmConfig::new(&a.qm, &dir);
    if let Some(s) = &a.dse {
        use sealmq_storage::dse::{Dse, MasterSource};
        let src = MasterSource::parse(s)?;
        Dse::create(&dir, &src)?;
        Dse::set_source(&dir, &src)?;
        // Even the system objects written at creation are sealed.
        cfg.dse = Dse::load(&dir)?;
    }
    match &group {
        // The group's queue manager is made once, by the first instance to be active, and
        // reaches the others through the replicated log.
        Some(g) => {
            g.save(&dir)?;
            std::fs::create_dir_all(dir.join("log"))
                .map_err(|e| format!("cannot create {}: {e}", dir.join("log").display()))?;
            if !a.rejoin {
                let ha = dir.join(sealmq_ha::HA_DIR);
                std::fs::create_dir_all(&ha)
                    .and_then(|()| std::fs::write(ha.join(sealmq_ha::FORM_FILE), b""))
                    .map_err(|e| format!("cannot create {}: {e}", ha.display()))?;
            }
        }
        None => {
            let qm = sealmq_engine::create(cfg).map_err(|e| e.to_string())?;
            qm.shutdown().map_err(|e| e.to_string())?;
        }
    }
    // An instance's certificate names its instance too (docs/ha.md).
    let dn = match &group {
        Some(g) => sealmq_ha::instance_dn(&a.qm, &g.instance),
        None => format!("CN={}", a.qm),
    };
    let mut spec = IdentitySpec::new(Dn::parse(&dn)?, KeyKind::P256, 3650);
    spec.hosts = LOCAL_HOSTS.iter().map(|h| h.to_string()).collect();
    for h in &a.host {
        let h = h.trim();
        if !h.is_empty() && !spec.hosts.iter().any(|x| x == h) {
            spec.hosts.push(h.to_string());
        }
    }
    Keystore::init(&dir.join("keystore"), &spec, a.ca.as_deref())?;
    match &group {
        Some(g) => println!(
            "Queue manager {} instance {} of {} created in {}.",
            a.qm,
            g.instance,
            g.instances
                .iter()
                .map(|i| i.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            dir.display()
        ),
        None => println!("Queue manager {} created in {}.", a.qm, dir.display()),
    }
    Ok(())
}

pub fn delete(a: NameArg) -> CliResult {
    let dir = exists(&a.qm)?;
    if running(&dir) {
        return Err(crate::refused(
            sealmq_types::ReasonCode::ObjectInUse,
            format!("queue manager '{}' is running; stop it first", a.qm),
        ));
    }
    std::fs::remove_dir_all(&dir).map_err(|e| format!("cannot remove {}: {e}", dir.display()))?;
    println!("Queue manager {} deleted.", a.qm);
    Ok(())
}

pub fn start(a: StartArgs) -> CliResult {
    let dir = exists(&a.qm)?;
    // qm.log, written here for a background start, is as private as the rest.
    sealmq_server::perms::private_umask();
    sealmq_server::perms::check(&dir)?;
    if running(&dir) {
        return Err(format!("queue manager '{}' is already running", a.qm).into());
    }
    let ha = sealmq_ha::Group::load(&dir)?;
    if ha.is_some() {
        let _ = std::fs::remove_file(dir.join(sealmq_ha::HA_DIR).join("status.json"));
    }
    if a.background {
        return start_background(&a, &dir, ha.is_some());
    }
    let cfg = server_config(&a, &dir)?;
    if let Some(g) = ha {
        return crate::ha_cmd::run(cfg, g);
    }
    let server = Server::start(&cfg)?;
    let listeners = std::fs::read_to_string(dir.join("listeners")).unwrap_or_default();
    eprintln!(
        "sealmq: queue manager {} accepting work ({})",
        a.qm,
        listeners.trim().replace('\n', ", ")
    );
    let r = server.wait();
    eprintln!("sealmq: queue manager {} ended", a.qm);
    r.map_err(Into::into)
}

/// `sealmq start --background`: the queue manager in a process of its own (its output in
/// `qm.log`), started once it accepts work (or, replicated, once its role is known).
fn start_background(a: &StartArgs, dir: &Path, ha: bool) -> CliResult {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let log = std::fs::File::options()
        .create(true)
        .append(true)
        .open(dir.join("qm.log"))
        .map_err(|e| format!("cannot open {}: {e}", dir.join("qm.log").display()))?;
    let mut cmd = std::process::Command::new(exe);
    child_args(&mut cmd, a);
    use std::os::unix::process::CommandExt;
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start the queue manager process: {e}"))?;
    wait_started(&mut child, a, dir, ha)?;
    let listeners = std::fs::read_to_string(dir.join("listeners")).unwrap_or_default();
    println!(
        "Queue manager {} started (pid {}).{}",
        a.qm,
        child.id(),
        listeners
            .lines()
            .map(|l| format!(" Listening on {l}."))
            .collect::<String>()
    );
    Ok(())
}

/// The foreground start's arguments, for the background process.
fn child_args(cmd: &mut std::process::Command, a: &StartArgs) {
    cmd.arg("start").arg(&a.qm);
    if let Some(l) = &a.listen {
        cmd.arg("--listen").arg(l);
    }
    if let Some(m) = &a.metrics {
        cmd.arg("--metrics").arg(m);
    }
    if let Some(w) = &a.web {
        cmd.arg("--web").arg(w);
        for (flag, list) in [
            ("--web-admin", &a.web_admin),
            ("--web-readonly", &a.web_readonly),
            ("--web-messaging", &a.web_messaging),
        ] {
            if !list.is_empty() {
                cmd.arg(flag).arg(list.join(","));
            }
        }
        if a.web_client_certs {
            cmd.arg("--web-client-certs");
        }
        if a.web_intercept {
            cmd.arg("--web-intercept");
        }
    }
    if a.tls {
        cmd.arg("--tls");
    }
}

/// Waits up to 60 s for the background process to accept work; its last words when it ends
/// first.
fn wait_started(
    child: &mut std::process::Child,
    a: &StartArgs,
    dir: &Path,
    ha: bool,
) -> Result<(), CliError> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            // Its last words say why (a wrong master key, a damaged log, a busy port): its
            // last error, else its last line (a thread still starting may log after the error).
            let why = std::fs::read_to_string(dir.join("qm.log"))
                .ok()
                .and_then(|l| {
                    let mut lines = l.lines().rev().filter(|x| !x.trim().is_empty());
                    let last = lines.clone().next();
                    lines
                        .find(|x| x.contains(" ERROR "))
                        .or(last)
                        .map(String::from)
                })
                .unwrap_or_default();
            return Err(format!(
                "queue manager '{}' ended during start ({status}): {why} (see {})",
                a.qm,
                dir.join("qm.log").display()
            )
            .into());
        }
        if Client::connect_local(dir, "sealmq-start").is_ok() {
            break;
        }
        // An instance of a replicated queue manager is started once its role is known.
        if ha && crate::ha_cmd::status_of(dir).is_some_and(|s| s.term > 0) {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "queue manager '{}' did not accept work within 60 s; see {}",
                a.qm,
                dir.join("qm.log").display()
            )
            .into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// The server's configuration from the start command's flags.
fn server_config(a: &StartArgs, dir: &Path) -> Result<ServerConfig, String> {
    let listen = match &a.listen {
        Some(l) => Some(l.parse().map_err(|e| format!("--listen '{l}': {e}"))?),
        None => None,
    };
    Ok(ServerConfig {
        name: a.qm.clone(),
        dir: dir.to_path_buf(),
        listen,
        tls: a.tls,
        metrics: match &a.metrics {
            Some(m) => Some(m.parse().map_err(|e| format!("--metrics '{m}': {e}"))?),
            None => None,
        },
        web: match &a.web {
            Some(w) => Some((
                w.parse().map_err(|e| format!("--web '{w}': {e}"))?,
                sealmq_web::Options {
                    roles: sealmq_web::Roles {
                        admin: a.web_admin.clone(),
                        readonly: a.web_readonly.clone(),
                        messaging: a.web_messaging.clone(),
                    },
                    client_certs: a.web_client_certs,
                    intercept: a.web_intercept,
                },
            )),
            None => None,
        },
        replicator: None,
    })
}

pub fn status(a: StatusArgs) -> CliResult {
    let root = home().join("qmgrs");
    let mut names: Vec<String> = match &a.qm {
        Some(q) => {
            exists(q)?;
            vec![q.clone()]
        }
        None => std::fs::read_dir(&root)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.path().join("log").exists())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default(),
    };
    names.sort();
    for n in names {
        let dir = qm_dir(&n);
        if running(&dir)
            && let Some(st) = crate::ha_cmd::status_of(&dir)
        {
            crate::ha_cmd::print_status(&n, &st);
            continue;
        }
        if running(&dir) {
            let listeners = std::fs::read_to_string(dir.join("listeners")).unwrap_or_default();
            let pid = std::fs::read_to_string(dir.join("qm.pid")).unwrap_or_default();
            println!(
                "QMNAME({n}) STATUS(RUNNING) PID({}) LISTENERS({})",
                pid.trim(),
                listeners.trim().replace('\n', " ")
            );
        } else {
            println!("QMNAME({n}) STATUS(ENDED)");
        }
    }
    Ok(())
}

#[derive(Args)]
pub struct PasswdArgs {
    /// Queue manager name.
    pub qm: String,
    /// The user id.
    pub user: String,
    /// Remove the user instead.
    #[arg(long)]
    pub remove: bool,
    /// Read the new password from this open file descriptor (its first line), e.g.
    /// `--password-fd 3 3<FILE`, instead of asking twice on the terminal.
    #[arg(long, value_name = "FD", conflicts_with = "remove")]
    pub password_fd: Option<i32>,
}

/// `sealmq passwd QM USER`: the new password from --password-fd, SEALMQ_NEW_PASSWORD, else
/// asked twice on the terminal; stored as an Argon2id hash in `<QM dir>/passwd` (0600). A running queue manager
/// takes it at REFRESH SECURITY TYPE(CONNAUTH).
/// A new password: from descriptor `fd`, else SEALMQ_NEW_PASSWORD, else asked twice on the
/// terminal.
pub(crate) fn new_password(fd: Option<i32>, user: &str) -> CliResult<zeroize::Zeroizing<String>> {
    Ok(match (fd, std::env::var("SEALMQ_NEW_PASSWORD")) {
        (Some(fd), _) => crate::app_cmd::password_from_fd(fd)?,
        (None, Ok(p)) => zeroize::Zeroizing::new(p),
        (None, Err(_)) => {
            let ask = |prompt: &str| {
                rpassword::prompt_password(prompt)
                    .map(zeroize::Zeroizing::new)
                    .map_err(|e| format!("no SEALMQ_NEW_PASSWORD and no terminal ({e})"))
            };
            let first = ask(&format!("New password for {user}: "))?;
            if *first != *ask("Again: ")? {
                return Err("the two passwords differ; nothing changed"
                    .to_string()
                    .into());
            }
            first
        }
    })
}

pub fn passwd(a: PasswdArgs) -> CliResult {
    let dir = exists(&a.qm)?;
    let path = dir.join(sealmq_server::connauth::FILE);
    if a.remove {
        sealmq_server::connauth::PasswordFile::update(&path, &a.user, None)?;
        println!("User {} removed from {}.", a.user, path.display());
    } else {
        let pw = new_password(a.password_fd, &a.user)?;
        sealmq_server::connauth::PasswordFile::update(&path, &a.user, Some(&pw))?;
        println!("Password of {} set in {}.", a.user, path.display());
    }
    if running(&dir) {
        println!("The queue manager takes it at: REFRESH SECURITY TYPE(CONNAUTH)");
    }
    Ok(())
}
