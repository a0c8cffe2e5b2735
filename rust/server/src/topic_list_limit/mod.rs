//! PIP-442 (Pulsar 4.2): the memory topic lists may take at once. GET_TOPICS_OF_NAMESPACE and
//! the topic-list watchers assemble a namespace's whole list and answer with it in one frame;
//! with many topics and many clients asking together (a fleet of pattern consumers
//! restarting) those lists alone can exhaust a broker. Two limits, as Pulsar's:
//!
//! * **heap** (`maxTopicListInFlightHeapMemSizeMB`): a list being assembled takes the size its
//!   namespace's last list had (Pulsar's `TopicListSizeResultCache`), then its own size once
//!   known (each name's UTF-8 bytes + 32, Pulsar's `estimateTopicListSize`), until its answer
//!   is queued;
//! * **direct** (`maxTopicListInFlightDirectMemSizeMB`): an encoded answer takes its frame's
//!   size before it is encoded and holds it until the connection's writer has written it
//!   ([`TopicListLimiter::frame`]: the bytes are given back when the writer drops the frame).
//!
//! A request that cannot have its memory waits in line (`...PermitsAcquireQueueSize` at most,
//! `...PermitsAcquireTimeoutMillis` each) and is then refused with `TooManyRequests`, as
//! Pulsar's; watchers retry instead. Metrics: `pulsar_broker_topic_list_*` ([`crate::metrics`]).

pub mod semaphore;

use std::collections::HashMap;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use pulsar_rs_broker::BrokerConfig;
use pulsar_rs_proto::BaseCommand;

pub use semaphore::{MemoryPermit, MemorySemaphore, Refusal};

/// Per name in a list: Pulsar's estimate of a Java string's overhead.
const PER_NAME: u64 = 32;

/// The broker's two topic-list memory limits.
pub struct TopicListLimiter {
    /// Lists being assembled.
    pub heap: MemorySemaphore,
    /// Encoded answers not yet written.
    pub direct: MemorySemaphore,
    /// The last list's size per namespace and mode: what the next list of it asks first. Its
    /// own lock, held only to read or write one entry.
    sizes: Mutex<HashMap<String, u64>>,
}

impl TopicListLimiter {
    /// The limits `config` sets.
    #[must_use]
    pub fn new(config: &BrokerConfig) -> Self {
        TopicListLimiter {
            heap: MemorySemaphore::new(
                "maxTopicListInFlightHeapMemSize",
                config.max_topic_list_in_flight_heap_mem_size_mb,
                config.max_topic_list_in_flight_heap_mem_size_permits_acquire_timeout_millis,
                config.max_topic_list_in_flight_heap_mem_size_permits_acquire_queue_size,
            ),
            direct: MemorySemaphore::new(
                "maxTopicListInFlightDirectMemSize",
                config.max_topic_list_in_flight_direct_mem_size_mb,
                config.max_topic_list_in_flight_direct_mem_size_permits_acquire_timeout_millis,
                config.max_topic_list_in_flight_direct_mem_size_permits_acquire_queue_size,
            ),
            sizes: Mutex::default(),
        }
    }

    /// What the next list of `key` (namespace and mode) asks for before it is assembled.
    #[must_use]
    pub fn last_size(&self, key: &str) -> u64 {
        self.sizes.lock().get(key).copied().unwrap_or(0)
    }

    /// Remembers the size of `key`'s list.
    pub fn remember(&self, key: &str, size: u64) {
        self.sizes.lock().insert(key.to_owned(), size);
    }

    /// `cmd` encoded as a frame that holds its size of the direct limit until the writer drops
    /// it (after writing it to the socket, or copying it into the write that carries it).
    ///
    /// # Errors
    /// [`Refusal`] when the memory did not come.
    pub async fn frame(&self, cmd: &BaseCommand) -> Result<Bytes, Refusal> {
        let len = pulsar_rs_proto::simple_frame_len(cmd);
        let permit = self.direct.acquire(len as u64).await?;
        let mut out = BytesMut::with_capacity(len);
        pulsar_rs_proto::encode_simple(cmd, &mut out);
        if permit.bytes() == 0 {
            return Ok(out.freeze());
        }
        Ok(Bytes::from_owner(Permitted {
            frame: out.freeze(),
            _permit: permit,
        }))
    }
}

/// Pulsar's estimate of a list's memory: each name's UTF-8 bytes plus 32.
#[must_use]
pub fn estimate(topics: &[String]) -> u64 {
    topics.iter().map(|t| t.len() as u64 + PER_NAME).sum()
}

/// An encoded frame with the memory it holds.
struct Permitted {
    frame: Bytes,
    _permit: MemoryPermit,
}

impl AsRef<[u8]> for Permitted {
    fn as_ref(&self) -> &[u8] {
        &self.frame
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_frame_holds_its_memory_until_dropped() {
        let config = BrokerConfig {
            max_topic_list_in_flight_direct_mem_size_mb: 1,
            ..BrokerConfig::default()
        };
        let l = TopicListLimiter::new(&config);
        let cmd: BaseCommand = pulsar_rs_proto::pb::CommandGetTopicsOfNamespaceResponse {
            request_id: 1,
            topics: vec!["persistent://public/default/t".into()],
            ..Default::default()
        }
        .into();
        let f = l.frame(&cmd).await.unwrap();
        assert_eq!(f.len(), pulsar_rs_proto::simple_frame_len(&cmd));
        assert_eq!(l.direct.used(), f.len() as u64);
        let copy = f.clone();
        drop(f);
        assert_eq!(l.direct.used(), copy.len() as u64, "a clone still holds it");
        drop(copy);
        assert_eq!(l.direct.used(), 0);
    }

    #[test]
    fn the_estimate_is_pulsars() {
        let t = vec![
            "persistent://a/b/c".to_owned(),
            "persistent://a/b/dd".to_owned(),
        ];
        assert_eq!(estimate(&t), 18 + 32 + 19 + 32);
    }
}
