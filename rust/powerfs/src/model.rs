//! The file system as a process sees it (all in memory) next to what a power cut would leave
//! (the durable state, mirrored into the backing directory).
//!
//! Linux semantics, on the pessimistic side:
//! * a file's data and length become durable only at `fsync`/`fdatasync` of that file;
//! * a directory entry (create, mkdir, rename's new name, unlink/rmdir/rename's removal of the
//!   old name) becomes durable only at `fsync` of the directory holding it; a file fsynced but
//!   never linked durably is lost, a name linked durably to a file never fsynced is an empty file;
//! * a cross-directory rename needs both directories fsynced, and until then the file may
//!   durably have both names (or neither);
//! * after [`Model::cut`] every operation fails with EIO and nothing more reaches the backing
//!   directory, which then holds exactly what survived.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::backing::{Backing, Loaded};
use crate::error::{PowerFsError, Result};

/// Inode number (the FUSE node id).
pub type Ino = u64;

/// The root directory's inode (FUSE's root id).
pub const ROOT: Ino = 1;

/// File or directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Regular file.
    File,
    /// Directory.
    Dir,
}

/// What `getattr` needs.
#[derive(Debug, Clone, Copy)]
pub struct Attr {
    /// Inode number.
    pub ino: Ino,
    /// File or directory.
    pub kind: Kind,
    /// Length in bytes (files), 0 for directories.
    pub size: u64,
    /// Permission bits.
    pub perm: u16,
    /// Current links (names) in the namespace.
    pub nlink: u32,
    /// Last change of data or entries.
    pub mtime: SystemTime,
}

/// Counters of what the file system has been asked to make durable.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stats {
    /// File fsyncs served.
    pub file_syncs: u64,
    /// Directory fsyncs served.
    pub dir_syncs: u64,
    /// Bytes written to the backing directory by fsyncs.
    pub durable_bytes: u64,
}

#[derive(Debug)]
struct Node {
    kind: Kind,
    perm: u16,
    mtime: SystemTime,
    /// Current contents (files).
    data: Vec<u8>,
    /// Lowest offset changed since the last fsync; `None` when `data` equals `durable_data`.
    dirty_from: Option<usize>,
    /// Contents as of the last fsync (files).
    durable_data: Vec<u8>,
    /// Current entries (directories).
    children: BTreeMap<OsString, Ino>,
    /// Entries as of the last directory fsync (directories).
    durable_children: BTreeMap<OsString, Ino>,
    /// Current (parent, name) links: at most one, hard links are not modelled.
    parent: Option<(Ino, OsString)>,
    /// Durable (parent, name) links: entries of some directory's `durable_children` naming this
    /// inode. More than one after a cross-directory rename whose old side is not yet synced.
    durable_links: Vec<(Ino, OsString)>,
}

impl Node {
    fn new(kind: Kind, perm: u16) -> Self {
        Node {
            kind,
            perm,
            mtime: pulsar_rs_clock::system_now(),
            data: Vec::new(),
            dirty_from: None,
            durable_data: Vec::new(),
            children: BTreeMap::new(),
            durable_children: BTreeMap::new(),
            parent: None,
            durable_links: Vec::new(),
        }
    }

    fn mark_dirty(&mut self, from: usize) {
        self.dirty_from = Some(self.dirty_from.map_or(from, |d| d.min(from)));
        self.mtime = pulsar_rs_clock::system_now();
    }
}

/// The whole file system state. Owned by the FUSE session's single thread (no locks needed).
#[derive(Debug)]
pub struct Model {
    backing: Backing,
    nodes: BTreeMap<Ino, Node>,
    next_ino: Ino,
    cut: bool,
    stats: Stats,
}

fn check_name(name: &OsStr) -> Result<()> {
    let b = name.as_encoded_bytes();
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') {
        return Err(PowerFsError::Invalid("bad file name"));
    }
    Ok(())
}

impl Model {
    /// Mounts the durable image in `backing`.
    ///
    /// # Errors
    /// The backing directory cannot be read.
    pub fn open(backing: impl Into<PathBuf>) -> Result<Self> {
        let backing = Backing::new(backing)?;
        let tree = backing.load()?;
        let mut m = Model {
            backing,
            nodes: BTreeMap::new(),
            next_ino: ROOT,
            cut: false,
            stats: Stats::default(),
        };
        m.insert_loaded(tree, None);
        Ok(m)
    }

    fn insert_loaded(&mut self, tree: Loaded, parent: Option<(Ino, OsString)>) -> Ino {
        let ino = self.next_ino;
        self.next_ino += 1;
        let links: Vec<_> = parent.iter().cloned().collect();
        let node = match tree {
            Loaded::File { data, perm } => Node {
                durable_data: data.clone(),
                data,
                ..Node::new(Kind::File, perm)
            },
            Loaded::Dir { entries, perm } => {
                self.nodes.insert(ino, Node::new(Kind::Dir, perm));
                let mut children = BTreeMap::new();
                for (name, sub) in entries {
                    let child = self.insert_loaded(sub, Some((ino, name.clone())));
                    children.insert(name, child);
                }
                Node {
                    durable_children: children.clone(),
                    children,
                    ..Node::new(Kind::Dir, perm)
                }
            }
        };
        self.nodes.insert(
            ino,
            Node {
                parent,
                durable_links: links,
                ..node
            },
        );
        ino
    }

    fn live(&self) -> Result<()> {
        if self.cut {
            Err(PowerFsError::PowerCut)
        } else {
            Ok(())
        }
    }

    fn node(&self, ino: Ino) -> Result<&Node> {
        self.nodes
            .get(&ino)
            .ok_or_else(|| PowerFsError::NotFound(format!("inode {ino}").into()))
    }

    fn node_mut(&mut self, ino: Ino) -> Result<&mut Node> {
        self.nodes
            .get_mut(&ino)
            .ok_or_else(|| PowerFsError::NotFound(format!("inode {ino}").into()))
    }

    fn dir(&self, ino: Ino) -> Result<&Node> {
        let n = self.node(ino)?;
        if n.kind != Kind::Dir {
            return Err(PowerFsError::NotDir);
        }
        Ok(n)
    }

    fn file_mut(&mut self, ino: Ino) -> Result<&mut Node> {
        let n = self.node_mut(ino)?;
        if n.kind != Kind::File {
            return Err(PowerFsError::IsDir);
        }
        Ok(n)
    }

    /// Simulates the power cut: from now on nothing reaches the backing directory and every
    /// operation fails with EIO.
    pub fn cut(&mut self) {
        self.cut = true;
    }

    /// True once [`Model::cut`] was called.
    pub fn is_cut(&self) -> bool {
        self.cut
    }

    /// Counters of durability requests.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Looks `name` up in directory `parent`.
    ///
    /// # Errors
    /// Not found, not a directory, power cut.
    pub fn lookup(&self, parent: Ino, name: &OsStr) -> Result<Ino> {
        self.live()?;
        self.dir(parent)?
            .children
            .get(name)
            .copied()
            .ok_or_else(|| PowerFsError::NotFound(name.into()))
    }

    /// Attributes of `ino`.
    ///
    /// # Errors
    /// Unknown inode, power cut.
    pub fn attr(&self, ino: Ino) -> Result<Attr> {
        self.live()?;
        let n = self.node(ino)?;
        let nlink = match n.kind {
            Kind::File => u32::from(n.parent.is_some()),
            Kind::Dir => 2,
        };
        Ok(Attr {
            ino,
            kind: n.kind,
            size: n.data.len() as u64,
            perm: n.perm,
            nlink,
            mtime: n.mtime,
        })
    }

    /// Entries of directory `ino`, sorted by name.
    ///
    /// # Errors
    /// Not a directory, power cut.
    pub fn readdir(&self, ino: Ino) -> Result<Vec<(OsString, Ino, Kind)>> {
        self.live()?;
        let d = self.dir(ino)?;
        d.children
            .iter()
            .map(|(name, &child)| Ok((name.clone(), child, self.node(child)?.kind)))
            .collect()
    }

    /// Creates an empty file or directory `name` in `parent` (not durable until `parent` is
    /// fsynced).
    ///
    /// # Errors
    /// The name exists, bad name, not a directory, power cut.
    pub fn create(&mut self, parent: Ino, name: &OsStr, kind: Kind, perm: u16) -> Result<Ino> {
        self.live()?;
        check_name(name)?;
        if self.dir(parent)?.children.contains_key(name) {
            return Err(PowerFsError::Exists(name.into()));
        }
        let ino = self.next_ino;
        self.next_ino += 1;
        let node = Node {
            parent: Some((parent, name.to_owned())),
            ..Node::new(kind, perm)
        };
        self.nodes.insert(ino, node);
        let p = self.node_mut(parent)?;
        p.children.insert(name.to_owned(), ino);
        p.mtime = pulsar_rs_clock::system_now();
        Ok(ino)
    }

    /// Reads up to `size` bytes at `offset`.
    ///
    /// # Errors
    /// Not a file, power cut.
    pub fn read(&self, ino: Ino, offset: u64, size: usize) -> Result<&[u8]> {
        self.live()?;
        let n = self.node(ino)?;
        if n.kind != Kind::File {
            return Err(PowerFsError::IsDir);
        }
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(n.data.len());
        let end = start.saturating_add(size).min(n.data.len());
        Ok(&n.data[start..end])
    }

    /// Writes `data` at `offset` (zero-filling a gap); held in memory until fsync.
    ///
    /// # Errors
    /// Not a file, power cut.
    pub fn write(&mut self, ino: Ino, offset: u64, data: &[u8]) -> Result<usize> {
        self.live()?;
        let n = self.file_mut(ino)?;
        let off = usize::try_from(offset).map_err(|_| PowerFsError::Invalid("offset"))?;
        let end = off
            .checked_add(data.len())
            .ok_or(PowerFsError::Invalid("offset"))?;
        if n.data.len() < end {
            n.data.resize(end, 0);
        }
        n.data[off..end].copy_from_slice(data);
        // A write past the end also changes the zero-filled gap.
        let from = off.min(n.durable_data.len());
        n.mark_dirty(from);
        Ok(data.len())
    }

    /// Sets the length of a file (held in memory until fsync).
    ///
    /// # Errors
    /// Not a file, power cut.
    pub fn truncate(&mut self, ino: Ino, size: u64) -> Result<()> {
        self.live()?;
        let n = self.file_mut(ino)?;
        let size = usize::try_from(size).map_err(|_| PowerFsError::Invalid("size"))?;
        let old = n.data.len();
        n.data.resize(size, 0);
        n.mark_dirty(size.min(old));
        Ok(())
    }

    /// Changes the permission bits (kept in memory only: powerfs models data, not modes).
    ///
    /// # Errors
    /// Unknown inode, power cut.
    pub fn set_perm(&mut self, ino: Ino, perm: u16) -> Result<()> {
        self.live()?;
        self.node_mut(ino)?.perm = perm;
        Ok(())
    }

    fn detach(&mut self, parent: Ino, name: &OsStr) -> Result<Ino> {
        let p = self.node_mut(parent)?;
        let ino = p
            .children
            .remove(name)
            .ok_or_else(|| PowerFsError::NotFound(name.into()))?;
        p.mtime = pulsar_rs_clock::system_now();
        self.node_mut(ino)?.parent = None;
        Ok(ino)
    }

    /// Removes file `name` from `parent` (durable at the next fsync of `parent`). The inode
    /// stays readable and writable through open handles.
    ///
    /// # Errors
    /// Not found, is a directory, power cut.
    pub fn unlink(&mut self, parent: Ino, name: &OsStr) -> Result<()> {
        let ino = self.lookup(parent, name)?;
        if self.node(ino)?.kind == Kind::Dir {
            return Err(PowerFsError::IsDir);
        }
        self.detach(parent, name).map(|_| ())
    }

    /// Removes the empty directory `name` from `parent` (durable at the next fsync of `parent`).
    ///
    /// # Errors
    /// Not found, not a directory, not empty, power cut.
    pub fn rmdir(&mut self, parent: Ino, name: &OsStr) -> Result<()> {
        let ino = self.lookup(parent, name)?;
        let d = self.dir(ino)?;
        if !d.children.is_empty() {
            return Err(PowerFsError::NotEmpty(name.into()));
        }
        self.detach(parent, name).map(|_| ())
    }

    /// Renames `parent/name` to `new_parent/new_name`, replacing a file or empty directory
    /// there (unless `no_replace`). Durable side by side: the new name at the next fsync of
    /// `new_parent`, the removal of the old one at the next fsync of `parent`.
    ///
    /// # Errors
    /// Not found, exists (`no_replace`), kind mismatch, not empty, moving a directory into
    /// itself, power cut.
    pub fn rename(
        &mut self,
        parent: Ino,
        name: &OsStr,
        new_parent: Ino,
        new_name: &OsStr,
        no_replace: bool,
    ) -> Result<()> {
        let ino = self.lookup(parent, name)?;
        check_name(new_name)?;
        self.dir(new_parent)?;
        let kind = self.node(ino)?.kind;
        if kind == Kind::Dir {
            // new_parent must not be ino or one of its descendants.
            let mut at = Some(new_parent);
            while let Some(a) = at {
                if a == ino {
                    return Err(PowerFsError::Invalid("directory moved into itself"));
                }
                at = self.node(a)?.parent.as_ref().map(|p| p.0);
            }
        }
        if let Some(&target) = self.dir(new_parent)?.children.get(new_name) {
            if target == ino {
                return Ok(());
            }
            if no_replace {
                return Err(PowerFsError::Exists(new_name.into()));
            }
            let t = self.node(target)?;
            match (kind, t.kind) {
                (Kind::File, Kind::Dir) => return Err(PowerFsError::IsDir),
                (Kind::Dir, Kind::File) => return Err(PowerFsError::NotDir),
                (Kind::Dir, Kind::Dir) if !t.children.is_empty() => {
                    return Err(PowerFsError::NotEmpty(new_name.into()))
                }
                _ => {}
            }
            self.detach(new_parent, new_name)?;
        }
        self.detach(parent, name)?;
        let np = self.node_mut(new_parent)?;
        np.children.insert(new_name.to_owned(), ino);
        np.mtime = pulsar_rs_clock::system_now();
        self.node_mut(ino)?.parent = Some((new_parent, new_name.to_owned()));
        Ok(())
    }

    /// Every path (relative to the backing root) at which `ino` is durably reachable.
    fn durable_paths(&self, ino: Ino) -> Vec<PathBuf> {
        /// `suffix` holds the names below `ino`, innermost first.
        fn walk(m: &Model, ino: Ino, suffix: &mut Vec<OsString>, out: &mut Vec<PathBuf>) {
            if ino == ROOT {
                out.push(suffix.iter().rev().collect());
                return;
            }
            // A cycle is impossible in a consistent model; the depth bound keeps a bug finite.
            if suffix.len() > 4096 {
                return;
            }
            let Some(n) = m.nodes.get(&ino) else { return };
            for (p, name) in &n.durable_links {
                suffix.push(name.clone());
                walk(m, *p, suffix, out);
                suffix.pop();
            }
        }
        let mut out = Vec::new();
        walk(self, ino, &mut Vec::new(), &mut out);
        out
    }

    /// `fsync`/`fdatasync` of a file: its current data and length become durable (at every
    /// name it durably has; its names themselves are not made durable).
    ///
    /// # Errors
    /// Backing I/O, power cut.
    pub fn fsync(&mut self, ino: Ino) -> Result<()> {
        self.live()?;
        if self.node(ino)?.kind == Kind::Dir {
            return self.fsync_dir(ino);
        }
        self.stats.file_syncs += 1;
        let paths = self.durable_paths(ino);
        let n = self.node_mut(ino)?;
        let Some(from) = n.dirty_from.take() else {
            return Ok(());
        };
        let from = from.min(n.data.len()).min(n.durable_data.len());
        n.durable_data.truncate(from);
        n.durable_data.extend_from_slice(&n.data[from..]);
        let bytes = (n.data.len() - from) as u64;
        let n = self.node(ino)?;
        for p in &paths {
            self.backing.write_tail(p, &n.durable_data, from)?;
        }
        self.stats.durable_bytes += bytes * paths.len() as u64;
        Ok(())
    }

    /// `fsync` of a directory: its current entries become durable (each naming the inode's
    /// durable contents: an entry to a file never fsynced is an empty file).
    ///
    /// # Errors
    /// Not a directory, backing I/O, power cut.
    pub fn fsync_dir(&mut self, ino: Ino) -> Result<()> {
        self.live()?;
        self.stats.dir_syncs += 1;
        let d = self.dir(ino)?;
        let old = d.durable_children.clone();
        let new = d.children.clone();
        let paths = self.durable_paths(ino);
        for (name, child) in &old {
            if new.get(name) == Some(child) {
                continue;
            }
            let c = self.node_mut(*child)?;
            c.durable_links.retain(|(p, n)| !(*p == ino && n == name));
            for p in &paths {
                self.backing.remove(&p.join(name))?;
            }
        }
        self.node_mut(ino)?.durable_children = new.clone();
        for (name, child) in &new {
            if old.get(name) == Some(child) {
                continue;
            }
            self.node_mut(*child)?
                .durable_links
                .push((ino, name.clone()));
            for p in &paths {
                self.materialize(*child, &p.join(name))?;
            }
        }
        Ok(())
    }

    /// Writes the durable state of `ino` (and, for a directory, its durable subtree) at `rel`.
    fn materialize(&mut self, ino: Ino, rel: &Path) -> Result<()> {
        let n = self.node(ino)?;
        match n.kind {
            Kind::File => {
                let len = n.durable_data.len() as u64;
                self.backing.write_file(rel, &n.durable_data)?;
                self.stats.durable_bytes += len;
                Ok(())
            }
            Kind::Dir => {
                self.backing.make_dir(rel)?;
                let entries = n.durable_children.clone();
                for (name, child) in entries {
                    self.materialize(child, &rel.join(name))?;
                }
                Ok(())
            }
        }
    }
}
