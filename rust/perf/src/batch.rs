//! Message bodies of the load generator.
//!
//! Every message starts with its send time (nanoseconds since the Unix epoch, little-endian u64)
//! so a consumer, possibly in another process on the same machine, can compute end-to-end latency.
//! A batch payload is Pulsar's `repeated [u32 smmSize][SingleMessageMetadata][message bytes]`.

use bytes::{BufMut, Bytes, BytesMut};
use prost::Message;
use pulsar_rs_proto::pb;

/// Smallest message size: the timestamp.
pub const MIN_MESSAGE_SIZE: usize = 8;

/// Wall-clock nanoseconds since the Unix epoch.
#[must_use]
pub fn now_nanos() -> u64 {
    pulsar_rs_clock::system_now_nanos()
}

/// Writes one message of `size` bytes (timestamp + filler) to `out`.
pub fn put_message(out: &mut BytesMut, size: usize, ts_nanos: u64) {
    out.put_u64_le(ts_nanos);
    out.put_bytes(b'x', size.saturating_sub(8));
}

/// Builds the payload of one SEND holding `n` messages of `size` bytes starting at sequence id
/// `first_seq`. With `batched == false` (and `n == 1`) the payload is the bare message.
pub fn build_payload(
    out: &mut BytesMut,
    n: usize,
    size: usize,
    first_seq: u64,
    ts_nanos: u64,
    batched: bool,
) {
    if !batched {
        put_message(out, size, ts_nanos);
        return;
    }
    for i in 0..n {
        let smm = pb::SingleMessageMetadata {
            payload_size: i32::try_from(size).unwrap_or(i32::MAX),
            sequence_id: Some(first_seq + i as u64),
            ..Default::default()
        };
        out.put_u32(u32::try_from(smm.encoded_len()).unwrap_or(u32::MAX));
        smm.encode(out).expect("BytesMut grows");
        put_message(out, size, ts_nanos);
    }
}

/// Calls `f(timestamp_nanos)` for every message of an entry's payload; returns the number of
/// messages. `batch_size` is the metadata's `num_messages_in_batch` (None = not batched).
/// Messages too short to hold a timestamp report 0.
pub fn for_each_message(payload: &Bytes, batch_size: Option<i32>, mut f: impl FnMut(u64)) -> u64 {
    let ts_of = |m: &[u8]| {
        m.get(..8)
            .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    };
    let Some(n) = batch_size else {
        f(ts_of(payload));
        return 1;
    };
    // Proto's batch decoder; a batch that does not decode counts no message.
    let members = pulsar_rs_proto::split_batch(payload.clone(), n).unwrap_or_default();
    for m in &members {
        f(ts_of(&m.body));
    }
    members.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_round_trip() {
        let mut out = BytesMut::new();
        build_payload(&mut out, 5, 100, 10, 42, true);
        let payload = out.freeze();
        let mut seen = Vec::new();
        assert_eq!(for_each_message(&payload, Some(5), |t| seen.push(t)), 5);
        assert_eq!(seen, vec![42; 5]);

        let mut out = BytesMut::new();
        build_payload(&mut out, 1, 100, 10, 7, false);
        assert_eq!(out.len(), 100);
        let mut seen = Vec::new();
        assert_eq!(for_each_message(&out.freeze(), None, |t| seen.push(t)), 1);
        assert_eq!(seen, vec![7]);
    }
}
