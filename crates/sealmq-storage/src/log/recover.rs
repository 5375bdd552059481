//! The log opened at start-up: every segment's header checked, its records read back in
//! order and passed on, a torn tail of the last segment cut (damage anywhere else is an
//! error), and the writer placed after the last valid record.

use super::*;

impl Log {
    /// Opens (or creates) the log in `cfg.dir`, passing every valid record with an LSN above
    /// `from` to `visit`, in order. A torn tail of the last segment (a partial or corrupt final
    /// record, zeros) is cut; damage anywhere else is an error.
    pub fn open(
        cfg: LogConfig,
        from: Lsn,
        mut visit: impl FnMut(RecordRef<'_>) -> Result<()>,
    ) -> Result<(Log, Recovered)> {
        crate::create_private_dir(&cfg.dir)
            .map_err(|e| StorageError::io("cannot create the log directory", &cfg.dir, e))?;
        let segs = list_segments(&cfg.dir)?;
        let mut rec = Recovered::default();
        let mut infos = Vec::new();
        let mut last_lsn: Lsn = 0;
        let mut tail: Option<Tail> = None;
        let mut zero_ended: Option<(PathBuf, u64)> = None;
        for (i, (number, path)) in segs.iter().enumerate() {
            let is_last = i + 1 == segs.len();
            let mut data = Vec::new();
            File::open(path)
                .and_then(|mut f| f.read_to_end(&mut data))
                .map_err(|e| StorageError::io("cannot read log segment", path, e))?;
            let Some(first_lsn) = segment_header(&data, *number, path, is_last, &mut rec)? else {
                continue;
            };
            // Zeros ended the segment before: only where this one goes on right after its
            // last record (else records were lost to the zeros: damage).
            if let Some((prev, end)) = zero_ended.take()
                && first_lsn != last_lsn + 1
            {
                return Err(StorageError::Corrupt {
                    path: prev,
                    offset: end,
                    detail: format!(
                        "zeros follow LSN {last_lsn} but the next segment begins at {first_lsn}"
                    ),
                });
            }
            // A segment promises its first LSN: a log whose older segments were released and
            // whose last one is still empty goes on from there, never from 1.
            last_lsn = last_lsn.max(first_lsn.saturating_sub(1));
            infos.push(SegInfo {
                number: *number,
                first_lsn,
                path: path.clone(),
            });
            let mut replay = Replay {
                cfg: &cfg,
                path,
                is_last,
                from,
                last_lsn: &mut last_lsn,
                rec: &mut rec,
            };
            let end = replay.records(&data, &mut visit)?;
            if is_last {
                let zeros = data[end as usize..].iter().all(|&b| b == 0);
                tail = Some((*number, path.clone(), end, zeros));
            } else if (end as usize) < data.len() {
                zero_ended = Some((path.clone(), end));
            }
        }
        rec.last_lsn = last_lsn;
        let (number, path, offset, file) =
            position_writer(&cfg, &segs, tail, last_lsn, &mut infos, &mut rec)?;
        let shared = Arc::new(Shared::new(cfg, last_lsn, infos));
        let writer = Writer {
            file,
            path,
            number,
            offset,
            prepared: offset,
            shared: shared.clone(),
        };
        let handle = std::thread::Builder::new()
            .name("sealmq-log-flusher".into())
            .spawn(move || writer.run())
            .map_err(|e| {
                StorageError::io("cannot start the log flusher for", &shared.cfg.dir, e)
            })?;
        Ok((
            Log {
                shared,
                flusher: Mutex::new(Some(handle)),
            },
            rec,
        ))
    }
}

/// A segment's header checked: its first LSN; `None` for a last segment created but whose
/// header never reached the disk (removed: nothing was in it).
fn segment_header(
    data: &[u8],
    number: u64,
    path: &Path,
    is_last: bool,
    rec: &mut Recovered,
) -> Result<Option<Lsn>> {
    let header_ok = data.len() >= SEG_HEADER as usize && {
        let h = &data[..SEG_HEADER as usize];
        h[0..4] == SEG_MAGIC
            && matches!(u16::from_le_bytes([h[4], h[5]]), 1..=SEG_VERSION)
            && u32::from_le_bytes([h[24], h[25], h[26], h[27]]) == crc32c::crc32c(&h[0..24])
            && u64::from_le_bytes(h[8..16].try_into().unwrap_or_default()) == number
    };
    if header_ok {
        return Ok(Some(u64::from_le_bytes(
            data[16..24].try_into().unwrap_or_default(),
        )));
    }
    if is_last && data.len() < SEG_HEADER as usize {
        fs::remove_file(path)
            .map_err(|e| StorageError::io("cannot remove torn segment", path, e))?;
        rec.truncated = Some((path.to_path_buf(), 0));
        return Ok(None);
    }
    Err(StorageError::Corrupt {
        path: path.to_path_buf(),
        offset: 0,
        detail: "bad segment header (not a sealmq log segment, another version, or damaged)".into(),
    })
}

/// One segment's records read back at start-up.
struct Replay<'a> {
    cfg: &'a LogConfig,
    path: &'a Path,
    is_last: bool,
    /// Records at or below this LSN are not visited (a checkpoint holds them).
    from: Lsn,
    last_lsn: &'a mut Lsn,
    rec: &'a mut Recovered,
}

impl Replay<'_> {
    /// Visits the segment's valid records in order; the offset where they end. Zeros after
    /// them end any segment (the caller checks that the next one goes on from there); a torn
    /// tail (a partial or corrupt final record) is allowed only in the last segment, with
    /// nothing valid after it (or anything, for a copy's unsynced tail: `durable_elsewhere`).
    fn records(
        &mut self,
        data: &[u8],
        visit: &mut impl FnMut(RecordRef<'_>) -> Result<()>,
    ) -> Result<u64> {
        let mut off = SEG_HEADER as usize;
        while off < data.len() {
            let Some((r, n)) = parse_record(&data[off..], *self.last_lsn) else {
                // Only zeros left: space the writer laid out ahead, the end of this segment.
                if !data[off..].iter().all(|&b| b == 0) {
                    self.torn_at(data, off)?;
                }
                return Ok(off as u64);
            };
            *self.last_lsn = r.lsn;
            if r.lsn > self.from {
                if r.key_id == 0 {
                    visit(r)?;
                } else {
                    let plain = open_record(self.cfg, &r, self.path, off)?;
                    visit(RecordRef {
                        payload: &plain,
                        ..r
                    })?;
                }
                self.rec.records += 1;
            }
            off += n;
        }
        Ok(data.len() as u64)
    }

    /// A record at `off` fails its checksum or framing: a torn tail, or damage (an error).
    fn torn_at(&self, data: &[u8], off: usize) -> Result<()> {
        let later_valid =
            (off + 1..data.len()).any(|o| parse_record(&data[o..], *self.last_lsn).is_some());
        if !self.is_last || (later_valid && !self.cfg.durable_elsewhere) {
            return Err(StorageError::Corrupt {
                path: self.path.to_path_buf(),
                offset: off as u64,
                detail: "a record fails its checksum or framing and valid records follow it".into(),
            });
        }
        if later_valid {
            tracing::warn!(
                "the log's unsynced tail in {} is damaged at offset {off}: it is cut there, and \
                 what it held is applied again from the Raft log",
                self.path.display()
            );
        }
        Ok(())
    }
}

/// The last segment: its number, path, where its valid records end, and whether only zeros
/// follow them (space laid out ahead by the writer, not a torn record).
type Tail = (u64, PathBuf, u64, bool);

/// Where the writer goes on: the last segment cut after its last valid record, or a new
/// segment when there is none.
fn position_writer(
    cfg: &LogConfig,
    segs: &[(u64, PathBuf)],
    tail: Option<Tail>,
    last_lsn: Lsn,
    infos: &mut Vec<SegInfo>,
    rec: &mut Recovered,
) -> Result<(u64, PathBuf, u64, File)> {
    let Some((number, path, offset, zeros)) = tail else {
        let number = segs.last().map(|(n, _)| n + 1).unwrap_or(1);
        let (f, path) = create_segment(&cfg.dir, number, last_lsn + 1)?;
        infos.push(SegInfo {
            number,
            first_lsn: last_lsn + 1,
            path: path.clone(),
        });
        return Ok((number, path, SEG_HEADER, f));
    };
    let f = OpenOptions::new()
        .write(true)
        .open(&path)
        .map_err(|e| StorageError::io("cannot open log segment", &path, e))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(offset);
    if len > offset {
        f.set_len(offset)
            .map_err(|e| StorageError::io("cannot cut the torn tail of", &path, e))?;
        f.sync_all()
            .map_err(|e| StorageError::io("cannot sync", &path, e))?;
        if !zeros {
            rec.truncated = Some((path.clone(), offset));
        }
    }
    Ok((number, path, offset, f))
}

impl Shared {
    /// The log's shared state once recovered up to `last_lsn`.
    fn new(cfg: LogConfig, last_lsn: Lsn, infos: Vec<SegInfo>) -> Shared {
        Shared {
            state: Mutex::new(State {
                pending: Vec::with_capacity(1 << 16),
                plain: Vec::new(),
                pending_first: 0,
                pending_last: 0,
                batch: Arc::new(Batch::default()),
                next_lsn: last_lsn + 1,
                durable: last_lsn,
                broken: None,
                closed: false,
                flush_wanted: false,
                roll_wanted: false,
                rolls: 0,
                sync_wanted: false,
                syncs: 0,
            }),
            work: Condvar::new(),
            segments: Mutex::new(infos),
            records: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            write_nanos_avg: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            short: AtomicBool::new(!crate::space::ensure(&cfg.dir, cfg.reserve_bytes)),
            low: AtomicBool::new(false),
            low_checked_ms: AtomicU64::new(0),
            cfg,
        }
    }
}
