//! The fuzz targets: what the broker does with received bytes, on arbitrary bytes.

use bytes::{Bytes, BytesMut};
use pulsar_rs_proto::{compression, pb, Frame, DEFAULT_MAX_FRAME_SIZE};

/// A connection's read loop: `data` arrives in one buffer and is decoded frame by frame until
/// the decoder wants more or refuses; each SEND's stored form goes through [`stored_entry`]
/// (a frame without checksum is stored with a computed one, so its payload is reached too).
pub fn frames(data: &[u8]) {
    let mut buf = BytesMut::from(data);
    while let Ok(Some(frame)) = pulsar_rs_proto::decode_frame(&mut buf, DEFAULT_MAX_FRAME_SIZE) {
        let _ = pulsar_rs_proto::command_type_name(frame.command());
        if let Frame::Payload { payload: p, .. } = frame {
            let _ = p.metadata.is_non_last_chunk();
            stored_entry(&p.stored);
        }
    }
}

/// A stored entry read back (dispatch, compaction, the admin API's peek): its lean and full
/// metadata, then the payload decompressed and split as compaction does.
pub fn stored_entry(entry: &Bytes) {
    let _ = pulsar_rs_proto::parse_dispatch_metadata(entry);
    let _ = pulsar_rs_proto::parse_stored_metadata(entry);
    if let Ok((md, body)) = pulsar_rs_proto::parse_stored_entry(entry) {
        payload(&md, body);
    }
}

/// [`stored_entry`] on `data` with its checksum made right, as the broker stores only entries
/// whose checksum it verified (a fuzzer cannot guess a CRC32C).
pub fn stored_entry_with_checksum(data: &[u8]) {
    let mut entry = data.to_vec();
    if entry.len() >= 6 {
        let crc = crc32c::crc32c(&entry[6..]);
        entry[2..6].copy_from_slice(&crc.to_be_bytes());
    }
    stored_entry(&Bytes::from(entry));
}

/// Decompresses (with the metadata's codec and claimed size) and splits a batch payload.
pub fn payload(md: &pb::MessageMetadata, payload: Bytes) {
    let raw = match md.compression.unwrap_or(0) {
        0 => payload,
        codec => {
            let size = md.uncompressed_size.unwrap_or(0) as usize;
            match compression::decompress(codec, &payload, size) {
                Ok(raw) => raw,
                Err(_) => return,
            }
        }
    };
    if let Some(n) = md.num_messages_in_batch {
        let _ = pulsar_rs_proto::split_batch(raw, n);
    }
}

/// The payload codecs directly: byte 0 picks the codec, bytes 1..5 the claimed uncompressed
/// size (big-endian), the rest is the compressed payload.
pub fn decompress(data: &[u8]) {
    let [codec, a, b, c, d, rest @ ..] = data else {
        return;
    };
    let size = u32::from_be_bytes([*a, *b, *c, *d]) as usize;
    let _ = compression::decompress(i32::from(*codec % 6), rest, size);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every seed decodes through its target (a seed that errored early would fuzz nothing).
    #[test]
    fn the_seeds_reach_the_decoders_they_are_for() {
        for (name, seed) in crate::seeds::frames() {
            let mut buf = BytesMut::from(&seed[..]);
            let mut n = 0;
            while let Some(frame) = pulsar_rs_proto::decode_frame(&mut buf, DEFAULT_MAX_FRAME_SIZE)
                .unwrap_or_else(|e| panic!("{name}: {e}"))
            {
                if let Frame::Payload { payload: p, .. } = frame {
                    let md = p.full_metadata().unwrap();
                    if let Some(codec) = md.compression {
                        let size = md.uncompressed_size.unwrap_or(0) as usize;
                        compression::decompress(codec, &p.payload, size).unwrap();
                    }
                }
                n += 1;
            }
            assert!(n > 0 && buf.is_empty(), "{name}");
            frames(&seed);
        }
        for (name, seed) in crate::seeds::stored_entries() {
            let (md, body) = pulsar_rs_proto::parse_stored_entry(&Bytes::from(seed.clone()))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let raw = match md.compression {
                Some(c) => {
                    compression::decompress(c, &body, md.uncompressed_size.unwrap_or(0) as usize)
                        .unwrap()
                }
                None => body,
            };
            if let Some(n) = md.num_messages_in_batch {
                assert_eq!(
                    pulsar_rs_proto::split_batch(raw, n).unwrap().len(),
                    5,
                    "{name}"
                );
            }
            stored_entry_with_checksum(&seed);
        }
        for (name, seed) in crate::seeds::compressed() {
            let size = u32::from_be_bytes([seed[1], seed[2], seed[3], seed[4]]) as usize;
            compression::decompress(i32::from(seed[0]), &seed[5..], size)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            decompress(&seed);
        }
    }
}
