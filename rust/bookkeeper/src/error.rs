//! The crate's one error type: bookie return codes (v2 numbering), digest and metadata failures,
//! ZooKeeper failures, and the client-side states (fenced, closed) a ledger handle can reach.

use std::io;

/// Everything that can go wrong talking to bookies and the metadata store.
#[derive(Debug, thiserror::Error)]
pub enum BkError {
    /// A bookie answered with a non-zero v2 return code that has no dedicated variant.
    #[error("bookie {bookie} answered rc={rc} ({name})", name = rc_name(*rc))]
    Bookie { bookie: String, rc: i32 },
    /// EFENCED (104): the ledger was fenced by a recovery open; this writer may add no more.
    #[error("ledger {ledger_id} is fenced")]
    Fenced { ledger_id: i64 },
    /// ENOLEDGER (1): the bookie has never seen the ledger.
    #[error("no such ledger {ledger_id} on the bookie")]
    NoSuchLedger { ledger_id: i64 },
    /// ENOENTRY (2): the bookie does not hold the entry.
    #[error("no such entry {ledger_id}:{entry_id}")]
    NoSuchEntry { ledger_id: i64, entry_id: i64 },
    /// EUA (102): the master key did not match the ledger's.
    #[error("unauthorized access to ledger {ledger_id} (wrong password)")]
    Unauthorized { ledger_id: i64 },
    /// The connection to a bookie failed or was closed with requests outstanding.
    #[error("bookie {bookie} unreachable: {source}")]
    BookieIo { bookie: String, source: io::Error },
    /// A bookie id that is not registered (not available) and is no `host:port` either.
    #[error("bookie {bookie} is not available (not registered)")]
    BookieNotAvailable { bookie: String },
    /// A request got no answer in time.
    #[error("timeout waiting for bookie {bookie}")]
    Timeout { bookie: String },
    /// A frame from a bookie did not parse.
    #[error("malformed frame from bookie: {0}")]
    Protocol(String),
    /// The CRC32C digest of a read entry did not match its contents.
    #[error("digest mismatch for entry {ledger_id}:{entry_id}")]
    DigestMismatch { ledger_id: i64, entry_id: i64 },
    /// Ledger metadata could not be parsed or is not a format we handle.
    #[error("bad ledger metadata: {0}")]
    Metadata(String),
    /// A compare-and-set on ledger metadata lost against another writer.
    #[error("ledger metadata of {ledger_id} changed under us (version conflict)")]
    MetadataVersionConflict { ledger_id: i64 },
    /// The ledger does not exist in the metadata store.
    #[error("ledger {ledger_id} does not exist")]
    NoSuchLedgerMetadata { ledger_id: i64 },
    /// Not enough writable bookies to form (or repair) an ensemble.
    #[error("not enough bookies: need {needed}, have {available}")]
    NotEnoughBookies { needed: usize, available: usize },
    /// Fewer bookies than the ack quorum answered.
    #[error("entry {entry_id} could not reach its ack quorum: {reason}")]
    QuorumNotReached { entry_id: i64, reason: String },
    /// The ledger handle is closed and accepts no more adds.
    #[error("ledger {ledger_id} is closed")]
    LedgerClosed { ledger_id: i64 },
    /// The ledger handle failed (an add or an ensemble change failed for good); no more adds.
    #[error("ledger {ledger_id} failed: {reason}")]
    LedgerFailed { ledger_id: i64, reason: String },
    /// Arguments that BookKeeper itself would reject (E < Qw < Qa, entry ranges, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The ZooKeeper client failed.
    #[error("zookeeper: {0}")]
    ZooKeeper(#[from] zookeeper_client::Error),
}

/// Result alias for the crate.
pub type Result<T> = std::result::Result<T, BkError>;

/// BookKeeper's v2 return codes (`BookieProtocol.java`).
pub mod rc {
    pub const EOK: i32 = 0;
    pub const ENOLEDGER: i32 = 1;
    pub const ENOENTRY: i32 = 2;
    pub const EBADREQ: i32 = 100;
    pub const EIO: i32 = 101;
    pub const EUA: i32 = 102;
    pub const EBADVERSION: i32 = 103;
    pub const EFENCED: i32 = 104;
    pub const EREADONLY: i32 = 105;
    pub const ETOOMANYREQUESTS: i32 = 106;
    pub const EUNKNOWNLEDGERSTATE: i32 = 107;
}

/// BookKeeper's name for a v2 return code.
pub fn rc_name(code: i32) -> &'static str {
    match code {
        rc::EOK => "EOK",
        rc::ENOLEDGER => "ENOLEDGER",
        rc::ENOENTRY => "ENOENTRY",
        rc::EBADREQ => "EBADREQ",
        rc::EIO => "EIO",
        rc::EUA => "EUA",
        rc::EBADVERSION => "EBADVERSION",
        rc::EFENCED => "EFENCED",
        rc::EREADONLY => "EREADONLY",
        rc::ETOOMANYREQUESTS => "ETOOMANYREQUESTS",
        rc::EUNKNOWNLEDGERSTATE => "EUNKNOWNLEDGERSTATE",
        _ => "unknown",
    }
}

impl BkError {
    /// Maps a bookie's non-zero return code to the error a caller can act on.
    pub fn from_rc(bookie: &str, code: i32, ledger_id: i64, entry_id: i64) -> BkError {
        match code {
            rc::EFENCED => BkError::Fenced { ledger_id },
            rc::ENOLEDGER => BkError::NoSuchLedger { ledger_id },
            rc::ENOENTRY => BkError::NoSuchEntry {
                ledger_id,
                entry_id,
            },
            rc::EUA => BkError::Unauthorized { ledger_id },
            _ => BkError::Bookie {
                bookie: bookie.to_string(),
                rc: code,
            },
        }
    }

    /// Whether a bookie's answer says "I do not have it" (ENOLEDGER / ENOENTRY), which recovery
    /// counts as a valid, empty answer.
    pub fn is_absent(&self) -> bool {
        matches!(
            self,
            BkError::NoSuchLedger { .. } | BkError::NoSuchEntry { .. }
        )
    }

    /// Whether a bookie's failed *add* is answered by replacing it in the ensemble: every error
    /// but the ledger being fenced or the key refused (and this client's own errors), as
    /// BookKeeper's `PendingAddOp.writeComplete` does (a bookie out of memory answers EBADREQ).
    pub fn replaces_bookie_on_add(&self) -> bool {
        match self {
            BkError::Fenced { .. } | BkError::Unauthorized { .. } => false,
            BkError::Bookie { rc, .. } => !matches!(*rc, rc::EFENCED | rc::EUA),
            BkError::BookieIo { .. }
            | BkError::Timeout { .. }
            | BkError::BookieNotAvailable { .. }
            | BkError::Protocol(_)
            | BkError::NoSuchLedger { .. }
            | BkError::NoSuchEntry { .. } => true,
            _ => false,
        }
    }

    /// Whether the failure is the bookie's (unreachable, timed out, read-only, I/O error), so that
    /// replacing it in the ensemble can help.
    pub fn is_bookie_failure(&self) -> bool {
        match self {
            BkError::BookieIo { .. }
            | BkError::Timeout { .. }
            | BkError::BookieNotAvailable { .. } => true,
            BkError::Bookie { rc, .. } => {
                matches!(*rc, rc::EIO | rc::EREADONLY | rc::ETOOMANYREQUESTS)
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_replace_a_bookie_on_every_error_but_fenced_and_unauthorized() {
        let answered = |code| BkError::from_rc("127.0.0.1:3181", code, 1, 0);
        assert!(answered(rc::EBADREQ).replaces_bookie_on_add());
        assert!(answered(rc::EIO).replaces_bookie_on_add());
        assert!(answered(rc::EREADONLY).replaces_bookie_on_add());
        assert!(!answered(rc::EFENCED).replaces_bookie_on_add());
        assert!(!answered(rc::EUA).replaces_bookie_on_add());
        assert!(!BkError::LedgerClosed { ledger_id: 1 }.replaces_bookie_on_add());
    }
}
