//! The multiple-consumers dispatcher of Shared subscriptions (Pulsar's
//! `PersistentDispatcherMultipleConsumers`, seed 000): entries go round-robin by priority level
//! ([`RoundRobin`]) to consumers with permits; what nobody can take goes to the replay set, which
//! is served before new entries are read. The chunks of a chunked message all go, in order, to
//! the consumer that got its first chunk ([`ChunkAssignor`], Pulsar's `SharedConsumerAssignor`).

use std::collections::HashSet;
use std::sync::Arc;

use pulsar_rs_ledger::Entry;

use super::chunks::{chunk_slot, ChunkAssignor, ChunkInfo};
use super::consumers::ConsumerList;
use super::entry::entry_info;
use super::env::{Env, Outcome};
use super::replay::ReplaySet;
use super::round_robin::RoundRobin;
use crate::consumer::Consumer;

/// Routing state of a Shared subscription; guarded by the subscription's state lock.
#[derive(Default)]
pub(crate) struct MultipleConsumers {
    /// Round-robin position.
    rr: RoundRobin,
    /// Consumer of each chunked message being delivered.
    chunks: ChunkAssignor,
    /// Entries to deliver before reading new ones (chunks with their [`chunk_slot`]).
    pub(crate) replay: ReplaySet,
}

/// Where one entry goes.
enum Route {
    /// To this consumer (none: nobody can take it now, it waits in the replay set).
    To(Option<Arc<Consumer>>),
    /// A chunk whose first chunk was never delivered (acknowledged without it, or its message
    /// was cut short): the client could not reassemble it. Acknowledged, as Pulsar does.
    Orphan,
}

impl MultipleConsumers {
    /// Consumers joined or left: forget the cached best priority level.
    pub(crate) fn consumers_changed(&mut self) {
        self.rr.refresh();
    }

    /// A consumer left: its chunked messages are replayed from their first chunk to another one.
    pub(crate) fn consumer_removed(&mut self, handle: u64) {
        self.chunks.forget_consumer(handle);
        self.consumers_changed();
    }

    /// Every consumer was disconnected: start over from the mark-delete position.
    pub(crate) fn restart(&mut self) {
        self.chunks.clear();
        self.replay.clear();
        self.consumers_changed();
    }

    /// Where a chunk goes. `blocked`: chunk slots of which an entry was put back in this pass.
    fn route_chunk(
        &mut self,
        chunk: &ChunkInfo,
        replayed: bool,
        blocked: &HashSet<u16>,
        consumers: &ConsumerList,
        env: &Env<'_>,
    ) -> Route {
        // Order: an earlier chunk of the message waiting in the replay set goes first.
        let waiting = if replayed {
            blocked.contains(&chunk_slot(&chunk.uuid))
        } else {
            self.replay.has_slot(chunk_slot(&chunk.uuid))
        };
        if waiting {
            return Route::To(None);
        }
        match self.chunks.owner(&chunk.uuid) {
            Some(h) => Route::To(consumers.by_handle(h).filter(|c| c.can_take()).cloned()),
            None if chunk.id == 0 => Route::To(self.rr.pick(consumers.all(), env.rr_chunk)),
            // Read while a leaving consumer's chunks (its first one among them) wait for replay.
            None if !replayed && !self.replay.is_empty() => Route::To(None),
            None => Route::Orphan,
        }
    }

    /// Hands entries out round-robin; `replayed` entries carry their redelivery count.
    pub(crate) fn dispatch(
        &mut self,
        consumers: &ConsumerList,
        env: &Env<'_>,
        entries: Vec<Entry>,
        replayed: bool,
    ) -> Outcome {
        self.rr.new_read();
        let mut out = Outcome::default();
        let mut blocked: HashSet<u16> = HashSet::new();
        for entry in entries {
            let pos = entry.position;
            if env.cursor.is_acked(pos) {
                continue;
            }
            let info = entry_info(&entry.data);
            if env.defer(pos, &info) {
                continue;
            }
            let target = match &info.chunk {
                None => self.rr.pick(consumers.all(), env.rr_chunk),
                Some(chunk) => match self.route_chunk(chunk, replayed, &blocked, consumers, env) {
                    Route::To(target) => target,
                    Route::Orphan => {
                        tracing::warn!(position = %pos, uuid = %chunk.uuid, chunk_id = chunk.id, "acknowledging a chunk whose first chunk was never delivered");
                        env.cursor.delete(&[pos]);
                        continue;
                    }
                },
            };
            let len = entry.data.len() as u64;
            let count = env.redelivery_count(pos, replayed);
            let sent = target
                .as_ref()
                .is_some_and(|c| env.deliver(c, pos, &info, count, entry.data));
            match (sent, &info.chunk, target) {
                (true, chunk, Some(c)) => {
                    out.record(info.messages, len);
                    if let Some(chunk) = chunk {
                        self.chunks.delivered(chunk, c.handle);
                    }
                }
                (_, chunk, _) => {
                    let slot = chunk.as_ref().map(|c| chunk_slot(&c.uuid));
                    self.replay.insert(pos, slot);
                    out.requeued += 1;
                    if let (true, Some(s)) = (replayed, slot) {
                        blocked.insert(s);
                    }
                }
            }
        }
        out
    }
}
