//! MQRFH2, the header in which JMS applications carry message properties (docs/fap.md
//! "Messages"): a fixed part (36 bytes) and name/value folders, each an XML fragment such as
//! `<usr><color>red</color><n dt='i4'>5</n></usr>`. A folder's elements read as properties
//! named as IBM MQ names them: `usr` elements by their own name, others with their folder's
//! (`mcd.Msd`, `jms.Dst`), nested groups with dots.

use crate::bytes::{Fields, Order, Out};
use crate::{Result, err};
use quick_xml::events::Event;

pub const FORMAT: &str = "MQHRF2";
const FIXED: usize = 36;
/// The most elements one message's folders may hold, and how deep they may nest.
pub const MAX_ELEMENTS: usize = 4096;
const MAX_DEPTH: usize = 8;

/// An MQRFH2's fixed part: what follows it (encoding, CCSID, format) and its folders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rfh2 {
    pub encoding: u32,
    pub ccsid: i32,
    pub format: String,
    pub flags: u32,
    pub nv_ccsid: i32,
    pub folders: Vec<String>,
}

/// One property of a folder: its full name, MQ's data type (`dt`, empty for a string) and
/// its text (`None`: `xsi:nil`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    pub name: String,
    pub dt: String,
    pub text: Option<String>,
}

impl Rfh2 {
    /// The header at the start of `b` and its length (StrucLength, checked against `b`).
    pub fn parse(b: &[u8], order: Order) -> Result<(Rfh2, usize)> {
        if b.get(..4) != Some(b"RFH ") {
            return err("an MQRFH2 was expected (struct id 'RFH ')");
        }
        let f = Fields::new(b, order);
        if f.u32(4)? != 2 {
            return err("only MQRFH2 version 2 is read");
        }
        let len = f.u32(8)? as usize;
        if len < FIXED || len > b.len() {
            return err(format!(
                "an MQRFH2 claims {len} bytes where {} are present",
                b.len()
            ));
        }
        let mut h = Rfh2 {
            encoding: f.u32(12)?,
            ccsid: f.i32(16)?,
            format: f.name(20, 8)?,
            flags: f.u32(28)?,
            nv_ccsid: f.i32(32)?,
            folders: Vec::new(),
        };
        let mut at = FIXED;
        while at < len {
            let n = f.u32(at)? as usize;
            let data = f.bytes(at + 4, n)?;
            if at + 4 + n > len {
                return err("an MQRFH2 folder runs past the header's length");
            }
            let end = data
                .iter()
                .rposition(|c| *c != b' ' && *c != 0)
                .map_or(0, |i| i + 1);
            match std::str::from_utf8(&data[..end]) {
                Ok(s) => h.folders.push(s.to_string()),
                Err(_) => return err("an MQRFH2 folder is not UTF-8 (NameValueCCSID 1208)"),
            }
            at += 4 + n;
        }
        Ok((h, len))
    }

    /// The header's bytes: each folder padded with blanks to a multiple of four.
    pub fn encode(&self, order: Order) -> Vec<u8> {
        let mut o = Out::new(order);
        let folders: Vec<Vec<u8>> = self
            .folders
            .iter()
            .map(|f| {
                let mut b = f.as_bytes().to_vec();
                b.resize(b.len().div_ceil(4) * 4, b' ');
                b
            })
            .collect();
        let len = FIXED + folders.iter().map(|f| 4 + f.len()).sum::<usize>();
        o.raw(b"RFH ")
            .u32(2)
            .u32(len as u32)
            .u32(self.encoding)
            .i32(self.ccsid)
            .name(&self.format, 8)
            .u32(self.flags)
            .i32(self.nv_ccsid);
        for f in &folders {
            o.u32(f.len() as u32).raw(f);
        }
        o.buf
    }
}

/// The properties a folder holds.
pub fn elements(folder: &str) -> Result<Vec<Element>> {
    let mut r = quick_xml::Reader::from_str(folder);
    let mut path: Vec<String> = Vec::new();
    let mut out = Vec::new();
    // The open element's type and whether text was seen in it.
    let mut open: Option<(String, String, bool)> = None;
    loop {
        let ev = r
            .read_event()
            .map_err(|e| crate::FapError(format!("an MQRFH2 folder is not well formed: {e}")))?;
        match ev {
            Event::Start(_) | Event::Empty(_) if path.len() >= MAX_DEPTH => {
                return err("an MQRFH2 folder nests too deep");
            }
            Event::Start(e) => {
                let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                if !path.is_empty() {
                    // A group that holds elements is no property itself.
                    open = Some((full_name(&path, &name), attr(&e, b"dt"), false));
                }
                path.push(name);
            }
            Event::Empty(e) => {
                let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                if path.is_empty() {
                    continue;
                }
                let nil = attr(&e, b"xsi:nil") == "true";
                out.push(Element {
                    name: full_name(&path, &name),
                    dt: attr(&e, b"dt"),
                    text: if nil { None } else { Some(String::new()) },
                });
            }
            Event::Text(t) => {
                if let Some((name, dt, seen)) = open.as_mut() {
                    let text = t.unescape().map_err(|e| {
                        crate::FapError(format!("an MQRFH2 value is not well formed: {e}"))
                    })?;
                    *seen = true;
                    out.push(Element {
                        name: name.clone(),
                        dt: dt.clone(),
                        text: Some(text.into_owned()),
                    });
                }
            }
            Event::End(_) => {
                if let Some((name, dt, false)) = open.take() {
                    out.push(Element {
                        name,
                        dt,
                        text: Some(String::new()),
                    });
                }
                path.pop();
            }
            Event::Eof => break,
            _ => {}
        }
        if out.len() > MAX_ELEMENTS {
            return err(format!(
                "an MQRFH2 with more than {MAX_ELEMENTS} properties"
            ));
        }
    }
    Ok(out)
}

fn attr(e: &quick_xml::events::BytesStart<'_>, key: &[u8]) -> String {
    e.attributes()
        .flatten()
        .find(|a| a.key.as_ref() == key)
        .and_then(|a| a.unescape_value().ok().map(|v| v.into_owned()))
        .unwrap_or_default()
}

/// `usr` elements by their own name, others with their folder's.
fn full_name(path: &[String], name: &str) -> String {
    let mut parts: Vec<&str> = path.iter().map(String::as_str).collect();
    if parts.first() == Some(&"usr") {
        parts.remove(0);
    }
    parts.push(name);
    parts.join(".")
}

/// The folders that carry `props` (full name, dt, text): a name whose first part is one of
/// MQ's folders (`mcd`, `jms`, `mqext`, `mqps`) goes to that folder, others to `usr`. Folders
/// come in MQ's order (mcd, jms, usr, then the rest).
pub fn folders(props: &[Element]) -> Vec<String> {
    const OWN: [&str; 4] = ["mcd", "jms", "mqext", "mqps"];
    let mut by: Vec<(String, String)> = Vec::new();
    for p in props {
        let (folder, rest) = match p.name.split_once('.') {
            Some((f, r)) if OWN.contains(&f) => (f.to_string(), r.to_string()),
            _ => ("usr".to_string(), p.name.clone()),
        };
        let mut xml = String::new();
        let parts: Vec<&str> = rest.split('.').collect();
        let (groups, leaf) = parts.split_at(parts.len() - 1);
        for g in groups {
            xml.push_str(&format!("<{g}>"));
        }
        let leaf = leaf[0];
        let dt = if p.dt.is_empty() {
            String::new()
        } else {
            format!(" dt='{}'", p.dt)
        };
        match &p.text {
            None => xml.push_str(&format!("<{leaf} xsi:nil='true'/>")),
            Some(t) => xml.push_str(&format!(
                "<{leaf}{dt}>{}</{leaf}>",
                quick_xml::escape::escape(t.as_str())
            )),
        }
        for g in groups.iter().rev() {
            xml.push_str(&format!("</{g}>"));
        }
        match by.iter_mut().find(|(f, _)| *f == folder) {
            Some((_, body)) => body.push_str(&xml),
            None => by.push((folder, xml)),
        }
    }
    let rank = |f: &str| match f {
        "mcd" => 0,
        "jms" => 1,
        "usr" => 2,
        _ => 3,
    };
    by.sort_by_key(|(f, _)| rank(f));
    by.into_iter()
        .map(|(f, body)| format!("<{f}>{body}</{f}>"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn jms_folders_read_as_mq_names_them_and_written_back() {
        let h = Rfh2 {
            encoding: 273,
            ccsid: 1208,
            format: "MQSTR".into(),
            flags: 0,
            nv_ccsid: 1208,
            folders: vec![
                "<mcd><Msd>jms_text</Msd></mcd>".into(),
                "<jms><Dst>queue:///Q1</Dst><Tms>1764400000000</Tms><Dlv>2</Dlv></jms>".into(),
                "<usr><color>red &amp; blue</color><n dt='i4'>5</n><z xsi:nil='true'/><g><x>1</x></g></usr>".into(),
            ],
        };
        let b = h.encode(Order::Big);
        assert_eq!(b.len() % 4, 0);
        let (p, n) = Rfh2::parse(&b, Order::Big).unwrap();
        assert_eq!((p.clone(), n), (h.clone(), b.len()));
        let all: Vec<Element> = p
            .folders
            .iter()
            .flat_map(|f| elements(f).unwrap())
            .collect();
        let names: Vec<&str> = all.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "mcd.Msd", "jms.Dst", "jms.Tms", "jms.Dlv", "color", "n", "z", "g.x"
            ]
        );
        assert_eq!(all[4].text.as_deref(), Some("red & blue"));
        assert_eq!((all[5].dt.as_str(), all[6].text.clone()), ("i4", None));
        let again: Vec<Element> = folders(&all)
            .iter()
            .flat_map(|f| elements(f).unwrap())
            .collect();
        assert_eq!(again, all);
        let mut lying = b.clone();
        lying[11] = lying[11].wrapping_add(4);
        assert!(Rfh2::parse(&lying, Order::Big).is_err());
        assert!(elements("<usr><a>1</b></usr>").is_err());
    }

    proptest! {
        #[test]
        fn never_panics(b in proptest::collection::vec(any::<u8>(), 0..300), s in ".{0,200}") {
            let mut h = b.clone();
            if h.len() >= 12 {
                h[..4].copy_from_slice(b"RFH ");
                h[4..8].copy_from_slice(&2u32.to_be_bytes());
            }
            if let Ok((r, _)) = Rfh2::parse(&h, Order::Big) {
                for f in &r.folders {
                    let _ = elements(f);
                }
            }
            let _ = elements(&s);
        }

        #[test]
        fn any_property_text_survives(t in "\\PC{0,40}", name in "[a-zA-Z][a-zA-Z0-9_]{0,10}") {
            let e = Element { name, dt: String::new(), text: Some(t) };
            let back: Vec<Element> = folders(std::slice::from_ref(&e)).iter().flat_map(|f| elements(f).unwrap()).collect();
            prop_assert_eq!(back, vec![e]);
        }
    }
}
