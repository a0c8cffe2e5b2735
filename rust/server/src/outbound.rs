//! A connection's outbound queue handle, counting what it holds besides MESSAGE frames
//! (receipts, responses, pings): a client that keeps sending requests and never reads the
//! answers would otherwise grow the broker's memory without bound (measured: ~4 MB/s for a
//! producer that never read its SEND_RECEIPTs). Over [`CONTROL_HIGH_MARK`] queued bytes the
//! connection's read loop stops reading until the writer brings it under [`CONTROL_LOW_MARK`],
//! as Pulsar stops reading a channel that is not writable. MESSAGE frames are bounded by the
//! consumer-side water marks ([`crate::writer::Writability`]) instead.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc::error::SendError;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::Notify;

use crate::writer::Outbound;

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
        Outbound::Message(..) | Outbound::Close => 0,
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

/// The sending side of a connection's outbound queue.
#[derive(Clone)]
pub struct OutboundTx {
    /// The queue the writer drains.
    tx: UnboundedSender<Outbound>,
    /// The control bytes it holds; shared with the writer.
    backlog: Arc<ControlBacklog>,
}

impl OutboundTx {
    /// A handle over `tx`, counting into `backlog`.
    #[must_use]
    pub fn new(tx: UnboundedSender<Outbound>, backlog: Arc<ControlBacklog>) -> Self {
        OutboundTx { tx, backlog }
    }

    /// Queues `item` for the writer.
    ///
    /// # Errors
    /// The item back when the writer is gone.
    pub fn send(&self, item: Outbound) -> Result<(), SendError<Outbound>> {
        let n = control_bytes(&item);
        // AcqRel: see `ControlBacklog::queued`; counted before the writer can see the item.
        self.backlog.queued.fetch_add(n, Ordering::AcqRel);
        self.tx.send(item).inspect_err(|_| {
            self.backlog.queued.fetch_sub(n, Ordering::AcqRel);
        })
    }

    /// Whether the writer is gone.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}
