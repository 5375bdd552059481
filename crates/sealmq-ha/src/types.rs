//! The Raft type configuration: what an entry carries between instances.

use serde::{Deserialize, Serialize};

/// One batch of the active instance's recovery log: records framed as in a log segment
/// (unencrypted: each instance seals its own copy), LSNs `first_lsn..=last_lsn`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batch {
    pub first_lsn: u64,
    pub last_lsn: u64,
    #[serde(with = "bytes")]
    pub records: Vec<u8>,
}

/// A byte vector as serde's bytes (postcard: its length, then the bytes — the same as a
/// sequence of u8, written and read at once instead of byte by byte).
mod bytes {
    use serde::de::{SeqAccess, Visitor};
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                Ok(v.to_vec())
            }
            fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
                Ok(v)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Vec<u8>, A::Error> {
                let mut v = Vec::with_capacity(a.size_hint().unwrap_or(0).min(1 << 20));
                while let Some(b) = a.next_element()? {
                    v.push(b);
                }
                Ok(v)
            }
        }
        d.deserialize_byte_buf(V)
    }

    #[cfg(test)]
    mod tests {
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct Seq(Vec<u8>);
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct Bytes(#[serde(with = "super")] Vec<u8>);

        #[test]
        fn bytes_are_written_as_the_sequence_was() {
            let v: Vec<u8> = (0..=255).collect();
            let seq = postcard::to_stdvec(&Seq(v.clone())).unwrap();
            let bytes = postcard::to_stdvec(&Bytes(v.clone())).unwrap();
            assert_eq!(seq, bytes, "the Raft log's format does not change");
            assert_eq!(postcard::from_bytes::<Bytes>(&seq).unwrap(), Bytes(v));
        }
    }
}

/// What an entry of the group's log changes on every instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Change {
    /// A batch of the active instance's recovery log.
    Log(Batch),
    /// The queue manager's policy key (`policy.key`): the stored policies' tags verify on
    /// whichever instance is active.
    PolicyKey(Vec<u8>),
}

openraft::declare_raft_types!(
    /// sealmq's Raft types: entries carry log batches; nothing is answered but "committed".
    pub Ha:
        D = Change,
        R = (),
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<Ha>,
        SnapshotData = tokio::fs::File,
        AsyncRuntime = openraft::TokioRuntime,
);

pub type NodeId = u64;
pub type LogId = openraft::LogId<NodeId>;
pub type Entry = openraft::Entry<Ha>;
pub type StorageError = openraft::StorageError<NodeId>;
pub type Membership = openraft::StoredMembership<NodeId, openraft::BasicNode>;

/// A storage error for openraft from an I/O or format failure.
pub fn sto_err(what: &str, e: impl std::fmt::Display) -> StorageError {
    openraft::StorageError::from_io_error(
        openraft::ErrorSubject::Store,
        openraft::ErrorVerb::Write,
        std::io::Error::other(format!("{what}: {e}")),
    )
}
