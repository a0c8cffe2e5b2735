//! The few fields of a stored entry's `MessageMetadata` that dispatch reads.
//!
//! Dispatch looks at every entry it delivers. Decoding the whole `MessageMetadata` allocates for
//! fields it never reads (the producer name is always there); [`DispatchMetadata`] declares only
//! the fields dispatch needs, with `MessageMetadata`'s tags, and protobuf decoding skips the
//! rest. A test ties each field to the generated `pb::MessageMetadata`.

use bytes::Bytes;
use prost::Message;

use crate::frame::{metadata_span, peek_u16};
use crate::{ProtocolError, MAGIC_CRC32C};

/// The fields of `MessageMetadata` (PulsarApi.proto) that dispatch reads.
#[derive(Clone, PartialEq, Message)]
pub struct DispatchMetadata {
    /// `partition_key` (tag 6).
    #[prost(string, optional, tag = "6")]
    pub partition_key: Option<String>,
    /// `num_messages_in_batch` (tag 11; absent means 1).
    #[prost(int32, optional, tag = "11")]
    pub num_messages_in_batch: Option<i32>,
    /// `ordering_key` (tag 18), a slice of the entry.
    #[prost(bytes = "bytes", optional, tag = "18")]
    pub ordering_key: Option<Bytes>,
    /// `deliver_at_time` (tag 19).
    #[prost(int64, optional, tag = "19")]
    pub deliver_at_time: Option<i64>,
    /// `marker_type` (tag 20): a server-written marker (transaction commit/abort).
    #[prost(int32, optional, tag = "20")]
    pub marker_type: Option<i32>,
    /// `txnid_least_bits` (tag 22) of a transactional message or marker.
    #[prost(uint64, optional, tag = "22")]
    pub txnid_least_bits: Option<u64>,
    /// `txnid_most_bits` (tag 23) of a transactional message or marker.
    #[prost(uint64, optional, tag = "23")]
    pub txnid_most_bits: Option<u64>,
    /// `uuid` (tag 26) of a chunked message.
    #[prost(string, optional, tag = "26")]
    pub uuid: Option<String>,
    /// `num_chunks_from_msg` (tag 27).
    #[prost(int32, optional, tag = "27")]
    pub num_chunks_from_msg: Option<i32>,
    /// `chunk_id` (tag 29).
    #[prost(int32, optional, tag = "29")]
    pub chunk_id: Option<i32>,
}

/// Decodes the dispatch fields of a stored entry (`[0x0e01][crc32c][metadataSize][metadata]
/// [payload]`), without verifying the checksum (see [`crate::parse_stored_metadata`]).
///
/// # Errors
/// A bad magic number, a metadata size past the entry's end, undecodable metadata.
pub fn parse_dispatch_metadata(entry: &Bytes) -> Result<DispatchMetadata, ProtocolError> {
    let magic = peek_u16(entry, 0).ok_or(ProtocolError::TruncatedPayload { what: "magic" })?;
    if magic != MAGIC_CRC32C {
        return Err(ProtocolError::BadMagic { found: magic });
    }
    let span = metadata_span(entry)?;
    DispatchMetadata::decode(entry.slice(span))
        .map_err(|e| ProtocolError::decode("MessageMetadata", e))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::pb;

    /// Metadata with every field the lean views read set (and two they skip), for the tests
    /// that tie a lean view to the generated message.
    pub(crate) fn every_lean_field() -> pb::MessageMetadata {
        pb::MessageMetadata {
            producer_name: "a-producer-name".into(),
            sequence_id: 7,
            publish_time: 1_700_000_000_000,
            partition_key: Some("pk".into()),
            num_messages_in_batch: Some(42),
            ordering_key: Some(Bytes::from_static(b"ok")),
            deliver_at_time: Some(1_700_000_000_500),
            uuid: Some("a-producer-name-7".into()),
            num_chunks_from_msg: Some(3),
            chunk_id: Some(2),
            properties: vec![pb::KeyValue {
                key: "k".into(),
                value: "v".into(),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn every_field_reads_as_the_generated_message_reads_it() {
        let md = every_lean_field();
        let entry = crate::build_stored_entry(&md, b"payload");
        let full = crate::parse_stored_metadata(&entry).unwrap();
        let lean = parse_dispatch_metadata(&entry).unwrap();
        assert_eq!(lean.partition_key, full.partition_key);
        assert_eq!(lean.num_messages_in_batch, full.num_messages_in_batch);
        assert_eq!(lean.ordering_key, full.ordering_key);
        assert_eq!(lean.deliver_at_time, full.deliver_at_time);
        assert_eq!(lean.uuid, full.uuid);
        assert_eq!(lean.num_chunks_from_msg, full.num_chunks_from_msg);
        assert_eq!(lean.chunk_id, full.chunk_id);
        // And each is really set, so a wrong tag cannot pass as "both absent".
        assert_eq!(lean.num_messages_in_batch, Some(42));
        assert_eq!(lean.chunk_id, Some(2));
    }

    #[test]
    fn a_damaged_entry_is_an_error() {
        assert!(parse_dispatch_metadata(&Bytes::from_static(b"\x0e\x02rest")).is_err());
        let mut bad = b"\x0e\x01\0\0\0\0\0\0\0\x09".to_vec();
        bad.extend_from_slice(b"\x08");
        assert!(parse_dispatch_metadata(&Bytes::from(bad)).is_err());
    }
}
