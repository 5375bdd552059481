//! The store opened at start-up as of a checkpoint: the index files that hold its state
//! chosen (those of a checkpoint that never completed removed), their batches read back into
//! the live set (a torn tail of the newest cut, damage before what the checkpoint made
//! durable an error), and the data files the index names kept (leftovers removed).

use super::*;

impl QueueStore {
    /// [`QueueStore::open`], knowing where the index ended when checkpoint `upto` completed
    /// (`durable`): a damaged record before that point, or an index shorter than it, stops the
    /// open with an error naming file and offset instead of being cut as a torn tail.
    pub fn open_as_of(
        dir: &Path,
        cfg: StoreConfig,
        upto: u64,
        durable: Option<IndexEnd>,
    ) -> Result<(QueueStore, Vec<Placed>)> {
        crate::create_private_dir(dir).map_err(|e| io("cannot create", dir, e))?;
        for (_, p) in file::list(dir, Kind::Spill)? {
            std::fs::remove_file(&p).map_err(|e| io("cannot remove", &p, e))?;
        }
        let dse = cfg.dse.clone();
        let indexes = index_files(dir, dse.as_deref(), upto)?;
        if let Some(end) = durable
            && indexes.last().is_none_or(|(n, _)| *n < end.file)
        {
            return Err(file::corrupt(
                &dir.join(Kind::Index.name(end.file)),
                0,
                "the index file the last checkpoint wrote is missing",
            ));
        }
        let mut read = IndexRead {
            dse: dse.as_deref(),
            upto,
            durable,
            set: LiveSet::default(),
            bytes: 0,
            min_key: 0,
        };
        let mut last: Option<(u32, DataFile)> = None;
        for (i, (n, p)) in indexes.iter().enumerate() {
            let newest = i + 1 == indexes.len();
            last = Some((*n, read.file(*n, p, newest)?));
        }
        let (index_no, mut index) = match last {
            Some(x) => x,
            None => (1, create_file(dir, Kind::Index, 1)?),
        };
        index.min_key = read.min_key;
        let index_bytes = read.bytes;
        let placed = read.set.finish();
        let data = data_files(dir, dse.as_deref(), &placed)?;
        let store = QueueStore {
            dir: dir.to_path_buf(),
            cfg,
            inner: Mutex::new(Inner {
                data,
                spill: Files {
                    next: 1,
                    ..Default::default()
                },
                index,
                index_no,
                index_bytes,
                void_indexes: Vec::new(),
            }),
        };
        Ok((store, placed))
    }
}

/// The index files the state is read from: from the newest one starting with a BASE record
/// of a completed checkpoint; older ones, and those of a checkpoint that never completed
/// (void), are removed.
fn index_files(dir: &Path, dse: Option<&Dse>, upto: u64) -> Result<Vec<(u32, PathBuf)>> {
    let mut indexes = file::list(dir, Kind::Index)?;
    let mut start = 0;
    let mut void = Vec::new();
    for (i, (n, p)) in indexes.iter().enumerate() {
        let f = open_file(p, Kind::Index, *n)?;
        if let Ok(r) = file::read_at(&f.file, p, dse, Kind::Index, *n, HEADER, f.len)
            && r.kind == index::BASE
        {
            if r.seq > upto {
                void.push(i);
            } else {
                start = i;
            }
        }
    }
    if let Some(first_void) = void.first().copied() {
        for (_, p) in indexes.drain(first_void..) {
            std::fs::remove_file(&p).map_err(|e| io("cannot remove", &p, e))?;
        }
    }
    for (_, p) in indexes.drain(..start) {
        std::fs::remove_file(&p).map_err(|e| io("cannot remove", &p, e))?;
    }
    Ok(indexes)
}

/// The index read back, file by file, into the live set.
struct IndexRead<'a> {
    dse: Option<&'a Dse>,
    upto: u64,
    durable: Option<IndexEnd>,
    set: LiveSet,
    /// Bytes of index batches read.
    bytes: u64,
    /// The oldest data-encryption key the index needs (0: none).
    min_key: u32,
}

impl IndexRead<'_> {
    /// Whether a record at `at` of index file `n` was durable at the checkpoint.
    fn covered(&self, n: u32, at: u64) -> bool {
        self.durable
            .is_some_and(|e| n < e.file || (n == e.file && at < e.len))
    }

    /// Index file `n` read: its batches applied; in the `newest` file, batches of a
    /// checkpoint that never completed and a torn tail are cut.
    fn file(&mut self, n: u32, p: &Path, newest: bool) -> Result<DataFile> {
        let mut f = open_file(p, Kind::Index, n)?;
        if let Some(end) = self.durable
            && n == end.file
            && f.len < end.len
        {
            return Err(file::corrupt(
                p,
                f.len,
                format!(
                    "the index ends here, but the last checkpoint made {} bytes of it durable",
                    end.len
                ),
            ));
        }
        let mut at = HEADER;
        while at < f.len {
            match file::read_at(&f.file, p, self.dse, Kind::Index, n, at, f.len) {
                Ok(r) if r.seq > self.upto && newest => {
                    // Written by a checkpoint that never completed: the log replays it.
                    tracing::warn!(file = %p.display(), offset = at, checkpoint = r.seq,
                        "index batches of an incomplete checkpoint: cut");
                    cut(&f, p, at)?;
                    f.len = at;
                }
                Ok(r) => {
                    let ops = index::decode(&r.payload).map_err(|e| {
                        file::corrupt(p, at, format!("an index batch does not decode: {e}"))
                    })?;
                    if r.kind == index::BASE {
                        self.set = LiveSet::default();
                    }
                    if r.key_id != 0 && (self.min_key == 0 || r.key_id < self.min_key) {
                        self.min_key = r.key_id;
                    }
                    self.set.apply(ops);
                    self.bytes += r.end - at;
                    at = r.end;
                }
                Err(ReadErr::Torn(why))
                    if newest
                        && !self.covered(n, at)
                        && !file::anything_after(&f.file, at, f.len) =>
                {
                    // A batch torn by a crash never completed its checkpoint: cut it.
                    tracing::warn!(file = %p.display(), offset = at, "{why}: cut");
                    cut(&f, p, at)?;
                    f.len = at;
                }
                Err(ReadErr::Torn(why)) => return Err(file::corrupt(p, at, why)),
                Err(ReadErr::Bad(e)) => return Err(e),
            }
        }
        Ok(f)
    }
}

/// Data files: the ones the index names stay (with the live bytes it places there); others
/// are leftovers of a checkpoint that never completed, removed.
fn data_files(dir: &Path, dse: Option<&Dse>, placed: &[Placed]) -> Result<Files> {
    let mut data = Files::default();
    for pl in placed {
        if let std::collections::btree_map::Entry::Vacant(slot) = data.files.entry(pl.loc.file) {
            let p = dir.join(Kind::Data.name(pl.loc.file));
            let mut f = open_file(&p, Kind::Data, pl.loc.file)?;
            // Records are appended under the data key of their time: the first is the
            // oldest key the file needs.
            if let Ok(r) = file::read_at(&f.file, &p, dse, Kind::Data, pl.loc.file, HEADER, f.len) {
                f.min_key = r.key_id;
            }
            slot.insert(f);
        }
        if let Some(f) = data.files.get_mut(&pl.loc.file) {
            f.live.add(pl.loc.len);
        }
    }
    for (n, p) in file::list(dir, Kind::Data)? {
        data.next = data.next.max(n);
        if !data.files.contains_key(&n) {
            std::fs::remove_file(&p).map_err(|e| io("cannot remove", &p, e))?;
        }
    }
    data.next += 1;
    for f in data.files.values_mut() {
        f.committed = (f.len, f.live);
    }
    Ok(data)
}
