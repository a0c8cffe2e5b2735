//! The round-robin picker of the multiple-consumers dispatchers (Pulsar's
//! `PersistentDispatcherMultipleConsumers.getNextConsumer`), used by persistent and
//! non-persistent Shared subscriptions alike.
//!
//! Consumers are sorted by priority level; the best level that has a consumer able to take
//! messages is served, each consumer in turn receiving a chunk of at most
//! `dispatcherMaxRoundRobinBatchSize` entries. The picker remembers where it is and which level
//! is best, so a pick costs O(1) while the current consumer can take more, and a scan only when it
//! switches consumer: the cost per message does not grow with the number of consumers.

use std::sync::Arc;

use crate::consumer::Consumer;

/// Round-robin position over a priority-sorted consumer list.
#[derive(Default)]
pub struct RoundRobin {
    /// Index of the consumer currently served.
    next: usize,
    /// Entries given to it in the current chunk.
    given: u32,
    /// The best priority level with a consumer able to take, if known.
    best: Option<i32>,
}

impl RoundRobin {
    /// Forgets the cached best level (call when consumers or permits changed).
    pub fn refresh(&mut self) {
        self.best = None;
    }

    /// A new read begins: a consumer that was given entries in the last one hands its turn on,
    /// as Pulsar's `getNextConsumer` moves to the next consumer at every pick and a pick covers
    /// at most one read's entries. (A chunk carried over reads would give one consumer up to
    /// `dispatcherMaxRoundRobinBatchSize` messages in a row when they are published one by one.)
    pub fn new_read(&mut self) {
        if self.given > 0 {
            self.next += 1;
            self.given = 0;
        }
    }

    /// Picks the consumer for the next entry, or `None` if no consumer can take one.
    /// `consumers` must be sorted by priority level.
    pub fn pick(&mut self, consumers: &[Arc<Consumer>], chunk: u32) -> Option<Arc<Consumer>> {
        let n = consumers.len();
        if n == 0 {
            return None;
        }
        if self.next >= n {
            self.next = 0;
            self.given = 0;
        }
        let cur = &consumers[self.next];
        if self.given < chunk && Some(cur.priority_level) == self.best && cur.can_take() {
            self.given += 1;
            return Some(Arc::clone(cur));
        }
        for _ in 0..2 {
            let best = match self.best {
                Some(b) => b,
                None => {
                    let b = consumers
                        .iter()
                        .filter(|c| c.can_take())
                        .map(|c| c.priority_level)
                        .min()?;
                    self.best = Some(b);
                    b
                }
            };
            let lo = consumers.partition_point(|c| c.priority_level < best);
            let hi = consumers.partition_point(|c| c.priority_level <= best);
            let len = hi - lo;
            let start = if (lo..hi).contains(&self.next) {
                let cur = &consumers[self.next];
                if self.given >= chunk || !cur.can_take() {
                    self.next + 1
                } else {
                    self.next
                }
            } else {
                lo
            };
            for i in 0..len {
                let idx = lo + (start - lo + i) % len;
                if consumers[idx].can_take() {
                    if idx != self.next {
                        self.given = 0;
                    }
                    self.next = idx;
                    self.given += 1;
                    return Some(Arc::clone(&consumers[idx]));
                }
            }
            // Nobody left in that level: find the best level again.
            self.best = None;
        }
        None
    }
}
