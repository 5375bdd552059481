//! Message selectors: the SQL-92 subset JMS defines (JMS 2.0 §3.8.1), on message properties
//! and the JMS header fields a descriptor holds (docs/amqp.md "Selectors").
//!
//! ```text
//! colour = 'red' AND size BETWEEN 1 AND 10 OR name LIKE 'a\_%' ESCAPE '\' OR id IN ('a','b')
//! ```
//!
//! Comparison `= <> < <= > >=`, arithmetic `+ - * /`, `NOT AND OR`, `[NOT] BETWEEN`,
//! `[NOT] IN`, `[NOT] LIKE … [ESCAPE]`, `IS [NOT] NULL`, string, integer, decimal and boolean
//! literals. A missing property is NULL and SQL's three-valued logic applies: a message is
//! selected only when the whole expression is TRUE. Header fields: `JMSDeliveryMode`
//! ('PERSISTENT' or 'NON_PERSISTENT'), `JMSPriority`, `JMSMessageID`, `JMSCorrelationID`,
//! `JMSTimestamp`, `JMSType` (always NULL), `JMSXDeliveryCount`, `JMSXGroupSeq`.
//!
//! Parsing never panics: a selector longer than [`MAX_LEN`], nested deeper than
//! [`MAX_NESTING`] or deeper as a tree than [`MAX_DEPTH`] is a syntax error (MQRC 2459).

use crate::md::{Md, Persistence};
use crate::props::PropValue;

/// The longest selector accepted, in bytes (MQ's MQ_SELECTOR_LENGTH).
pub const MAX_LEN: usize = 10_240;
/// The deepest expression tree (nesting and chains of AND, OR and arithmetic): evaluation
/// recurses this deep at most.
pub const MAX_DEPTH: usize = 256;
/// The deepest nesting of parentheses, NOT and unary minus (parsing recurses on these).
pub const MAX_NESTING: usize = 32;

/// A parsed selector.
#[derive(Debug, Clone, PartialEq)]
pub struct Selector {
    text: String,
    expr: Expr,
}

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Lit(Val),
    Ident(String),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Cmp(Cmp, Box<Expr>, Box<Expr>),
    Arith(char, Box<Expr>, Box<Expr>),
    Neg(Box<Expr>),
    Between(bool, Box<Expr>, Box<Expr>, Box<Expr>),
    In(bool, Box<Expr>, Vec<String>),
    Like(bool, Box<Expr>, String, Option<char>),
    IsNull(bool, Box<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A value during evaluation; `Null` is SQL's unknown.
#[derive(Debug, Clone, PartialEq)]
enum Val {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

impl Selector {
    /// Parses `text`; the error says where and what was wrong.
    pub fn parse(text: &str) -> Result<Selector, String> {
        if text.len() > MAX_LEN {
            return Err(format!(
                "the selector is {} bytes; at most {MAX_LEN}",
                text.len()
            ));
        }
        let toks = lex(text)?;
        let mut p = Parser {
            toks,
            at: 0,
            depth: 0,
            nest: 0,
        };
        let expr = p.or()?;
        if let Some((pos, t)) = p.toks.get(p.at) {
            return Err(format!("unexpected {t:?} at {pos}"));
        }
        Ok(Selector {
            text: text.to_string(),
            expr,
        })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether a message with this descriptor is selected.
    pub fn matches(&self, md: &Md) -> bool {
        eval(&self.expr, md) == Val::Bool(true)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Kw(&'static str),
    Str(String),
    Int(i64),
    Float(f64),
    Op(&'static str),
}

const KEYWORDS: &[&str] = &[
    "NOT", "AND", "OR", "BETWEEN", "LIKE", "IN", "IS", "NULL", "TRUE", "FALSE", "ESCAPE",
];
const OPS: &[&str] = &[
    "<>", "<=", ">=", "=", "<", ">", "+", "-", "*", "/", "(", ")", ",",
];

fn lex(s: &str) -> Result<Vec<(usize, Tok)>, String> {
    let b: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_whitespace() {
            i += 1;
        } else if c == '\'' {
            let mut v = String::new();
            i += 1;
            loop {
                match b.get(i) {
                    None => return Err(format!("string at {start} is not closed")),
                    Some('\'') if b.get(i + 1) == Some(&'\'') => {
                        v.push('\'');
                        i += 2;
                    }
                    Some('\'') => {
                        i += 1;
                        break;
                    }
                    Some(ch) => {
                        v.push(*ch);
                        i += 1;
                    }
                }
            }
            out.push((start, Tok::Str(v)));
        } else if c.is_ascii_digit() || (c == '.' && b.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == '.') {
                // An exponent's sign belongs to the number.
                if matches!(b[i], 'e' | 'E') && matches!(b.get(i + 1), Some('+' | '-')) {
                    i += 1;
                }
                i += 1;
            }
            let t: String = b[start..i].iter().collect();
            let digits = t.trim_end_matches(['l', 'L']);
            let tok = if let Ok(n) = digits.parse::<i64>() {
                Tok::Int(n)
            } else if let Ok(f) = t.trim_end_matches(['f', 'F', 'd', 'D']).parse::<f64>() {
                Tok::Float(f)
            } else {
                return Err(format!("'{t}' at {start} is not a number"));
            };
            out.push((start, tok));
        } else if c.is_alphabetic() || c == '_' || c == '$' {
            while i < b.len() && (b[i].is_alphanumeric() || matches!(b[i], '_' | '$' | '.')) {
                i += 1;
            }
            let t: String = b[start..i].iter().collect();
            let up = t.to_ascii_uppercase();
            match KEYWORDS.iter().find(|k| **k == up) {
                Some(k) => out.push((start, Tok::Kw(k))),
                None => out.push((start, Tok::Ident(t))),
            }
        } else {
            let rest: String = b[i..b.len().min(i + 2)].iter().collect();
            let op = OPS
                .iter()
                .find(|o| rest.starts_with(**o))
                .ok_or_else(|| format!("unexpected character '{c}' at {start}"))?;
            i += op.chars().count();
            out.push((start, Tok::Op(op)));
        }
    }
    Ok(out)
}

/// How two operands of a binary operator are joined.
#[derive(Clone, Copy)]
enum Join {
    Or,
    And,
    Arith(char),
}

struct Parser {
    toks: Vec<(usize, Tok)>,
    at: usize,
    depth: usize,
    nest: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at).map(|(_, t)| t)
    }

    fn eat(&mut self, t: &Tok) -> bool {
        if self.peek() == Some(t) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, t: &Tok) -> Result<(), String> {
        if self.eat(t) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("{t:?}")))
        }
    }

    fn unexpected(&self, wanted: &str) -> String {
        match self.toks.get(self.at) {
            Some((pos, t)) => format!("expected {wanted} at {pos}, found {t:?}"),
            None => format!("expected {wanted}, found the end of the selector"),
        }
    }

    fn deeper(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!("the selector is deeper than {MAX_DEPTH} as a tree"));
        }
        Ok(())
    }

    /// Into parentheses, NOT or unary minus; `out` comes back.
    fn nested(&mut self) -> Result<(), String> {
        self.nest += 1;
        if self.nest > MAX_NESTING {
            return Err(format!("the selector nests deeper than {MAX_NESTING}"));
        }
        self.deeper()
    }

    fn out(&mut self) {
        self.nest -= 1;
        self.depth -= 1;
    }

    fn or(&mut self) -> Result<Expr, String> {
        self.binary(Self::and, |t| {
            (t == Some(&Tok::Kw("OR"))).then_some(Join::Or)
        })
    }

    fn and(&mut self) -> Result<Expr, String> {
        self.binary(Self::not, |t| {
            (t == Some(&Tok::Kw("AND"))).then_some(Join::And)
        })
    }

    fn not(&mut self) -> Result<Expr, String> {
        if self.eat(&Tok::Kw("NOT")) {
            self.nested()?;
            let e = Expr::Not(Box::new(self.not()?));
            self.out();
            return Ok(e);
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Result<Expr, String> {
        let left = self.additive()?;
        let cmp = match self.peek() {
            Some(Tok::Op("=")) => Some(Cmp::Eq),
            Some(Tok::Op("<>")) => Some(Cmp::Ne),
            Some(Tok::Op("<")) => Some(Cmp::Lt),
            Some(Tok::Op("<=")) => Some(Cmp::Le),
            Some(Tok::Op(">")) => Some(Cmp::Gt),
            Some(Tok::Op(">=")) => Some(Cmp::Ge),
            _ => None,
        };
        if let Some(c) = cmp {
            self.at += 1;
            return Ok(Expr::Cmp(c, Box::new(left), Box::new(self.additive()?)));
        }
        if self.eat(&Tok::Kw("IS")) {
            let neg = self.eat(&Tok::Kw("NOT"));
            self.expect(&Tok::Kw("NULL"))?;
            return Ok(Expr::IsNull(neg, Box::new(left)));
        }
        let neg = self.eat(&Tok::Kw("NOT"));
        if self.eat(&Tok::Kw("BETWEEN")) {
            let lo = self.additive()?;
            self.expect(&Tok::Kw("AND"))?;
            let hi = self.additive()?;
            return Ok(Expr::Between(
                neg,
                Box::new(left),
                Box::new(lo),
                Box::new(hi),
            ));
        }
        if self.eat(&Tok::Kw("IN")) {
            if !matches!(left, Expr::Ident(_)) {
                return Err("IN tests an identifier".into());
            }
            self.expect(&Tok::Op("("))?;
            let mut list = vec![self.string()?];
            while self.eat(&Tok::Op(",")) {
                list.push(self.string()?);
            }
            self.expect(&Tok::Op(")"))?;
            return Ok(Expr::In(neg, Box::new(left), list));
        }
        if self.eat(&Tok::Kw("LIKE")) {
            if !matches!(left, Expr::Ident(_)) {
                return Err("LIKE tests an identifier".into());
            }
            let pat = self.string()?;
            let esc = if self.eat(&Tok::Kw("ESCAPE")) {
                let e = self.string()?;
                let mut cs = e.chars();
                match (cs.next(), cs.next()) {
                    (Some(c), None) => Some(c),
                    _ => return Err(format!("ESCAPE '{e}' is not one character")),
                }
            } else {
                None
            };
            return Ok(Expr::Like(neg, Box::new(left), pat, esc));
        }
        if neg {
            return Err(self.unexpected("BETWEEN, IN or LIKE after NOT"));
        }
        Ok(left)
    }

    fn string(&mut self) -> Result<String, String> {
        match self.peek().cloned() {
            Some(Tok::Str(s)) => {
                self.at += 1;
                Ok(s)
            }
            _ => Err(self.unexpected("a string literal")),
        }
    }

    fn additive(&mut self) -> Result<Expr, String> {
        self.binary(Self::multiplicative, |t| match t {
            Some(Tok::Op("+")) => Some(Join::Arith('+')),
            Some(Tok::Op("-")) => Some(Join::Arith('-')),
            _ => None,
        })
    }

    fn multiplicative(&mut self) -> Result<Expr, String> {
        self.binary(Self::unary, |t| match t {
            Some(Tok::Op("*")) => Some(Join::Arith('*')),
            Some(Tok::Op("/")) => Some(Join::Arith('/')),
            _ => None,
        })
    }

    /// A left-associative run of `operand`s joined by what `join` recognises.
    fn binary(
        &mut self,
        operand: fn(&mut Self) -> Result<Expr, String>,
        join: fn(Option<&Tok>) -> Option<Join>,
    ) -> Result<Expr, String> {
        let base = self.depth;
        let mut e = operand(self)?;
        while let Some(j) = join(self.peek()) {
            self.at += 1;
            self.deeper()?;
            let (l, r) = (Box::new(e), Box::new(operand(self)?));
            e = match j {
                Join::Or => Expr::Or(l, r),
                Join::And => Expr::And(l, r),
                Join::Arith(op) => Expr::Arith(op, l, r),
            };
        }
        self.depth = base;
        Ok(e)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        if self.eat(&Tok::Op("-")) {
            self.nested()?;
            let e = Expr::Neg(Box::new(self.unary()?));
            self.out();
            return Ok(e);
        }
        if self.eat(&Tok::Op("+")) {
            return self.unary();
        }
        let Some((_, t)) = self.toks.get(self.at).cloned() else {
            return Err(self.unexpected("a value"));
        };
        self.at += 1;
        Ok(match t {
            Tok::Ident(n) => Expr::Ident(n),
            Tok::Str(s) => Expr::Lit(Val::Str(s)),
            Tok::Int(n) => Expr::Lit(Val::Int(n)),
            Tok::Float(f) => Expr::Lit(Val::Float(f)),
            Tok::Kw("TRUE") => Expr::Lit(Val::Bool(true)),
            Tok::Kw("FALSE") => Expr::Lit(Val::Bool(false)),
            Tok::Kw("NULL") => Expr::Lit(Val::Null),
            Tok::Op("(") => {
                self.nested()?;
                let e = self.or()?;
                self.out();
                self.expect(&Tok::Op(")"))?;
                e
            }
            _ => {
                self.at -= 1;
                return Err(self.unexpected("a value"));
            }
        })
    }
}

/// An identifier's value: a JMS header field or a message property.
fn lookup(name: &str, md: &Md) -> Val {
    match name {
        "JMSDeliveryMode" => Val::Str(
            if md.persistence == Persistence::Persistent {
                "PERSISTENT"
            } else {
                "NON_PERSISTENT"
            }
            .into(),
        ),
        "JMSPriority" => Val::Int(i64::from(md.priority)),
        "JMSMessageID" => id_text(&md.msg_id),
        "JMSCorrelationID" => id_text(&md.correl_id),
        "JMSTimestamp" => Val::Int(md.put_time_ms),
        "JMSXDeliveryCount" => Val::Int(i64::from(md.backout_count) + 1),
        "JMSXGroupSeq" => Val::Int(i64::from(md.msg_seq_number)),
        _ => match crate::props::get(&md.properties, name) {
            None | Some(PropValue::Null) | Some(PropValue::Bytes(_)) => Val::Null,
            Some(PropValue::Bool(b)) => Val::Bool(*b),
            Some(PropValue::Byte(n)) => Val::Int(i64::from(*n)),
            Some(PropValue::Short(n)) => Val::Int(i64::from(*n)),
            Some(PropValue::Int(n)) => Val::Int(i64::from(*n)),
            Some(PropValue::Long(n)) => Val::Int(*n),
            Some(PropValue::Float(f)) => Val::Float(f64::from(*f)),
            Some(PropValue::Double(f)) => Val::Float(*f),
            Some(PropValue::String(s)) => Val::Str(s.clone()),
        },
    }
}

/// An id as text: printable bytes (trailing zeros off) as they are, else `ID:` and hex; none
/// is NULL.
fn id_text(id: &[u8; 24]) -> Val {
    let end = id.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
    if end == 0 {
        return Val::Null;
    }
    match std::str::from_utf8(&id[..end]) {
        Ok(s) if s.chars().all(|c| !c.is_control()) => Val::Str(s.to_string()),
        _ => Val::Str(format!(
            "ID:{}",
            id.iter().map(|b| format!("{b:02x}")).collect::<String>()
        )),
    }
}

fn num(v: &Val) -> Option<f64> {
    match v {
        Val::Int(n) => Some(*n as f64),
        Val::Float(f) => Some(*f),
        _ => None,
    }
}

fn eval(e: &Expr, md: &Md) -> Val {
    let ev = |x: &Expr| eval(x, md);
    match e {
        Expr::Lit(v) => v.clone(),
        Expr::Ident(n) => lookup(n, md),
        Expr::Not(x) => match ev(x) {
            Val::Bool(b) => Val::Bool(!b),
            _ => Val::Null,
        },
        Expr::And(a, b) => match (ev(a), ev(b)) {
            (Val::Bool(false), _) | (_, Val::Bool(false)) => Val::Bool(false),
            (Val::Bool(true), Val::Bool(true)) => Val::Bool(true),
            _ => Val::Null,
        },
        Expr::Or(a, b) => match (ev(a), ev(b)) {
            (Val::Bool(true), _) | (_, Val::Bool(true)) => Val::Bool(true),
            (Val::Bool(false), Val::Bool(false)) => Val::Bool(false),
            _ => Val::Null,
        },
        Expr::Cmp(c, a, b) => compare(*c, &ev(a), &ev(b)),
        Expr::Neg(x) => match ev(x) {
            Val::Int(n) => n.checked_neg().map_or(Val::Null, Val::Int),
            Val::Float(f) => Val::Float(-f),
            _ => Val::Null,
        },
        Expr::Arith(op, a, b) => arith(*op, &ev(a), &ev(b)),
        Expr::Between(neg, x, lo, hi) => {
            let v = ev(x);
            let r = match (compare(Cmp::Ge, &v, &ev(lo)), compare(Cmp::Le, &v, &ev(hi))) {
                (Val::Bool(false), _) | (_, Val::Bool(false)) => Val::Bool(false),
                (Val::Bool(true), Val::Bool(true)) => Val::Bool(true),
                _ => Val::Null,
            };
            negate(*neg, r)
        }
        Expr::In(neg, x, list) => match ev(x) {
            Val::Str(s) => Val::Bool(list.contains(&s) != *neg),
            _ => Val::Null,
        },
        Expr::Like(neg, x, pat, esc) => match ev(x) {
            Val::Str(s) => {
                let p: Vec<char> = pat.chars().collect();
                let t: Vec<char> = s.chars().collect();
                Val::Bool(like(&t, &p, *esc) != *neg)
            }
            _ => Val::Null,
        },
        Expr::IsNull(neg, x) => Val::Bool((ev(x) == Val::Null) != *neg),
    }
}

fn negate(neg: bool, v: Val) -> Val {
    match v {
        Val::Bool(b) => Val::Bool(b != neg),
        other => other,
    }
}

fn compare(c: Cmp, a: &Val, b: &Val) -> Val {
    use std::cmp::Ordering;
    let ord: Option<Ordering> = match (a, b) {
        (Val::Int(x), Val::Int(y)) => Some(x.cmp(y)),
        (Val::Str(x), Val::Str(y)) if matches!(c, Cmp::Eq | Cmp::Ne) => Some(x.cmp(y)),
        (Val::Bool(x), Val::Bool(y)) if matches!(c, Cmp::Eq | Cmp::Ne) => Some(x.cmp(y)),
        _ => match (num(a), num(b)) {
            (Some(x), Some(y)) => x.partial_cmp(&y),
            _ => None,
        },
    };
    let Some(o) = ord else { return Val::Null };
    Val::Bool(match c {
        Cmp::Eq => o == Ordering::Equal,
        Cmp::Ne => o != Ordering::Equal,
        Cmp::Lt => o == Ordering::Less,
        Cmp::Le => o != Ordering::Greater,
        Cmp::Gt => o == Ordering::Greater,
        Cmp::Ge => o != Ordering::Less,
    })
}

fn arith(op: char, a: &Val, b: &Val) -> Val {
    if let (Val::Int(x), Val::Int(y)) = (a, b) {
        let r = match op {
            '+' => x.checked_add(*y),
            '-' => x.checked_sub(*y),
            '*' => x.checked_mul(*y),
            _ => x.checked_div(*y),
        };
        return r.map_or(Val::Null, Val::Int);
    }
    match (num(a), num(b)) {
        (Some(x), Some(y)) => Val::Float(match op {
            '+' => x + y,
            '-' => x - y,
            '*' => x * y,
            _ => x / y,
        }),
        _ => Val::Null,
    }
}

/// SQL LIKE: `_` one character, `%` any run, `esc` makes the next one literal.
fn like(t: &[char], p: &[char], esc: Option<char>) -> bool {
    // Iterative with one backtrack point per '%' (linear in practice, never recursive).
    let (mut ti, mut pi) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        let (pc, lit, width) = match p.get(pi) {
            Some(&c) if Some(c) == esc => (p.get(pi + 1).copied(), true, 2),
            Some(&c) => (Some(c), false, 1),
            None => (None, false, 0),
        };
        match pc {
            Some('%') if !lit => {
                star = Some((pi + 1, ti));
                pi += 1;
                continue;
            }
            Some(c) if (c == '_' && !lit) || c == t[ti] => {
                ti += 1;
                pi += width;
                continue;
            }
            _ => {}
        }
        match star {
            Some((sp, st)) => {
                pi = sp;
                ti = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    while p.get(pi) == Some(&'%') && Some('%') != esc {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn md() -> Md {
        let mut md = Md {
            priority: 4,
            persistence: Persistence::Persistent,
            ..Md::default()
        };
        md.msg_id[..3].copy_from_slice(b"m-1");
        for (n, v) in [
            ("colour", PropValue::String("red".into())),
            ("size", PropValue::Int(7)),
            ("weight", PropValue::Double(2.5)),
            ("urgent", PropValue::Bool(true)),
            ("name", PropValue::String("a_b%c".into())),
        ] {
            crate::props::set(&mut md.properties, n, v);
        }
        md
    }

    fn sel(s: &str) -> bool {
        Selector::parse(s).unwrap().matches(&md())
    }

    #[test]
    fn jms_selectors_select() {
        assert!(sel("colour = 'red'"));
        assert!(!sel("colour = 'blue'"));
        assert!(sel("colour <> 'blue' AND size > 5"));
        assert!(sel("size BETWEEN 7 AND 8 AND weight < 3"));
        assert!(sel("size NOT BETWEEN 8 AND 9"));
        assert!(sel("colour IN ('green', 'red')"));
        assert!(sel("colour NOT IN ('green')"));
        assert!(sel("colour LIKE 'r%'") && sel("colour LIKE '_e_'"));
        assert!(sel("name LIKE 'a\\_b\\%%' ESCAPE '\\'"));
        assert!(!sel("name LIKE 'ax%' ESCAPE 'x'"));
        assert!(sel("urgent") && sel("urgent = TRUE") && !sel("NOT urgent"));
        assert!(sel("size * 2 + 1 = 15") && sel("size / 2 = 3") && sel("-size < 0"));
        assert!(sel("weight * 2 = 5.0") && sel("size > 6.5"));
        assert!(sel("JMSPriority = 4 AND JMSDeliveryMode = 'PERSISTENT'"));
        assert!(sel("JMSMessageID = 'm-1'"));
        assert!(sel("missing IS NULL") && sel("colour IS NOT NULL"));
        assert!(sel("(colour = 'blue' OR size = 7) and not (size = 8)"));
    }

    #[test]
    fn unknown_is_never_selected() {
        // A missing property makes a comparison unknown: neither it nor its negation selects.
        assert!(!sel("missing = 1"));
        assert!(!sel("NOT (missing = 1)"));
        assert!(!sel("missing > 1 OR missing <= 1"));
        assert!(sel("missing = 1 OR colour = 'red'"));
        // A string never compares with a number, nor orders.
        assert!(!sel("colour = 1") && !sel("colour > 'a'"));
        assert!(!sel("size / 0 = 1"));
    }

    #[test]
    fn bad_selectors_are_errors() {
        for bad in [
            "",
            "colour =",
            "colour = 'red",
            "colour == 'red'",
            "size IN (1, 2)",
            "1 LIKE 'a'",
            "colour LIKE 'a' ESCAPE 'ab'",
            "(colour = 'red'",
            "colour = 'red')",
            "colour # 1",
            "size NOT 5",
        ] {
            assert!(Selector::parse(bad).is_err(), "{bad}");
        }
        let deep = format!("{}a = 1{}", "(".repeat(300), ")".repeat(300));
        assert!(Selector::parse(&deep).unwrap_err().contains("deeper"));
        let ok = format!("{}a = 1{}", "(".repeat(20), ")".repeat(20));
        assert!(Selector::parse(&ok).is_ok());
        let nots = format!("{}a = 1", "NOT ".repeat(300));
        assert!(Selector::parse(&nots).is_err());
        // Long chains count too (evaluation recurses along them).
        let chain = vec!["a = 1"; 300].join(" AND ");
        assert!(Selector::parse(&chain).unwrap_err().contains("deeper"));
        let sum = format!("a = {}", vec!["1"; 300].join(" + "));
        assert!(Selector::parse(&sum).is_err());
        let fine = vec!["a = 1"; 100].join(" OR ");
        assert!(Selector::parse(&fine).is_ok());
        assert!(Selector::parse(&"a".repeat(MAX_LEN + 1)).is_err());
    }

    proptest! {
        #[test]
        fn any_text_parses_or_fails_without_panic(s in ".{0,80}") {
            if let Ok(sel) = Selector::parse(&s) {
                let _ = sel.matches(&md());
            }
        }

        #[test]
        fn selector_shaped_text_never_panics(parts in proptest::collection::vec(
            proptest::sample::select(vec!["a", "size", "'x'", "1", "2.5", "=", "<>", "<", "AND",
                "OR", "NOT", "(", ")", "BETWEEN", "IN", "LIKE", "IS", "NULL", ",", "-", "*", "/",
                "ESCAPE", "TRUE"]), 0..30)) {
            if let Ok(sel) = Selector::parse(&parts.join(" ")) {
                let _ = sel.matches(&md());
            }
        }

        #[test]
        fn like_matches_what_a_regex_would(t in "[ab_%]{0,8}", p in "[ab_%]{0,6}") {
            let re = format!("^{}$", p.chars().map(|c| match c {
                '%' => ".*".to_string(), '_' => ".".to_string(), c => c.to_string() }).collect::<String>());
            let tc: Vec<char> = t.chars().collect();
            let pc: Vec<char> = p.chars().collect();
            prop_assert_eq!(like(&tc, &pc, None), simple_regex(&re, &t));
        }
    }

    /// A tiny backtracking matcher for `^…$` patterns of literals, `.` and `.*` (test oracle).
    fn simple_regex(re: &str, t: &str) -> bool {
        fn m(p: &[char], t: &[char]) -> bool {
            match p {
                [] => t.is_empty(),
                ['.', '*', rest @ ..] => (0..=t.len()).any(|i| m(rest, &t[i..])),
                ['.', rest @ ..] => !t.is_empty() && m(rest, &t[1..]),
                [c, rest @ ..] => t.first() == Some(c) && m(rest, &t[1..]),
            }
        }
        let p: Vec<char> = re[1..re.len() - 1].chars().collect();
        let t: Vec<char> = t.chars().collect();
        m(&p, &t)
    }
}
