//! What a DISPLAY shows: the attributes asked for (an unknown one is an error naming every
//! unknown one), and MQ's `WHERE(attribute operator value)` filter with its operators LT GT EQ
//! NE LE GE (numbers compare as numbers, else as text), LK NL (a generic value, `*` at the
//! end), CT EX (a list contains or excludes the value) and CTG EXG (a list contains or excludes
//! an item matching a generic value).

use crate::args::{Block, Fail, bad};
use crate::parse::Attr;

/// Keywords of a DISPLAY that are not attributes to show.
const CONTROL: [&str; 6] = ["ALL", "WHERE", "TYPE", "SAVED", "CURRENT", "MATCH"];

/// A parsed WHERE clause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Where {
    attr: String,
    op: Op,
    value: String,
    at: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Lt,
    Gt,
    Eq,
    Ne,
    Le,
    Ge,
    Lk,
    Nl,
    Ct,
    Ex,
    Ctg,
    Exg,
}

impl Where {
    /// The WHERE of a command, if it has one.
    pub(crate) fn of(attrs: &[Attr]) -> Result<Option<Where>, Fail> {
        let Some(a) = attrs.iter().find(|a| a.key == "WHERE") else {
            return Ok(None);
        };
        let [attr, op, value] = a.values.as_slice() else {
            return Err(bad(
                a,
                "expects (attribute operator value), e.g. WHERE(CURDEPTH GT 0)",
            ));
        };
        let op = match op.to_ascii_uppercase().as_str() {
            "LT" => Op::Lt,
            "GT" => Op::Gt,
            "EQ" => Op::Eq,
            "NE" => Op::Ne,
            "LE" => Op::Le,
            "GE" => Op::Ge,
            "LK" => Op::Lk,
            "NL" => Op::Nl,
            "CT" => Op::Ct,
            "EX" => Op::Ex,
            "CTG" => Op::Ctg,
            "EXG" => Op::Exg,
            o => {
                return Err(bad(
                    a,
                    format!("'{o}' is not an operator: LT GT EQ NE LE GE LK NL CT EX CTG EXG"),
                ));
            }
        };
        Ok(Some(Where {
            attr: attr.to_ascii_uppercase(),
            op,
            value: value.clone(),
            at: a.at,
        }))
    }

    fn fail(&self, message: String) -> Fail {
        Fail {
            at: Some(self.at),
            reason: None,
            message: format!("WHERE: {message}"),
        }
    }

    /// Whether `block` passes; an attribute the block does not have is an error.
    fn test(&self, block: &Block) -> Result<bool, Fail> {
        let Some((_, v)) = block.iter().find(|(k, _)| *k == self.attr) else {
            return Err(self.fail(format!("'{}' is not an attribute shown here", self.attr)));
        };
        let (v, x) = (v.as_str(), self.value.as_str());
        let ord = match (v.trim().parse::<i64>(), x.trim().parse::<i64>()) {
            (Ok(a), Ok(b)) => a.cmp(&b),
            _ => v.to_ascii_uppercase().cmp(&x.to_ascii_uppercase()),
        };
        let list = || v.split(',').map(str::trim).filter(|s| !s.is_empty());
        use std::cmp::Ordering::*;
        Ok(match self.op {
            Op::Lt => ord == Less,
            Op::Gt => ord == Greater,
            Op::Eq => ord == Equal,
            Op::Ne => ord != Equal,
            Op::Le => ord != Greater,
            Op::Ge => ord != Less,
            Op::Lk => generic(x, v),
            Op::Nl => !generic(x, v),
            Op::Ct => list().any(|i| i.eq_ignore_ascii_case(x)),
            Op::Ex => !list().any(|i| i.eq_ignore_ascii_case(x)),
            Op::Ctg => list().any(|i| generic(x, i)),
            Op::Exg => !list().any(|i| generic(x, i)),
        })
    }
}

/// MQ's generic value: a trailing `*` matches any rest; case is not significant.
fn generic(pattern: &str, value: &str) -> bool {
    let (p, v) = (pattern.to_ascii_uppercase(), value.to_ascii_uppercase());
    match p.strip_suffix('*') {
        Some(prefix) => v.starts_with(prefix),
        None => p == v,
    }
}

/// The blocks to show: those passing WHERE, each with the attributes asked for (and the
/// identifying ones, `ids`); `ALL` keeps every attribute. `all_by_default`: with nothing asked,
/// show everything (status displays).
pub(crate) fn select_all(
    blocks: impl IntoIterator<Item = Block>,
    attrs: &[Attr],
    ids: &[&str],
    all_by_default: bool,
) -> Result<Vec<Block>, Fail> {
    let filter = Where::of(attrs)?;
    let asked: Vec<&Attr> = attrs
        .iter()
        .filter(|a| !CONTROL.contains(&a.key.as_str()))
        .collect();
    let all = attrs.iter().any(|a| a.key == "ALL") || (all_by_default && asked.is_empty());
    let mut out = Vec::new();
    for block in blocks {
        let unknown: Vec<&str> = asked
            .iter()
            .filter(|a| !block.iter().any(|(k, _)| *k == a.key))
            .map(|a| a.key.as_str())
            .collect();
        if !unknown.is_empty() {
            return Err(Fail {
                at: asked
                    .iter()
                    .find(|a| unknown.contains(&a.key.as_str()))
                    .map(|a| a.at),
                reason: None,
                message: if unknown.len() == 1 {
                    format!("{} is not an attribute of this object", unknown[0])
                } else {
                    format!("{} are not attributes of this object", unknown.join(", "))
                },
            });
        }
        if let Some(w) = &filter
            && !w.test(&block)?
        {
            continue;
        }
        if all {
            out.push(block);
            continue;
        }
        let shown: Block = block
            .into_iter()
            .filter(|(k, _)| {
                ids.contains(&k.as_str())
                    || asked.iter().any(|a| a.key == *k)
                    || filter.as_ref().is_some_and(|w| w.attr == *k)
            })
            .collect();
        out.push(shown);
    }
    Ok(out)
}

/// How a DISPLAY answers about one kind of object.
pub(crate) struct Listing<'a> {
    /// The attributes shown without being asked (the object's identity).
    pub ids: &'a [&'a str],
    /// What a name that is not generic and matches nothing was looked for as.
    pub what: &'a str,
    /// The answer line, MQ's where MQ has one (`AMQ8409I: Display Queue details.`); with
    /// `plural`, the start of a line that counts the objects (`SMQ0204I: Status of`).
    pub head: &'a str,
    /// What the answer counts (`service(s)`); empty: the line is `head` alone.
    pub plural: &'a str,
}

impl Listing<'_> {
    /// `blocks` as the command's attributes select them, 2085 when a name that is not generic
    /// matches none, and the answer line that counts them.
    pub(crate) fn answer(
        &self,
        blocks: impl IntoIterator<Item = Block>,
        attrs: &[Attr],
        name: &str,
    ) -> Result<(String, Vec<Block>), Fail> {
        let blocks = select_all(blocks, attrs, self.ids, false)?;
        crate::args::none_matched(&blocks, self.what, name)?;
        let line = if self.plural.is_empty() {
            self.head.to_string()
        } else {
            format!("{} {} {}.", self.head, blocks.len(), self.plural)
        };
        Ok((line, blocks))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn blocks() -> Vec<Block> {
        use sealmq_types::attrs;
        let b = |q: &str, depth: &str, descr: &str| -> Block {
            attrs![
                "QUEUE" => q, "TYPE" => "QLOCAL", "CURDEPTH" => depth, "DESCR" => descr,
                "LIST" => "A.ONE, B.TWO",
            ]
        };
        vec![
            b("EMPTY", "0", "nothing"),
            b("FULL", "12", "orders in"),
            b("SOME", "3", "Orders out"),
        ]
    }

    fn names(cmd: &str) -> Result<Vec<String>, String> {
        let c = parse(cmd).unwrap();
        select_all(blocks(), &c.attrs, &["QUEUE", "TYPE"], false)
            .map(|v| v.into_iter().map(|b| b[0].1.clone()).collect())
            .map_err(|f| f.message)
    }

    #[test]
    fn where_operators() {
        assert_eq!(
            names("DIS QL(*) WHERE(CURDEPTH GT 0)").unwrap(),
            ["FULL", "SOME"]
        );
        assert_eq!(
            names("DIS QL(*) WHERE(CURDEPTH LE 3)").unwrap(),
            ["EMPTY", "SOME"]
        );
        assert_eq!(names("DIS QL(*) WHERE(CURDEPTH EQ 12)").unwrap(), ["FULL"]);
        assert_eq!(
            names("DIS QL(*) WHERE(CURDEPTH NE 12)").unwrap(),
            ["EMPTY", "SOME"]
        );
        assert_eq!(
            names("DIS QL(*) WHERE(DESCR LK 'orders*')").unwrap(),
            ["FULL", "SOME"]
        );
        assert_eq!(
            names("DIS QL(*) WHERE(DESCR NL 'orders*')").unwrap(),
            ["EMPTY"]
        );
        assert_eq!(names("DIS QL(*) WHERE(LIST CT B.TWO)").unwrap().len(), 3);
        assert_eq!(names("DIS QL(*) WHERE(LIST EX B.TWO)").unwrap().len(), 0);
        assert_eq!(names("DIS QL(*) WHERE(LIST CTG A.*)").unwrap().len(), 3);
        assert_eq!(names("DIS QL(*) WHERE(LIST EXG C.*)").unwrap().len(), 3);
        // The filter's attribute is shown with the identifying ones.
        let c = parse("DIS QL(*) WHERE(CURDEPTH GT 5)").unwrap();
        let v = select_all(blocks(), &c.attrs, &["QUEUE", "TYPE"], false).unwrap_or_default();
        assert_eq!(v[0].len(), 3);
    }

    #[test]
    fn bad_where_clauses_and_unknown_attributes_are_errors() {
        for (cmd, says) in [
            ("DIS QL(*) WHERE(CURDEPTH GT)", "expects"),
            ("DIS QL(*) WHERE(CURDEPTH ABOUT 3)", "not an operator"),
            ("DIS QL(*) WHERE(NOSUCH GT 3)", "NOSUCH"),
            ("DIS QL(*) FOOBAR", "FOOBAR is not"),
            ("DIS QL(*) FOOBAR CURDEPTH BARFOO", "FOOBAR, BARFOO are not"),
        ] {
            let e = names(cmd).unwrap_err();
            assert!(e.contains(says), "{cmd}: {e}");
        }
    }
}
