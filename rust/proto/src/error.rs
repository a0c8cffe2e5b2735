//! Errors produced while decoding Pulsar frames and stored entries.
//!
//! Every variant describes malformed (or over-sized) input; none is produced
//! by a well-behaved peer. A broker should treat any of them, except where a
//! caller explicitly documents otherwise, as fatal for the connection.

/// A violation of the Pulsar framing rules, or an undecodable protobuf.
#[derive(thiserror::Error, Debug)]
#[non_exhaustive]
pub enum ProtocolError {
    /// The input ends before the structure it announces. [`crate::decode_frame`]
    /// reports this as `Ok(None)`; the variant is for APIs that take a
    /// complete buffer (such as [`crate::decode_exact`]).
    #[error("incomplete input: more bytes are needed")]
    Incomplete,

    /// A buffer expected to hold exactly one frame holds more.
    #[error("{extra} unexpected bytes after the end of the frame")]
    TrailingBytes {
        /// Number of bytes after the frame.
        extra: usize,
    },

    /// `totalSize` is larger than the configured limit.
    #[error("frame of {size} bytes exceeds the maximum frame size of {max} bytes")]
    FrameTooLarge {
        /// The announced `totalSize`.
        size: usize,
        /// The limit in force.
        max: usize,
    },

    /// `totalSize` is too small to hold even the `cmdSize` field.
    #[error("invalid frame size {size}: a frame needs at least 4 bytes for cmdSize")]
    BadFrameSize {
        /// The announced `totalSize`.
        size: u32,
    },

    /// `cmdSize` does not fit inside the frame.
    #[error("command size {cmd_size} does not fit in a frame of {total_size} bytes (max {} for the command)", total_size.saturating_sub(4))]
    BadCommandSize {
        /// The announced `cmdSize`.
        cmd_size: u32,
        /// The announced `totalSize`.
        total_size: u32,
    },

    /// A protobuf message could not be decoded.
    #[error("failed to decode {what}: {source}")]
    Decode {
        /// Which message was being decoded (e.g. `"BaseCommand"`).
        what: &'static str,
        /// The underlying prost error.
        #[source]
        source: prost::DecodeError,
    },

    /// A compressed payload could not be decoded (or encoded) with its codec.
    #[error("{codec} payload: {reason}")]
    Compression {
        /// The codec's protocol name (`"LZ4"`, `"ZLIB"`, `"ZSTD"`, `"SNAPPY"`, `"UNKNOWN"`).
        codec: &'static str,
        /// What went wrong.
        reason: String,
    },

    /// The payload section of a frame (or a stored entry) is cut short.
    #[error("payload section truncated while reading {what}")]
    TruncatedPayload {
        /// The field that could not be read.
        what: &'static str,
    },

    /// `metadataSize` points past the end of the payload section.
    #[error("metadata size {size} exceeds the {available} bytes available")]
    BadMetadataSize {
        /// The announced `metadataSize`.
        size: u32,
        /// Bytes remaining after the `metadataSize` field.
        available: usize,
    },

    /// The broker-entry-metadata size points past the end of the frame.
    #[error("broker entry metadata size {size} exceeds the {available} bytes available")]
    BadBrokerEntryMetadataSize {
        /// The announced size.
        size: u32,
        /// Bytes remaining after the size field.
        available: usize,
    },

    /// A stored entry does not start with the `0x0e01` checksum magic.
    #[error("stored entry starts with {found:#06x} instead of the checksum magic 0x0e01")]
    BadMagic {
        /// The first two bytes found.
        found: u16,
    },

    /// The CRC32C carried by a stored entry does not match its content.
    #[error("checksum mismatch: entry carries {expected:#010x}, content hashes to {actual:#010x}")]
    ChecksumMismatch {
        /// The checksum carried in the data.
        expected: u32,
        /// The checksum computed over the data.
        actual: u32,
    },

    /// `BaseCommand.type` names a command whose field is absent.
    #[error("BaseCommand of type {ty} does not carry its {ty} command")]
    MissingCommand {
        /// The protocol name of the type (e.g. `"SEND"`).
        ty: &'static str,
    },

    /// `BaseCommand.type` holds a value this crate does not know.
    #[error("unknown command type {0}")]
    UnknownCommandType(i32),

    /// A `required` field of the command is absent (protobuf would refuse to parse it; prost
    /// silently fills in a default).
    #[error("command {ty} lacks its required field {field}")]
    MissingRequiredField {
        /// The protocol name of the type.
        ty: &'static str,
        /// The field number, as in `PulsarApi.proto`.
        field: u32,
    },

    /// A payload section follows a command that never carries one.
    #[error("command {ty} must not carry a payload")]
    UnexpectedPayload {
        /// The protocol name of the type.
        ty: &'static str,
    },
}

impl ProtocolError {
    pub(crate) fn decode(what: &'static str, source: prost::DecodeError) -> Self {
        Self::Decode { what, source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_descriptive() {
        let e = ProtocolError::FrameTooLarge { size: 10, max: 5 };
        assert_eq!(
            e.to_string(),
            "frame of 10 bytes exceeds the maximum frame size of 5 bytes"
        );
        let e = ProtocolError::ChecksumMismatch {
            expected: 1,
            actual: 0xdead_beef,
        };
        assert_eq!(
            e.to_string(),
            "checksum mismatch: entry carries 0x00000001, content hashes to 0xdeadbeef"
        );
        let e = ProtocolError::BadCommandSize {
            cmd_size: 9,
            total_size: 8,
        };
        assert!(e.to_string().contains("max 4"));
        let e = ProtocolError::MissingCommand { ty: "SEND" };
        assert_eq!(
            e.to_string(),
            "BaseCommand of type SEND does not carry its SEND command"
        );
    }
}
