//! The backing directory: the image of what is durable. It is read once at mount and written only
//! when an fsync makes something durable, so at any instant it is exactly what would survive a
//! power cut. It is never flushed on unmount.

use std::ffi::OsString;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{PowerFsError, Result};

/// One node of the tree loaded at mount.
#[derive(Debug)]
pub enum Loaded {
    /// A regular file with its contents and permission bits.
    File { data: Vec<u8>, perm: u16 },
    /// A directory with its entries and permission bits.
    Dir {
        entries: Vec<(OsString, Loaded)>,
        perm: u16,
    },
}

/// Handle on the backing directory.
#[derive(Debug, Clone)]
pub struct Backing {
    root: PathBuf,
}

impl Backing {
    /// Uses `root` (which must be an existing directory) as the durable image.
    ///
    /// # Errors
    /// `root` is not a directory.
    pub fn new(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        let md = fs::metadata(&root).map_err(|e| PowerFsError::backing(&root, e))?;
        if !md.is_dir() {
            return Err(PowerFsError::NotDir);
        }
        Ok(Backing { root })
    }

    /// Absolute path of the backing node at `rel` (relative, from the root).
    pub fn path(&self, rel: &Path) -> PathBuf {
        self.root.join(rel)
    }

    /// Reads the whole tree (files with their data).
    ///
    /// # Errors
    /// I/O failures; symlinks and special files are refused (powerfs does not model them).
    pub fn load(&self) -> Result<Loaded> {
        load_node(&self.root)
    }

    /// Makes `data[from..]` the durable contents of the file at `rel` from offset `from`, and its
    /// length `data.len()`.
    ///
    /// # Errors
    /// I/O failures.
    pub fn write_tail(&self, rel: &Path, data: &[u8], from: usize) -> Result<()> {
        let path = self.path(rel);
        let err = |e| PowerFsError::backing(&path, e);
        let f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(err)?;
        let from = from.min(data.len());
        f.write_all_at(&data[from..], from as u64).map_err(err)?;
        f.set_len(data.len() as u64).map_err(err)
    }

    /// Writes a whole file at `rel`, replacing whatever was there.
    ///
    /// # Errors
    /// I/O failures.
    pub fn write_file(&self, rel: &Path, data: &[u8]) -> Result<()> {
        self.remove(rel)?;
        let path = self.path(rel);
        let mut f = fs::File::create(&path).map_err(|e| PowerFsError::backing(&path, e))?;
        f.write_all(data)
            .map_err(|e| PowerFsError::backing(&path, e))
    }

    /// Creates an empty directory at `rel`, replacing whatever was there.
    ///
    /// # Errors
    /// I/O failures.
    pub fn make_dir(&self, rel: &Path) -> Result<()> {
        self.remove(rel)?;
        let path = self.path(rel);
        fs::create_dir(&path).map_err(|e| PowerFsError::backing(&path, e))
    }

    /// Removes the file or directory tree at `rel`; absent is fine.
    ///
    /// # Errors
    /// I/O failures.
    pub fn remove(&self, rel: &Path) -> Result<()> {
        let path = self.path(rel);
        let res = match fs::symlink_metadata(&path) {
            Ok(md) if md.is_dir() => fs::remove_dir_all(&path),
            Ok(_) => fs::remove_file(&path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        };
        res.map_err(|e| PowerFsError::backing(&path, e))
    }
}

fn perm_of(md: &fs::Metadata) -> u16 {
    use std::os::unix::fs::PermissionsExt;
    // Permission bits fit in 12 bits.
    (md.permissions().mode() & 0o7777) as u16
}

fn load_node(path: &Path) -> Result<Loaded> {
    let err = |e| PowerFsError::backing(path, e);
    let md = fs::symlink_metadata(path).map_err(err)?;
    if md.is_file() {
        let data = fs::read(path).map_err(err)?;
        return Ok(Loaded::File {
            data,
            perm: perm_of(&md),
        });
    }
    if !md.is_dir() {
        return Err(PowerFsError::Unsupported(
            "symlinks and special files in the backing directory",
        ));
    }
    let mut entries = Vec::new();
    for e in fs::read_dir(path).map_err(err)? {
        let e = e.map_err(err)?;
        entries.push((e.file_name(), load_node(&e.path())?));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Loaded::Dir {
        entries,
        perm: perm_of(&md),
    })
}
