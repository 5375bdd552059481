//! MQSC text to commands: comments (`*` lines), continuation (`+` drops the next line's
//! leading blanks, `-` keeps them), quoted strings (`''` is a quote), keywords folded to
//! upper case, unquoted names folded to upper case as MQ does.

/// A token with its position in the command (for errors that point at it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    /// A keyword or an unquoted value, upper-cased.
    Word(String),
    /// A quoted string, as written.
    Quoted(String),
    Open,
    Close,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub tok: Tok,
    /// Character offset in the command text.
    pub at: usize,
}

/// One command's text and where it started in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandText {
    pub text: String,
    pub line: usize,
}

/// Splits input into commands: strips comments, joins continuations.
pub fn commands(input: &str) -> Vec<CommandText> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut start_line = 0;
    let mut continuing = false;
    let mut keep_blanks = false;
    for (i, raw) in input.lines().enumerate() {
        let line = raw.trim_end();
        if !continuing && (line.trim_start().starts_with('*') || line.trim().is_empty()) {
            continue;
        }
        let piece = if continuing && !keep_blanks {
            line.trim_start()
        } else {
            line
        };
        if !continuing {
            start_line = i + 1;
        }
        if let Some(body) = piece.strip_suffix('+') {
            cur.push_str(body);
            continuing = true;
            keep_blanks = false;
        } else if let Some(body) = piece.strip_suffix('-') {
            cur.push_str(body);
            continuing = true;
            keep_blanks = true;
        } else {
            cur.push_str(piece);
            continuing = false;
            let text = std::mem::take(&mut cur);
            if !text.trim().is_empty() {
                out.push(CommandText {
                    text: text.trim().to_string(),
                    line: start_line,
                });
            }
        }
    }
    if !cur.trim().is_empty() {
        out.push(CommandText {
            text: cur.trim().to_string(),
            line: start_line,
        });
    }
    out
}

/// Tokenises one command. Errors carry the offset of the problem.
pub fn tokens(text: &str) -> Result<Vec<Token>, (usize, String)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() || c == ',' {
            i += 1;
        } else if c == '(' {
            out.push(Token {
                tok: Tok::Open,
                at: i,
            });
            i += 1;
        } else if c == ')' {
            out.push(Token {
                tok: Tok::Close,
                at: i,
            });
            i += 1;
        } else if c == '\'' {
            let at = i;
            let mut s = String::new();
            i += 1;
            loop {
                match chars.get(i) {
                    None => return Err((at, "a quoted string is not closed".into())),
                    Some('\'') if chars.get(i + 1) == Some(&'\'') => {
                        s.push('\'');
                        i += 2;
                    }
                    Some('\'') => {
                        i += 1;
                        break;
                    }
                    Some(ch) => {
                        s.push(*ch);
                        i += 1;
                    }
                }
            }
            out.push(Token {
                tok: Tok::Quoted(s),
                at,
            });
        } else {
            let at = i;
            let mut s = String::new();
            while let Some(&ch) = chars.get(i) {
                if ch.is_whitespace() || ch == '(' || ch == ')' || ch == ',' || ch == '\'' {
                    break;
                }
                s.push(ch);
                i += 1;
            }
            out.push(Token {
                tok: Tok::Word(s.to_ascii_uppercase()),
                at,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn comments_continuations_and_quotes() {
        let input = "* a comment\nDEFINE QLOCAL(app.q) +\n      DESCR('it''s here') -\n  MAXDEPTH(10)\n\ndisplay qmgr\n";
        let cmds = commands(input);
        assert_eq!(cmds.len(), 2);
        assert_eq!(cmds[0].line, 2);
        assert_eq!(
            cmds[0].text,
            "DEFINE QLOCAL(app.q) DESCR('it''s here')   MAXDEPTH(10)"
        );
        let t = tokens(&cmds[0].text).unwrap();
        assert_eq!(t[0].tok, Tok::Word("DEFINE".into()));
        assert_eq!(t[3].tok, Tok::Word("APP.Q".into()));
        assert!(t.iter().any(|x| x.tok == Tok::Quoted("it's here".into())));
        assert_eq!(tokens("DESCR('open").unwrap_err().0, 6);
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,120}") {
            for c in commands(&s) {
                let _ = tokens(&c.text);
            }
        }
    }
}
