//! runmqsc's transcript: each command echoed with its number (`     1 : DEFINE ...`, a
//! continuation line or comment as `       : ...`), and the closing count of commands read,
//! with syntax errors and commands that could not be processed — the lines and exit codes
//! scripts written for IBM MQ look for. Used by `sealmq mqsc` (at a terminal and from a
//! script) and by [`crate::render_text`].

/// runmqsc's exit code when every command was processed.
pub const EXIT_OK: u8 = 0;
/// runmqsc's exit code when a command had a syntax error or could not be processed.
pub const EXIT_FAILED: u8 = 10;
/// runmqsc's exit code when the commands could not be run at all (no queue manager).
pub const EXIT_NOT_RUN: u8 = 20;

/// Counts commands as they are answered and echoes them.
#[derive(Debug, Clone)]
pub struct Transcript {
    echo: bool,
    read: usize,
    syntax: usize,
    failed: usize,
}

impl Transcript {
    /// `echo`: copy each command into the transcript (runmqsc's default; `-e` turns it off).
    pub fn new(echo: bool) -> Transcript {
        Transcript {
            echo,
            read: 0,
            syntax: 0,
            failed: 0,
        }
    }

    /// The echo of the next command, one line (continuations joined).
    pub fn echo(&mut self, command: &str) -> String {
        self.echo_lines(&[command])
    }

    /// The echo of the next command as it was typed: its first line numbered, the lines that
    /// continue it marked `:`.
    pub fn echo_lines(&mut self, lines: &[&str]) -> String {
        if !self.echo {
            return String::new();
        }
        let mut out = String::new();
        for (i, l) in lines.iter().enumerate() {
            if i == 0 {
                out.push_str(&format!("{:>6} : {l}\n", self.read + 1));
            } else {
                out.push_str(&format!("       : {l}\n"));
            }
        }
        out
    }

    /// A comment or blank line between commands, echoed as runmqsc does.
    pub fn echo_other(&self, line: &str) -> String {
        if self.echo && !line.trim().is_empty() {
            format!("       : {line}\n")
        } else {
            String::new()
        }
    }

    /// Counts an answered command.
    pub fn count(&mut self, ok: bool, syntax: bool) {
        self.read += 1;
        if !ok && syntax {
            self.syntax += 1;
        } else if !ok {
            self.failed += 1;
        }
    }

    /// runmqsc's closing lines.
    pub fn summary(&self) -> String {
        let read = match self.read {
            0 => "No MQSC commands read.".to_string(),
            1 => "One MQSC command read.".to_string(),
            n => format!("{n} MQSC commands read."),
        };
        let syntax = match self.syntax {
            0 => "No commands have a syntax error.".to_string(),
            1 => "One command has a syntax error.".to_string(),
            n => format!("{n} commands have a syntax error."),
        };
        let failed = match self.failed {
            0 => "All valid MQSC commands were processed.".to_string(),
            1 => "One valid MQSC command could not be processed.".to_string(),
            n => format!("{n} valid MQSC commands could not be processed."),
        };
        format!("{read}\n{syntax}\n{failed}\n")
    }

    /// runmqsc's exit code for what was counted.
    pub fn exit_code(&self) -> u8 {
        if self.syntax + self.failed == 0 {
            EXIT_OK
        } else {
            EXIT_FAILED
        }
    }

    /// Commands that failed, syntax errors included.
    pub fn failures(&self) -> usize {
        self.syntax + self.failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_words_as_runmqsc() {
        let mut t = Transcript::new(true);
        assert_eq!(t.echo("DEFINE QLOCAL(A)"), "     1 : DEFINE QLOCAL(A)\n");
        t.count(true, false);
        assert_eq!(
            t.echo_lines(&["DEFINE QLOCAL(B) +", "  DESCR('x')"]),
            "     2 : DEFINE QLOCAL(B) +\n       :   DESCR('x')\n"
        );
        t.count(false, true);
        t.count(false, false);
        assert_eq!(
            t.summary(),
            "3 MQSC commands read.\nOne command has a syntax error.\n\
             One valid MQSC command could not be processed.\n"
        );
        assert_eq!(t.exit_code(), EXIT_FAILED);
        let mut one = Transcript::new(false);
        assert_eq!(one.echo("X"), "");
        one.count(true, false);
        assert_eq!(
            one.summary(),
            "One MQSC command read.\nNo commands have a syntax error.\n\
             All valid MQSC commands were processed.\n"
        );
        assert_eq!(one.exit_code(), EXIT_OK);
    }
}
