//! The FUSE adapter: kernel requests onto [`Model`], plus the control file `/.powerfs` in the
//! mount root (hidden from listings). Writing `cut` to it cuts the power: the write returns once
//! nothing more can become durable. Reading it gives `state=live|cut` and the counters.

use std::ffi::OsStr;
use std::time::{Duration, SystemTime};

use fuser::consts::FOPEN_DIRECT_IO;
use fuser::{
    FileAttr, FileType, Filesystem, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyWrite, Request, TimeOrNow,
};

use crate::error::PowerFsError;
use crate::model::{Attr, Kind, Model, ROOT};

/// Name of the control file in the mount root.
pub const CONTROL_NAME: &str = ".powerfs";

/// Inode of the control file (outside the model's range).
const CONTROL_INO: u64 = u64::MAX - 1;

/// How long the kernel may cache entries and attributes: every change goes through this file
/// system, so the kernel's caches stay coherent.
const TTL: Duration = Duration::from_secs(1);

/// The mounted file system. Requests are served one at a time by fuser's session loop.
pub struct PowerFs {
    /// The state (owned by the session thread).
    model: Model,
    /// Owner of every node (the mounting user).
    uid: u32,
    /// Group of every node.
    gid: u32,
}

impl PowerFs {
    /// Wraps a model loaded from the backing directory.
    pub fn new(model: Model) -> Self {
        // SAFETY: getuid/getgid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        PowerFs { model, uid, gid }
    }

    fn file_attr(&self, a: &Attr) -> FileAttr {
        FileAttr {
            ino: a.ino,
            size: a.size,
            blocks: a.size.div_ceil(512),
            atime: a.mtime,
            mtime: a.mtime,
            ctime: a.mtime,
            crtime: a.mtime,
            kind: match a.kind {
                Kind::File => FileType::RegularFile,
                Kind::Dir => FileType::Directory,
            },
            perm: a.perm,
            nlink: a.nlink,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    fn control_text(&self) -> String {
        let s = self.model.stats();
        format!(
            "state={} file_syncs={} dir_syncs={} durable_bytes={}\n",
            if self.model.is_cut() { "cut" } else { "live" },
            s.file_syncs,
            s.dir_syncs,
            s.durable_bytes
        )
    }

    fn control_attr(&self) -> FileAttr {
        let size = self.control_text().len() as u64;
        let a = Attr {
            ino: CONTROL_INO,
            kind: Kind::File,
            size,
            perm: 0o600,
            nlink: 1,
            mtime: pulsar_rs_clock::system_now(),
        };
        self.file_attr(&a)
    }

    fn entry(&self, ino: u64, reply: ReplyEntry) {
        match self.model.attr(ino) {
            Ok(a) => reply.entry(&TTL, &self.file_attr(&a), 0),
            Err(e) => reply.error(e.errno()),
        }
    }
}

fn to_ino(ino: u64) -> u64 {
    // FUSE's root id is 1, as is the model's.
    debug_assert_eq!(fuser::FUSE_ROOT_ID, ROOT);
    ino
}

fn empty(res: Result<(), PowerFsError>, reply: ReplyEmpty) {
    match res {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(e.errno()),
    }
}

fn perm_of(mode: u32, umask: u32) -> u16 {
    // Permission bits fit in 12 bits.
    ((mode & !umask) & 0o7777) as u16
}

impl Filesystem for PowerFs {
    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        if parent == ROOT && name == CONTROL_NAME {
            return reply.entry(&Duration::ZERO, &self.control_attr(), 0);
        }
        match self.model.lookup(to_ino(parent), name) {
            Ok(ino) => self.entry(ino, reply),
            Err(e) => reply.error(e.errno()),
        }
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        if ino == CONTROL_INO {
            return reply.attr(&Duration::ZERO, &self.control_attr());
        }
        match self.model.attr(to_ino(ino)) {
            Ok(a) => reply.attr(&TTL, &self.file_attr(&a)),
            Err(e) => reply.error(e.errno()),
        }
    }

    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        if ino == CONTROL_INO {
            // `echo cut > .powerfs` truncates first.
            return reply.attr(&Duration::ZERO, &self.control_attr());
        }
        let ino = to_ino(ino);
        let res = (|| {
            if let Some(size) = size {
                self.model.truncate(ino, size)?;
            }
            if let Some(mode) = mode {
                self.model.set_perm(ino, perm_of(mode, 0))?;
            }
            self.model.attr(ino)
        })();
        match res {
            Ok(a) => reply.attr(&TTL, &self.file_attr(&a)),
            Err(e) => reply.error(e.errno()),
        }
    }

    fn mknod(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        if mode & libc::S_IFMT != libc::S_IFREG {
            return reply.error(libc::EOPNOTSUPP);
        }
        match self
            .model
            .create(to_ino(parent), name, Kind::File, perm_of(mode, umask))
        {
            Ok(ino) => self.entry(ino, reply),
            Err(e) => reply.error(e.errno()),
        }
    }

    fn mkdir(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        match self
            .model
            .create(to_ino(parent), name, Kind::Dir, perm_of(mode, umask))
        {
            Ok(ino) => self.entry(ino, reply),
            Err(e) => reply.error(e.errno()),
        }
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        empty(self.model.unlink(to_ino(parent), name), reply);
    }

    fn rmdir(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        empty(self.model.rmdir(to_ino(parent), name), reply);
    }

    fn rename(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
        reply: ReplyEmpty,
    ) {
        if flags & !libc::RENAME_NOREPLACE != 0 {
            return reply.error(libc::EINVAL);
        }
        let no_replace = flags & libc::RENAME_NOREPLACE != 0;
        let res = self
            .model
            .rename(to_ino(parent), name, to_ino(newparent), newname, no_replace);
        empty(res, reply);
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        if ino == CONTROL_INO {
            return reply.opened(0, FOPEN_DIRECT_IO);
        }
        match self.model.attr(to_ino(ino)) {
            Ok(_) => reply.opened(0, 0),
            Err(e) => reply.error(e.errno()),
        }
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyData,
    ) {
        let offset = u64::try_from(offset).unwrap_or(0);
        if ino == CONTROL_INO {
            let text = self.control_text();
            let start = usize::try_from(offset)
                .unwrap_or(usize::MAX)
                .min(text.len());
            let end = start.saturating_add(size as usize).min(text.len());
            return reply.data(&text.as_bytes()[start..end]);
        }
        match self.model.read(to_ino(ino), offset, size as usize) {
            Ok(data) => reply.data(data),
            Err(e) => reply.error(e.errno()),
        }
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyWrite,
    ) {
        if ino == CONTROL_INO {
            return match std::str::from_utf8(data).map(str::trim) {
                Ok("cut") => {
                    self.model.cut();
                    eprintln!("powerfs: power cut: {}", self.control_text().trim());
                    reply.written(data.len() as u32)
                }
                _ => reply.error(libc::EINVAL),
            };
        }
        let offset = u64::try_from(offset).unwrap_or(0);
        match self.model.write(to_ino(ino), offset, data) {
            // A FUSE write is at most max_write (far below 4 GiB).
            Ok(n) => reply.written(n as u32),
            Err(e) => reply.error(e.errno()),
        }
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _lo: u64, reply: ReplyEmpty) {
        // close() makes nothing durable.
        reply.ok();
    }

    fn fsync(&mut self, _req: &Request<'_>, ino: u64, _fh: u64, _ds: bool, reply: ReplyEmpty) {
        if ino == CONTROL_INO {
            return reply.ok();
        }
        empty(self.model.fsync(to_ino(ino)), reply);
    }

    fn opendir(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        match self.model.attr(to_ino(ino)) {
            Ok(a) if a.kind == Kind::Dir => reply.opened(0, 0),
            Ok(_) => reply.error(libc::ENOTDIR),
            Err(e) => reply.error(e.errno()),
        }
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        let entries = match self.model.readdir(to_ino(ino)) {
            Ok(e) => e,
            Err(e) => return reply.error(e.errno()),
        };
        let dots = [
            (OsStr::new(".").to_owned(), ino, Kind::Dir),
            (OsStr::new("..").to_owned(), ino, Kind::Dir),
        ];
        let all = dots.into_iter().chain(entries);
        let skip = usize::try_from(offset).unwrap_or(0);
        for (i, (name, child, kind)) in all.enumerate().skip(skip) {
            let kind = match kind {
                Kind::File => FileType::RegularFile,
                Kind::Dir => FileType::Directory,
            };
            // The offset handed back is the index of the next entry.
            if reply.add(child, (i + 1) as i64, kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn fsyncdir(&mut self, _req: &Request<'_>, ino: u64, _fh: u64, _ds: bool, reply: ReplyEmpty) {
        empty(self.model.fsync_dir(to_ino(ino)), reply);
    }

    fn create(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        let res = self
            .model
            .create(to_ino(parent), name, Kind::File, perm_of(mode, umask))
            .and_then(|ino| self.model.attr(ino));
        match res {
            Ok(a) => reply.created(&TTL, &self.file_attr(&a), 0, 0, 0),
            Err(e) => reply.error(e.errno()),
        }
    }
}
