//! The connection's read buffer: sized by what the connection carries, released when it idles.
//!
//! A connection used to read into 64 KiB allocated at accept, kept for its whole life: 10 000
//! idle connections cost about 18.5 KB each against Apache Pulsar's 7.3 KB (benches/RESULTS.md,
//! the hostile soak's idle phase). As Netty's adaptive receive allocator that Pulsar reads with,
//! the next read asks for room by what the last reads filled: it doubles after a read that
//! filled the room given, up to [`MAX_READ`], and halves after two reads in a row that used less
//! than half of it, down to [`MIN_READ`]. A connection that idles (nothing buffered at a
//! keepalive tick) gives its allocation back and starts again small.

use bytes::BytesMut;

/// The smallest room a read is given (and the first, and the first after an idle tick): a
/// CONNECT, a PING, a flow permit. What an idle connection holds while it waits for a read
/// (was 2 KiB: 10 000 idle connections cost 9.3 KB each against Apache Pulsar's 7.3 KB).
pub const MIN_READ: usize = 256;
/// The largest room a read is given: what every read had before.
pub const MAX_READ: usize = 64 * 1024;

/// The buffer and the size of the next read. Owned by the connection's reader task alone.
pub struct ReadBuffer {
    /// Bytes read and not yet decoded into frames, and room for the next read.
    pub buf: BytesMut,
    /// The room the next read asks for.
    next: usize,
    /// Reads in a row that used less than half of their room.
    small_reads: u8,
}

impl Default for ReadBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl ReadBuffer {
    /// An empty buffer: nothing is allocated until the first read.
    pub fn new() -> Self {
        ReadBuffer {
            buf: BytesMut::new(),
            next: MIN_READ,
            small_reads: 0,
        }
    }

    /// Makes room for the next read (at least the adaptive size past what is buffered).
    pub fn reserve(&mut self) {
        if self.buf.capacity() - self.buf.len() < self.next {
            self.buf.reserve(self.next);
        }
    }

    /// Records a read of `n` bytes into the room [`Self::reserve`] made.
    pub fn read(&mut self, n: usize) {
        if n >= self.next {
            self.next = (self.next * 2).min(MAX_READ);
            self.small_reads = 0;
        } else if n < self.next / 2 {
            self.small_reads += 1;
            if self.small_reads >= 2 {
                self.next = (self.next / 2).max(MIN_READ);
                self.small_reads = 0;
            }
        } else {
            self.small_reads = 0;
        }
    }

    /// At a keepalive tick: a connection with nothing buffered gives its allocation back.
    pub fn idle(&mut self) {
        if self.buf.is_empty() {
            self.buf = BytesMut::new();
            self.next = MIN_READ;
            self.small_reads = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_with_full_reads_and_shrinks_after_small_ones() {
        let mut r = ReadBuffer::new();
        assert_eq!(
            r.buf.capacity(),
            0,
            "nothing allocated before the first read"
        );
        r.reserve();
        assert!(r.buf.capacity() >= MIN_READ);
        // Reads that fill their room: 2, 4, 8, 16, 32, 64 KiB, and no further.
        for _ in 0..10 {
            let n = r.next;
            r.read(n);
        }
        assert_eq!(r.next, MAX_READ);
        // One small read changes nothing; the second in a row halves the room.
        r.read(100);
        assert_eq!(r.next, MAX_READ);
        r.read(100);
        assert_eq!(r.next, MAX_READ / 2);
        // A read between half and all of the room resets the count.
        r.read(100);
        r.read(MAX_READ / 4 + 1);
        r.read(100);
        assert_eq!(r.next, MAX_READ / 2);
        for _ in 0..20 {
            r.read(1);
        }
        assert_eq!(r.next, MIN_READ);
    }

    #[test]
    fn an_idle_connection_gives_its_buffer_back_unless_it_holds_a_partial_frame() {
        let mut r = ReadBuffer::new();
        r.read(MIN_READ);
        r.read(2 * MIN_READ);
        r.reserve();
        r.buf.extend_from_slice(b"half a frame");
        r.idle();
        assert_eq!(&r.buf[..], b"half a frame", "buffered bytes are kept");
        assert!(r.buf.capacity() >= 4 * MIN_READ);
        r.buf.clear();
        r.idle();
        assert_eq!(r.buf.capacity(), 0);
        assert_eq!(r.next, MIN_READ);
    }
}
