//! Pulsar's payload codecs (`MessageMetadata.compression`), in the byte formats Pulsar's clients
//! and broker use: LZ4 as a raw block (no frame, the size travels in `uncompressed_size`), zlib
//! as a zlib stream, zstd as a standard frame, Snappy as a raw block.
//!
//! The broker only needs them where it must look inside a batch, which is compaction: there a
//! compressed batch is decompressed, filtered and compressed again with its own codec.

use std::io::{Read, Write};

use bytes::Bytes;

use crate::error::ProtocolError;
use crate::pb::CompressionType;

/// Decompresses a payload that `uncompressed_size` says is that many bytes once decoded.
///
/// # Errors
/// [`ProtocolError::Compression`] for an unknown codec, bytes the codec rejects, or a result
/// whose size differs from `uncompressed_size`.
pub fn decompress(
    codec: i32,
    payload: &[u8],
    uncompressed_size: usize,
) -> Result<Bytes, ProtocolError> {
    let kind = codec_of(codec)?;
    let fail = |reason: String| ProtocolError::Compression {
        codec: kind.as_str_name(),
        reason,
    };
    let out = match kind {
        CompressionType::None => payload.to_vec(),
        CompressionType::Lz4 => lz4_flex::block::decompress(payload, uncompressed_size)
            .map_err(|e| fail(e.to_string()))?,
        CompressionType::Zlib => {
            read_bounded(flate2::read::ZlibDecoder::new(payload), uncompressed_size)
                .map_err(|e| fail(e.to_string()))?
        }
        CompressionType::Zstd => {
            let mut input = payload;
            let decoder = ruzstd::decoding::StreamingDecoder::new(&mut input)
                .map_err(|e| fail(e.to_string()))?;
            read_bounded(decoder, uncompressed_size).map_err(|e| fail(e.to_string()))?
        }
        CompressionType::Snappy => snap::raw::Decoder::new()
            .decompress_vec(payload)
            .map_err(|e| fail(e.to_string()))?,
    };
    if out.len() != uncompressed_size {
        return Err(fail(format!(
            "decoded {} bytes, the metadata says {uncompressed_size}",
            out.len()
        )));
    }
    Ok(Bytes::from(out))
}

/// Compresses `data` with `codec` (as a Pulsar client would for that codec).
///
/// # Errors
/// [`ProtocolError::Compression`] for an unknown codec or a failing encoder.
pub fn compress(codec: i32, data: &[u8]) -> Result<Bytes, ProtocolError> {
    let kind = codec_of(codec)?;
    let fail = |reason: String| ProtocolError::Compression {
        codec: kind.as_str_name(),
        reason,
    };
    let out = match kind {
        CompressionType::None => data.to_vec(),
        CompressionType::Lz4 => lz4_flex::block::compress(data),
        CompressionType::Zlib => {
            let mut enc =
                flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(data).map_err(|e| fail(e.to_string()))?;
            enc.finish().map_err(|e| fail(e.to_string()))?
        }
        CompressionType::Zstd => {
            ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
        }
        CompressionType::Snappy => snap::raw::Encoder::new()
            .compress_vec(data)
            .map_err(|e| fail(e.to_string()))?,
    };
    Ok(Bytes::from(out))
}

fn codec_of(codec: i32) -> Result<CompressionType, ProtocolError> {
    CompressionType::try_from(codec).map_err(|_| ProtocolError::Compression {
        codec: "UNKNOWN",
        reason: format!("compression type {codec} is not one of Pulsar's codecs"),
    })
}

/// Reads at most `expected + 1` bytes: a stream that decodes to more than it should is caught
/// without decoding all of it (a small payload cannot make the broker allocate gigabytes).
fn read_bounded(reader: impl Read, expected: usize) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(expected);
    reader.take(expected as u64 + 1).read_to_end(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [CompressionType; 5] = [
        CompressionType::None,
        CompressionType::Lz4,
        CompressionType::Zlib,
        CompressionType::Zstd,
        CompressionType::Snappy,
    ];

    #[test]
    fn every_codec_round_trips() {
        let data: Vec<u8> = (0..10_000u32)
            .flat_map(|i| (i % 97).to_be_bytes())
            .collect();
        for c in ALL {
            let packed = compress(c as i32, &data).unwrap();
            if c != CompressionType::None {
                assert!(packed.len() < data.len() / 2, "{c:?} did not compress");
            }
            let back = decompress(c as i32, &packed, data.len()).unwrap();
            assert_eq!(&back[..], &data[..], "{c:?}");
        }
    }

    #[test]
    fn wrong_size_or_garbage_is_an_error() {
        let data = vec![7u8; 4096];
        for c in ALL {
            let packed = compress(c as i32, &data).unwrap();
            assert!(
                decompress(c as i32, &packed, data.len() - 1).is_err(),
                "{c:?}"
            );
        }
        for c in &ALL[1..] {
            assert!(
                decompress(*c as i32, b"\xff\xfe not compressed", 100).is_err(),
                "{c:?}"
            );
        }
        assert!(matches!(
            compress(42, b"x"),
            Err(ProtocolError::Compression {
                codec: "UNKNOWN",
                ..
            })
        ));
    }
}
