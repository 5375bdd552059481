//! The text exposition format 0.0.4 as every family is written: `# HELP`/`# TYPE` lines and
//! samples labelled with the queue manager. A leaf shared by sealmq's families (`mod.rs`),
//! IBM's names (`ibm.rs`) and the process's resources (`res.rs`).

use std::fmt::Write;

/// A label value as the text format wants it: backslash, double quote and newline escaped.
fn esc(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

pub(crate) struct Out {
    pub(crate) text: String,
    pub(crate) qmgr: String,
}

impl Out {
    pub(crate) fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    pub(crate) fn sample(&mut self, name: &str, labels: &[(&str, &str)], v: f64) {
        let mut l = format!("qmgr=\"{}\"", esc(&self.qmgr));
        for (k, val) in labels {
            let _ = write!(l, ",{k}=\"{}\"", esc(val));
        }
        let _ = writeln!(self.text, "{name}{{{l}}} {v}");
    }
}
