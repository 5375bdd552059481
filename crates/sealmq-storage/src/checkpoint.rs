//! Checkpoints: snapshot files written atomically (temporary file, sync, rename, sync of the
//! directory), so that a restart loads the snapshot and replays only the log after it.
//!
//! File `CP<lsn>.ckp`: a 32-byte header (magic `SMQC`, version, LSN, key id, CRC), then frames
//! `len u32, crc32c u32, bytes`, then a trailer frame (`len = u32::MAX`, CRC of the count, frame
//! count u64). A file without its trailer was never renamed into place and is ignored; a frame
//! that fails its CRC is damage and an error.

use crate::dse::Dse;
use crate::error::{Result, StorageError};
use crate::log::Lsn;
use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const MAGIC: [u8; 4] = *b"SMQC";
const VERSION: u16 = 1;
const HEADER: usize = 32;
const TRAILER: u32 = u32::MAX;
const MAX_FRAME: usize = 512 << 20;

fn name(lsn: Lsn) -> String {
    format!("CP{lsn:020}.ckp")
}

/// Writes one checkpoint. Callers take one checkpoint at a time.
pub struct CheckpointWriter {
    dir: PathBuf,
    tmp: PathBuf,
    lsn: Lsn,
    out: BufWriter<File>,
    frames: u64,
    /// Encryption at rest: every frame sealed with the data key the header names.
    dse: Option<Arc<Dse>>,
    key_id: u32,
    /// Removes the temporary file of a checkpoint that did not finish (a full disk must not
    /// be left fuller by half-written checkpoints).
    _leftover: Leftover,
}

struct Leftover(Option<PathBuf>);

impl Drop for Leftover {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = fs::remove_file(p);
        }
    }
}

/// Associated data of checkpoint frame `index` of the checkpoint at `lsn`: a frame moved to
/// another place or another checkpoint does not open.
fn frame_aad(lsn: Lsn, index: u64) -> [u8; 20] {
    let mut a = [0u8; 20];
    a[..4].copy_from_slice(b"CKP:");
    a[4..12].copy_from_slice(&lsn.to_le_bytes());
    a[12..].copy_from_slice(&index.to_le_bytes());
    a
}

impl CheckpointWriter {
    pub fn create(dir: &Path, lsn: Lsn) -> Result<CheckpointWriter> {
        Self::create_with(dir, lsn, None)
    }

    /// [`CheckpointWriter::create`], sealing every frame when `dse` is given.
    pub fn create_with(dir: &Path, lsn: Lsn, dse: Option<Arc<Dse>>) -> Result<CheckpointWriter> {
        crate::create_private_dir(dir)
            .map_err(|e| StorageError::io("cannot create checkpoint directory", dir, e))?;
        // A temporary name of this writer's own: two checkpoints at one LSN (a queue manager
        // stopping and the next one of the same directory, with no record between) must not
        // write, rename or remove each other's file.
        static WRITERS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = WRITERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let stem = name(lsn);
        let stem = stem.strip_suffix(".ckp").unwrap_or(&stem);
        let tmp = dir.join(format!("{stem}.{}-{n}.ckp.tmp", std::process::id()));
        let f = crate::create_private_file(&tmp)
            .map_err(|e| StorageError::io("cannot create checkpoint", &tmp, e))?;
        let leftover = Leftover(Some(tmp.clone()));
        let mut out = BufWriter::with_capacity(1 << 20, f);
        let mut h = [0u8; HEADER];
        h[0..4].copy_from_slice(&MAGIC);
        h[4..6].copy_from_slice(&VERSION.to_le_bytes());
        h[8..16].copy_from_slice(&lsn.to_le_bytes());
        // bytes 16..20: key id (0 = clear)
        let key_id = dse.as_ref().map(|d| d.current()).unwrap_or(0);
        h[16..20].copy_from_slice(&key_id.to_le_bytes());
        let crc = crc32c::crc32c(&h[0..24]);
        h[24..28].copy_from_slice(&crc.to_le_bytes());
        out.write_all(&h)
            .map_err(|e| StorageError::io("cannot write checkpoint", &tmp, e))?;
        Ok(CheckpointWriter {
            dir: dir.to_path_buf(),
            _leftover: leftover,
            tmp,
            lsn,
            out,
            frames: 0,
            dse,
            key_id,
        })
    }

    /// The data key this checkpoint is sealed with (0: in clear).
    pub fn key_id(&self) -> u32 {
        self.key_id
    }

    pub fn frame(&mut self, bytes: &[u8]) -> Result<()> {
        let sealed;
        let bytes = match &self.dse {
            Some(d) => {
                sealed = d.seal(self.key_id, &frame_aad(self.lsn, self.frames), bytes)?;
                &sealed[..]
            }
            None => bytes,
        };
        if bytes.len() > MAX_FRAME {
            return Err(StorageError::Decode(format!(
                "checkpoint frame of {} bytes is too large",
                bytes.len()
            )));
        }
        let crc = crc32c::crc32c(bytes);
        self.out
            .write_all(&(bytes.len() as u32).to_le_bytes())
            .and_then(|_| self.out.write_all(&crc.to_le_bytes()))
            .and_then(|_| self.out.write_all(bytes))
            .map_err(|e| StorageError::io("cannot write checkpoint", &self.tmp, e))?;
        self.frames += 1;
        Ok(())
    }

    /// Makes the checkpoint durable and current, and removes older ones.
    pub fn finish(mut self) -> Result<PathBuf> {
        let count = self.frames.to_le_bytes();
        let tmp = self.tmp.clone();
        let err = |e| StorageError::io("cannot finish checkpoint", &tmp, e);
        self.out.write_all(&TRAILER.to_le_bytes()).map_err(err)?;
        self.out
            .write_all(&crc32c::crc32c(&count).to_le_bytes())
            .map_err(err)?;
        self.out.write_all(&count).map_err(err)?;
        let f = self.out.into_inner().map_err(|e| err(e.into_error()))?;
        f.sync_all().map_err(err)?;
        let dest = self.dir.join(name(self.lsn));
        fs::rename(&self.tmp, &dest).map_err(err)?;
        self._leftover.0 = None;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| StorageError::io("cannot sync", &self.dir, e))?;
        for (lsn, path) in list(&self.dir, false)? {
            if lsn < self.lsn {
                let _ = fs::remove_file(path);
            }
        }
        Ok(dest)
    }
}

fn list(dir: &Path, clean_tmp: bool) -> Result<Vec<(Lsn, PathBuf)>> {
    let mut out = Vec::new();
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(StorageError::io("cannot list checkpoints in", dir, e)),
    };
    for entry in rd.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".ckp.tmp") {
            if clean_tmp {
                let _ = fs::remove_file(entry.path()); // never completed (at start only)
            }
            continue;
        }
        if let Some(n) = name.strip_prefix("CP").and_then(|r| r.strip_suffix(".ckp"))
            && let Ok(lsn) = n.parse::<u64>()
        {
            out.push((lsn, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Reads one checkpoint frame by frame.
pub struct CheckpointReader {
    path: PathBuf,
    input: BufReader<File>,
    offset: u64,
    frames: u64,
    done: bool,
    lsn: Lsn,
    key_id: u32,
    dse: Option<Arc<Dse>>,
}

/// The newest complete checkpoint in `dir`, if any: its LSN and a reader.
pub fn latest(dir: &Path) -> Result<Option<(Lsn, CheckpointReader)>> {
    latest_with(dir, None)
}

/// [`latest`], opening sealed frames with `dse`.
pub fn latest_with(dir: &Path, dse: Option<Arc<Dse>>) -> Result<Option<(Lsn, CheckpointReader)>> {
    let Some((lsn, path)) = list(dir, true)?.pop() else {
        return Ok(None);
    };
    let f = File::open(&path).map_err(|e| StorageError::io("cannot open checkpoint", &path, e))?;
    let mut input = BufReader::with_capacity(1 << 20, f);
    let mut h = [0u8; HEADER];
    input
        .read_exact(&mut h)
        .map_err(|e| StorageError::io("cannot read checkpoint", &path, e))?;
    let ok = h[0..4] == MAGIC
        && u16::from_le_bytes([h[4], h[5]]) == VERSION
        && u32::from_le_bytes([h[24], h[25], h[26], h[27]]) == crc32c::crc32c(&h[0..24])
        && u64::from_le_bytes(h[8..16].try_into().unwrap_or_default()) == lsn;
    if !ok {
        return Err(StorageError::Corrupt {
            path,
            offset: 0,
            detail: "bad checkpoint header".into(),
        });
    }
    let key_id = u32::from_le_bytes([h[16], h[17], h[18], h[19]]);
    if key_id != 0 && dse.as_ref().is_none_or(|d| !d.has_key(key_id)) {
        return Err(StorageError::Key(format!(
            "checkpoint {} is encrypted with data key {key_id}, which this start does not have (start the queue manager with its master key)",
            path.display()
        )));
    }
    Ok(Some((
        lsn,
        CheckpointReader {
            path,
            input,
            offset: HEADER as u64,
            frames: 0,
            done: false,
            lsn,
            key_id,
            dse,
        },
    )))
}

impl CheckpointReader {
    fn corrupt(&self, detail: &str) -> StorageError {
        StorageError::Corrupt {
            path: self.path.clone(),
            offset: self.offset,
            detail: detail.into(),
        }
    }

    /// The next frame, or `None` after the trailer.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>> {
        if self.done {
            return Ok(None);
        }
        let mut h = [0u8; 8];
        self.input
            .read_exact(&mut h)
            .map_err(|_| self.corrupt("ends before its trailer"))?;
        let len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let crc = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
        if len == TRAILER {
            let mut c = [0u8; 8];
            self.input
                .read_exact(&mut c)
                .map_err(|_| self.corrupt("truncated trailer"))?;
            if crc32c::crc32c(&c) != crc || u64::from_le_bytes(c) != self.frames {
                return Err(self.corrupt("trailer does not match the frames read"));
            }
            self.done = true;
            return Ok(None);
        }
        let len = len as usize;
        if len > MAX_FRAME {
            return Err(self.corrupt("frame length out of range"));
        }
        let mut buf = vec![0u8; len];
        self.input
            .read_exact(&mut buf)
            .map_err(|_| self.corrupt("truncated frame"))?;
        if crc32c::crc32c(&buf) != crc {
            return Err(self.corrupt("frame fails its checksum"));
        }
        let buf = match (&self.dse, self.key_id) {
            (Some(d), k) if k != 0 => d
                .open_sealed(k, &frame_aad(self.lsn, self.frames), &buf)
                .ok_or_else(|| self.corrupt("an encrypted frame fails authentication"))?,
            _ => buf,
        };
        self.offset += 8 + len as u64;
        self.frames += 1;
        Ok(Some(buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_read_and_replace() {
        let d = tempfile::tempdir().unwrap();
        assert!(latest(d.path()).unwrap().is_none());
        let mut w = CheckpointWriter::create(d.path(), 10).unwrap();
        w.frame(b"one").unwrap();
        w.frame(b"two").unwrap();
        w.finish().unwrap();
        let mut w = CheckpointWriter::create(d.path(), 20).unwrap();
        w.frame(b"three").unwrap();
        // An unfinished checkpoint is not seen.
        drop(w);
        let (lsn, mut r) = latest(d.path()).unwrap().unwrap();
        assert_eq!(lsn, 10);
        assert_eq!(r.next_frame().unwrap().unwrap(), b"one");
        assert_eq!(r.next_frame().unwrap().unwrap(), b"two");
        assert!(r.next_frame().unwrap().is_none());
        let mut w = CheckpointWriter::create(d.path(), 30).unwrap();
        w.frame(b"x").unwrap();
        w.finish().unwrap();
        assert_eq!(
            list(d.path(), false).unwrap().len(),
            1,
            "older checkpoints removed"
        );
    }

    #[test]
    fn damage_is_reported() {
        let d = tempfile::tempdir().unwrap();
        let mut w = CheckpointWriter::create(d.path(), 5).unwrap();
        w.frame(b"hello world").unwrap();
        let path = w.finish().unwrap();
        let mut bytes = fs::read(&path).unwrap();
        bytes[HEADER + 10] ^= 1;
        fs::write(&path, &bytes).unwrap();
        let (_, mut r) = latest(d.path()).unwrap().unwrap();
        assert!(r.next_frame().unwrap_err().to_string().contains("checksum"));
        let len = bytes.len();
        fs::write(&path, &bytes[..len - 5]).unwrap();
        let (_, mut r) = latest(d.path()).unwrap().unwrap();
        assert!(r.next_frame().is_err() || r.next_frame().is_err());
    }
}
