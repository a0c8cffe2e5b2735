//! The write half of a connection: drains the outbound queue and writes frames with vectored
//! writes, so a MESSAGE goes out as its small encoded header followed by the stored entry bytes,
//! which are never copied in user space. Generic over the socket: plain TCP or TLS. Receipts,
//! MESSAGE headers and other small frames of one write are encoded or copied into one shared
//! buffer, so a write carries one `iovec` per stored entry plus one per run of small frames.
//!
//! The bytes of MESSAGE frames queued and not yet written are counted ([`Writability`]), with
//! Netty's water marks as Pulsar's connections have them: over the high mark the connection is
//! not writable and the dispatchers stop feeding its consumers; once the writer brings it under
//! the low mark it is writable again and their dispatchers are woken. A client that grants
//! permits and stops reading so holds at most about the high mark (plus one dispatcher read per
//! subscription) in the broker, instead of the whole backlog.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use bytes::{Buf, Bytes, BytesMut};
use parking_lot::Mutex;
use pulsar_rs_broker::Subscription;
use pulsar_rs_proto::commands;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;

use crate::queue::Queue;

/// Queued message bytes over which a connection stops being writable (Netty's default is
/// 64 KiB; Pulsar's dispatch reads are larger). The environment variable
/// `PULSAR_RS_OUTBOUND_HIGH_WATER_MARK` (bytes) overrides it, for benchmarks only.
pub const HIGH_WATER_MARK: usize = 1 << 20;
/// Queued message bytes under which it is writable again (half the high mark).
pub const LOW_WATER_MARK: usize = 512 << 10;

/// The (high, low) water marks in effect, read once.
fn water_marks() -> (usize, usize) {
    static MARKS: std::sync::OnceLock<(usize, usize)> = std::sync::OnceLock::new();
    *MARKS.get_or_init(|| {
        std::env::var("PULSAR_RS_OUTBOUND_HIGH_WATER_MARK")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&h| h > 0)
            .map_or((HIGH_WATER_MARK, LOW_WATER_MARK), |h| (h, h / 2))
    })
}

/// Queued control bytes over which the connection is not read.
pub const CONTROL_HIGH_MARK: usize = 1 << 20;
/// Queued control bytes under which reading resumes.
pub const CONTROL_LOW_MARK: usize = 256 << 10;

/// Bytes a queued SEND_RECEIPT is counted as (about its encoded size).
const RECEIPT_BYTES: usize = 48;

/// The weight of a queued item in the control backlog (MESSAGE frames weigh nothing here).
#[must_use]
pub fn control_bytes(item: &Outbound) -> usize {
    match item {
        Outbound::Frame(b) => b.len(),
        Outbound::Receipt(_) => RECEIPT_BYTES,
        Outbound::Receipts(rs) => RECEIPT_BYTES * rs.len(),
        Outbound::Message(..) | Outbound::Close | Outbound::Trim => 0,
    }
}

/// Control bytes queued and not yet written, shared by a connection's senders and its writer.
#[derive(Default)]
pub struct ControlBacklog {
    /// Added by every sender at enqueue, removed by the writer after each write. AcqRel: the
    /// read loop's pause decision and the writer's wake-up below must see each other's updates.
    queued: AtomicUsize,
    /// Signalled by the writer when the backlog falls under the low mark.
    drained: Notify,
}

impl ControlBacklog {
    /// Counts `n` bytes queued (by a sender, before the item is queued).
    pub fn add(&self, n: usize) {
        // AcqRel: see `queued`.
        self.queued.fetch_add(n, Ordering::AcqRel);
    }

    /// Bytes queued now.
    #[must_use]
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    /// The writer wrote items weighing `n` bytes.
    pub fn written(&self, n: usize) {
        if n == 0 {
            return;
        }
        let now = self.queued.fetch_sub(n, Ordering::AcqRel) - n;
        if now <= CONTROL_LOW_MARK {
            self.drained.notify_waiters();
        }
    }

    /// Waits until the backlog is under the low mark (returns at once if it is).
    pub async fn wait_drained(&self) {
        loop {
            let drained = self.drained.notified();
            if self.queued() <= CONTROL_LOW_MARK {
                return;
            }
            drained.await;
        }
    }
}

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
        if now > water_marks().0 {
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
        if self.queued.load(Ordering::SeqCst) <= water_marks().1
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
    /// A MESSAGE: its header, encoded by the writer into the buffer of the write that carries
    /// it, then the stored entry as its own buffer.
    Message(Delivery, Bytes),
    /// A SEND_RECEIPT, encoded by the writer into the buffer of the write that carries it.
    Receipt(Receipt),
    /// Several SEND_RECEIPTs in order (one producer's receipts settled together): one queue
    /// item for a whole journal round.
    Receipts(Vec<Receipt>),
    /// Flush what is queued, then close the socket.
    Close,
    /// The connection is idle (its keepalive tick): the writer gives back the memory of its
    /// write buffers when nothing else is queued, so an idle connection holds none.
    Trim,
}

/// A SEND_RECEIPT not yet encoded: no allocation per receipt, and all the receipts (and other
/// small frames) of one socket write are encoded into one buffer.
#[derive(Debug, Clone, Copy)]
pub struct Receipt {
    /// The producer.
    pub producer_id: u64,
    /// The SEND's sequence id.
    pub sequence_id: u64,
    /// The SEND's highest sequence id (batches with several ids).
    pub highest_sequence_id: Option<u64>,
    /// Where the entry was stored (-1:-1 for a duplicate).
    pub ledger_id: u64,
    /// Where the entry was stored.
    pub entry_id: u64,
}

fn encode_receipt(r: &Receipt, small: &mut BytesMut) {
    let cmd = commands::send_receipt(
        r.producer_id,
        r.sequence_id,
        r.highest_sequence_id,
        r.ledger_id,
        r.entry_id,
    );
    pulsar_rs_proto::encode_simple(&cmd, small);
}

/// A MESSAGE's command not yet encoded: no allocation per delivered entry.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// The consumer.
    pub consumer_id: u64,
    /// The entry's ledger.
    pub ledger_id: u64,
    /// The entry's id.
    pub entry_id: u64,
    /// The topic partition (−1 when not partitioned).
    pub partition: i32,
    /// Times delivered before.
    pub redelivery_count: u32,
    /// Messages of the batch still to acknowledge, when some are.
    pub ack_set: Option<Vec<i64>>,
}

/// Most buffers handed to one `writev`.
const MAX_IOV: usize = 256;

/// Frames up to this size are copied into the write's shared buffer rather than given their
/// own `iovec`.
const COALESCE_MAX: usize = 512;

/// Bytes of coalesced frames after which a write goes out.
const COALESCED_WRITE: usize = 64 << 10;

/// Writes until an `Outbound::Close` arrives or the socket fails, then closes `queue`.
pub async fn run<W: AsyncWrite + Unpin>(
    queue: Arc<Queue<Outbound>>,
    mut socket: W,
    writability: Arc<Writability>,
    backlog: Arc<ControlBacklog>,
) {
    // All three grow with the writes (at most MAX_IOV buffers, COALESCED_WRITE bytes and a
    // frame; what one take found queued) and are kept while traffic flows; `Outbound::Trim`
    // gives them back, and the queue's own memory, once it stops. Small frames of the current
    // write go to `small`, whose memory is reused once the previous write's frozen part is
    // dropped.
    let mut bufs: Vec<Bytes> = Vec::new();
    let mut small = BytesMut::new();
    let mut taken: VecDeque<Outbound> = VecDeque::new();
    // The queue is closed however this task ends (a panic included), so senders stop.
    let closer = CloseOnDrop(&queue);
    let mut closing = false;
    while !closing {
        if taken.is_empty() && !queue.take_all(&mut taken).await {
            break;
        }
        let Some(first) = taken.pop_front() else {
            continue;
        };
        if matches!(first, Outbound::Trim) {
            if taken.is_empty() && queue.is_empty() {
                (bufs, small, taken) = (Vec::new(), BytesMut::new(), VecDeque::new());
                queue.shrink();
            }
            continue;
        }
        let mut messages = 0;
        let mut control = control_bytes(&first);
        closing = push(&mut bufs, &mut small, first, &mut messages);
        while !closing && bufs.len() < MAX_IOV - 2 && small.len() < COALESCED_WRITE {
            let Some(item) = taken.pop_front() else {
                if queue.try_take_all(&mut taken) {
                    continue;
                }
                break;
            };
            control += control_bytes(&item);
            closing = push(&mut bufs, &mut small, item, &mut messages);
        }
        flush_small(&mut bufs, &mut small);
        let r = write_all(&mut socket, &mut bufs).await;
        writability.written(messages);
        backlog.written(control);
        if let Err(e) = r {
            tracing::debug!(error = %e, "connection write failed");
            break;
        }
    }
    let _ = socket.shutdown().await;
    // What is still queued will never be written: release it (and wake the dispatchers, which
    // then find the consumers gone).
    let left = queue.close();
    drop(closer);
    let (mut rest, mut control) = (0, 0);
    for item in taken.into_iter().chain(left) {
        control += control_bytes(&item);
        let (mut scratch, mut small) = (Vec::new(), BytesMut::new());
        push(&mut scratch, &mut small, item, &mut rest);
    }
    writability.written(rest);
    backlog.written(control);
}

/// Closes the queue when the writer ends, so that senders see the connection gone.
struct CloseOnDrop<'a>(&'a Queue<Outbound>);

impl Drop for CloseOnDrop<'_> {
    fn drop(&mut self) {
        // At `run`'s end the queue is closed and drained already (this finds nothing); on a
        // panic what is queued is dropped here, its counters with the connection.
        drop(self.0.close());
    }
}

/// Adds an item to the write: small frames, receipts and MESSAGE headers into `small`, stored
/// entries and large frames as their own buffers (never copied), in queue order. Counts a
/// MESSAGE's stored bytes into `messages`. True on `Close`.
fn push(bufs: &mut Vec<Bytes>, small: &mut BytesMut, item: Outbound, messages: &mut usize) -> bool {
    match item {
        Outbound::Frame(b) if b.len() <= COALESCE_MAX => small.extend_from_slice(&b),
        Outbound::Frame(b) => {
            flush_small(bufs, small);
            bufs.push(b);
        }
        Outbound::Receipt(r) => encode_receipt(&r, small),
        Outbound::Receipts(rs) => rs.iter().for_each(|r| encode_receipt(r, small)),
        Outbound::Message(m, d) => {
            *messages += d.len();
            let cmd = commands::message(
                m.consumer_id,
                m.ledger_id,
                m.entry_id,
                m.partition,
                m.redelivery_count,
                m.ack_set,
            );
            pulsar_rs_proto::encode_message_header(&cmd, d.len(), small);
            flush_small(bufs, small);
            bufs.push(d);
        }
        Outbound::Close => return true,
        // Between writes only (`run`): here others were queued with it.
        Outbound::Trim => {}
    }
    false
}

/// Ends the current run of small frames: it becomes one buffer of the write.
fn flush_small(bufs: &mut Vec<Bytes>, small: &mut BytesMut) {
    if !small.is_empty() {
        bufs.push(small.split().freeze());
    }
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
