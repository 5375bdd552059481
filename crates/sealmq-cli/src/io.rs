//! Reading `--in FILE|-` and writing `--out FILE|-`.

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
