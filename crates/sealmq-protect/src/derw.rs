//! A minimal DER writer for the hot path: assembling an AuthEnvelopedData around cached,
//! already-encoded RecipientInfos without re-encoding them per message.

/// Appends a TLV with a definite DER length.
pub fn tlv(out: &mut Vec<u8>, tag: u8, content: &[u8]) {
    out.push(tag);
    push_len(out, content.len());
    out.extend_from_slice(content);
}

/// Appends a tag and length; the caller appends `len` content bytes.
pub fn header(out: &mut Vec<u8>, tag: u8, len: usize) {
    out.push(tag);
    push_len(out, len);
}

/// Size of a TLV whose content is `len` bytes.
pub fn tlv_len(len: usize) -> usize {
    1 + len_len(len) + len
}

fn len_len(len: usize) -> usize {
    match len {
        0..=0x7f => 1,
        0x80..=0xff => 2,
        0x100..=0xffff => 3,
        0x1_0000..=0xff_ffff => 4,
        _ => 5,
    }
}

fn push_len(out: &mut Vec<u8>, len: usize) {
    let n = len_len(len);
    if n == 1 {
        out.push(len as u8);
        return;
    }
    out.push(0x80 | (n - 1) as u8);
    for i in (0..n - 1).rev() {
        out.push((len >> (8 * i)) as u8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use der::Decode;

    #[test]
    fn lengths_match_der_crate() {
        for len in [0usize, 1, 127, 128, 255, 256, 65535, 65536, 1 << 24] {
            let content = vec![7u8; len];
            let mut out = Vec::new();
            tlv(&mut out, 0x04, &content);
            assert_eq!(out.len(), tlv_len(len));
            let o = der::asn1::OctetString::from_der(&out).unwrap();
            assert_eq!(o.as_bytes().len(), len);
        }
    }
}
