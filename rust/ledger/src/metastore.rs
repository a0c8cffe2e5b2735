//! Metadata storage behind a trait: ledger lists, cursor state, id counters.
//!
//! The embedded [`FileMetaStore`] keeps one file per key under `<data>/meta/`. A put writes a
//! temporary file, `fdatasync`s it, renames it over the old one and syncs the directory, so a
//! crash leaves either the old or the new value, never a mix. Every value carries a CRC32C trailer;
//! a damaged file is reported as [`LedgerError::CorruptMetadata`], never silently used.
//! A distributed store (etcd, ZooKeeper, Oxia) can replace it by implementing [`MetaStore`].

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{LedgerError, Result};

/// Key prefix of the managed-ledger records (`managed-ledgers/<ledger>`), owned by this crate;
/// the broker's `metadata_keys` module re-exports it beside its own prefixes.
pub const MANAGED_LEDGERS_PREFIX: &str = "managed-ledgers";

/// Key prefix of the durable cursor records (`cursors/<ledger>/<cursor>`), owned by this crate.
pub const CURSORS_PREFIX: &str = "cursors";

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

/// The embedded metadata store: one checksummed file per key.
#[derive(Debug)]
pub struct FileMetaStore {
    /// Root directory (`<data>/meta`); immutable after construction.
    root: PathBuf,
}

impl FileMetaStore {
    /// Opens (creating) the store rooted at `root`.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn open(root: impl AsRef<Path>) -> Result<Self> {
        let root = root.as_ref().to_path_buf();
        fs::create_dir_all(&root)
            .map_err(|e| LedgerError::io(format!("creating {}", root.display()), e))?;
        Ok(FileMetaStore { root })
    }

    fn path(&self, key: &str) -> Result<PathBuf> {
        let mut p = self.root.clone();
        for seg in key.split('/') {
            if seg.is_empty() || seg == "." || seg == ".." || seg.contains('\0') {
                return Err(LedgerError::InvalidName {
                    name: key.to_owned(),
                    reason: "bad metadata key segment",
                });
            }
            p.push(seg);
        }
        Ok(p)
    }
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

impl MetaStore for FileMetaStore {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let path = self.path(key)?;
        let mut data = match fs::read(&path) {
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
        let path = self.path(key)?;
        let dir = path.parent().unwrap_or(&self.root).to_path_buf();
        let ctx = || format!("writing metadata {}", path.display());
        fs::create_dir_all(&dir).map_err(|e| LedgerError::io(ctx(), e))?;
        let tmp = path.with_extension("tmp~");
        let write = || -> std::io::Result<()> {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(value)?;
            f.write_all(&crc32c::crc32c(value).to_le_bytes())?;
            f.sync_data()?;
            fs::rename(&tmp, &path)?;
            sync_dir(&dir)
        };
        write().map_err(|e| {
            let _ = fs::remove_file(&tmp);
            LedgerError::io(ctx(), e)
        })
    }

    fn delete(&self, key: &str) -> Result<()> {
        let path = self.path(key)?;
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
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
        let rd = match fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(LedgerError::io(format!("listing {}", dir.display()), e)),
        };
        let mut keys = Vec::new();
        for ent in rd {
            let ent = ent.map_err(|e| LedgerError::io(format!("listing {}", dir.display()), e))?;
            let name = ent.file_name().to_string_lossy().into_owned();
            if name.ends_with(".tmp~") {
                continue;
            }
            keys.push(if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            });
        }
        keys.sort();
        Ok(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
