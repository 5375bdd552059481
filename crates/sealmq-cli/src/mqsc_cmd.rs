//! `sealmq mqsc`: MQ's runmqsc. At a terminal: a banner, a prompt, line editing and history,
//! and each command answered as soon as it ends (a `+` or `-` at a line's end continues it).
//! From a file or a pipe: the same transcript scripts written for runmqsc read — each command
//! echoed with its number (`-e`: not), MQ's message ids, the closing count — and runmqsc's
//! exit codes (0, 10 when a command failed, 20 when none could run). `-v` checks the syntax
//! only. Locally through the queue manager's socket, or as a client (`--conn`, or `-c` with
//! MQ's `MQSERVER`) through a SVRCONN channel, where the queue manager runs each command with
//! the authority of the user the channel maps to (MQ's `runmqsc -c`).

use crate::CliResult;
use crate::app_cmd::{ConnArgs, connect};
use crate::home::exists;
use clap::Args;
use sealmq_client::Client;
use sealmq_mqsc::transcript::{EXIT_FAILED, EXIT_NOT_RUN, Transcript};
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct MqscArgs {
    /// Queue manager name.
    pub qm: String,
    /// Read commands from this file instead of standard input.
    #[arg(short = 'f', long = "file")]
    pub file: Option<PathBuf>,
    /// Print the responses as JSON (the whole input is one request).
    #[arg(long, conflicts_with_all = ["no_echo", "verify"])]
    pub json: bool,
    /// Do not copy each command into the output (runmqsc -e).
    #[arg(short = 'e')]
    pub no_echo: bool,
    /// Check the commands' syntax without running them (runmqsc -v).
    #[arg(short = 'v')]
    pub verify: bool,
    /// As a client (runmqsc -c): through --conn, or else MQ's MQSERVER variable
    /// (CHANNEL/TCP/host(port)).
    #[arg(short = 'c')]
    pub client: bool,
    /// As a client over TCP: HOST:PORT (or a list, tried in order), through --channel.
    #[arg(long)]
    pub conn: Option<String>,
    /// The SVRCONN channel of --conn (default SYSTEM.DEF.SVRCONN).
    #[arg(long, default_value = "")]
    pub channel: String,
    /// Use TLS on --conn, with the identity and trust of --keystore (or SEALMQ_KEYSTORE).
    #[arg(long)]
    pub tls: bool,
    /// The keystore for --tls.
    #[arg(long, env = "SEALMQ_KEYSTORE")]
    pub keystore: Option<PathBuf>,
    /// Authenticate as this user id; the password from --password-fd, else SEALMQ_PASSWORD,
    /// else asked on the terminal.
    #[arg(short = 'u', long)]
    pub user: Option<String>,
    /// Read the password of --user from this open file descriptor (its first line).
    #[arg(long, value_name = "FD", requires = "user")]
    pub password_fd: Option<i32>,
    /// Send the password over --conn without --tls (refused unless the queue manager allows it).
    #[arg(long, requires = "user")]
    pub allow_cleartext_password: bool,
}

/// Runs `sealmq mqsc`; its exit code is runmqsc's.
pub fn run(a: MqscArgs) -> ExitCode {
    match session(&a) {
        Ok(code) => ExitCode::from(code),
        // The output's reader went away (`| head`): quietly, as a shell pipeline expects.
        Err(crate::CliError::Other(e)) if e.is_empty() => ExitCode::from(141),
        Err(e) => {
            eprintln!("sealmq: {e}");
            ExitCode::from(EXIT_NOT_RUN)
        }
    }
}

fn session(a: &MqscArgs) -> CliResult<u8> {
    let interactive = a.file.is_none() && std::io::stdin().is_terminal();
    let mut client = if a.verify { None } else { Some(open(a)?) };
    if a.json {
        let script = read_all(a)?;
        let c = client
            .as_mut()
            .ok_or_else(|| "--json runs the commands".to_string())?;
        let (text, failed) = c.mqsc(&script, true).map_err(|e| e.to_string())?;
        println!("{text}");
        return Ok(if failed > 0 { EXIT_FAILED } else { 0 });
    }
    let mut t = Transcript::new(!a.no_echo && !interactive);
    let mut out = std::io::stdout().lock();
    let mut say = |s: &str| -> CliResult<()> {
        match out.write_all(s.as_bytes()).and_then(|()| out.flush()) {
            Ok(()) => Ok(()),
            // A reader that went away (`| head`): stop quietly.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(String::new().into()),
            Err(e) => Err(format!("cannot write the output: {e}").into()),
        }
    };
    if interactive {
        say(&format!(
            "sealmq {} (MQSC as IBM MQ's runmqsc; END or Ctrl-D ends).\n\
             Starting MQSC for queue manager {}.\n\n",
            env!("CARGO_PKG_VERSION"),
            a.qm
        ))?;
    }
    let mut lines = source(a, interactive)?;
    let mut pending: Vec<String> = Vec::new();
    let mut line_no = 0usize;
    let mut start = 0usize;
    loop {
        let prompt = if pending.is_empty() {
            format!("{}> ", a.qm)
        } else {
            "     : ".to_string()
        };
        let Some(line) = lines.next_line(&prompt)? else {
            break;
        };
        line_no += 1;
        let trimmed = line.trim_end();
        if pending.is_empty() && (trimmed.trim_start().starts_with('*') || trimmed.is_empty()) {
            say(&t.echo_other(trimmed))?;
            continue;
        }
        if pending.is_empty() {
            start = line_no;
        }
        pending.push(trimmed.to_string());
        if trimmed.ends_with('+') || trimmed.ends_with('-') {
            continue;
        }
        let raw: Vec<&str> = pending.iter().map(String::as_str).collect();
        let joined = sealmq_mqsc::lexer::commands(&raw.join("\n"));
        let text = joined.first().map(|c| c.text.clone()).unwrap_or_default();
        say(&t.echo_lines(&raw))?;
        pending.clear();
        if sealmq_mqsc::is_end(&text) {
            break;
        }
        let (reply, ok, syntax) = answer(client.as_mut(), &text, start)?;
        t.count(ok, syntax);
        say(&reply)?;
        if interactive {
            say("\n")?;
        }
    }
    say(&t.summary())?;
    Ok(t.exit_code())
}

/// One command's answer: runmqsc's local syntax check, then the queue manager's reply (none
/// with -v).
fn answer(c: Option<&mut Client>, text: &str, line: usize) -> CliResult<(String, bool, bool)> {
    if let Some(r) = sealmq_mqsc::syntax_error(text, line) {
        return Ok((sealmq_mqsc::render_reply(&r), false, true));
    }
    let Some(c) = c else {
        return Ok((String::new(), true, false));
    };
    let (reply, failed) = c.mqsc(text, false).map_err(|e| {
        format!("the queue manager did not answer: {e} (no further commands were run)")
    })?;
    // The queue manager saw this one command alone, as its line 1: say where it was.
    let reply = if line > 1 {
        reply.replace("SMQ0900E: line 1", &format!("SMQ0900E: line {line}"))
    } else {
        reply
    };
    Ok((reply, failed == 0, false))
}

/// The connection: the local socket, or as a client through a SVRCONN channel.
fn open(a: &MqscArgs) -> CliResult<Client> {
    let mut conn = a.conn.clone();
    let mut channel = a.channel.clone();
    if a.client && conn.is_none() {
        let (ch, addr) = mqserver()?;
        conn = Some(addr);
        if channel.is_empty() {
            channel = ch;
        }
    }
    if conn.is_none() {
        if a.tls || a.user.is_some() {
            return Err(
                "--tls and --user are for a client connection: give --conn HOST:PORT \
                        (or -c with MQSERVER)"
                    .to_string()
                    .into(),
            );
        }
        exists(&a.qm)?;
    }
    let c = ConnArgs {
        qm: a.qm.clone(),
        queue: String::new(),
        conn,
        tls: a.tls,
        keystore: a.keystore.clone(),
        channel,
        user: a.user.clone(),
        password_fd: a.password_fd,
        allow_cleartext_password: a.allow_cleartext_password,
        reconnect: false,
        reconnect_timeout: 120,
        call_timeout: None,
    };
    connect(&c, "sealmq-mqsc")
}

/// MQ's MQSERVER: `CHANNEL/TCP/host(port)`; the channel and `host:port`.
fn mqserver() -> CliResult<(String, String)> {
    let v = std::env::var("MQSERVER")
        .map_err(|_| "-c needs --conn HOST:PORT or MQSERVER=CHANNEL/TCP/host(port)".to_string())?;
    let mut parts = v.splitn(3, '/');
    let (Some(ch), Some(t), Some(addr)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(format!("MQSERVER '{v}' is not CHANNEL/TCP/host(port)").into());
    };
    if !t.eq_ignore_ascii_case("TCP") {
        return Err(format!("MQSERVER '{v}': only TCP is provided").into());
    }
    let addr = match addr
        .trim()
        .strip_suffix(')')
        .and_then(|a| a.split_once('('))
    {
        Some((host, port)) => format!("{host}:{port}"),
        None => format!("{}:1414", addr.trim()),
    };
    Ok((ch.trim().to_string(), addr))
}

fn read_all(a: &MqscArgs) -> CliResult<String> {
    match &a.file {
        Some(f) => std::fs::read_to_string(f)
            .map_err(|e| format!("cannot read {}: {e}", f.display()).into()),
        None => {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                .map_err(|e| format!("cannot read standard input: {e}"))?;
            Ok(s)
        }
    }
}

/// Where lines come from: a terminal with line editing, or a file or pipe read as it comes.
enum Lines {
    Terminal(Box<rustyline::DefaultEditor>),
    Read(Box<dyn BufRead>),
}

fn source(a: &MqscArgs, interactive: bool) -> CliResult<Lines> {
    if interactive {
        let ed =
            rustyline::DefaultEditor::new().map_err(|e| format!("cannot use the terminal: {e}"))?;
        return Ok(Lines::Terminal(Box::new(ed)));
    }
    Ok(Lines::Read(match &a.file {
        Some(f) => Box::new(std::io::BufReader::new(
            std::fs::File::open(f).map_err(|e| format!("cannot read {}: {e}", f.display()))?,
        )),
        None => Box::new(std::io::stdin().lock()),
    }))
}

impl Lines {
    /// The next line; `None` at the end (Ctrl-D at a terminal). Ctrl-C drops what is typed.
    fn next_line(&mut self, prompt: &str) -> CliResult<Option<String>> {
        match self {
            Lines::Terminal(ed) => loop {
                match ed.readline(prompt) {
                    Ok(l) => {
                        if !l.trim().is_empty() {
                            let _ = ed.add_history_entry(l.as_str());
                        }
                        return Ok(Some(l));
                    }
                    Err(rustyline::error::ReadlineError::Interrupted) => continue,
                    Err(rustyline::error::ReadlineError::Eof) => return Ok(None),
                    Err(e) => return Err(format!("cannot read the terminal: {e}").into()),
                }
            },
            Lines::Read(r) => {
                let mut s = String::new();
                match r.read_line(&mut s) {
                    Ok(0) => Ok(None),
                    Ok(_) => Ok(Some(s.trim_end_matches(['\n', '\r']).to_string())),
                    Err(e) => Err(format!("cannot read the commands: {e}").into()),
                }
            }
        }
    }
}
