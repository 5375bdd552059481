//! Standard input and output: reading `--in FILE|-`, writing `--out FILE|-`, and a closed
//! standard output ending a command quietly.

use std::io::{Read, Write};
use std::path::Path;

pub fn read_input(path: &str) -> Result<Vec<u8>, String> {
    if path == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        Ok(buf)
    } else {
        std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))
    }
}

pub fn write_output(path: &str, bytes: &[u8]) -> Result<(), String> {
    if path == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes)
            .and_then(|_| out.flush())
            .map_err(|e| format!("cannot write standard output: {e}"))
    } else {
        std::fs::write(Path::new(path), bytes).map_err(|e| format!("cannot write {path}: {e}"))
    }
}

/// Makes a closed standard output (`sealmq status | head -1`) end the command quietly with
/// the shell's code for it (141, as a program killed by SIGPIPE), not a panic: `println!`
/// panics when its reader has gone, and every command prints with it. Other panics are
/// reported as before. (SIGPIPE itself stays ignored: a queue manager's connections must
/// never kill the process that writes to them.)
pub fn quiet_on_closed_stdout() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let p = info.payload();
        let msg = p
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(141);
        }
        report(info);
    }));
}
