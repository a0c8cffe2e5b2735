//! The jcloud offloader's object format (Pulsar 4.0.8, version 1), pure and without I/O.
//!
//! * [`block`]: a data block (one multipart part): header, framed entries, padding, and the
//!   block size Pulsar picks (`calculateBlockSize`).
//! * [`index`]: the index object (`OffloadIndexBlockImpl`, magic `0xDE47DE47`).
//! * [`metadata`]: BookKeeper's `LedgerMetadataFormat` carried inside the index.
//! * [`names`]: the objects' keys and user metadata.

pub mod block;
pub mod index;
pub mod metadata;
pub mod names;

/// The format's failures: a malformed object or a ledger the format cannot hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError(pub String);

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FormatError {}

impl From<FormatError> for pulsar_rs_ledger::LedgerError {
    fn from(e: FormatError) -> Self {
        pulsar_rs_ledger::LedgerError::Offload { context: e.0 }
    }
}
