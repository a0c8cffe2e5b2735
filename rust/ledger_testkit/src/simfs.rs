//! An in-memory [`Vfs`] that models the page cache, for power-cut testing.
//!
//! Every file has its *durable* bytes and the writes and truncations made since its last
//! `fdatasync`; every directory has the entry changes (create, rename, remove, mkdir) made since
//! its last directory sync. [`SimFs::power_cut`] throws away what was not made durable: with
//! [`Cut::Random`] a random prefix of each file's unsynced writes survives, the last one possibly
//! torn, and a random prefix of each directory's unsynced entry changes survives, which is what a
//! real disk may keep. [`SimFs::crash_after`] freezes the file system after a given number of
//! mutating operations (every later call fails, as if the process had died there), so a seeded
//! workload can be cut at every point. Faults can be injected into single calls
//! ([`SimFs::fail_next`]), and the durability calls can be turned into no-ops to show that the
//! tests catch a missing `fdatasync` or directory sync.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use pulsar_rs_ledger::vfs::{DirLock, VFile, Vfs};

/// What survives a power cut.
#[derive(Clone, Copy, Debug)]
pub enum Cut {
    /// Only what was made durable.
    DropUnsynced,
    /// Everything (the page cache happened to be written back in full).
    KeepUnsynced,
    /// A random prefix of each file's and directory's unsynced changes (seeded).
    Random(u64),
}

/// Kinds of mutating calls, for fault injection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `write_all_at`.
    Write,
    /// `sync_data`.
    SyncData,
    /// `set_len`.
    SetLen,
    /// `sync_dir`.
    SyncDir,
    /// Creating a file.
    Create,
    /// `rename`.
    Rename,
    /// `remove_file`.
    Remove,
}

enum FileOp {
    Write(u64, Vec<u8>),
    SetLen(u64),
}

enum DirOp {
    Link(PathBuf, u64),
    Unlink(PathBuf),
    Rename(PathBuf, PathBuf),
    Mkdir(PathBuf),
}

#[derive(Default)]
struct Inode {
    /// What reads see (the page cache).
    data: Vec<u8>,
    /// What is on the platter.
    durable: Vec<u8>,
    /// Changes since the last successful sync, in order.
    pending: Vec<FileOp>,
}

struct Fault {
    op: Op,
    path_contains: String,
    kind: io::ErrorKind,
}

#[derive(Default)]
struct Sim {
    epoch: u64,
    next_ino: u64,
    inodes: HashMap<u64, Inode>,
    files: BTreeMap<PathBuf, u64>,
    dirs: BTreeSet<PathBuf>,
    durable_files: BTreeMap<PathBuf, u64>,
    durable_dirs: BTreeSet<PathBuf>,
    pending_dirs: BTreeMap<PathBuf, Vec<DirOp>>,
    ops: u64,
    crash_at: Option<u64>,
    crashed: bool,
    faults: Vec<Fault>,
    sync_data_noop: bool,
    sync_dir_noop: bool,
}

fn dead() -> io::Error {
    io::Error::other("simulated power cut: the file system is gone")
}

fn parent(p: &Path) -> PathBuf {
    p.parent().map(Path::to_path_buf).unwrap_or_default()
}

impl Sim {
    fn alive(&self, epoch: u64) -> io::Result<()> {
        if self.crashed || epoch != self.epoch {
            Err(dead())
        } else {
            Ok(())
        }
    }

    /// Counts one mutating call; fails it if the crash point is reached or a fault matches.
    fn gate(&mut self, op: Op, path: &Path) -> io::Result<()> {
        self.alive(self.epoch)?;
        self.ops += 1;
        if self.crash_at.is_some_and(|c| self.ops >= c) {
            self.crashed = true;
            return Err(dead());
        }
        let p = path.to_string_lossy();
        if let Some(i) = self
            .faults
            .iter()
            .position(|f| f.op == op && p.contains(&f.path_contains))
        {
            let f = self.faults.remove(i);
            return Err(io::Error::from(f.kind));
        }
        Ok(())
    }

    fn dir_ok(&self, dir: &Path) -> bool {
        dir.as_os_str().is_empty() || dir == Path::new("/") || self.dirs.contains(dir)
    }

    fn durable_dir_ok(&self, dir: &Path) -> bool {
        let mut cur = Some(dir);
        while let Some(d) = cur {
            if d.as_os_str().is_empty() || d == Path::new("/") {
                return true;
            }
            if !self.durable_dirs.contains(d) {
                return false;
            }
            cur = d.parent();
        }
        true
    }

    fn apply_dir_op(&mut self, op: DirOp) {
        match op {
            DirOp::Link(p, ino) => {
                self.durable_files.insert(p, ino);
            }
            DirOp::Unlink(p) => {
                self.durable_files.remove(&p);
            }
            DirOp::Rename(a, b) => {
                if let Some(ino) = self.durable_files.remove(&a) {
                    self.durable_files.insert(b, ino);
                }
            }
            DirOp::Mkdir(p) => {
                self.durable_dirs.insert(p);
            }
        }
    }

    fn new_file(&mut self, path: &Path) -> io::Result<u64> {
        let dir = parent(path);
        if !self.dir_ok(&dir) {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        self.next_ino += 1;
        let ino = self.next_ino;
        self.inodes.insert(ino, Inode::default());
        self.files.insert(path.to_path_buf(), ino);
        self.pending_dirs
            .entry(dir)
            .or_default()
            .push(DirOp::Link(path.to_path_buf(), ino));
        Ok(ino)
    }
}

/// Tiny seeded generator (splitmix64) for the random cut.
fn next_rand(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The simulated file system; clones share it.
#[derive(Clone, Default)]
pub struct SimFs {
    /// Everything; one lock, since the simulation favours simplicity over concurrency.
    inner: Arc<Mutex<Sim>>,
}

struct SimFile {
    /// The file system.
    fs: SimFs,
    /// The file's inode; immutable.
    ino: u64,
    /// The power cycle the handle was opened in; stale handles fail.
    epoch: u64,
    /// The path it was opened by, for fault matching; immutable.
    path: PathBuf,
    /// Opened for writing; immutable.
    writable: bool,
}

impl SimFs {
    /// An empty file system.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Mutating calls made so far (the coordinates of [`SimFs::crash_after`]).
    #[must_use]
    pub fn ops(&self) -> u64 {
        self.inner.lock().ops
    }

    /// Freezes the file system once `n` more mutating calls have been attempted: that call and
    /// every later one fails, as if the machine lost power there.
    pub fn crash_after(&self, n: u64) {
        let mut s = self.inner.lock();
        s.crash_at = Some(s.ops + n);
    }

    /// Whether the crash point was reached.
    #[must_use]
    pub fn crashed(&self) -> bool {
        self.inner.lock().crashed
    }

    /// Fails the next `op` on a path containing `path_contains` with `kind`.
    pub fn fail_next(&self, op: Op, path_contains: &str, kind: io::ErrorKind) {
        self.inner.lock().faults.push(Fault {
            op,
            path_contains: path_contains.into(),
            kind,
        });
    }

    /// Makes `sync_data` (file) and/or `sync_dir` succeed without making anything durable: a
    /// broken durability call, for showing that the tests notice.
    pub fn break_syncs(&self, sync_data: bool, sync_dir: bool) {
        let mut s = self.inner.lock();
        s.sync_data_noop = sync_data;
        s.sync_dir_noop = sync_dir;
    }

    /// Loses power: keeps what `cut` says survives, invalidates every open handle, and turns the
    /// file system back on.
    pub fn power_cut(&self, cut: Cut) {
        let mut s = self.inner.lock();
        let mut rng = match cut {
            Cut::Random(seed) => seed ^ 0xA076_1D64_78BD_642F,
            _ => 0,
        };
        let keep = |n: usize, rng: &mut u64| -> usize {
            match cut {
                Cut::DropUnsynced => 0,
                Cut::KeepUnsynced => n,
                Cut::Random(_) => (next_rand(rng) % (n as u64 + 1)) as usize,
            }
        };
        let pending_dirs = std::mem::take(&mut s.pending_dirs);
        for (_, ops) in pending_dirs {
            let k = keep(ops.len(), &mut rng);
            for op in ops.into_iter().take(k) {
                s.apply_dir_op(op);
            }
        }
        let orphaned: Vec<PathBuf> = s
            .durable_files
            .keys()
            .filter(|p| !s.durable_dir_ok(&parent(p)))
            .cloned()
            .collect();
        for p in orphaned {
            s.durable_files.remove(&p);
        }
        let dirs: Vec<PathBuf> = s
            .durable_dirs
            .iter()
            .filter(|d| !s.durable_dir_ok(d))
            .cloned()
            .collect();
        for d in dirs {
            s.durable_dirs.remove(&d);
        }
        let live: BTreeSet<u64> = s.durable_files.values().copied().collect();
        s.inodes.retain(|ino, _| live.contains(ino));
        for inode in s.inodes.values_mut() {
            let pending = std::mem::take(&mut inode.pending);
            let k = keep(pending.len(), &mut rng);
            let mut data = std::mem::take(&mut inode.durable);
            for (i, op) in pending.into_iter().enumerate() {
                if i > k || (i == k && !matches!(cut, Cut::Random(_))) {
                    break;
                }
                // With a random cut the first write not kept may be torn: a prefix of it lands.
                let torn = i == k;
                match op {
                    FileOp::Write(off, bytes) => {
                        let len = if torn {
                            (next_rand(&mut rng) % (bytes.len() as u64 + 1)) as usize
                        } else {
                            bytes.len()
                        };
                        let end = off as usize + len;
                        if data.len() < end {
                            data.resize(end, 0);
                        }
                        data[off as usize..end].copy_from_slice(&bytes[..len]);
                    }
                    FileOp::SetLen(l) if !torn => data.resize(l as usize, 0),
                    FileOp::SetLen(_) => {}
                }
            }
            inode.data.clone_from(&data);
            inode.durable = data;
        }
        s.files = s.durable_files.clone();
        s.dirs = s.durable_dirs.clone();
        s.epoch += 1;
        s.crashed = false;
        s.crash_at = None;
        s.faults.clear();
    }

    /// Every file's current content (page cache view), for comparing states in tests.
    #[must_use]
    pub fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let s = self.inner.lock();
        s.files
            .iter()
            .map(|(p, ino)| (p.clone(), s.inodes[ino].data.clone()))
            .collect()
    }

    fn handle(&self, s: &Sim, ino: u64, path: &Path, writable: bool) -> Arc<dyn VFile> {
        Arc::new(SimFile {
            fs: self.clone(),
            ino,
            epoch: s.epoch,
            path: path.to_path_buf(),
            writable,
        })
    }
}

impl SimFile {
    fn with<T>(&self, op: Option<Op>, f: impl FnOnce(&mut Sim) -> io::Result<T>) -> io::Result<T> {
        let mut s = self.fs.inner.lock();
        s.alive(self.epoch)?;
        if let Some(op) = op {
            if !self.writable {
                return Err(io::Error::from(io::ErrorKind::PermissionDenied));
            }
            s.gate(op, &self.path)?;
        }
        f(&mut s)
    }
}

/// `EINVAL`, as Linux answers, unless the memory, offset and length of a direct transfer are
/// whole blocks.
fn direct_aligned(blocks: &[u8], offset: u64) -> io::Result<()> {
    let block = pulsar_rs_ledger::vfs::DIRECT_BLOCK;
    let aligned = (blocks.as_ptr() as usize).is_multiple_of(block as usize)
        && offset.is_multiple_of(block)
        && (blocks.len() as u64).is_multiple_of(block);
    if aligned {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(libc::EINVAL))
    }
}

impl VFile for SimFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.with(None, |s| {
            let data = &s.inodes[&self.ino].data;
            let end = offset as usize + buf.len();
            if end > data.len() {
                return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
            }
            buf.copy_from_slice(&data[offset as usize..end]);
            Ok(())
        })
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.with(Some(Op::Write), |s| {
            let inode = s.inodes.get_mut(&self.ino).ok_or_else(dead)?;
            let end = offset as usize + buf.len();
            if inode.data.len() < end {
                inode.data.resize(end, 0);
            }
            inode.data[offset as usize..end].copy_from_slice(buf);
            inode.pending.push(FileOp::Write(offset, buf.to_vec()));
            Ok(())
        })
    }

    /// Direct writes as a disk file system takes them: refused (`EINVAL`, as Linux) unless
    /// memory, offset and length are whole blocks; then a write like any other, volatile until
    /// the next sync (a direct write bypasses the page cache, not the device's cache).
    fn write_direct(&self, blocks: &[u8], offset: u64) -> io::Result<bool> {
        direct_aligned(blocks, offset)?;
        self.write_all_at(blocks, offset).map(|()| true)
    }

    /// Direct reads likewise: refused unless whole blocks, then what any read sees.
    fn read_direct(&self, blocks: &mut [u8], offset: u64) -> io::Result<Option<usize>> {
        direct_aligned(blocks, offset)?;
        // What a read sees, as through the page cache: direct reads bypass only the cache.
        let avail = usize::try_from(self.len()?.saturating_sub(offset)).unwrap_or(usize::MAX);
        let n = blocks.len().min(avail);
        self.read_exact_at(&mut blocks[..n], offset)?;
        Ok(Some(n))
    }

    fn sync_data(&self) -> io::Result<()> {
        self.with(Some(Op::SyncData), |s| {
            if s.sync_data_noop {
                return Ok(());
            }
            let inode = s.inodes.get_mut(&self.ino).ok_or_else(dead)?;
            inode.durable.clone_from(&inode.data);
            inode.pending.clear();
            Ok(())
        })
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.with(Some(Op::SetLen), |s| {
            let inode = s.inodes.get_mut(&self.ino).ok_or_else(dead)?;
            inode.data.resize(len as usize, 0);
            inode.pending.push(FileOp::SetLen(len));
            Ok(())
        })
    }

    fn len(&self) -> io::Result<u64> {
        self.with(None, |s| Ok(s.inodes[&self.ino].data.len() as u64))
    }
}

impl Vfs for SimFs {
    fn create_dir(&self, path: &Path) -> io::Result<bool> {
        let mut s = self.inner.lock();
        s.alive(s.epoch)?;
        if s.dirs.contains(path) {
            return Ok(false);
        }
        let dir = parent(path);
        if !s.dir_ok(&dir) {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        s.gate(Op::Create, path)?;
        s.dirs.insert(path.to_path_buf());
        s.pending_dirs
            .entry(dir)
            .or_default()
            .push(DirOp::Mkdir(path.to_path_buf()));
        Ok(true)
    }

    fn dir_exists(&self, path: &Path) -> bool {
        let s = self.inner.lock();
        !s.crashed && s.dir_ok(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let s = self.inner.lock();
        s.alive(s.epoch)?;
        if !s.dir_ok(dir) {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        let names = s
            .files
            .keys()
            .chain(s.dirs.iter())
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| Some(p.file_name()?.to_string_lossy().into_owned()))
            .collect();
        Ok(names)
    }

    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn VFile>> {
        let mut s = self.inner.lock();
        s.alive(s.epoch)?;
        let ino = match s.files.get(path) {
            Some(&ino) => ino,
            None if create => {
                s.gate(Op::Create, path)?;
                s.new_file(path)?
            }
            None => return Err(io::Error::from(io::ErrorKind::NotFound)),
        };
        Ok(self.handle(&s, ino, path, true))
    }

    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn VFile>> {
        let s = self.inner.lock();
        s.alive(s.epoch)?;
        let ino = *s
            .files
            .get(path)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        Ok(self.handle(&s, ino, path, false))
    }

    fn create(&self, path: &Path) -> io::Result<Arc<dyn VFile>> {
        let mut s = self.inner.lock();
        s.alive(s.epoch)?;
        s.gate(Op::Create, path)?;
        let ino = match s.files.get(path) {
            Some(&ino) => {
                let inode = s.inodes.get_mut(&ino).ok_or_else(dead)?;
                inode.data.clear();
                inode.pending.push(FileOp::SetLen(0));
                ino
            }
            None => s.new_file(path)?,
        };
        Ok(self.handle(&s, ino, path, true))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let s = self.inner.lock();
        s.alive(s.epoch)?;
        let ino = s
            .files
            .get(path)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        Ok(s.inodes[ino].data.clone())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.inner.lock();
        s.alive(s.epoch)?;
        let dir = parent(from);
        if dir != parent(to) {
            return Err(io::Error::other(
                "the simulation renames within one directory only",
            ));
        }
        if !s.files.contains_key(from) {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        s.gate(Op::Rename, from)?;
        let ino = s.files.remove(from).ok_or_else(dead)?;
        s.files.insert(to.to_path_buf(), ino);
        s.pending_dirs
            .entry(dir)
            .or_default()
            .push(DirOp::Rename(from.to_path_buf(), to.to_path_buf()));
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut s = self.inner.lock();
        s.alive(s.epoch)?;
        if !s.files.contains_key(path) {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        s.gate(Op::Remove, path)?;
        s.files.remove(path);
        s.pending_dirs
            .entry(parent(path))
            .or_default()
            .push(DirOp::Unlink(path.to_path_buf()));
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.inner.lock();
        s.gate(Op::SyncDir, dir)?;
        if s.sync_dir_noop {
            return Ok(());
        }
        for op in s.pending_dirs.remove(dir).unwrap_or_default() {
            s.apply_dir_op(op);
        }
        Ok(())
    }

    fn lock(&self, _path: &Path) -> io::Result<Option<DirLock>> {
        let s = self.inner.lock();
        s.alive(s.epoch)?;
        Ok(Some(Box::new(())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsynced_data_and_entries_are_lost_synced_ones_kept() {
        let fs = SimFs::new();
        let d = Path::new("/d");
        assert!(fs.create_dir(d).unwrap());
        fs.sync_dir(Path::new("/")).unwrap();
        let a = fs.open(&d.join("a"), true).unwrap();
        a.write_all_at(b"hello", 0).unwrap();
        a.sync_data().unwrap();
        fs.sync_dir(d).unwrap();
        a.write_all_at(b" world", 5).unwrap();
        let b = fs.open(&d.join("b"), true).unwrap();
        b.write_all_at(b"x", 0).unwrap();
        b.sync_data().unwrap(); // data synced, but its name never was
        fs.power_cut(Cut::DropUnsynced);
        assert!(a.len().is_err(), "old handles die with the power");
        assert_eq!(fs.read(&d.join("a")).unwrap(), b"hello");
        assert!(fs.read(&d.join("b")).is_err());
    }

    #[test]
    fn crash_point_freezes_everything_after_it() {
        let fs = SimFs::new();
        let f = fs.open(Path::new("/f"), true).unwrap();
        fs.crash_after(2);
        f.write_all_at(b"1", 0).unwrap();
        assert!(f.write_all_at(b"2", 1).is_err());
        assert!(fs.crashed());
        assert!(f.sync_data().is_err());
        fs.power_cut(Cut::KeepUnsynced);
        assert!(!fs.crashed());
    }

    #[test]
    fn random_cut_keeps_a_prefix_possibly_torn() {
        let mut seen = BTreeSet::new();
        for seed in 0..200 {
            let fs = SimFs::new();
            let f = fs.open(Path::new("/f"), true).unwrap();
            fs.sync_dir(Path::new("/")).unwrap();
            f.write_all_at(b"aaaa", 0).unwrap();
            f.write_all_at(b"bbbb", 4).unwrap();
            fs.power_cut(Cut::Random(seed));
            let got = fs.read(Path::new("/f")).unwrap();
            assert!(b"aaaabbbb".starts_with(&got), "{got:?}");
            seen.insert(got.len());
        }
        assert!(seen.len() >= 5, "cuts land in many places: {seen:?}");
    }

    #[test]
    fn direct_reads_need_whole_blocks_and_end_at_the_file_end() {
        let fs = SimFs::new();
        let f = fs.open_direct(Path::new("/f"), true).unwrap();
        f.write_all_at(&[5; 6000], 0).unwrap();
        // A `Vec` is not block-aligned in general: read into an aligned window of a larger one.
        let mut big = vec![0u8; 4 * 4096];
        let skip = big.as_ptr().align_offset(4096);
        let window = &mut big[skip..skip + 2 * 4096];
        assert_eq!(f.read_direct(window, 0).unwrap(), Some(6000));
        assert!(window[..6000].iter().all(|&b| b == 5));
        let e = f.read_direct(&mut window[..100], 0).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "a partial block");
        let e = f.read_direct(&mut window[..4096], 512).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "an unaligned offset");
    }
}
