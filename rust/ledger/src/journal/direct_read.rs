//! Large reads from segment files past the page cache (`O_DIRECT`), into reused memory.
//!
//! With direct writes (see [`super::direct`]) a backlog the entry cache no longer holds is not in
//! the page cache either, so a consumer catching up reads it from the disk. Read through the page
//! cache, every span costs fresh page-cache pages, filled and then copied into a new buffer. On a
//! virtual machine whose free memory goes back to the host (balloon free-page reporting), touching
//! fresh pages is what costs most: the same catch-up measured 0.34–0.40 CPU seconds per GB in one
//! run and 1.06–1.27 in the next. A direct read fills a buffer this pool hands out again once the
//! entries sliced from it are gone, so the memory stays warm and nothing is copied.
//!
//! A span is read from the start of the block holding its first byte to the end of the block
//! holding its last. The bytes past the span in that last block may be rewritten meanwhile by
//! the next round (which rewrites the block the write frontier is in): a read racing with that
//! write may see either version of those sectors, but the span's own bytes are the same in both.

use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::vfs::{VFile, DIRECT_BLOCK};

/// Spans shorter than this are read through the page cache: a direct read always waits for the
/// device, while small reads of recent records are likely still cached.
pub(super) const MIN_SPAN: u64 = 128 << 10;

/// Buffers larger than this are not kept for reuse.
const MAX_KEPT_BUFFER: usize = 8 << 20;

/// Free buffers kept at most (so at most this many times [`MAX_KEPT_BUFFER`] idle).
const MAX_KEPT: usize = 4;

/// `DIRECT_BLOCK` as a length.
const BLOCK: usize = DIRECT_BLOCK as usize;

/// Free read buffers. Shared by every reader of one journal.
#[derive(Default)]
pub(super) struct ReadBuffers {
    /// Free buffers, each `BLOCK` bytes longer than its usable aligned part. A
    /// `parking_lot::Mutex` held only to push or pop one.
    free: Mutex<Vec<Vec<u8>>>,
    /// Spans read past the page cache so far. Relaxed: a statistic.
    reads: std::sync::atomic::AtomicU64,
}

/// A buffer on loan: the entries sliced from a read share it, and the last one to go returns
/// it to the pool.
struct Loan {
    buf: Vec<u8>,
    /// The span's bytes inside `buf`.
    start: usize,
    len: usize,
    pool: Arc<ReadBuffers>,
}

impl AsRef<[u8]> for Loan {
    fn as_ref(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }
}

impl Drop for Loan {
    fn drop(&mut self) {
        self.pool.give_back(std::mem::take(&mut self.buf));
    }
}

impl ReadBuffers {
    /// A buffer whose aligned part holds at least `len` bytes: a free one if large enough, else
    /// a new one.
    fn take(&self, len: usize) -> Vec<u8> {
        let found = {
            let mut free = self.free.lock();
            free.iter()
                .position(|b| b.len() >= len + BLOCK)
                .map(|i| free.swap_remove(i))
        };
        found.unwrap_or_else(|| vec![0u8; len + BLOCK])
    }

    /// Bytes `[from, to)` of `file` read past the page cache; `Ok(None)` when the file takes
    /// no direct reads (the caller reads through the page cache).
    ///
    /// # Errors
    /// I/O failure, or `UnexpectedEof` when the file ends before `to`.
    pub(super) fn read(
        self: &Arc<Self>,
        file: &dyn VFile,
        from: u64,
        to: u64,
    ) -> std::io::Result<Option<Bytes>> {
        let first = from - from % DIRECT_BLOCK;
        let end = to.next_multiple_of(DIRECT_BLOCK);
        let (Ok(len), Ok(head), Ok(want)) = (
            usize::try_from(end - first),
            usize::try_from(from - first),
            usize::try_from(to - from),
        ) else {
            return Ok(None);
        };
        let mut buf = self.take(len);
        let skip = buf.as_ptr().align_offset(BLOCK);
        let Some(got) = file.read_direct(&mut buf[skip..skip + len], first)? else {
            self.give_back(buf);
            return Ok(None);
        };
        if got < head + want {
            self.give_back(buf);
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("direct read of {want} bytes at {from} ended after {got}"),
            ));
        }
        // Relaxed: a statistic.
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Some(Bytes::from_owner(Loan {
            buf,
            start: skip + head,
            len: want,
            pool: Arc::clone(self),
        })))
    }

    /// Keeps `buf` for reuse, unless it is oversized or enough are kept.
    fn give_back(&self, buf: Vec<u8>) {
        if buf.len() <= MAX_KEPT_BUFFER + BLOCK {
            let mut free = self.free.lock();
            if free.len() < MAX_KEPT {
                free.push(buf);
            }
        }
    }

    /// Spans read past the page cache so far.
    #[cfg(test)]
    pub(super) fn direct_reads(&self) -> u64 {
        // Relaxed: a statistic.
        self.reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    #[cfg(test)]
    pub(super) fn free_buffers(&self) -> usize {
        self.free.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::{RealFs, Vfs};

    fn file_with(len: usize) -> (tempfile::TempDir, Arc<dyn VFile>, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let f = RealFs.open_direct(&dir.path().join("seg"), true).unwrap();
        let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        f.write_all_at(&data, 0).unwrap();
        (dir, f, data)
    }

    #[test]
    fn spans_at_any_offset_read_back_exactly_and_buffers_come_back() {
        let (_d, f, data) = file_with(3 << 20);
        let pool = Arc::new(ReadBuffers::default());
        let Some(probe) = pool.read(f.as_ref(), 0, 4096).unwrap() else {
            eprintln!("this file system takes no direct reads; skipped");
            return;
        };
        assert_eq!(&probe[..], &data[..4096]);
        drop(probe);
        for (from, to) in [
            (1, 2),
            (4095, 4097),
            (100, 1 << 20),
            (5000, 3 << 20),
            (0, 3 << 20),
        ] {
            let got = pool.read(f.as_ref(), from, to).unwrap().unwrap();
            assert_eq!(
                &got[..],
                &data[from as usize..to as usize],
                "[{from}, {to})"
            );
            // Slices keep the loan alive; the buffer returns when the last one goes.
            let part = got.slice(0..1);
            drop(got);
            let kept = pool.free_buffers();
            drop(part);
            assert_eq!(pool.free_buffers(), (kept + 1).min(MAX_KEPT));
        }
        assert!(pool.free_buffers() <= MAX_KEPT);
        let e = pool.read(f.as_ref(), 10, (3 << 20) + 10).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn a_file_without_direct_reads_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let f = RealFs.open(&dir.path().join("plain"), true).unwrap();
        f.write_all_at(&[1; 8192], 0).unwrap();
        let pool = Arc::new(ReadBuffers::default());
        assert!(pool.read(f.as_ref(), 0, 8192).unwrap().is_none());
        assert_eq!(pool.free_buffers(), 1, "the buffer came back");
    }
}
