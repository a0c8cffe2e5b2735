//! Pulsar's payload codecs (`MessageMetadata.compression`), in the byte formats Pulsar's clients
//! and broker use: LZ4 as a raw block (no frame, the size travels in `uncompressed_size`), zlib
//! as a zlib stream, zstd as a standard frame, Snappy as a raw block.
//!
//! The broker only needs them where it must look inside a batch, which is compaction: there a
//! compressed batch is decompressed, filtered and compressed again with its own codec.
//!
//! `uncompressed_size` comes from the peer's metadata, so it is trusted for nothing: a claim
//! larger than the payload can decode to with its codec ([`most_decoded`]) is refused before
//! anything is allocated, and output buffers grow with what is really decoded.

use std::io::{Read, Write};

use bytes::Bytes;

use crate::error::ProtocolError;
use crate::pb::CompressionType;

/// Decompresses a payload that `uncompressed_size` says is that many bytes once decoded.
///
/// # Errors
/// [`ProtocolError::Compression`] for an unknown codec, bytes the codec rejects, a
/// `uncompressed_size` that `payload` cannot decode to, or a result whose size differs from it.
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
    let most = most_decoded(kind, payload.len());
    if uncompressed_size > most {
        return Err(fail(format!(
            "the metadata claims {uncompressed_size} bytes, {} bytes of {} decode to at most {most}",
            payload.len(),
            kind.as_str_name()
        )));
    }
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
        CompressionType::Snappy => {
            // Snappy's own header carries the size it decodes to; it is checked before the
            // decoder allocates that much.
            let announced = snap::raw::decompress_len(payload).map_err(|e| fail(e.to_string()))?;
            if announced != uncompressed_size {
                return Err(fail(format!(
                    "the payload announces {announced} bytes, the metadata says {uncompressed_size}"
                )));
            }
            snap::raw::Decoder::new()
                .decompress_vec(payload)
                .map_err(|e| fail(e.to_string()))?
        }
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

/// The most output capacity reserved up front from a size the peer claims.
const PREALLOCATE: usize = 1 << 20;

fn codec_of(codec: i32) -> Result<CompressionType, ProtocolError> {
    CompressionType::try_from(codec).map_err(|_| ProtocolError::Compression {
        codec: "UNKNOWN",
        reason: format!("compression type {codec} is not one of Pulsar's codecs"),
    })
}

/// The most bytes `len` bytes of `kind` can decode to: each codec's largest expansion per input
/// byte, plus a constant for its headers (an upper bound, never refusing what a compressor can
/// produce).
///
/// * LZ4 blocks: a match length grows by 255 per extension byte.
/// * zlib (deflate): at most 258 bytes per 2 bits, Deflate's 1032:1.
/// * zstd: a 4-byte RLE block decodes to at most 128 KiB.
/// * Snappy: a 3-byte copy decodes to at most 64 bytes.
#[must_use]
pub fn most_decoded(kind: CompressionType, len: usize) -> usize {
    let (per_byte, constant) = match kind {
        CompressionType::None => (1, 0),
        CompressionType::Lz4 => (256, 64),
        CompressionType::Zlib => (1032, 1024),
        CompressionType::Zstd => (32 * 1024, 128 * 1024),
        CompressionType::Snappy => (22, 64),
    };
    len.saturating_mul(per_byte).saturating_add(constant)
}

/// Reads at most `expected + 1` bytes: a stream that decodes to more than it should is caught
/// without decoding all of it. Capacity is reserved for at most [`PREALLOCATE`] bytes, the
/// rest grows with what is decoded.
fn read_bounded(reader: impl Read, expected: usize) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(expected.min(PREALLOCATE));
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

    /// Found by the fuzzer (fuzz/, target `decompress`): a few bytes claiming gigabytes made
    /// LZ4, zlib, zstd and Snappy reserve the claimed size before decoding anything (an
    /// allocation failure aborts the broker).
    #[test]
    fn a_claimed_size_beyond_what_the_payload_can_hold_is_refused_before_allocating() {
        let cases: [(i32, &[u8], usize); 5] = [
            (1, b"\x6c\xf7\x0f\x01\x01\x01\x0e\x0d", 0x0d00_026c),
            (2, b"\x78\x9c\x01\x00", 0xc000_026c),
            (3, b"\x28\xb5\x2f\xfd\xfa\x00\x00", 0xffff_ffff),
            (4, b"\xf5\xf5\xf5\xf5\x00", 0x5139_f5f5),
            // Snappy's header announces 4 GiB; the metadata agrees.
            (4, b"\xff\xff\xff\xff\x0f", 0xffff_ffff),
        ];
        for (codec, payload, size) in cases {
            let e = decompress(codec, payload, size).unwrap_err().to_string();
            assert!(
                e.contains("at most") || e.contains("announces"),
                "{codec}: {e}"
            );
        }
        assert!(most_decoded(CompressionType::Lz4, 10) < 4096);
        assert_eq!(most_decoded(CompressionType::Zstd, usize::MAX), usize::MAX);
    }

    #[test]
    fn the_bound_admits_what_the_compressors_produce_at_their_best() {
        let zeros = vec![0u8; 8 << 20];
        for c in &ALL[1..] {
            let packed = compress(*c as i32, &zeros).unwrap();
            assert!(
                most_decoded(*c, packed.len()) >= zeros.len(),
                "{c:?}: {} bytes",
                packed.len()
            );
            assert_eq!(
                decompress(*c as i32, &packed, zeros.len()).unwrap().len(),
                zeros.len()
            );
        }
    }
}
