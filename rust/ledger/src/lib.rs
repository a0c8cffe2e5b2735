//! The storage layer of pulsar_rs: Pulsar's *managed ledger* over a local data directory.
//!
//! * [`Storage`] opens a data directory: a shared [`journal`] with group commit (one `fdatasync`
//!   per round for all topics), a [`metastore`] for ledger lists and cursor state, and the
//!   broker-wide entry [`cache`].
//! * [`ManagedLedger`] is one topic's log, split into ledgers that roll over and are trimmed once
//!   consumed.
//! * [`Cursor`] is one subscription's position and acknowledgements, persisted with every hole.

pub mod ack_set;
pub mod cache;
pub use pulsar_rs_clock as clock;
pub mod config;
pub mod cursor_codec;
pub mod error;
pub mod journal;
pub mod managed_ledger;
pub mod metastore;
pub mod offload;
pub mod position;
pub(crate) mod read_ahead_pool;
pub mod seam;
pub(crate) mod shared;
pub mod storage;
pub mod vfs;
pub mod wake_batch;

pub use ack_set::AckSet;
pub use cache::CacheStats;
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{LedgerConfig, StorageConfig};
pub use cursor_codec::CursorSnapshot;
pub use error::{LedgerError, Result};
pub use journal::KnownCrc;
pub use managed_ledger::cursor::Cursor;
pub use managed_ledger::{
    AddCompletion, AddWaiter, Added, Entry, LedgerInfo, LedgerStats, ManagedLedger, OffloadStart,
    OffloadStatus, OffloadSummary,
};
pub use metastore::{FileMetaStore, MetaStore};
pub use offload::{
    LedgerOffloader, OffloadContext, OffloadPolicy, OffloadSource, OffloadedLedger, ReadPriority,
};
pub use position::Position;
pub use storage::Storage;
