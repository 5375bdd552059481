//! `sealmq web`: the installation's web server (IBM's mqweb): the REST API and console of
//! every queue manager under `SEALMQ_HOME`, running or ended, which it starts and stops for an
//! administrator (`sealmq_web::install`). It runs in the foreground until it is sent SIGTERM
//! or SIGINT; its state is `<SEALMQ_HOME>/web/`: its keystore (made at the first start), its
//! password file (`sealmq web --passwd USER`), its error log (`errors/SEALMQ01.LOG`) and
//! `listeners` (the address served).

use crate::CliResult;
use crate::home::{home, running};
use clap::Args;
use sealmq_protect::identity::IdentitySpec;
use sealmq_protect::{Dn, KeyKind, Keystore};
use sealmq_server::authgate::{Gate, GateConfig, Verdict};
use sealmq_server::connauth::{FILE, PasswordFile, Users};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Args)]
pub struct WebArgs {
    /// Serve HTTPS on this address (port 0: any; mqweb's port by default).
    #[arg(long, default_value = "127.0.0.1:9443")]
    pub listen: String,
    /// Users (comma-separated; `*`: any authenticated user; `group:NAME`: the members of
    /// operating-system group NAME) in the admin role: every queue manager's MQSC, and
    /// starting and stopping them. The installation's owner always is.
    #[arg(long, value_delimiter = ',')]
    pub admin: Vec<String>,
    /// Users in the read-only role (DISPLAY and GET).
    #[arg(long, value_delimiter = ',')]
    pub readonly: Vec<String>,
    /// Users in the messaging role (put, get and browse, as each queue manager's authority
    /// allows).
    #[arg(long, value_delimiter = ',')]
    pub messaging: Vec<String>,
    /// Log in a client certificate the installation's keystore trusts as the user its
    /// subject's CN names, without a password.
    #[arg(long)]
    pub client_certs: bool,
    /// A host name or address the server's certificate names besides the local ones (at its
    /// first start; repeat for more).
    #[arg(long)]
    pub host: Vec<String>,
    /// Set the password of USER in the server's password file (then exit) instead of serving.
    #[arg(long, value_name = "USER")]
    pub passwd: Option<String>,
    /// With --passwd: remove the user instead.
    #[arg(long, requires = "passwd")]
    pub remove: bool,
    /// With --passwd: read the new password from this open descriptor (its first line).
    #[arg(
        long,
        value_name = "FD",
        requires = "passwd",
        conflicts_with = "remove"
    )]
    pub password_fd: Option<i32>,
}

/// `<SEALMQ_HOME>/web`, made private to this user.
fn web_dir() -> CliResult<PathBuf> {
    let dir = home().join("web");
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)))
        .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    Ok(dir)
}

pub fn web(a: WebArgs) -> CliResult {
    let dir = web_dir()?;
    if let Some(user) = &a.passwd {
        let path = dir.join(FILE);
        if a.remove {
            PasswordFile::update(&path, user, None)?;
            println!("User {user} removed from {}.", path.display());
        } else {
            let pw = crate::qm_cmd::new_password(a.password_fd, user)?;
            PasswordFile::update(&path, user, Some(&pw))?;
            println!("Password of {user} set in {}.", path.display());
        }
        return Ok(());
    }
    // Refusals and starts and stops go to <home>/web/errors/SEALMQ01.LOG, rotated.
    sealmq_server::errlog::init(&dir);
    let addr = a
        .listen
        .parse()
        .map_err(|e| format!("--listen '{}': {e}", a.listen))?;
    let ks = keystore(&dir, &a.host)?;
    let tls = sealmq_wire::tls::server_config_auth(&ks, false)
        .map_err(|e| format!("the web server's keystore {}: {e}", ks.display()))?;
    let host = Arc::new(Installation {
        gate: Gate::new(GateConfig::default()),
        users: Users::load(&dir)?,
    });
    let web = sealmq_web::install::start(sealmq_web::install::Config {
        addr,
        tls,
        home: home(),
        roles: sealmq_web::Roles {
            admin: a.admin,
            readonly: a.readonly,
            messaging: a.messaging,
        },
        client_certs: a.client_certs,
        admin: Some(sealmq_server::process_user()),
        host,
        control: Arc::new(Control {
            exe: std::env::current_exe().map_err(|e| e.to_string())?,
            home: home(),
        }),
    })?;
    let at = web.addr.map(|a| a.to_string()).unwrap_or_default();
    let _ = std::fs::write(dir.join("listeners"), format!("web:{at}\n"));
    println!(
        "sealmq web: the queue managers under {} on https://{at}/ibmmq/console/ \
         (the REST API under https://{at}/ibmmq/rest/v2/); SIGTERM or Ctrl-C ends it.",
        home().display()
    );
    loop {
        std::thread::park();
    }
}

/// The installation's keystore, made at the first start (CN=sealmq-web, the local names and
/// `hosts`).
fn keystore(dir: &Path, hosts: &[String]) -> CliResult<PathBuf> {
    let ks = dir.join("keystore");
    if !ks.join("identity.pem").exists() {
        let mut spec = IdentitySpec::new(Dn::parse("CN=sealmq-web")?, KeyKind::P256, 3650);
        spec.hosts = crate::qm_cmd::LOCAL_HOSTS
            .iter()
            .map(|h| h.to_string())
            .collect();
        for h in hosts.iter().map(|h| h.trim()).filter(|h| !h.is_empty()) {
            spec.hosts.push(h.to_string());
        }
        Keystore::init(&ks, &spec, None)?;
        println!(
            "sealmq web: keystore made in {} (trust {} in browsers and clients).",
            ks.display(),
            ks.join("identity.pem").display()
        );
    }
    Ok(ks)
}

/// The server's users: its password file, else the operating system's (PAM), behind the
/// same gate as a queue manager's connection authentication.
struct Installation {
    gate: Gate,
    users: Users,
}

impl sealmq_web::Host for Installation {
    fn check_password(&self, addr: &str, user: &str, password: &str) -> bool {
        match self
            .gate
            .check(addr, user, || self.users.verify(user, password))
        {
            Verdict::Accepted => true,
            Verdict::Refused => {
                tracing::warn!("sealmq web: password check failed: user id '{user}' from {addr}");
                false
            }
            Verdict::Busy => {
                tracing::warn!(
                    "sealmq web: password check refused (too many under way): '{user}' from {addr}"
                );
                false
            }
        }
    }

    fn protector(&self) -> Option<Arc<sealmq_protect::Protector>> {
        None
    }

    fn security_epoch(&self) -> u64 {
        self.users.epoch()
    }

    fn user_known(&self, user: &str) -> bool {
        self.users.known(user)
    }
}

/// Starts and stops queue managers as `sealmq start --background` and `sealmq stop` do, in
/// processes of their own that take no secret from this one.
struct Control {
    exe: PathBuf,
    home: PathBuf,
}

impl Control {
    fn run(&self, args: &[&str]) -> Result<String, String> {
        let o = std::process::Command::new(&self.exe)
            .args(args)
            .env("SEALMQ_HOME", &self.home)
            .env_remove("SEALMQ_PASSWORD")
            .env_remove("SEALMQ_NEW_PASSWORD")
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.exe.display()))?;
        let text = |b: &[u8]| String::from_utf8_lossy(b).trim().to_string();
        if o.status.success() {
            Ok(text(&o.stdout))
        } else {
            Err(text(&o.stderr))
        }
    }
}

impl sealmq_web::install::Control for Control {
    fn running(&self, qm: &str) -> bool {
        running(&self.home.join("qmgrs").join(qm))
    }

    fn start(&self, qm: &str) -> Result<String, String> {
        self.run(&["start", qm, "--background"])
    }

    fn stop(&self, qm: &str) -> Result<String, String> {
        self.run(&["stop", qm])
    }
}
