//! The write half of a connection: drains the outbound queue and writes frames with vectored
//! writes, so a MESSAGE goes out as its small encoded header followed by the stored entry bytes,
//! which are never copied in user space. Generic over the socket: plain TCP or TLS.
//!
//! The bytes of MESSAGE frames queued and not yet written are counted ([`Writability`]), with
//! Netty's water marks as Pulsar's connections have them: over the high mark the connection is
//! not writable and the dispatchers stop feeding its consumers; once the writer brings it under
//! the low mark it is writable again and their dispatchers are woken. A client that grants
//! permits and stops reading so holds at most about the high mark (plus one dispatcher read per
//! subscription) in the broker, instead of the whole backlog.

use std::io::IoSlice;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use bytes::{Buf, Bytes};
use parking_lot::Mutex;
use pulsar_rs_broker::Subscription;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc::UnboundedReceiver;

/// Queued message bytes over which a connection stops being writable.
pub const HIGH_WATER_MARK: usize = 1 << 20;
/// Queued message bytes under which it is writable again.
pub const LOW_WATER_MARK: usize = 512 << 10;

/// Whether a connection can take more messages (Netty's `isWritable()`).
pub struct Writability {
    /// MESSAGE bytes queued and not yet written: added by the consumer sink, removed by the
    /// writer after each write. SeqCst with `unwritable`: see [`Writability::queued`].
    queued: AtomicUsize,
    /// Set over the high mark (by the sink), cleared under the low mark (by whoever sees it).
    unwritable: AtomicBool,
    /// Subscriptions with a consumer on this connection, woken when it is writable again.
    /// Short lock, taken by SUBSCRIBE and by the transition back to writable.
    waiters: Mutex<Vec<Weak<Subscription>>>,
}

impl Default for Writability {
    fn default() -> Self {
        Writability {
            queued: AtomicUsize::new(0),
            unwritable: AtomicBool::new(false),
            waiters: Mutex::new(Vec::new()),
        }
    }
}

impl Writability {
    /// Whether the dispatchers may feed this connection.
    #[must_use]
    pub fn is_writable(&self) -> bool {
        // SeqCst: see `queued`.
        !self.unwritable.load(Ordering::SeqCst)
    }

    /// MESSAGE bytes queued and not yet written.
    #[must_use]
    pub fn queued(&self) -> usize {
        // SeqCst: the flag and the counter are each written then the other re-read, by the
        // sink and the writer; total order guarantees one of them sees the other's write, so
        // the flag never stays set over an empty queue.
        self.queued.load(Ordering::SeqCst)
    }

    /// Counts `n` message bytes queued; over the high mark the connection is not writable.
    pub fn add(&self, n: usize) {
        // SeqCst: see `queued`.
        let now = self.queued.fetch_add(n, Ordering::SeqCst) + n;
        if now > HIGH_WATER_MARK {
            self.unwritable.store(true, Ordering::SeqCst);
            // The writer may have drained everything between the add and the store.
            self.check_writable();
        }
    }

    /// Counts `n` message bytes written.
    pub fn written(&self, n: usize) {
        if n > 0 {
            // SeqCst: see `queued`.
            self.queued.fetch_sub(n, Ordering::SeqCst);
            self.check_writable();
        }
    }

    /// Clears the flag under the low mark and wakes the dispatchers that stopped on it.
    fn check_writable(&self) {
        // SeqCst: see `queued`.
        if self.queued.load(Ordering::SeqCst) <= LOW_WATER_MARK
            && self.unwritable.swap(false, Ordering::SeqCst)
        {
            let mut waiters = self.waiters.lock();
            waiters.retain(|w| match w.upgrade() {
                Some(sub) => {
                    sub.poke();
                    true
                }
                None => false,
            });
        }
    }

    /// Wakes `sub`'s dispatcher when this connection becomes writable again.
    pub fn watch(&self, sub: &Arc<Subscription>) {
        let mut waiters = self.waiters.lock();
        waiters.retain(|w| w.strong_count() > 0);
        if !waiters
            .iter()
            .any(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(sub)))
        {
            waiters.push(Arc::downgrade(sub));
        }
    }
}

/// One item to write.
#[derive(Debug)]
pub enum Outbound {
    /// An encoded frame.
    Frame(Bytes),
    /// A MESSAGE: encoded header, then the stored entry.
    Message(Bytes, Bytes),
    /// Flush what is queued, then close the socket.
    Close,
}

/// Most buffers handed to one `writev`.
const MAX_IOV: usize = 256;

/// Writes until the queue closes, an `Outbound::Close` arrives, or the socket fails.
pub async fn run<W: AsyncWrite + Unpin>(
    mut rx: UnboundedReceiver<Outbound>,
    mut socket: W,
    writability: Arc<Writability>,
) {
    let mut bufs: Vec<Bytes> = Vec::with_capacity(MAX_IOV);
    let mut closing = false;
    while !closing {
        let Some(first) = rx.recv().await else { break };
        let mut messages = 0;
        closing = push(&mut bufs, first, &mut messages);
        while !closing && bufs.len() < MAX_IOV - 1 {
            match rx.try_recv() {
                Ok(item) => closing = push(&mut bufs, item, &mut messages),
                Err(_) => break,
            }
        }
        let r = write_all(&mut socket, &mut bufs).await;
        writability.written(messages);
        if let Err(e) = r {
            tracing::debug!(error = %e, "connection write failed");
            break;
        }
    }
    let _ = socket.shutdown().await;
    // What is still queued will never be written: release it (and wake the dispatchers, which
    // then find the consumers gone).
    let mut rest = 0;
    rx.close();
    while let Ok(item) = rx.try_recv() {
        let mut scratch = Vec::new();
        push(&mut scratch, item, &mut rest);
    }
    writability.written(rest);
}

/// Adds an item's buffers; counts a MESSAGE's stored bytes into `messages`. True on `Close`.
fn push(bufs: &mut Vec<Bytes>, item: Outbound, messages: &mut usize) -> bool {
    match item {
        Outbound::Frame(b) => bufs.push(b),
        Outbound::Message(h, d) => {
            *messages += d.len();
            bufs.push(h);
            bufs.push(d);
        }
        Outbound::Close => return true,
    }
    false
}

async fn write_all<W: AsyncWrite + Unpin>(
    socket: &mut W,
    bufs: &mut Vec<Bytes>,
) -> std::io::Result<()> {
    let mut start = 0;
    while start < bufs.len() {
        let slices: Vec<IoSlice<'_>> = bufs[start..].iter().map(|b| IoSlice::new(b)).collect();
        let mut n = socket.write_vectored(&slices).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while n > 0 {
            let b = &mut bufs[start];
            if n >= b.len() {
                n -= b.len();
                start += 1;
            } else {
                b.advance(n);
                n = 0;
            }
        }
        while start < bufs.len() && bufs[start].is_empty() {
            start += 1;
        }
    }
    bufs.clear();
    Ok(())
}
