//! Pulsar binary protocol for pulsar_rs: protobuf types, frame codec and
//! command builders. Pure code: no I/O, no async runtime.
//!
//! # Wire format
//!
//! All integers are big-endian; `totalSize` does not count its own 4 bytes.
//!
//! ```text
//! Simple command:
//!   [u32 totalSize][u32 cmdSize][BaseCommand]                 totalSize = 4 + cmdSize
//!
//! Payload command (SEND from clients, MESSAGE from the broker):
//!   [u32 totalSize][u32 cmdSize][BaseCommand]
//!   ([u16 0x0e02][u32 bemSize][BrokerEntryMetadata])          MESSAGE only, optional
//!   [u16 0x0e01][u32 crc32c]                                  optional (protocol >= v6)
//!   [u32 metadataSize][MessageMetadata][payload]
//!                      \______________ crc32c covers metadataSize..end ______________/
//!
//! Stored entry (what the broker persists and dispatches unchanged):
//!   [u16 0x0e01][u32 crc32c][u32 metadataSize][MessageMetadata][payload]
//!
//! Batch payload (possibly compressed as one unit):
//!   repeated [u32 smmSize][SingleMessageMetadata][message bytes]
//! ```
//!
//! * [`pb`]: the generated protobuf types (`proto/PulsarApi.proto`, proto2).
//!   `bytes` fields are [`bytes::Bytes`].
//! * [`frame`]: [`decode_frame`] and the encoders.
//! * [`commands`]: builders for every command the broker sends (and a few
//!   client commands), each filling all `required` fields.

pub mod batch;
pub mod commands;
pub mod compression;
pub mod dispatch_metadata;
pub mod error;
pub mod frame;
pub mod frame_metadata;
pub mod required;

/// Generated protobuf types of package `pulsar.proto`.
#[allow(
    clippy::all,
    clippy::pedantic,
    clippy::nursery,
    missing_docs,
    rustdoc::all
)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/pulsar.proto.rs"));
}

pub use batch::{split_batch, BatchMember};
pub use dispatch_metadata::{parse_dispatch_metadata, DispatchMetadata};
pub use error::ProtocolError;
pub use frame::{
    build_stored_entry, command_type_name, decode_exact, decode_frame, encode_message,
    encode_message_header, encode_message_header_with_broker_entry_metadata,
    encode_payload_command, encode_payload_command_without_checksum, encode_simple,
    parse_stored_entry, parse_stored_metadata, simple_frame_len, stored_checksum, stored_entry_len,
    validate_command, Frame, PayloadFrame, DEFAULT_MAX_FRAME_SIZE, DEFAULT_MAX_MESSAGE_SIZE,
    MAGIC_BROKER_ENTRY_METADATA, MAGIC_CRC32C, MESSAGE_SIZE_FRAME_PADDING, STORED_CHECKSUM_FROM,
    STORED_ENTRY_HEADER_LEN,
};
pub use frame_metadata::{is_non_last_chunk, FrameMetadata};
pub use pb::base_command::Type as CommandType;
pub use pb::{BaseCommand, MessageIdData, MessageMetadata, ServerError};
pub use required::check_required_fields;

/// Highest protocol version this broker speaks; CONNECTED answers
/// `min(client's version, MAX_PROTOCOL_VERSION)`.
pub const MAX_PROTOCOL_VERSION: i32 = 21;
