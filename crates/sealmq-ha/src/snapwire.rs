//! A snapshot between instances (docs/ha.md): stored sealed under the sender's own data key
//! (encryption at rest), it crosses the wire in clear inside TLS and is sealed by the
//! receiver under its own key as its chunks arrive, so that neither disk ever holds it in
//! clear and neither instance needs the other's keys.
//!
//! A state file begins with a [`StreamHead`] naming the key and stream that seal the rest
//! (`Dse::stream_xor`, usable at any offset: chunks are cut anywhere). The sender opens each
//! chunk and sends a head that says "clear"; the receiver writes its own head and seals.

use sealmq_storage::dse::{Dse, StreamHead};
use sealmq_types::sync::lock;
use std::sync::{Arc, Mutex};

/// Key and stream of the snapshot being sent or received.
pub(crate) type Sealing = Option<(u32, [u8; 8])>;

/// This instance's data keys and the snapshot it is receiving.
#[derive(Default)]
pub(crate) struct SnapSeal {
    pub(crate) dse: Option<Arc<Dse>>,
    /// The snapshot id being received, and what seals it here.
    receiving: Mutex<Option<(String, Sealing)>>,
}

fn head_of(data: &[u8]) -> Result<StreamHead, String> {
    StreamHead::decode(data).ok_or_else(|| "a snapshot's first chunk has no head".to_string())
}

/// XORs what follows the head in `data` (at `offset` of the file) with the stream.
fn xor(
    dse: &Dse,
    (key, stream): (u32, [u8; 8]),
    offset: u64,
    data: &mut [u8],
) -> Result<(), String> {
    let skip = (StreamHead::LEN as u64)
        .saturating_sub(offset)
        .min(data.len() as u64) as usize;
    let at = offset + skip as u64 - StreamHead::LEN as u64;
    dse.stream_xor(key, stream, at, &mut data[skip..])
        .map_err(|e| e.to_string())
}

impl SnapSeal {
    pub(crate) fn new(dse: Option<Arc<Dse>>) -> SnapSeal {
        SnapSeal {
            dse,
            receiving: Mutex::default(),
        }
    }

    /// A chunk read from this instance's snapshot file, made clear for the wire. `sending`
    /// holds what seals the file, learnt from its first chunk.
    pub(crate) fn outgoing(
        &self,
        sending: &mut Sealing,
        offset: u64,
        data: &mut [u8],
    ) -> Result<(), String> {
        if offset == 0 {
            let mut head = head_of(data)?;
            *sending = head.sealed;
            head.sealed = None;
            data[..StreamHead::LEN].copy_from_slice(&head.encode());
        }
        match (*sending, &self.dse) {
            (None, _) => Ok(()),
            (Some(s), Some(d)) => xor(d, s, offset, data),
            (Some(_), None) => Err("this instance's snapshot is sealed and it has no keys".into()),
        }
    }

    /// A chunk of snapshot `id` from the wire, sealed under this instance's own key before
    /// it is written.
    pub(crate) fn incoming(&self, id: &str, offset: u64, data: &mut [u8]) -> Result<(), String> {
        let mut r = lock(&self.receiving);
        let mut sealing = match &*r {
            Some((at, s)) if at == id => *s,
            _ if offset == 0 => None,
            _ => {
                return Err(format!(
                    "a chunk of snapshot {id} arrived before its beginning"
                ));
            }
        };
        self.seal_own(&mut sealing, offset, data)?;
        if offset == 0 {
            *r = Some((id.to_string(), sealing));
        }
        Ok(())
    }

    /// A chunk of a snapshot in clear (from the wire) sealed under this instance's own key;
    /// `sealing` is chosen at the first chunk (offset 0, whose head it rewrites) and kept by
    /// the caller for the others.
    pub(crate) fn seal_own(
        &self,
        sealing: &mut Sealing,
        offset: u64,
        data: &mut [u8],
    ) -> Result<(), String> {
        if offset == 0 {
            let mut head = head_of(data)?;
            if head.sealed.is_some() {
                return Err("a snapshot arrived sealed under another instance's key".into());
            }
            *sealing = match &self.dse {
                Some(d) => Some((d.current(), Dse::new_stream().map_err(|e| e.to_string())?)),
                None => None,
            };
            head.sealed = *sealing;
            data[..StreamHead::LEN].copy_from_slice(&head.encode());
        }
        match (*sealing, &self.dse) {
            (Some(s), Some(d)) => xor(d, s, offset, data),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_snapshot_crosses_in_clear_and_is_sealed_again_by_its_receiver() {
        let dir = tempfile::tempdir().unwrap();
        let mk = |n: &str| {
            let d = dir.path().join(n);
            std::fs::create_dir_all(&d).unwrap();
            let key = dir.path().join(format!("{n}.key"));
            std::fs::write(
                &key,
                sealmq_storage::dse::new_master_hex().unwrap().as_str(),
            )
            .unwrap();
            std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .unwrap();
            let src = sealmq_storage::dse::MasterSource::File(key);
            Dse::create(&d, &src).unwrap();
            Arc::new(Dse::open(&d, &src).unwrap())
        };
        let (a, b) = (mk("A"), mk("B"));
        let plain: Vec<u8> = (0..10_000u32).map(|i| (i % 253) as u8).collect();
        let stream = Dse::new_stream().unwrap();
        let head = StreamHead {
            magic: *b"SMQSTATE",
            version: 1,
            sealed: Some((a.current(), stream)),
        };
        let mut file = head.encode().to_vec();
        let mut body = plain.clone();
        a.stream_xor(a.current(), stream, 0, &mut body).unwrap();
        file.extend_from_slice(&body);
        let (sender, receiver) = (SnapSeal::new(Some(a)), SnapSeal::new(Some(b.clone())));
        let mut sending = None;
        let mut received = Vec::new();
        let mut wire = Vec::new();
        for (from, to) in [(0usize, 40usize), (40, 4100), (4100, file.len())] {
            let mut chunk = file[from..to].to_vec();
            sender
                .outgoing(&mut sending, from as u64, &mut chunk)
                .unwrap();
            wire.extend_from_slice(&chunk);
            receiver.incoming("s1", from as u64, &mut chunk).unwrap();
            received.extend_from_slice(&chunk);
        }
        assert_eq!(
            &wire[StreamHead::LEN..],
            &plain[..],
            "clear on the wire (inside TLS)"
        );
        let h = StreamHead::decode(&received).unwrap();
        let (key, s) = h.sealed.expect("sealed by the receiver");
        let mut back = received[StreamHead::LEN..].to_vec();
        assert_ne!(back, plain);
        b.stream_xor(key, s, 0, &mut back).unwrap();
        assert_eq!(back, plain);
        let mut stray = vec![0u8; 10];
        assert!(
            receiver.incoming("s2", 5000, &mut stray).is_err(),
            "a chunk of another snapshot"
        );
    }
}
