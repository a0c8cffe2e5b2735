//! Durable rounds written past the page cache (`O_DIRECT`), where the file system takes it.
//!
//! Why: a buffered round copies its records into the page cache, and its `fdatasync` then walks
//! the dirty pages, builds and submits their writes and waits for them; a direct write hands the
//! aligned buffer to the device at once, and the sync is left with the device's cache flush.
//! Measured here (`benches/direct_round_cost.py`: `os.pwrite` + `os.fdatasync` over
//! preallocated zeros, CPU per round):
//! 6 KiB 48.2 vs 24.8 µs, 30 KiB 56.0 vs 29.0 µs, 150 KiB 68.2 vs 35.9 µs buffered vs direct,
//! and each round's wall time 30–37 % shorter. Preallocated zeros cost far less too: no page
//! cache pages to allocate and fill for blocks that records overwrite moments later.
//!
//! A direct write covers whole blocks ([`DIRECT_BLOCK`]) from aligned memory, while records
//! are packed end to end with no padding (the on-disk format is unchanged). So a round writes
//! from the start of the block holding its first byte: that block's earlier bytes are the
//! previous round's last ones, which this writer keeps (or reads back from the file, after an
//! open); the round's last block is padded with zeros. Zeros past the records are what a
//! preallocated segment holds anyway, and recovery and sealing already cut them.
//!
//! `fdatasync` still makes each round durable: direct writes bypass the page cache, not the
//! device's volatile cache. A file system that refuses direct writes (tmpfs, some FUSE file
//! systems) gets the page cache path, as do the non-durable mode (nothing waits for its writes
//! there) and `journalDirectWrites = false`.
//!
//! Measured in the broker (`benches/RESULTS.md`): W3 under `pulsar-rs-perf` 1.09 M against
//! 0.49 M msg/s with the page cache, broker CPU per message 22 % (W3) and 25 % (W2) lower under
//! the independent load generator. The cost: a backlog is no longer in the page cache, so a
//! consumer catching up on what the entry cache does not hold reads it from the disk (1.4 against
//! 2.8 GB/s here); large spans are read past the page cache too (see [`super::direct_read`]).

use crate::vfs::{VFile, DIRECT_BLOCK};

/// `DIRECT_BLOCK` as a length (4 096 fits every `usize`).
const BLOCK: usize = DIRECT_BLOCK as usize;

/// The most one direct write carries, and the size of the staging memory: a larger round is
/// written in several, so the memory stays bounded whatever the round's size.
const CHUNK: usize = 1 << 20;

/// Flusher-owned staging memory and the last, partly filled block of the segment it writes.
/// Only the flusher thread uses it, so it lives on that thread's stack.
#[derive(Default)]
pub(super) struct DirectWriter {
    /// Staging memory: [`CHUNK`] bytes at an aligned address inside it, filled and written for
    /// each chunk of a round.
    buf: Vec<u8>,
    /// The last written block that records fill only partly: its segment, its offset and the
    /// record bytes at its start.
    tail: Option<Tail>,
}

struct Tail {
    segment: u32,
    at: u64,
    bytes: Vec<u8>,
}

impl DirectWriter {
    /// Writes `data` at `offset` of segment `segment` as whole blocks past the page cache (the
    /// last one padded with zeros), [`CHUNK`] bytes per write at most. `Ok(false)`: the file
    /// takes no direct writes; the caller writes `data` through the page cache (any chunk
    /// written already holds the same bytes).
    pub(super) fn write(
        &mut self,
        segment: u32,
        file: &dyn VFile,
        data: &[u8],
        offset: u64,
    ) -> std::io::Result<bool> {
        if self.buf.len() < CHUNK + BLOCK {
            self.buf.resize(CHUNK + BLOCK, 0);
        }
        let skip = self.buf.as_ptr().align_offset(BLOCK);
        let staging = &mut self.buf[skip..skip + CHUNK];
        let mut start = offset - offset % DIRECT_BLOCK;
        // Below one block: the cast cannot truncate.
        let mut head = (offset - start) as usize;
        if head > 0 {
            match &self.tail {
                Some(t) if t.segment == segment && t.at == start && t.bytes.len() == head => {
                    staging[..head].copy_from_slice(&t.bytes);
                }
                // First round after the writer lost track (an open, a failed round): the bytes
                // are on disk, read them back.
                _ => file.read_exact_at(&mut staging[..head], start)?,
            }
        }
        let mut rest = data;
        loop {
            // A chunk that does not take the rest ends on a block boundary (CHUNK is whole
            // blocks), so the next one starts on one with nothing before it.
            let n = rest.len().min(CHUNK - head);
            staging[head..head + n].copy_from_slice(&rest[..n]);
            let filled = head + n;
            let len = filled.next_multiple_of(BLOCK);
            staging[filled..len].fill(0);
            if !file.write_direct(&staging[..len], start)? {
                return Ok(false);
            }
            rest = &rest[n..];
            if rest.is_empty() {
                // The last block's record bytes start the next round's first write.
                let last = filled - filled % BLOCK;
                let kept = &staging[last..filled];
                let t = self.tail.get_or_insert_with(|| Tail {
                    segment,
                    at: 0,
                    bytes: Vec::with_capacity(BLOCK),
                });
                t.segment = segment;
                t.at = start + last as u64;
                t.bytes.clear();
                t.bytes.extend_from_slice(kept);
                return Ok(true);
            }
            start += CHUNK as u64;
            head = 0;
        }
    }

    /// A failed round cut segments back: forget the kept block.
    pub(super) fn reset(&mut self) {
        self.tail = None;
    }
}

/// Writes zeros over `[from, to)` of `file` past the page cache, widened to whole blocks: from
/// the block after the one holding `from` (its bytes past the records are the zero padding of
/// the last direct round) up to the end of the block holding `to - 1`. `Ok(false)`: the file
/// takes no direct writes (or the range holds no whole block); nothing was written.
pub(super) fn write_zeros(file: &dyn VFile, from: u64, to: u64) -> std::io::Result<bool> {
    let mut at = from.next_multiple_of(DIRECT_BLOCK);
    let end = to.next_multiple_of(DIRECT_BLOCK);
    if at >= end {
        return Ok(false);
    }
    let zeros = zero_blocks();
    while at < end {
        // At most the buffer's length: the cast cannot truncate.
        let piece = (end - at).min(zeros.len() as u64) as usize;
        if !file.write_direct(&zeros[..piece], at)? {
            return Ok(false);
        }
        at += piece as u64;
    }
    Ok(true)
}

/// 256 KiB of zeros at an aligned address (also the buffered zero writes' source).
pub(super) fn zero_blocks() -> &'static [u8] {
    const LEN: usize = 256 << 10;
    static Z: std::sync::OnceLock<Box<[u8]>> = std::sync::OnceLock::new();
    let raw = Z.get_or_init(|| vec![0u8; LEN + BLOCK].into_boxed_slice());
    let skip = raw.as_ptr().align_offset(BLOCK);
    &raw[skip..skip + LEN]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::{RealFs, Vfs};

    /// Whether the test directory's file system takes direct writes.
    fn takes_direct(dir: &std::path::Path) -> bool {
        let f = RealFs.open_direct(&dir.join("probe"), true).unwrap();
        let z = zero_blocks();
        f.write_direct(&z[..BLOCK], 0).unwrap()
    }

    #[test]
    fn rounds_of_any_size_land_end_to_end() {
        let dir = tempfile::tempdir().unwrap();
        let direct = takes_direct(dir.path());
        let path = dir.path().join("seg");
        let file = RealFs.open_direct(&path, true).unwrap();
        let mut w = DirectWriter::default();
        let mut expect = Vec::new();
        // Sizes that start and end mid-block, fill a block exactly, span several, and rounds
        // larger than one write (CHUNK).
        for (i, n) in [
            100usize, 5000, 3, 8189, 4096, 1, 12_000, 2_100_017, 4095, CHUNK,
        ]
        .iter()
        .enumerate()
        {
            let data: Vec<u8> = (0..*n).map(|k| (k * 7 + i * 31 + 1) as u8 | 1).collect();
            let at = expect.len() as u64;
            assert_eq!(w.write(0, file.as_ref(), &data, at).unwrap(), direct);
            if !direct {
                file.write_all_at(&data, at).unwrap();
            }
            expect.extend_from_slice(&data);
            let raw = std::fs::read(&path).unwrap();
            assert_eq!(&raw[..expect.len()], &expect[..], "round {i}");
            assert!(
                raw[expect.len()..].iter().all(|b| *b == 0),
                "round {i}: padding"
            );
        }
        // A writer that lost track of the last block (after an open) reads it back.
        let mut fresh = DirectWriter::default();
        let at = expect.len() as u64;
        assert_eq!(fresh.write(0, file.as_ref(), b"tail", at).unwrap(), direct);
        if direct {
            expect.extend_from_slice(b"tail");
            let raw = std::fs::read(&path).unwrap();
            assert_eq!(&raw[..expect.len()], &expect[..]);
        }
    }

    #[test]
    fn zeros_cover_whole_blocks_after_the_records() {
        let dir = tempfile::tempdir().unwrap();
        if !takes_direct(dir.path()) {
            return; // tmpfs: the page cache path, covered by the preallocation tests
        }
        let path = dir.path().join("seg");
        let file = RealFs.open_direct(&path, true).unwrap();
        let mut w = DirectWriter::default();
        assert!(w.write(0, file.as_ref(), &[7u8; 5000], 0).unwrap());
        assert!(write_zeros(file.as_ref(), 5000, 70_000).unwrap());
        let raw = std::fs::read(&path).unwrap();
        assert_eq!(raw.len() as u64, 70_000u64.next_multiple_of(DIRECT_BLOCK));
        assert!(raw[..5000].iter().all(|b| *b == 7), "records kept");
        assert!(raw[5000..].iter().all(|b| *b == 0));
    }
}
