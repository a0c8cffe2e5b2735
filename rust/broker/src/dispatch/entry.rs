//! What a dispatcher reads from a stored entry to route it: message count, key, deliver-at
//! time and chunk fields ([`EntryInfo`]).

use bytes::Bytes;

use super::chunks::ChunkInfo;

/// What a dispatcher needs to know about an entry, read from its stored metadata.
#[derive(Clone, Debug, Default)]
pub struct EntryInfo {
    /// Messages in the entry (1 unless batched).
    pub messages: u32,
    /// Ordering key, else partition key (Key_Shared routing).
    pub key: Option<Bytes>,
    /// `deliver_at_time` in ms, if set.
    pub deliver_at: Option<i64>,
    /// The chunk fields, for a chunk of a chunked message.
    pub chunk: Option<ChunkInfo>,
    /// The transaction `(most, least)` of a transactional message or marker.
    pub txn: Option<(u64, u64)>,
    /// `marker_type` of a server-written marker.
    pub marker: Option<i32>,
}

/// Reads [`EntryInfo`] from a stored entry (`[magic][crc][size][metadata][payload]`) on every
/// dispatch, so without recomputing its CRC32C: the checksum was verified when the entry was
/// published and the journal verifies the bytes on every disk read (a damaged entry never gets
/// here); it travels inside the entry to the consumer unchanged. Unparseable metadata counts as
/// one message with no key.
#[must_use]
pub fn entry_info(data: &Bytes) -> EntryInfo {
    match pulsar_rs_proto::parse_dispatch_metadata(data) {
        Ok(md) => EntryInfo {
            messages: md
                .num_messages_in_batch
                .map_or(1, |n| u32::try_from(n.max(1)).unwrap_or(1)),
            key: md
                .ordering_key
                .or_else(|| md.partition_key.map(Bytes::from)),
            chunk: match (md.uuid, md.chunk_id, md.num_chunks_from_msg) {
                (Some(uuid), Some(id), Some(count)) => Some(ChunkInfo { uuid, id, count }),
                _ => None,
            },
            deliver_at: md.deliver_at_time,
            txn: match (md.txnid_most_bits, md.txnid_least_bits) {
                (Some(most), Some(least)) => Some((most, least)),
                _ => None,
            },
            marker: md.marker_type,
        },
        Err(_) => EntryInfo {
            messages: 1,
            key: None,
            deliver_at: None,
            chunk: None,
            txn: None,
            marker: None,
        },
    }
}
