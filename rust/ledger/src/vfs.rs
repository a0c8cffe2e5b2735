//! The file-system seam under the journal and the metadata store.
//!
//! Everything the storage layer does to disk goes through [`Vfs`] (directories, renames, removals,
//! directory syncs) and [`VFile`] (positioned reads and writes, `fdatasync`, truncation). The real
//! implementation is [`RealFs`]; the test-support crate's `simfs::SimFs`
//! (`pulsar-rs-ledger-testkit`) is an in-memory one that models the page cache and loses what was
//! not made durable at a simulated power cut, so crash safety can be tested at thousands of cut
//! points in seconds.
//!
//! Durability rules the callers follow (and the simulation enforces):
//! * file data and size are durable only after [`VFile::sync_data`], also data written with
//!   [`VFile::write_direct`] (past the page cache, but not past the device's own cache);
//! * a created, renamed or removed directory entry is durable only after [`Vfs::sync_dir`] of
//!   its parent directory ([`ensure_dir`] does this for directories it creates).

use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;

/// Alignment of [`VFile::write_direct`]: its memory, offset and length are multiples of this.
/// 4 KiB suits devices with 512-byte and with 4 KiB logical blocks.
pub const DIRECT_BLOCK: u64 = 4096;

/// An open file.
pub trait VFile: Send + Sync {
    /// Reads exactly `buf.len()` bytes at `offset`.
    ///
    /// # Errors
    /// I/O failure, or `UnexpectedEof` past the end.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Writes all of `buf` at `offset` (into the page cache: not durable yet).
    ///
    /// # Errors
    /// I/O failure (a full disk is `StorageFull`).
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Writes `blocks` at `offset` past the page cache (`O_DIRECT`), when the file was opened
    /// with [`Vfs::open_direct`] and its file system takes direct writes. The memory of
    /// `blocks`, its length and `offset` are multiples of [`DIRECT_BLOCK`]. Durable only after
    /// [`VFile::sync_data`], like any write. `Ok(false)`: nothing was written, the caller writes
    /// through the page cache instead.
    ///
    /// # Errors
    /// I/O failure (a full disk is `StorageFull`).
    fn write_direct(&self, _blocks: &[u8], _offset: u64) -> io::Result<bool> {
        Ok(false)
    }
    /// Reads into `blocks` at `offset` past the page cache (`O_DIRECT`), with the alignment of
    /// [`VFile::write_direct`], when the file was opened with [`Vfs::open_direct`] and its file
    /// system takes direct reads. Returns the bytes read, fewer only at the end of the file;
    /// `Ok(None)`: nothing was read, the caller reads through the page cache instead.
    ///
    /// # Errors
    /// I/O failure.
    fn read_direct(&self, _blocks: &mut [u8], _offset: u64) -> io::Result<Option<usize>> {
        Ok(None)
    }
    /// `fdatasync`: makes written data and the file size durable.
    ///
    /// # Errors
    /// I/O failure; what was written since the last successful sync may then be lost or not.
    fn sync_data(&self) -> io::Result<()>;
    /// Truncates or extends the file (not durable until [`VFile::sync_data`]).
    ///
    /// # Errors
    /// I/O failure.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// Current length.
    ///
    /// # Errors
    /// I/O failure.
    fn len(&self) -> io::Result<u64>;
    /// The whole file mapped read-only into memory as of now, when the file system can do that
    /// (`None` otherwise: callers fall back to [`VFile::read_exact_at`]). Only for files nothing
    /// will shorten while the mapping lives: reading a page past a shrunken end is fatal
    /// (`SIGBUS`), so the journal maps segments only when opened read-only.
    ///
    /// # Errors
    /// The mapping failed.
    fn map_read_only(&self) -> io::Result<Option<Bytes>> {
        Ok(None)
    }
    /// Whether the file is empty.
    ///
    /// # Errors
    /// As [`VFile::len`].
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
}

/// An exclusive hold on a data directory, released on drop.
pub type DirLock = Box<dyn Send + Sync>;

/// A file system.
pub trait Vfs: Send + Sync + 'static {
    /// Creates one directory; `Ok(false)` if it already existed. Not durable until the parent
    /// is synced.
    ///
    /// # Errors
    /// I/O failure, or a missing parent.
    fn create_dir(&self, path: &Path) -> io::Result<bool>;
    /// Whether a directory exists.
    fn dir_exists(&self, path: &Path) -> bool;
    /// Names of the entries of a directory (files and directories), unsorted.
    ///
    /// # Errors
    /// I/O failure; `NotFound` if the directory does not exist.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Opens a file for reading and writing, creating it (empty) if `create`.
    ///
    /// # Errors
    /// I/O failure; `NotFound` without `create`.
    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn VFile>>;
    /// As [`Vfs::open`], and ready for [`VFile::write_direct`] where the file system supports
    /// it (the default: it does not).
    ///
    /// # Errors
    /// As [`Vfs::open`].
    fn open_direct(&self, path: &Path, create: bool) -> io::Result<Arc<dyn VFile>> {
        self.open(path, create)
    }
    /// Opens an existing file for reading only.
    ///
    /// # Errors
    /// I/O failure; `NotFound`.
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn VFile>>;
    /// Creates (or truncates) a file and opens it for writing.
    ///
    /// # Errors
    /// I/O failure.
    fn create(&self, path: &Path) -> io::Result<Arc<dyn VFile>>;
    /// Reads a whole file.
    ///
    /// # Errors
    /// I/O failure; `NotFound`.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Renames a file within one directory, replacing the target atomically.
    ///
    /// # Errors
    /// I/O failure.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file.
    ///
    /// # Errors
    /// I/O failure; `NotFound`.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// `fsync` of a directory: makes its entries durable.
    ///
    /// # Errors
    /// I/O failure.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Takes an exclusive advisory lock on `path` (created if missing); `None` if someone else
    /// holds it.
    ///
    /// # Errors
    /// I/O failure.
    fn lock(&self, path: &Path) -> io::Result<Option<DirLock>>;
    /// A stamp that changes whenever the file's content is changed by anyone (its modification
    /// time in ns), or `None` if the file system keeps none. The journal index uses it to notice
    /// a segment changed after it was indexed.
    ///
    /// # Errors
    /// I/O failure; `NotFound`.
    fn modified_stamp(&self, _path: &Path) -> io::Result<Option<u128>> {
        Ok(None)
    }
}

/// Creates `dir` and any missing ancestors, syncing each new directory's parent so the new
/// entries survive a power cut.
///
/// # Errors
/// I/O failure.
pub fn ensure_dir(fs: &dyn Vfs, dir: &Path) -> io::Result<()> {
    if fs.dir_exists(dir) {
        return Ok(());
    }
    let mut missing: Vec<PathBuf> = Vec::new();
    let mut cur = Some(dir);
    while let Some(p) = cur {
        if p.as_os_str().is_empty() || fs.dir_exists(p) {
            break;
        }
        missing.push(p.to_path_buf());
        cur = p.parent();
    }
    for p in missing.iter().rev() {
        if fs.create_dir(p)? {
            if let Some(parent) = p.parent().filter(|q| !q.as_os_str().is_empty()) {
                fs.sync_dir(parent)?;
            }
        }
    }
    Ok(())
}

/// The operating system's file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

struct RealFile(std::fs::File, Option<DirectHandle>);

/// A second descriptor of a file, opened with `O_DIRECT`, for aligned writes and large aligned
/// reads (other reads keep to the first one).
struct DirectHandle {
    file: std::fs::File,
    /// Set once the file system refused a direct write (`EINVAL`): later ones go through the
    /// page cache. Relaxed: only the journal's flusher writes a segment; a stale read costs one
    /// more refused attempt.
    refused: AtomicBool,
}

impl RealFile {
    fn plain(f: std::fs::File) -> Self {
        RealFile(f, None)
    }
}

impl VFile for RealFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.0.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.0.write_all_at(buf, offset)
    }
    fn write_direct(&self, blocks: &[u8], offset: u64) -> io::Result<bool> {
        let Some(d) = &self.1 else {
            return Ok(false);
        };
        if d.refused.load(Ordering::Relaxed) {
            return Ok(false);
        }
        match d.file.write_all_at(blocks, offset) {
            Ok(()) => Ok(true),
            // The file system opened the file for direct I/O but takes no such writes (or not
            // with this alignment): the caller rewrites the same bytes through the page cache.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                tracing::info!(error = %e, "direct writes refused; writing through the page cache");
                d.refused.store(true, Ordering::Relaxed);
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }
    fn read_direct(&self, blocks: &mut [u8], offset: u64) -> io::Result<Option<usize>> {
        let Some(d) = &self.1 else {
            return Ok(None);
        };
        let mut got = 0;
        while got < blocks.len() {
            match d.file.read_at(&mut blocks[got..], offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Not on this file system, or not with this alignment: the page cache it is.
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) && got == 0 => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        Ok(Some(got))
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
    fn map_read_only(&self) -> io::Result<Option<Bytes>> {
        if self.0.metadata()?.len() == 0 {
            return Ok(Some(Bytes::new()));
        }
        // SAFETY: the mapping is read-only; the journal maps only segments of a read-only open,
        // meant for a copy or a stopped broker's directory (README, storage). A broker running on
        // the same directory may cut a segment back (torn tail at its open, a failed write's
        // records): a page past the new end then faults with SIGBUS, the documented limit.
        let map = unsafe { memmap2::Mmap::map(&self.0)? };
        Ok(Some(Bytes::from_owner(map)))
    }
}

/// Opens `path` for reading and writing, creating it if `create`, never truncating.
fn open_rw(path: &Path, create: bool) -> io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .open(path)
}

impl Vfs for RealFs {
    fn create_dir(&self, path: &Path) -> io::Result<bool> {
        match std::fs::create_dir(path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && path.is_dir() => Ok(false),
            Err(e) => Err(e),
        }
    }
    fn dir_exists(&self, path: &Path) -> bool {
        path.is_dir()
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        for ent in std::fs::read_dir(dir)? {
            out.push(ent?.file_name().to_string_lossy().into_owned());
        }
        Ok(out)
    }
    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn VFile>> {
        Ok(Arc::new(RealFile::plain(open_rw(path, create)?)))
    }
    fn open_direct(&self, path: &Path, create: bool) -> io::Result<Arc<dyn VFile>> {
        let f = open_rw(path, create)?;
        // tmpfs and some FUSE file systems refuse O_DIRECT (EINVAL): then the page cache only.
        let direct = match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
        {
            Ok(file) => Some(DirectHandle {
                file,
                refused: AtomicBool::new(false),
            }),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => None,
            Err(e) => return Err(e),
        };
        Ok(Arc::new(RealFile(f, direct)))
    }
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn VFile>> {
        Ok(Arc::new(RealFile::plain(std::fs::File::open(path)?)))
    }
    fn create(&self, path: &Path) -> io::Result<Arc<dyn VFile>> {
        Ok(Arc::new(RealFile::plain(std::fs::File::create(path)?)))
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::File::open(dir)?.sync_all()
    }
    fn modified_stamp(&self, path: &Path) -> io::Result<Option<u128>> {
        let t = std::fs::metadata(path)?.modified()?;
        Ok(t.duration_since(std::time::UNIX_EPOCH)
            .ok()
            .map(|d| d.as_nanos()))
    }
    fn lock(&self, path: &Path) -> io::Result<Option<DirLock>> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        match f.try_lock() {
            Ok(()) => Ok(Some(Box::new(f))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }
}

/// The operating system's file system, calling a hook with a file's path before every
/// [`VFile::sync_data`] of a file opened for writing: the seam tests use to slow down or hold
/// an `fdatasync` (group commit timing, a slow rollover). Everything else is [`RealFs`].
pub struct SyncHookFs<H>(Arc<H>);

impl<H: Fn(&Path) + Send + Sync + 'static> SyncHookFs<H> {
    /// The real file system with `hook` run before each sync.
    pub fn new(hook: H) -> Self {
        SyncHookFs(Arc::new(hook))
    }

    fn wrap(&self, path: &Path, inner: Arc<dyn VFile>) -> Arc<dyn VFile> {
        Arc::new(HookedFile {
            inner,
            path: path.to_path_buf(),
            hook: Arc::clone(&self.0),
        })
    }
}

struct HookedFile<H> {
    inner: Arc<dyn VFile>,
    path: PathBuf,
    hook: Arc<H>,
}

impl<H: Fn(&Path) + Send + Sync> VFile for HookedFile<H> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.inner.write_all_at(buf, offset)
    }
    fn write_direct(&self, blocks: &[u8], offset: u64) -> io::Result<bool> {
        self.inner.write_direct(blocks, offset)
    }
    fn read_direct(&self, blocks: &mut [u8], offset: u64) -> io::Result<Option<usize>> {
        self.inner.read_direct(blocks, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        (self.hook)(&self.path);
        self.inner.sync_data()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
}

impl<H: Fn(&Path) + Send + Sync + 'static> Vfs for SyncHookFs<H> {
    fn create_dir(&self, path: &Path) -> io::Result<bool> {
        RealFs.create_dir(path)
    }
    fn dir_exists(&self, path: &Path) -> bool {
        RealFs.dir_exists(path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        RealFs.list(dir)
    }
    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn VFile>> {
        Ok(self.wrap(path, RealFs.open(path, create)?))
    }
    fn open_direct(&self, path: &Path, create: bool) -> io::Result<Arc<dyn VFile>> {
        Ok(self.wrap(path, RealFs.open_direct(path, create)?))
    }
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn VFile>> {
        RealFs.open_read(path)
    }
    fn create(&self, path: &Path) -> io::Result<Arc<dyn VFile>> {
        Ok(self.wrap(path, RealFs.create(path)?))
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        RealFs.read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        RealFs.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        RealFs.remove_file(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        RealFs.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> io::Result<Option<DirLock>> {
        RealFs.lock(path)
    }
    fn modified_stamp(&self, path: &Path) -> io::Result<Option<u128>> {
        RealFs.modified_stamp(path)
    }
}
