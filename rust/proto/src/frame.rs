//! The frame codec: pure functions from bytes to [`Frame`]s and back.
//!
//! No I/O happens here. A connection task appends socket reads to a
//! [`BytesMut`] and calls [`decode_frame`] until it returns `Ok(None)`;
//! replies are encoded into a [`BytesMut`] with [`encode_simple`], and
//! dispatched entries are written as a small header
//! ([`encode_message_header`]) followed by the stored entry [`Bytes`]
//! unchanged, so a server can use vectored writes without copying payloads.
//!
//! # Stored entries
//!
//! The broker stores, for each published entry, the bytes
//! `[u16 0x0e01][u32 crc32c][u32 metadataSize][MessageMetadata][payload]`
//! — exactly what follows the command in a SEND frame that carries a
//! checksum. A client speaking protocol < v6 sends no checksum; such
//! payloads are **normalized** on decode: [`PayloadFrame::stored`] then holds
//! a fresh buffer with the magic and a computed CRC32C prepended, so every
//! stored entry has the same layout and can be dispatched unchanged to any
//! consumer. (This costs one copy for such legacy clients only.)

use bytes::{Buf, BufMut, Bytes, BytesMut};
use prost::Message;

use crate::commands::has_command_field;
use crate::error::ProtocolError;
use crate::frame_metadata::FrameMetadata;
use crate::pb::{self, base_command::Type};

/// Magic number that precedes the CRC32C checksum of a payload.
pub const MAGIC_CRC32C: u16 = 0x0e01;
/// Magic number that precedes broker entry metadata in a dispatched MESSAGE.
pub const MAGIC_BROKER_ENTRY_METADATA: u16 = 0x0e02;
/// Pulsar's default `maxMessageSize` (5 MiB).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 5 * 1024 * 1024;
/// Slack allowed on top of `maxMessageSize` for the command and headers.
pub const MESSAGE_SIZE_FRAME_PADDING: usize = 10 * 1024;
/// Default limit for [`decode_frame`]'s `max_frame_size` on a broker.
pub const DEFAULT_MAX_FRAME_SIZE: usize = DEFAULT_MAX_MESSAGE_SIZE + MESSAGE_SIZE_FRAME_PADDING;
/// Length of `[magic][crc32c][metadataSize]` at the start of a stored entry.
pub const STORED_ENTRY_HEADER_LEN: usize = 2 + 4 + 4;

/// One decoded frame.
#[derive(Debug, Clone, PartialEq)]
// Boxing the payload would cost an allocation on every SEND, the hot path.
#[allow(clippy::large_enum_variant)]
pub enum Frame {
    /// `[totalSize][cmdSize][BaseCommand]`.
    Simple(pb::BaseCommand),
    /// A SEND or MESSAGE: the command followed by a payload section.
    Payload {
        /// The decoded command (its type is SEND or MESSAGE).
        command: pb::BaseCommand,
        /// The decoded payload section.
        payload: PayloadFrame,
    },
}

impl Frame {
    /// The command of this frame.
    pub fn command(&self) -> &pb::BaseCommand {
        match self {
            Frame::Simple(command) | Frame::Payload { command, .. } => command,
        }
    }

    /// Splits the frame into its command and optional payload section.
    pub fn into_parts(self) -> (pb::BaseCommand, Option<PayloadFrame>) {
        match self {
            Frame::Simple(command) => (command, None),
            Frame::Payload { command, payload } => (command, Some(payload)),
        }
    }
}

/// The payload section of a SEND or MESSAGE frame.
#[derive(Debug, Clone, PartialEq)]
pub struct PayloadFrame {
    /// Broker entry metadata (`0x0e02` section); only present in MESSAGE
    /// frames sent to clients that advertised support for it.
    pub broker_entry_metadata: Option<pb::BrokerEntryMetadata>,
    /// The checksum carried by the frame, `None` if the peer sent none.
    pub checksum: Option<u32>,
    /// `false` only if a checksum was carried and does not match the data.
    /// When `false`, `metadata` and `payload` are best effort (they are
    /// `Default`/empty if the corrupted section cannot be parsed) and must not
    /// be trusted; a broker answers SEND_ERROR(ChecksumError).
    pub checksum_valid: bool,
    /// The fields of `MessageMetadata` read for every message. Decoding them walks the
    /// whole metadata, so its wire structure is valid; [`PayloadFrame::full_metadata`] decodes
    /// all of it.
    pub metadata: FrameMetadata,
    /// `[0x0e01][crc32c][metadataSize][metadata][payload]`: what the broker
    /// stores. A zero-copy slice of the wire buffer when the peer sent a
    /// checksum; a normalized copy with a computed checksum otherwise.
    pub stored: Bytes,
    /// The message payload after the metadata (a slice of `stored`).
    pub payload: Bytes,
}

impl PayloadFrame {
    /// The whole `MessageMetadata`, decoded from [`PayloadFrame::stored`].
    ///
    /// # Errors
    /// Metadata that cannot be decoded: a section whose checksum did not match, or a string
    /// field that is not UTF-8 (the lean decode does not look inside the fields it skips, and
    /// neither does Pulsar's broker).
    pub fn full_metadata(&self) -> Result<pb::MessageMetadata, ProtocolError> {
        parse_metadata_and_payload(&self.stored).map(|(metadata, _)| metadata)
    }
}

/// Decodes one frame from the front of `buf`.
///
/// * `Ok(None)`: `buf` does not yet hold a whole frame; nothing is consumed
///   (capacity for the rest of the frame may be reserved).
/// * `Ok(Some(frame))`: exactly one frame was consumed.
/// * `Err(_)`: the input is malformed. For [`ProtocolError::FrameTooLarge`]
///   and [`ProtocolError::BadFrameSize`] nothing is consumed; for every other
///   error the offending frame has been consumed. Either way a broker should
///   close the connection.
///
/// `max_frame_size` bounds the `totalSize` field (which excludes its own 4
/// bytes); see [`DEFAULT_MAX_FRAME_SIZE`]. Never panics on any input.
pub fn decode_frame(
    buf: &mut BytesMut,
    max_frame_size: usize,
) -> Result<Option<Frame>, ProtocolError> {
    let Some(total) = peek_u32(buf, 0) else {
        return Ok(None);
    };
    let frame_len = checked_frame_len(total, max_frame_size)?;
    if buf.len() < frame_len {
        buf.reserve(frame_len - buf.len());
        return Ok(None);
    }
    let mut frame = buf.split_to(frame_len).freeze();
    frame.advance(4);
    decode_frame_body(frame).map(Some)
}

/// Decodes a buffer that must hold exactly one complete frame.
///
/// Returns [`ProtocolError::Incomplete`] if it is shorter than the frame it
/// announces and [`ProtocolError::TrailingBytes`] if it is longer.
pub fn decode_exact(mut frame: Bytes, max_frame_size: usize) -> Result<Frame, ProtocolError> {
    let total = peek_u32(&frame, 0).ok_or(ProtocolError::Incomplete)?;
    let frame_len = checked_frame_len(total, max_frame_size)?;
    match frame.len().cmp(&frame_len) {
        std::cmp::Ordering::Less => Err(ProtocolError::Incomplete),
        std::cmp::Ordering::Greater => Err(ProtocolError::TrailingBytes {
            extra: frame.len() - frame_len,
        }),
        std::cmp::Ordering::Equal => {
            frame.advance(4);
            decode_frame_body(frame)
        }
    }
}

/// Validates `totalSize` and returns the full frame length (with the prefix).
fn checked_frame_len(total: u32, max_frame_size: usize) -> Result<usize, ProtocolError> {
    let too_large = || ProtocolError::FrameTooLarge {
        size: total as usize,
        max: max_frame_size,
    };
    let total_usize = usize::try_from(total).map_err(|_| too_large())?;
    if total_usize > max_frame_size {
        return Err(too_large());
    }
    if total < 4 {
        return Err(ProtocolError::BadFrameSize { size: total });
    }
    total_usize.checked_add(4).ok_or_else(too_large)
}

/// Decodes `[cmdSize][BaseCommand][payload section?]` (the frame minus its
/// `totalSize` prefix).
fn decode_frame_body(body: Bytes) -> Result<Frame, ProtocolError> {
    let total_size = u32::try_from(body.len()).unwrap_or(u32::MAX);
    let cmd_size = peek_u32(&body, 0).ok_or(ProtocolError::BadFrameSize { size: total_size })?;
    let cmd_end = usize::try_from(cmd_size)
        .ok()
        .and_then(|n| n.checked_add(4))
        .filter(|&end| end <= body.len())
        .ok_or(ProtocolError::BadCommandSize {
            cmd_size,
            total_size,
        })?;
    let command = pb::BaseCommand::decode(body.slice(4..cmd_end))
        .map_err(|e| ProtocolError::decode("BaseCommand", e))?;
    let ty = validate_command(&command)?;
    crate::required::check_required_fields(ty, &body[4..cmd_end])?;
    let rest = body.slice(cmd_end..);
    match ty {
        Type::Send | Type::Message => {
            let payload = decode_payload_section(rest)?;
            Ok(Frame::Payload { command, payload })
        }
        _ if rest.is_empty() => Ok(Frame::Simple(command)),
        _ => Err(ProtocolError::UnexpectedPayload {
            ty: ty.as_str_name(),
        }),
    }
}

/// Checks that the command's type is known and its command field present.
pub fn validate_command(cmd: &pb::BaseCommand) -> Result<Type, ProtocolError> {
    let ty =
        Type::try_from(cmd.r#type).map_err(|_| ProtocolError::UnknownCommandType(cmd.r#type))?;
    if has_command_field(cmd, ty) {
        Ok(ty)
    } else {
        Err(ProtocolError::MissingCommand {
            ty: ty.as_str_name(),
        })
    }
}

/// The protocol name of a command's type (`"SEND"`, …), or `"UNKNOWN"`.
pub fn command_type_name(cmd: &pb::BaseCommand) -> &'static str {
    Type::try_from(cmd.r#type).map_or("UNKNOWN", |t| t.as_str_name())
}

fn decode_payload_section(mut rest: Bytes) -> Result<PayloadFrame, ProtocolError> {
    let mut broker_entry_metadata = None;
    if peek_u16(&rest, 0) == Some(MAGIC_BROKER_ENTRY_METADATA) {
        let size = peek_u32(&rest, 2).ok_or(ProtocolError::TruncatedPayload {
            what: "broker entry metadata size",
        })?;
        let available = rest.len() - 6;
        let end = usize::try_from(size)
            .ok()
            .filter(|&n| n <= available)
            .ok_or(ProtocolError::BadBrokerEntryMetadataSize { size, available })?
            + 6;
        let bem = pb::BrokerEntryMetadata::decode(rest.slice(6..end))
            .map_err(|e| ProtocolError::decode("BrokerEntryMetadata", e))?;
        broker_entry_metadata = Some(bem);
        rest.advance(end);
    }

    let (checksum, checksum_valid, stored) = if peek_u16(&rest, 0) == Some(MAGIC_CRC32C) {
        let carried =
            peek_u32(&rest, 2).ok_or(ProtocolError::TruncatedPayload { what: "checksum" })?;
        let actual = crc32c::crc32c(&rest[6..]);
        (Some(carried), carried == actual, rest)
    } else {
        // Legacy peer without checksum: normalize to the stored layout.
        let mut normalized = BytesMut::with_capacity(6 + rest.len());
        normalized.put_u16(MAGIC_CRC32C);
        normalized.put_u32(crc32c::crc32c(&rest));
        normalized.extend_from_slice(&rest);
        (None, true, normalized.freeze())
    };

    let (metadata, payload) = match parse_frame_metadata(&stored) {
        Ok(parsed) => parsed,
        Err(_) if !checksum_valid => (FrameMetadata::default(), Bytes::new()),
        Err(e) => return Err(e),
    };
    Ok(PayloadFrame {
        broker_entry_metadata,
        checksum,
        checksum_valid,
        metadata,
        stored,
        payload,
    })
}

/// Like [`parse_metadata_and_payload`], decoding only the [`FrameMetadata`] fields.
fn parse_frame_metadata(stored: &Bytes) -> Result<(FrameMetadata, Bytes), ProtocolError> {
    let span = metadata_span(stored)?;
    let end = span.end;
    let metadata = FrameMetadata::decode(&stored[span])
        .map_err(|e| ProtocolError::decode("MessageMetadata", e))?;
    Ok((metadata, stored.slice(end..)))
}

/// Parses `[metadataSize][metadata][payload]` at offset 6 of a stored entry.
fn parse_metadata_and_payload(
    stored: &Bytes,
) -> Result<(pb::MessageMetadata, Bytes), ProtocolError> {
    let span = metadata_span(stored)?;
    let end = span.end;
    let metadata = pb::MessageMetadata::decode(stored.slice(span))
        .map_err(|e| ProtocolError::decode("MessageMetadata", e))?;
    Ok((metadata, stored.slice(end..)))
}

/// Where a stored entry's metadata lies (after its `metadataSize`).
pub(crate) fn metadata_span(stored: &Bytes) -> Result<std::ops::Range<usize>, ProtocolError> {
    let size = peek_u32(stored, 6).ok_or(ProtocolError::TruncatedPayload {
        what: "metadataSize",
    })?;
    let available = stored.len() - STORED_ENTRY_HEADER_LEN;
    let len = usize::try_from(size)
        .ok()
        .filter(|&n| n <= available)
        .ok_or(ProtocolError::BadMetadataSize { size, available })?;
    Ok(STORED_ENTRY_HEADER_LEN..STORED_ENTRY_HEADER_LEN + len)
}

/// Parses a stored entry (`[0x0e01][crc32c][metadataSize][metadata][payload]`)
/// read back from the ledger, verifying its checksum. The returned payload is
/// a zero-copy slice of `entry`.
pub fn parse_stored_entry(entry: &Bytes) -> Result<(pb::MessageMetadata, Bytes), ProtocolError> {
    let magic = peek_u16(entry, 0).ok_or(ProtocolError::TruncatedPayload { what: "magic" })?;
    if magic != MAGIC_CRC32C {
        return Err(ProtocolError::BadMagic { found: magic });
    }
    let expected =
        peek_u32(entry, 2).ok_or(ProtocolError::TruncatedPayload { what: "checksum" })?;
    let actual = crc32c::crc32c(&entry[6..]);
    if expected != actual {
        return Err(ProtocolError::ChecksumMismatch { expected, actual });
    }
    parse_metadata_and_payload(entry)
}

/// The metadata of a stored entry, without verifying its checksum: for the broker's hot
/// paths, which read entries whose checksum was verified when they were published (SEND) and
/// whose bytes the journal's record checksum verifies on every disk read. The stored checksum
/// stays in the entry and goes to consumers as is.
pub fn parse_stored_metadata(entry: &Bytes) -> Result<pb::MessageMetadata, ProtocolError> {
    let magic = peek_u16(entry, 0).ok_or(ProtocolError::TruncatedPayload { what: "magic" })?;
    if magic != MAGIC_CRC32C {
        return Err(ProtocolError::BadMagic { found: magic });
    }
    parse_metadata_and_payload(entry).map(|(md, _)| md)
}

/// Where a stored entry's checksum starts covering it: right after `[magic][crc32c]`.
pub const STORED_CHECKSUM_FROM: usize = 2 + 4;

/// The checksum a stored entry (`[0x0e01][crc32c][metadataSize][metadata][payload]`) carries:
/// `(from, crc)`, the CRC32C of its bytes from offset `from`. Not verified here: for an entry
/// whose checksum was verified when it was published (a SEND's, `checksum_valid`), so the
/// journal can reuse it. `None` when the entry does not start with [`MAGIC_CRC32C`].
pub fn stored_checksum(stored: &[u8]) -> Option<(usize, u32)> {
    if peek_u16(stored, 0)? != MAGIC_CRC32C {
        return None;
    }
    Some((STORED_CHECKSUM_FROM, peek_u32(stored, 2)?))
}

/// Builds a stored entry `[0x0e01][crc32c][metadataSize][metadata][payload]`.
pub fn build_stored_entry(metadata: &pb::MessageMetadata, payload: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(stored_entry_len(metadata, payload.len()));
    write_stored_entry(metadata, payload, &mut out);
    out.freeze()
}

/// The length [`build_stored_entry`] would produce.
pub fn stored_entry_len(metadata: &pb::MessageMetadata, payload_len: usize) -> usize {
    STORED_ENTRY_HEADER_LEN + metadata.encoded_len() + payload_len
}

fn write_stored_entry(metadata: &pb::MessageMetadata, payload: &[u8], out: &mut BytesMut) {
    let start = out.len();
    out.reserve(stored_entry_len(metadata, payload.len()));
    out.put_u16(MAGIC_CRC32C);
    out.put_u32(0); // checksum placeholder, patched below
    let md_len = metadata.encoded_len();
    out.put_u32(len_u32(md_len));
    encode_with_len(metadata, md_len, out);
    out.extend_from_slice(payload);
    let crc = crc32c::crc32c(&out[start + 6..]);
    out[start + 2..start + 6].copy_from_slice(&crc.to_be_bytes());
}

/// Writes a simple frame `[totalSize][cmdSize][BaseCommand]`.
///
/// # Panics
/// If the frame would exceed `u32::MAX` bytes (impossible for valid commands).
pub fn encode_simple(cmd: &pb::BaseCommand, out: &mut BytesMut) {
    encode_header(cmd, 0, out);
}

/// The bytes [`encode_simple`] writes for `cmd`, known before encoding it (PIP-442's limits
/// take the memory of an answer before it is encoded).
#[must_use]
pub fn simple_frame_len(cmd: &pb::BaseCommand) -> usize {
    8 + cmd.encoded_len()
}

/// Writes `[totalSize][cmdSize][BaseCommand]` for a frame whose remaining
/// `payload_len` bytes the caller writes next (e.g. a stored entry, possibly
/// through a vectored write of the stored [`Bytes`]).
///
/// # Panics
/// If the frame would exceed `u32::MAX` bytes.
pub fn encode_message_header(cmd: &pb::BaseCommand, payload_len: usize, out: &mut BytesMut) {
    encode_header(cmd, payload_len, out);
}

/// Like [`encode_message_header`], followed by the broker entry metadata
/// section `[0x0e02][u32 size][BrokerEntryMetadata]`; the caller then writes
/// the `stored_len` bytes of the stored entry.
///
/// # Panics
/// If the frame would exceed `u32::MAX` bytes.
pub fn encode_message_header_with_broker_entry_metadata(
    cmd: &pb::BaseCommand,
    broker_entry_metadata: &pb::BrokerEntryMetadata,
    stored_len: usize,
    out: &mut BytesMut,
) {
    let bem_len = broker_entry_metadata.encoded_len();
    encode_header(cmd, 6 + bem_len + stored_len, out);
    out.put_u16(MAGIC_BROKER_ENTRY_METADATA);
    out.put_u32(len_u32(bem_len));
    encode_with_len(broker_entry_metadata, bem_len, out);
}

/// Writes a MESSAGE frame: the header followed by a copy of `stored_entry`.
/// Prefer [`encode_message_header`] plus a vectored write to avoid the copy.
pub fn encode_message(cmd: &pb::BaseCommand, stored_entry: &[u8], out: &mut BytesMut) {
    encode_header(cmd, stored_entry.len(), out);
    out.extend_from_slice(stored_entry);
}

/// Writes a payload frame (SEND or MESSAGE) with magic and CRC32C:
/// `[totalSize][cmdSize][cmd][0x0e01][crc32c][metadataSize][metadata][payload]`.
///
/// # Panics
/// If the frame would exceed `u32::MAX` bytes.
pub fn encode_payload_command(
    cmd: &pb::BaseCommand,
    metadata: &pb::MessageMetadata,
    payload: &[u8],
    out: &mut BytesMut,
) {
    encode_header(cmd, stored_entry_len(metadata, payload.len()), out);
    write_stored_entry(metadata, payload, out);
}

/// Writes a payload frame without checksum, as protocol < v6 clients do:
/// `[totalSize][cmdSize][cmd][metadataSize][metadata][payload]`.
///
/// # Panics
/// If the frame would exceed `u32::MAX` bytes.
pub fn encode_payload_command_without_checksum(
    cmd: &pb::BaseCommand,
    metadata: &pb::MessageMetadata,
    payload: &[u8],
    out: &mut BytesMut,
) {
    let md_len = metadata.encoded_len();
    encode_header(cmd, 4 + md_len + payload.len(), out);
    out.put_u32(len_u32(md_len));
    encode_with_len(metadata, md_len, out);
    out.extend_from_slice(payload);
}

fn encode_header(cmd: &pb::BaseCommand, trailing_len: usize, out: &mut BytesMut) {
    let cmd_len = cmd.encoded_len();
    let total = 4usize
        .checked_add(cmd_len)
        .and_then(|n| n.checked_add(trailing_len))
        .map(len_u32)
        .expect("Pulsar frame exceeds u32::MAX bytes");
    out.reserve(8 + cmd_len);
    out.put_u32(total);
    out.put_u32(len_u32(cmd_len));
    encode_with_len(cmd, cmd_len, out);
}

/// Appends `msg`, whose `encoded_len()` is `len`, to `out`.
fn encode_with_len(msg: &impl Message, len: usize, out: &mut BytesMut) {
    // Encoding through `&mut [u8]` is several times faster than through
    // `BytesMut` (whose per-byte `put_u8` goes through `put_slice`), and
    // `encode_raw` skips prost's second length pass.
    let start = out.len();
    out.resize(start + len, 0);
    let mut dst = &mut out[start..];
    msg.encode_raw(&mut dst);
    debug_assert!(dst.is_empty(), "encoded_len disagrees with encode_raw");
}

fn len_u32(n: usize) -> u32 {
    u32::try_from(n).expect("Pulsar frame section exceeds u32::MAX bytes")
}

pub(crate) fn peek_u16(buf: &[u8], at: usize) -> Option<u16> {
    let b = buf.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}

fn peek_u32(buf: &[u8], at: usize) -> Option<u32> {
    let b = buf.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
