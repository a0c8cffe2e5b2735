//! A connection's outbound queue handle, counting what it holds besides MESSAGE frames
//! (receipts, responses, pings): a client that keeps sending requests and never reads the
//! answers would otherwise grow the broker's memory without bound (measured: ~4 MB/s for a
//! producer that never read its SEND_RECEIPTs). Over `writer::CONTROL_HIGH_MARK` queued bytes
//! the connection's read loop stops reading until the writer brings it under the low mark,
//! as Pulsar stops reading a channel that is not writable. MESSAGE frames are bounded by the
//! consumer-side water marks ([`crate::writer::Writability`]) instead.
//!
//! The queue itself, [`Queue`], allocates only while the connection has traffic.

use std::sync::Arc;

use crate::queue::Queue;
use crate::writer::{control_bytes, ControlBacklog, Outbound};

/// The sending side of a connection's outbound queue.
#[derive(Clone)]
pub struct OutboundTx {
    /// The queue the writer drains.
    queue: Arc<Queue<Outbound>>,
    /// The control bytes it holds; shared with the writer.
    backlog: Arc<ControlBacklog>,
}

impl OutboundTx {
    /// A handle over `queue`, counting into `backlog`.
    #[must_use]
    pub fn new(queue: Arc<Queue<Outbound>>, backlog: Arc<ControlBacklog>) -> Self {
        OutboundTx { queue, backlog }
    }

    /// Queues `item` for the writer.
    ///
    /// # Errors
    /// The item back when the writer is gone.
    pub fn send(&self, item: Outbound) -> Result<(), Outbound> {
        let n = control_bytes(&item);
        // Counted before the writer can see the item.
        self.backlog.add(n);
        self.queue.push(item).inspect_err(|_| {
            self.backlog.written(n);
        })
    }

    /// Whether the writer is gone.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.queue.is_closed()
    }
}
