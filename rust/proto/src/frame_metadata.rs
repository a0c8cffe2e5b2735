//! The few fields of a SEND's or MESSAGE's `MessageMetadata` that a frame's reader needs for
//! every message, decoded with the frame.
//!
//! Decoding the whole `MessageMetadata` of every SEND allocated the producer name (always
//! present) and built a struct of ~60 fields that the broker then moved with the frame; the
//! broker reads four numbers of it. [`FrameMetadata`] declares only those, with
//! `MessageMetadata`'s tags: protobuf decoding still walks (and so checks) every field and skips
//! the rest. [`crate::PayloadFrame::full_metadata`] decodes the whole message when a reader
//! needs more. A test ties each field to the generated `pb::MessageMetadata`.

use prost::Message;

/// The fields of `MessageMetadata` (PulsarApi.proto) decoded with every payload frame.
#[derive(Clone, Copy, PartialEq, Message)]
pub struct FrameMetadata {
    /// `publish_time` (tag 3, required: 0 when a peer left it out).
    #[prost(uint64, tag = "3")]
    pub publish_time: u64,
    /// `num_messages_in_batch` (tag 11; absent means 1).
    #[prost(int32, optional, tag = "11")]
    pub num_messages_in_batch: Option<i32>,
    /// `num_chunks_from_msg` (tag 27) of a chunked message.
    #[prost(int32, optional, tag = "27")]
    pub num_chunks_from_msg: Option<i32>,
    /// `chunk_id` (tag 29) of a chunked message.
    #[prost(int32, optional, tag = "29")]
    pub chunk_id: Option<i32>,
    /// `deliver_at_time` (tag 19) of a delayed message: the topic's delivery-delay policies
    /// (PIP-437) are checked against it on every SEND.
    #[prost(int64, optional, tag = "19")]
    pub deliver_at_time: Option<i64>,
}

impl FrameMetadata {
    /// Whether the message is a chunk other than the last one ([`is_non_last_chunk`]).
    #[must_use]
    pub fn is_non_last_chunk(&self) -> bool {
        is_non_last_chunk(self.chunk_id, self.num_chunks_from_msg)
    }
}

/// Whether a message with these chunk fields is a chunk other than the last one: deduplication
/// neither checks nor records it (a message counts once its last chunk is stored).
#[must_use]
pub fn is_non_last_chunk(chunk_id: Option<i32>, num_chunks_from_msg: Option<i32>) -> bool {
    match (chunk_id, num_chunks_from_msg) {
        (Some(id), Some(n)) => id != n - 1,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_reads_as_the_generated_message_reads_it() {
        let md = crate::dispatch_metadata::tests::every_lean_field();
        let lean = FrameMetadata::decode(md.encode_to_vec().as_slice()).unwrap();
        assert_eq!(lean.publish_time, md.publish_time);
        assert_eq!(lean.num_messages_in_batch, md.num_messages_in_batch);
        assert_eq!(lean.num_chunks_from_msg, md.num_chunks_from_msg);
        assert_eq!(lean.chunk_id, md.chunk_id);
        assert_eq!(lean.deliver_at_time, md.deliver_at_time);
        assert!(lean.deliver_at_time.is_some());
        // Each is really set, so a wrong tag cannot pass as "both absent".
        assert_eq!(lean.num_messages_in_batch, Some(42));
        assert_eq!(lean.num_chunks_from_msg, Some(3));
        assert_eq!(lean.chunk_id, Some(2));
        assert!(!lean.is_non_last_chunk(), "chunk 2 of 3 is the last");
    }

    #[test]
    fn only_a_chunk_before_the_last_is_a_non_last_chunk() {
        assert!(is_non_last_chunk(Some(0), Some(3)));
        assert!(is_non_last_chunk(Some(1), Some(3)));
        assert!(!is_non_last_chunk(Some(2), Some(3)));
        assert!(!is_non_last_chunk(None, Some(3)));
        assert!(!is_non_last_chunk(Some(0), None));
        assert!(!is_non_last_chunk(None, None));
    }

    #[test]
    fn malformed_metadata_is_still_an_error() {
        // A length-delimited field (tag 1) whose length runs past the end.
        assert!(FrameMetadata::decode(&b"\x0a\x09abc"[..]).is_err());
        // A truncated varint for a field the lean view skips (tag 2).
        assert!(FrameMetadata::decode(&b"\x10\xff"[..]).is_err());
    }
}
