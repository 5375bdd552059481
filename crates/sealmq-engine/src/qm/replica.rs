//! A replica's copy of a replicated queue manager (issue 26, docs/ha.md): checkpointed like
//! the active instance's so that its log does not grow with the history, and written out as a
//! **state file** — the snapshot an instance too far behind, or whose disk was wiped, installs.
//!
//! [`write_state`] recovers the replica's copy without serving it (`QmConfig::replica_copy`:
//! units of work still open stay open), takes a checkpoint (which releases the log segments
//! before it), and writes the state as of that checkpoint's LSN: the checkpoint's frames,
//! every queued message, and the log records from the checkpoint's replay-from point (the
//! units of work open then). All of it in clear: the file crosses to another instance only
//! inside TLS, and each instance seals what it stores under its own keys.
//! [`install_state`] makes a queue manager's data directory hold that state: queue files and
//! a checkpoint written (and sealed) as this instance's own, and a log that goes on at the
//! same LSNs as the group's.
//!
//! State file, version 1: a 32-byte head (`SMQSTATE`, version u16 LE, flags u16 LE, key id
//! u32 LE, stream id 8 bytes, 8 reserved: `sealmq_storage::dse::StreamHead`); under encryption
//! at rest (flag 1) everything after it is sealed as a stream under that data key
//! (`Dse::stream_xor`: AES-256 counter mode, so that it can be sent in chunks and sealed
//! again by the receiver under its own key). Then frames: length u32 LE of the body, CRC32C
//! u32 LE of tag and body, tag u8, body:
//!
//! | tag | frame | body |
//! | --- | --- | --- |
//! | 1 | HEAD | LSN u64 (the checkpoint's), replay-from LSN u64 |
//! | 2 | CKP | a checkpoint frame (definitions, authority, channels, units of work open, ...) |
//! | 3 | MSG | queue (str), sequence number u64, backout count u32, the message |
//! | 4 | LOG | log records framed as in a segment, unencrypted |
//! | 5 | KEY | the queue manager's policy key |
//! | 6 | END | the number of frames before it, u64 |

use super::*;
use crate::queue::placed_of;
use sealmq_storage::codec::{Dec, Enc};
use sealmq_storage::dse::{Dse, StreamHead};
use sealmq_storage::qstore::{IndexOp, QueueStore};
use sealmq_types::sync::{lock, read};
use std::io::{BufReader, BufWriter, Read, Write};

/// Where a replicated queue manager keeps its state files (`sealmq-ha`'s `ha/snapshot`):
/// their data keys stay in the keyring.
pub(crate) const STATE_DIR: &str = "ha/snapshot";
const MAGIC: &[u8; 8] = b"SMQSTATE";
const VERSION: u16 = 1;
const HEAD: u8 = 1;
const CKP: u8 = 2;
const MSG: u8 = 3;
const LOG: u8 = 4;
const KEY: u8 = 5;
const END: u8 = 6;
/// Largest frame read back (a message of 100 MiB and its descriptor; a log run).
const MAX_FRAME: usize = 300 << 20;
/// Log records gathered into one LOG frame.
const LOG_RUN: usize = 1 << 20;

fn io_err(what: &str, p: &Path, e: std::io::Error) -> MqError {
    MqError::new(
        ReasonCode::ResourceProblem,
        format!("{what} {}: {e}", p.display()),
    )
}

fn bad(p: &Path, detail: impl std::fmt::Display) -> MqError {
    MqError::new(
        ReasonCode::ResourceProblem,
        format!("state file {} is not usable: {detail}", p.display()),
    )
}

/// Sealing of a state file after its head: the data key, the stream, and where it stands.
struct Seal {
    dse: Arc<Dse>,
    key: u32,
    stream: [u8; 8],
    pos: u64,
}

impl Seal {
    fn apply(&mut self, bytes: &mut [u8]) -> MqResult<()> {
        self.dse
            .stream_xor(self.key, self.stream, self.pos, bytes)?;
        self.pos += bytes.len() as u64;
        Ok(())
    }
}

struct Writer {
    out: BufWriter<std::fs::File>,
    path: PathBuf,
    frames: u64,
    seal: Option<Seal>,
}

impl Writer {
    fn write(&mut self, bytes: &[u8]) -> MqResult<()> {
        let sealed;
        let bytes = match &mut self.seal {
            None => bytes,
            Some(s) => {
                let mut b = bytes.to_vec();
                s.apply(&mut b)?;
                sealed = b;
                &sealed[..]
            }
        };
        self.out
            .write_all(bytes)
            .map_err(|e| io_err("cannot write", &self.path, e))
    }

    fn frame(&mut self, tag: u8, body: &[u8]) -> MqResult<()> {
        let mut crc = crc32c::crc32c(&[tag]);
        crc = crc32c::crc32c_append(crc, body);
        let mut head = [0u8; 9];
        head[..4].copy_from_slice(&(body.len() as u32).to_le_bytes());
        head[4..8].copy_from_slice(&crc.to_le_bytes());
        head[8] = tag;
        self.write(&head)?;
        self.write(body)?;
        self.frames += 1;
        Ok(())
    }
}

/// The data key a state file is sealed under, if it is (the keyring keeps that key).
pub fn state_key_id(path: &Path) -> Option<u32> {
    let mut head = [0u8; StreamHead::LEN];
    let mut f = std::fs::File::open(path).ok()?;
    f.read_exact(&mut head).ok()?;
    StreamHead::decode(&head)
        .filter(|h| &h.magic == MAGIC)
        .and_then(|h| h.sealed)
        .map(|(k, _)| k)
}

/// Checkpoints a replica's copy of the queue manager in `cfg.dir` (its log must be closed:
/// this opens it) and writes its state to `to`. Returns the checkpoint's LSN, the LSN the state
/// stands at.
pub fn write_state(mut cfg: QmConfig, to: &Path) -> MqResult<Lsn> {
    cfg.replica_copy = true;
    cfg.replicator = None;
    let (qm, _) = QueueManager::recover(cfg.clone())?;
    let lsn = qm.checkpoint()?;
    let replay_from = lock(&qm.active)
        .values()
        .copied()
        .min()
        .unwrap_or(lsn)
        .min(lsn);
    let file =
        sealmq_storage::create_private_file(to).map_err(|e| io_err("cannot create", to, e))?;
    let seal = match &cfg.dse {
        Some(d) => Some(Seal {
            dse: d.clone(),
            key: d.current(),
            stream: Dse::new_stream()?,
            pos: 0,
        }),
        None => None,
    };
    let head = StreamHead {
        magic: *MAGIC,
        version: VERSION,
        sealed: seal.as_ref().map(|s| (s.key, s.stream)),
    };
    let mut w = Writer {
        out: BufWriter::with_capacity(1 << 20, file),
        path: to.to_path_buf(),
        frames: 0,
        seal: None,
    };
    w.write(&head.encode())?;
    w.seal = seal;
    let mut e = Enc::new();
    e.u64(lsn).u64(replay_from);
    w.frame(HEAD, &e.buf)?;
    // The checkpoint just written, as this state's definitions (its queue files' places are
    // this instance's own: the receiver writes its own).
    if let Some((_, mut reader)) =
        checkpoint::latest_with(&cfg.dir.join("checkpoint"), cfg.dse.clone())?
    {
        while let Some(bytes) = reader.next_frame()? {
            match Frame::decode(&bytes)? {
                Frame::Format(_) | Frame::QueueIndex { .. } | Frame::Message { .. } => {}
                _ => w.frame(CKP, &bytes)?,
            }
        }
    }
    let locals: Vec<Arc<LocalQueue>> = read(&qm.locals).values().cloned().collect();
    for q in locals {
        let st = q.lock();
        for (_, entry) in st.entries.iter() {
            if entry.is_tomb() {
                continue;
            }
            let msg = st.message(entry)?;
            let mut e = Enc::with_capacity(256 + msg.payload.len());
            e.str(&q.name).u64(entry.seq).u32(entry.backout_count);
            msg.encode(&mut e);
            w.frame(MSG, &e.buf)?;
        }
    }
    qm.log.close();
    drop(qm);
    // The records of the units of work open at the checkpoint.
    let mut log_cfg = LogConfig::new(cfg.dir.join("log"));
    log_cfg.dse = cfg.dse.clone();
    let mut run = Vec::new();
    let mut failed = None;
    let (log, _) = Log::open(log_cfg, replay_from, |r| {
        if r.lsn <= lsn {
            sealmq_storage::log::frame(&mut run, r.lsn, 0, r.kind, r.payload);
        }
        if run.len() >= LOG_RUN && failed.is_none() {
            failed = w.frame(LOG, &run).err();
            run.clear();
        }
        Ok(())
    })?;
    log.close();
    if let Some(e) = failed {
        return Err(e);
    }
    if !run.is_empty() {
        w.frame(LOG, &run)?;
    }
    match std::fs::read(cfg.dir.join(sealmq_storage::POLICY_KEY_FILE)) {
        Ok(k) => w.frame(KEY, &k)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err("cannot read", &cfg.dir, e)),
    }
    let n = w.frames;
    w.frame(END, &n.to_le_bytes())?;
    let file = w
        .out
        .into_inner()
        .map_err(|e| io_err("cannot write", to, e.into_error()))?;
    file.sync_all().map_err(|e| io_err("cannot sync", to, e))?;
    Ok(lsn)
}

struct Reader {
    input: BufReader<std::fs::File>,
    path: PathBuf,
    frames: u64,
    seal: Option<Seal>,
}

impl Reader {
    fn open(path: &Path, dse: Option<&Arc<Dse>>) -> MqResult<Reader> {
        let f = std::fs::File::open(path).map_err(|e| io_err("cannot open", path, e))?;
        let mut input = BufReader::with_capacity(1 << 20, f);
        let mut head = [0u8; StreamHead::LEN];
        input
            .read_exact(&mut head)
            .map_err(|_| bad(path, "it is shorter than its head"))?;
        let Some(head) = StreamHead::decode(&head).filter(|h| &h.magic == MAGIC) else {
            return Err(bad(path, "not a sealmq state file"));
        };
        if head.version != VERSION {
            return Err(bad(
                path,
                format!("version {}; this build reads {VERSION}", head.version),
            ));
        }
        let seal = match (head.sealed, dse) {
            (None, _) => None,
            (Some((key, stream)), Some(d)) => Some(Seal {
                dse: d.clone(),
                key,
                stream,
                pos: 0,
            }),
            (Some(_), None) => {
                return Err(bad(path, "it is sealed and this instance has no keys"));
            }
        };
        Ok(Reader {
            input,
            path: path.to_path_buf(),
            frames: 0,
            seal,
        })
    }

    fn read(&mut self, buf: &mut [u8], what: &str) -> MqResult<()> {
        self.input
            .read_exact(buf)
            .map_err(|_| bad(&self.path, what))?;
        if let Some(s) = &mut self.seal {
            s.apply(buf)?;
        }
        Ok(())
    }

    /// The next frame: its tag and body (the END frame checked and not returned).
    fn next(&mut self) -> MqResult<Option<(u8, Vec<u8>)>> {
        let mut head = [0u8; 9];
        self.read(&mut head, "it ends without its END frame")?;
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        if len > MAX_FRAME {
            return Err(bad(&self.path, format!("a frame of {len} bytes")));
        }
        let mut body = vec![0u8; len];
        self.read(&mut body, "a frame is cut short")?;
        if crc32c::crc32c_append(crc32c::crc32c(&[head[8]]), &body) != crc {
            return Err(bad(
                &self.path,
                format!("frame {} fails its CRC", self.frames),
            ));
        }
        if head[8] == END {
            let n = body.try_into().map(u64::from_le_bytes).unwrap_or(u64::MAX);
            if n != self.frames {
                return Err(bad(&self.path, "its END frame counts other frames"));
            }
            return Ok(None);
        }
        self.frames += 1;
        Ok(Some((head[8], body)))
    }
}

/// One queue's messages being written to its new files.
struct Filling {
    queue: String,
    store: QueueStore,
    placed: Vec<sealmq_storage::qstore::Placed>,
}

impl Filling {
    fn finish(self, lsn: Lsn, frames: &mut Vec<Frame>) -> MqResult<()> {
        let ops: Vec<IndexOp> = self.placed.into_iter().map(IndexOp::Add).collect();
        self.store.commit(lsn, &ops)?;
        let end = self.store.index_end();
        frames.push(Frame::QueueIndex {
            queue: self.queue,
            file: end.file,
            len: end.len,
        });
        Ok(())
    }
}

/// Makes the data directory of `cfg` hold the state in `from` (written by [`write_state`]):
/// whatever its log, checkpoints and queue files held is removed first. Returns the LSN the
/// state stands at; the log goes on after it.
pub fn install_state(cfg: &QmConfig, from: &Path) -> MqResult<Lsn> {
    // Read whole once before anything is removed: a damaged file changes nothing.
    let mut check = Reader::open(from, cfg.dse.as_ref())?;
    while check.next()?.is_some() {}
    let mut r = Reader::open(from, cfg.dse.as_ref())?;
    let Some((HEAD, head)) = r.next()? else {
        return Err(bad(from, "it does not begin with HEAD"));
    };
    let mut d = Dec::new(&head, "state file head");
    let (lsn, replay_from) = (d.u64()?, d.u64()?);
    if replay_from > lsn {
        return Err(bad(from, "its replay point is after its LSN"));
    }
    for sub in ["log", "checkpoint", "queues"] {
        let p = cfg.dir.join(sub);
        match std::fs::remove_dir_all(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("cannot remove", &p, e)),
        }
    }
    let mut store_cfg = sealmq_storage::qstore::StoreConfig::new(cfg.dse.clone());
    store_cfg.sync = cfg.sync;
    let root = cfg.dir.join("queues");
    let mut frames = vec![Frame::Format(checkpoints::FRAMES_VERSION)];
    let mut meta = None;
    let mut filling: Option<Filling> = None;
    let mut records = Vec::new();
    let mut key = None;
    while let Some((tag, body)) = r.next()? {
        match tag {
            CKP => match Frame::decode(&body)? {
                m @ Frame::Meta { .. } => meta = Some(m),
                Frame::Format(_) | Frame::QueueIndex { .. } | Frame::Message { .. } => {}
                f => frames.push(f),
            },
            MSG => {
                let mut d = Dec::new(&body, "state file message");
                let (queue, seq, backout) = (d.str()?, d.u64()?, d.u32()?);
                let at = 4 + queue.len() + 8 + 4;
                let msg = Message::decode(&mut d)?;
                if filling.as_ref().is_none_or(|f| f.queue != queue) {
                    if let Some(f) = filling.take() {
                        f.finish(lsn, &mut frames)?;
                    }
                    let dir = sealmq_storage::qstore::queue_dir(&root, &queue);
                    let (store, _) = QueueStore::open(&dir, store_cfg.clone(), lsn)?;
                    filling = Some(Filling {
                        queue,
                        store,
                        placed: Vec::new(),
                    });
                }
                if let Some(f) = filling.as_mut() {
                    let loc = f.store.append(seq, true, &body[at..])?;
                    f.placed.push(placed_of(seq, &msg, backout, loc));
                }
            }
            LOG => records.extend_from_slice(&body),
            KEY => key = Some(body),
            HEAD => return Err(bad(from, "a second HEAD")),
            t => return Err(bad(from, format!("unknown frame tag {t}"))),
        }
    }
    if let Some(f) = filling.take() {
        f.finish(lsn, &mut frames)?;
    }
    let Some(meta) = meta else {
        return Err(bad(from, "it has no checkpoint META frame"));
    };
    let mut w = CheckpointWriter::create_with(&cfg.dir.join("checkpoint"), lsn, cfg.dse.clone())?;
    w.frame(&meta.encode())?;
    for f in frames {
        w.frame(&f.encode())?;
    }
    w.finish()?;
    let mut log_cfg = LogConfig::new(cfg.dir.join("log"));
    log_cfg.dse = cfg.dse.clone();
    log_cfg.segment_bytes = cfg.segment_bytes;
    Log::begin_at(&log_cfg, replay_from + 1)?;
    let (log, _) = Log::open(log_cfg, u64::MAX, |_| Ok(()))?;
    if let Some(t) = log.append_replicated(&records)? {
        log.wait(&t)?;
    }
    let held = log.last_lsn();
    log.close();
    if held != lsn {
        return Err(bad(
            from,
            format!("its log records end at {held}, not at {lsn}"),
        ));
    }
    if let Some(k) = key {
        let p = cfg.dir.join(sealmq_storage::POLICY_KEY_FILE);
        let tmp = cfg.dir.join("policy.key.tmp");
        let mut f = sealmq_storage::create_private_file(&tmp)
            .map_err(|e| io_err("cannot create", &tmp, e))?;
        f.write_all(&k)
            .and_then(|()| f.sync_all())
            .map_err(|e| io_err("cannot write", &tmp, e))?;
        std::fs::rename(&tmp, &p).map_err(|e| io_err("cannot replace", &p, e))?;
    }
    Ok(lsn)
}
