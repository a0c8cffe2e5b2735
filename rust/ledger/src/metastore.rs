//! Metadata storage behind a trait: ledger lists, cursor state, id counters.
//!
//! The embedded [`FileMetaStore`] keeps one file per key under `<data>/meta/`. A put writes a
//! temporary file with a name no other write uses, `fdatasync`s it, renames it over the old one
//! and syncs the directory, so a crash leaves either the old or the new value, never a mix; puts
//! and deletes of one key are serialised; a delete syncs the directory too. Every value carries a CRC32C trailer;
//! a damaged file is reported as [`LedgerError::CorruptMetadata`], never silently used.
//! A distributed store (etcd, ZooKeeper, Oxia) can replace it by implementing [`MetaStore`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::vfs::{ensure_dir, RealFs, Vfs};
use crate::{LedgerError, Result};

// The ledger crate's keys, all of them here; the broker's `metadata_keys` module re-exports
// them beside its own prefixes.

/// The folder of the embedded store in a data directory (`<data>/meta/`).
pub const META_DIR: &str = "meta";

/// Key prefix of the managed-ledger records (`managed-ledgers/<ledger>`), owned by this crate.
pub const MANAGED_LEDGERS_PREFIX: &str = "managed-ledgers";

/// Key prefix of the durable cursor records (`cursors/<ledger>/<cursor>`), owned by this crate.
pub const CURSORS_PREFIX: &str = "cursors";

/// Key prefix of the seam's records (`seam-records/<escaped path>`, `seam::local_store`).
pub const SEAM_RECORDS_PREFIX: &str = "seam-records";

/// Key of the ledger id counter: the end of the last reserved block of ledger ids (decimal).
pub const LEDGER_ID_COUNTER_KEY: &str = "ledger-id-counter";

/// Key of a managed ledger's record (its ledger list).
#[must_use]
pub fn managed_ledger_key(ledger: &str) -> String {
    child_key(MANAGED_LEDGERS_PREFIX, ledger)
}

/// Key prefix of a managed ledger's cursor records.
#[must_use]
pub fn cursor_prefix(ledger: &str) -> String {
    child_key(CURSORS_PREFIX, ledger)
}

/// Key of one durable cursor's record.
#[must_use]
pub fn cursor_key(ledger: &str, cursor: &str) -> String {
    child_key(&cursor_prefix(ledger), cursor)
}

/// The key of `name` under `prefix`: `<prefix>/<escaped name>`.
#[must_use]
pub fn child_key(prefix: &str, name: &str) -> String {
    format!("{prefix}/{}", escape_segment(name))
}

/// The unescaped last segment of a key (the name [`child_key`] was given).
#[must_use]
pub fn key_name(key: &str) -> String {
    key.rsplit('/')
        .next()
        .map(unescape_segment)
        .unwrap_or_default()
}

/// A durable key/value store for small metadata records. Keys are `/`-separated paths whose
/// segments are made of `[A-Za-z0-9._%-]` (use [`escape_segment`]).
pub trait MetaStore: Send + Sync + 'static {
    /// Reads a value.
    ///
    /// # Errors
    /// I/O failure or a value that fails its checksum.
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>>;
    /// Writes a value durably (it survives a crash once this returns).
    ///
    /// # Errors
    /// I/O failure (including a full disk).
    fn put(&self, key: &str, value: &[u8]) -> Result<()>;
    /// Deletes a value; deleting a missing key is not an error.
    ///
    /// # Errors
    /// I/O failure.
    fn delete(&self, key: &str) -> Result<()>;
    /// Lists the keys directly below `prefix` (one level, full keys).
    ///
    /// # Errors
    /// I/O failure.
    fn list(&self, prefix: &str) -> Result<Vec<String>>;
}

/// Escapes one key segment: every byte outside `[A-Za-z0-9._-]` becomes `%XX`.
#[must_use]
pub fn escape_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.starts_with('.') {
        out.replace_range(0..1, "%2E");
    }
    out
}

/// Reverses [`escape_segment`].
#[must_use]
pub fn unescape_segment(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            if let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                // Two hex digits are at most 0xFF, so the cast cannot truncate.
                out.push((hi * 16 + lo) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Number of lock stripes serialising writes of one key (keys hash onto them).
const WRITE_STRIPES: usize = 64;

/// Suffix of temporary files; never listed as keys.
const TMP_SUFFIX: &str = ".tmp~";

/// The embedded metadata store: one checksummed file per key.
pub struct FileMetaStore {
    /// Root directory (`<data>/meta`); immutable after construction.
    root: PathBuf,
    /// The file system; immutable.
    fs: Arc<dyn Vfs>,
    /// Refuse writes (read-only open for export and inspection); immutable.
    read_only: bool,
    /// Writes of one key are serialised on its stripe, so two puts of one key never interleave
    /// their rename and directory sync. Held across the write's fsync on purpose: only writers
    /// of keys on the same stripe wait, never readers, and never across `.await`.
    stripes: Vec<Mutex<()>>,
    /// Makes temporary file names unique within this process (with the pid, across processes).
    /// Relaxed: only uniqueness matters.
    tmp_seq: AtomicU64,
}

impl std::fmt::Debug for FileMetaStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileMetaStore")
            .field("root", &self.root)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

impl FileMetaStore {
    /// Opens (creating) the store rooted at `root` on the real file system.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn open(root: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(Arc::new(RealFs), root, false)
    }

    /// Opens the store on a given file system; `read_only` refuses every write and creates
    /// nothing.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn open_with(fs: Arc<dyn Vfs>, root: impl AsRef<Path>, read_only: bool) -> Result<Self> {
        let root = root.as_ref().to_path_buf();
        if !read_only {
            ensure_dir(fs.as_ref(), &root)
                .map_err(|e| LedgerError::io(format!("creating {}", root.display()), e))?;
        }
        Ok(FileMetaStore {
            root,
            fs,
            read_only,
            stripes: (0..WRITE_STRIPES).map(|_| Mutex::new(())).collect(),
            tmp_seq: AtomicU64::new(0),
        })
    }

    fn path(&self, key: &str) -> Result<PathBuf> {
        let mut p = self.root.clone();
        for seg in key.split('/') {
            if seg.is_empty()
                || seg == "."
                || seg == ".."
                || seg.contains('\0')
                || seg.ends_with(TMP_SUFFIX)
            {
                return Err(LedgerError::InvalidName {
                    name: key.to_owned(),
                    reason: "bad metadata key segment",
                });
            }
            p.push(seg);
        }
        Ok(p)
    }

    fn check_writable(&self, key: &str) -> Result<()> {
        if self.read_only {
            return Err(LedgerError::ReadOnly {
                what: format!("metadata record {key:?}"),
            });
        }
        Ok(())
    }

    fn stripe(&self, key: &str) -> &Mutex<()> {
        let h = crc32c::crc32c(key.as_bytes()) as usize;
        &self.stripes[h % WRITE_STRIPES]
    }

    /// A temporary name next to `path` no other writer uses: `<name>.<pid>.<seq>.tmp~`.
    fn tmp_path(&self, path: &Path) -> PathBuf {
        // Relaxed: only uniqueness matters.
        let seq = self.tmp_seq.fetch_add(1, Ordering::Relaxed);
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".{}.{seq}{TMP_SUFFIX}", std::process::id()));
        path.with_file_name(name)
    }
}

impl MetaStore for FileMetaStore {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let path = self.path(key)?;
        let mut data = match self.fs.read(&path) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(LedgerError::io(format!("reading {}", path.display()), e)),
        };
        if data.len() < 4 {
            return Err(LedgerError::CorruptMetadata {
                key: key.into(),
                reason: "shorter than its checksum".into(),
            });
        }
        let split = data.len() - 4;
        let stored = u32::from_le_bytes([
            data[split],
            data[split + 1],
            data[split + 2],
            data[split + 3],
        ]);
        data.truncate(split);
        let actual = crc32c::crc32c(&data);
        if stored != actual {
            return Err(LedgerError::CorruptMetadata {
                key: key.into(),
                reason: format!(
                    "checksum mismatch (stored {stored:#010x}, computed {actual:#010x})"
                ),
            });
        }
        Ok(Some(data))
    }

    fn put(&self, key: &str, value: &[u8]) -> Result<()> {
        self.check_writable(key)?;
        let path = self.path(key)?;
        let dir = path.parent().unwrap_or(&self.root).to_path_buf();
        let ctx = || format!("writing metadata {}", path.display());
        // Lock: one writer per key at a time (see `stripes`).
        let _serial = self.stripe(key).lock();
        ensure_dir(self.fs.as_ref(), &dir).map_err(|e| LedgerError::io(ctx(), e))?;
        let tmp = self.tmp_path(&path);
        let mut framed = Vec::with_capacity(value.len() + 4);
        framed.extend_from_slice(value);
        framed.extend_from_slice(&crc32c::crc32c(value).to_le_bytes());
        let write = || -> std::io::Result<()> {
            let f = self.fs.create(&tmp)?;
            f.write_all_at(&framed, 0)?;
            f.sync_data()?;
            self.fs.rename(&tmp, &path)?;
            self.fs.sync_dir(&dir)
        };
        write().map_err(|e| {
            let _ = self.fs.remove_file(&tmp);
            LedgerError::io(ctx(), e)
        })
    }

    fn delete(&self, key: &str) -> Result<()> {
        self.check_writable(key)?;
        let path = self.path(key)?;
        let dir = path.parent().unwrap_or(&self.root).to_path_buf();
        // Lock: a delete is a write of the key (see `stripes`).
        let _serial = self.stripe(key).lock();
        match self.fs.remove_file(&path) {
            Ok(()) => self
                .fs
                .sync_dir(&dir)
                .map_err(|e| LedgerError::io(format!("syncing {}", dir.display()), e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(LedgerError::io(format!("deleting {}", path.display()), e)),
        }
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        let dir = if prefix.is_empty() {
            self.root.clone()
        } else {
            self.path(prefix)?
        };
        let names = match self.fs.list(&dir) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(LedgerError::io(format!("listing {}", dir.display()), e)),
        };
        let mut keys: Vec<String> = names
            .into_iter()
            .filter(|n| !n.ends_with(TMP_SUFFIX))
            .map(|name| {
                if prefix.is_empty() {
                    name
                } else {
                    format!("{prefix}/{name}")
                }
            })
            .collect();
        keys.sort();
        Ok(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn put_get_list_delete_and_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let s = FileMetaStore::open(dir.path()).unwrap();
        assert_eq!(s.get("a/b").unwrap(), None);
        s.put("a/b", b"hello").unwrap();
        s.put("a/c", b"world").unwrap();
        assert_eq!(s.get("a/b").unwrap().unwrap(), b"hello");
        assert_eq!(
            s.list("a").unwrap(),
            vec!["a/b".to_string(), "a/c".to_string()]
        );
        // Flip a byte: the checksum must catch it.
        let p = dir.path().join("a/b");
        let mut raw = fs::read(&p).unwrap();
        raw[0] ^= 0xff;
        fs::write(&p, raw).unwrap();
        assert!(matches!(
            s.get("a/b"),
            Err(LedgerError::CorruptMetadata { .. })
        ));
        s.delete("a/b").unwrap();
        s.delete("a/b").unwrap();
        assert!(s.put("../x", b"").is_err());
    }

    #[test]
    fn escaping_round_trips() {
        for name in ["persistent://public/default/t-1", ".hidden", "a%b", "日本"] {
            let e = escape_segment(name);
            assert!(!e.contains('/') && !e.starts_with('.'));
            assert_eq!(unescape_segment(&e), name);
        }
    }

    #[test]
    fn temporary_names_are_unique_per_write() {
        // `sub.1` and `sub.2` must not share a temporary file (with_extension did that).
        let dir = tempfile::tempdir().unwrap();
        let s = FileMetaStore::open(dir.path()).unwrap();
        let a = s.tmp_path(&dir.path().join("sub.1"));
        let b = s.tmp_path(&dir.path().join("sub.2"));
        let c = s.tmp_path(&dir.path().join("sub.1"));
        assert_ne!(a, b);
        assert_ne!(
            a, c,
            "two writes of one key must not share a temporary file"
        );
        assert!(a.to_string_lossy().contains("sub.1."));
    }

    #[test]
    fn concurrent_puts_of_similar_and_equal_keys_never_mix_values() {
        let dir = tempfile::tempdir().unwrap();
        let s = Arc::new(FileMetaStore::open(dir.path()).unwrap());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let s = Arc::clone(&s);
                std::thread::spawn(move || {
                    for i in 0..50 {
                        let key = format!("c/sub.{}", t % 4);
                        s.put(&key, format!("{key}={t}:{i}").as_bytes()).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        for k in 0..4 {
            let key = format!("c/sub.{k}");
            let v = String::from_utf8(s.get(&key).unwrap().unwrap()).unwrap();
            assert!(v.starts_with(&format!("{key}=")), "{key} holds {v}");
        }
        assert_eq!(s.list("c").unwrap().len(), 4, "temporary files leaked");
    }

    #[test]
    fn read_only_store_refuses_writes_and_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("meta");
        let s = FileMetaStore::open_with(Arc::new(RealFs), &root, true).unwrap();
        assert!(!root.exists());
        assert!(matches!(
            s.put("a", b"x"),
            Err(LedgerError::ReadOnly { .. })
        ));
        assert!(matches!(s.delete("a"), Err(LedgerError::ReadOnly { .. })));
        assert_eq!(s.get("a").unwrap(), None);
        assert!(s.list("").unwrap().is_empty());
    }
}
