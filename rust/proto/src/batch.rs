//! Splitting a batch payload (`repeated [u32 smmSize][SingleMessageMetadata][message bytes]`,
//! after decompression) into its messages.
//!
//! The count comes from `MessageMetadata.num_messages_in_batch`, which a peer chooses: nothing
//! is reserved from it, so a batch that claims two billion messages costs only what its bytes
//! hold.

use bytes::{Buf, Bytes};
use prost::Message;

use crate::error::ProtocolError;
use crate::pb;

/// One message of a batch: its `SingleMessageMetadata` and its bytes (a slice of the payload).
#[derive(Debug, Clone, PartialEq)]
pub struct BatchMember {
    /// The message's own metadata.
    pub metadata: pb::SingleMessageMetadata,
    /// The message's bytes (`payload_size` of them).
    pub body: Bytes,
}

/// Splits an uncompressed batch payload into its first `count` messages (a negative count is
/// none). Bytes after the last message are ignored, as Pulsar's clients ignore them.
///
/// # Errors
/// [`ProtocolError::TruncatedPayload`] when a size runs past the end of the payload,
/// [`ProtocolError::Decode`] for an undecodable `SingleMessageMetadata`.
pub fn split_batch(mut payload: Bytes, count: i32) -> Result<Vec<BatchMember>, ProtocolError> {
    let mut out = Vec::new();
    for _ in 0..count.max(0) {
        if payload.remaining() < 4 {
            return Err(ProtocolError::TruncatedPayload { what: "smmSize" });
        }
        let len = payload.get_u32();
        let len = usize::try_from(len)
            .ok()
            .filter(|&n| n <= payload.remaining())
            .ok_or(ProtocolError::TruncatedPayload {
                what: "SingleMessageMetadata",
            })?;
        let metadata = pb::SingleMessageMetadata::decode(payload.split_to(len))
            .map_err(|e| ProtocolError::decode("SingleMessageMetadata", e))?;
        let size = usize::try_from(metadata.payload_size)
            .ok()
            .filter(|&n| n <= payload.remaining())
            .ok_or(ProtocolError::TruncatedPayload {
                what: "batched message",
            })?;
        let body = payload.split_to(size);
        out.push(BatchMember { metadata, body });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use bytes::{BufMut, BytesMut};

    use super::*;

    fn batch(members: &[&[u8]]) -> Bytes {
        let mut out = BytesMut::new();
        for (i, m) in members.iter().enumerate() {
            let smm = pb::SingleMessageMetadata {
                payload_size: i32::try_from(m.len()).unwrap(),
                partition_key: Some(format!("k{i}")),
                ..Default::default()
            };
            out.put_u32(u32::try_from(smm.encoded_len()).unwrap());
            smm.encode(&mut out).unwrap();
            out.extend_from_slice(m);
        }
        out.freeze()
    }

    #[test]
    fn members_come_back_in_order() {
        let members = split_batch(batch(&[b"one", b"", b"three"]), 3).unwrap();
        let bodies: Vec<&[u8]> = members.iter().map(|m| &m.body[..]).collect();
        assert_eq!(bodies, [&b"one"[..], b"", b"three"]);
        assert_eq!(members[2].metadata.partition_key.as_deref(), Some("k2"));
        assert!(split_batch(batch(&[b"x"]), -5).unwrap().is_empty());
    }

    #[test]
    fn a_count_larger_than_the_bytes_is_an_error_not_an_allocation() {
        let e = split_batch(batch(&[b"one"]), i32::MAX).unwrap_err();
        assert!(matches!(
            e,
            ProtocolError::TruncatedPayload { what: "smmSize" }
        ));
    }

    #[test]
    fn sizes_past_the_end_are_errors() {
        let mut whole = batch(&[b"hello"]).to_vec();
        whole.truncate(whole.len() - 1);
        assert!(split_batch(Bytes::from(whole), 1).is_err());
        let mut huge = BytesMut::new();
        huge.put_u32(u32::MAX);
        assert!(split_batch(huge.freeze(), 1).is_err());
        // A negative payload_size.
        let smm = pb::SingleMessageMetadata {
            payload_size: -1,
            ..Default::default()
        };
        let mut neg = BytesMut::new();
        neg.put_u32(u32::try_from(smm.encoded_len()).unwrap());
        smm.encode(&mut neg).unwrap();
        assert!(split_batch(neg.freeze(), 1).is_err());
    }
}
