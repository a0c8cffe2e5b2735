//! Chunked messages on Shared subscriptions (Pulsar's `SharedConsumerAssignor`): every chunk of
//! one message (same `uuid`) goes to the consumer that got its first chunk, in chunk order, so the
//! client can reassemble it. The first chunk goes where the round-robin says; the uuid is
//! forgotten once its last chunk is delivered or its consumer leaves (its pending chunks are then
//! replayed from the first one, which picks a consumer again).
//!
//! Unlike Pulsar, which forgets the uuid when the last chunk is *assigned*, ours forgets it when
//! the last chunk is *sent*: a last chunk put back for lack of permits keeps its consumer.

use std::collections::HashMap;

use crate::hash::murmur3_32;

/// The chunk fields of a message's metadata (set together, as Pulsar requires).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkInfo {
    /// The chunked message's id: `{producer_name}-{sequence_id}`.
    pub uuid: String,
    /// This chunk's index, from 0.
    pub id: i32,
    /// Chunks in the message.
    pub count: i32,
}

impl ChunkInfo {
    /// Whether this is the message's last chunk.
    #[must_use]
    pub fn is_last(&self) -> bool {
        self.id >= self.count - 1
    }
}

/// The replay-set slot of a chunked message's entries: a later chunk waits while an earlier one
/// of the same message waits in the replay set (two uuids sharing a slot only wait for each other).
#[must_use]
pub fn chunk_slot(uuid: &str) -> u16 {
    // Truncation intended: the low 16 bits of the hash.
    #[allow(clippy::cast_possible_truncation)]
    let slot = murmur3_32(uuid.as_bytes(), 0) as u16;
    slot
}

/// uuid → consumer of the chunked messages being delivered; guarded by the subscription's
/// state lock (inside [`super::multiple::MultipleConsumers`]).
#[derive(Default)]
pub(crate) struct ChunkAssignor {
    /// uuid → handle of the consumer that got the message's first chunk.
    owners: HashMap<String, u64>,
}

impl ChunkAssignor {
    /// The consumer the chunks of `uuid` go to, if its first chunk was delivered.
    pub(crate) fn owner(&self, uuid: &str) -> Option<u64> {
        self.owners.get(uuid).copied()
    }

    /// A chunk was sent to consumer `handle`: remember it until the last chunk.
    pub(crate) fn delivered(&mut self, chunk: &ChunkInfo, handle: u64) {
        if chunk.is_last() {
            self.owners.remove(&chunk.uuid);
        } else if !self.owners.contains_key(&chunk.uuid) {
            self.owners.insert(chunk.uuid.clone(), handle);
        }
    }

    /// A consumer left: its messages' chunks are replayed, and pick a consumer again.
    pub(crate) fn forget_consumer(&mut self, handle: u64) {
        self.owners.retain(|_, h| *h != handle);
    }

    /// Forgets everything (the subscription restarts from its mark-delete position).
    pub(crate) fn clear(&mut self) {
        self.owners.clear();
    }

    /// Messages whose chunks are being delivered.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.owners.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(uuid: &str, id: i32, count: i32) -> ChunkInfo {
        ChunkInfo {
            uuid: uuid.into(),
            id,
            count,
        }
    }

    #[test]
    fn owner_kept_until_last_chunk_or_consumer_leaves() {
        let mut a = ChunkAssignor::default();
        a.delivered(&chunk("p-1", 0, 3), 7);
        a.delivered(&chunk("p-2", 0, 2), 8);
        // A later chunk delivered elsewhere does not move the message.
        a.delivered(&chunk("p-1", 1, 3), 9);
        assert_eq!(a.owner("p-1"), Some(7));
        a.delivered(&chunk("p-1", 2, 3), 7);
        assert_eq!(a.owner("p-1"), None);
        a.forget_consumer(8);
        assert_eq!((a.owner("p-2"), a.len()), (None, 0));
        assert_eq!(chunk_slot("p-1"), chunk_slot("p-1"));
    }
}
