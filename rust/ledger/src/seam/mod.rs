//! The ledger-storage seam: what a managed ledger needs from the place its entries and metadata
//! live, so that the local journal and Apache BookKeeper are two implementations of one interface.
//!
//! * [`LedgerStorage`] makes and finds *ledgers* (BookKeeper's unit: an append-only sequence of
//!   entries with one writer): create one for writing ([`WriteLedger`]), open one for reading
//!   with or without recovery ([`ReadLedger`]; recovery fences the old writer and closes the
//!   ledger at its last durable entry), delete one.
//! * [`VersionedStore`] holds small metadata records (the managed ledger's ledger list, each
//!   cursor's state) with a version, written only by compare-and-set, as ZooKeeper does.
//!
//! A managed ledger written only against these two traits (so it does not know which
//! implementation it runs on), `SeamManagedLedger`, is test support: the `pulsar-rs-ledger-testkit`
//! crate. The records are Pulsar's own protobufs ([`formats`]).
//!
//! The broker's [`crate::ManagedLedger`] runs on either: on the local journal directly (its hot
//! path hands the journal a [`crate::journal::Completion`] per run of appends with no allocation
//! per entry), or on a [`SeamBacking`] (BookKeeper and ZooKeeper) with its ledger list and cursors
//! in Pulsar's [`records`]. The local journal also implements the seam in [`journal_ledgers`] and
//! [`local_store`], which the testkit's `SeamManagedLedger` runs on in tests.

pub mod backing;
pub mod formats;
pub mod journal_ledgers;
pub mod local_store;
pub mod paths;
pub mod records;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;

use crate::Result;

pub use backing::SeamBacking;
pub use paths::{cursor_path, ledger_name, managed_ledger_path};

/// A boxed future, the shape every seam operation answers with.
pub type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A version of a metadata record, for compare-and-set (ZooKeeper's `Stat.version`).
pub type Version = i64;

/// A metadata record's bytes and version, as read.
pub type Versioned = (Vec<u8>, Version);

/// A ledger open for writing by its one writer.
pub trait WriteLedger: Send + Sync {
    /// The ledger id.
    fn id(&self) -> i64;
    /// Queues one entry; entry ids follow the order of the calls. The future resolves with the
    /// entry's id once it and every earlier entry are durable (an ack quorum of bookies, or the
    /// journal's fsync). A fenced ledger fails with [`crate::LedgerError::Fenced`].
    fn append(&self, data: Bytes) -> BoxFut<'static, Result<i64>>;
    /// The last entry durable with every earlier one (-1: none).
    fn last_add_confirmed(&self) -> i64;
    /// Bytes of the entries up to the last confirmed one, as the storage records them (final
    /// once [`WriteLedger::close`] returned).
    fn length(&self) -> u64;
    /// Waits for the pending appends, then closes the ledger at its last confirmed entry.
    fn close(&self) -> BoxFut<'_, Result<()>>;
}

/// A ledger open for reading.
pub trait ReadLedger: Send + Sync {
    /// The ledger id.
    fn id(&self) -> i64;
    /// The last entry of a closed ledger (-1: empty); `None` while it is open.
    fn last_entry_id(&self) -> Option<i64>;
    /// Bytes stored in a closed ledger (0 while open).
    fn length(&self) -> u64;
    /// Reads entries `first..=last`, in order; each is the entry as it was appended.
    fn read(&self, first: i64, last: i64) -> BoxFut<'_, Result<Vec<Bytes>>>;
    /// The last add confirmed, as the storage knows it now.
    fn read_last_add_confirmed(&self) -> BoxFut<'_, Result<i64>>;
}

/// How many storage nodes a new ledger is striped over and copied to (BookKeeper's E, Qw, Qa):
/// Pulsar's `persistence` policy of the ledger's topic or namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quorums {
    /// Ensemble size (E).
    pub ensemble: usize,
    /// Write quorum (Qw).
    pub write: usize,
    /// Ack quorum (Qa).
    pub ack: usize,
}

/// The quorums a managed ledger's next ledger is created with, asked each time one is created
/// (so a policy changed meanwhile applies from the next ledger on, as in Pulsar); `None`: the
/// storage's defaults.
pub type QuorumSource = Arc<dyn Fn(&str) -> Option<Quorums> + Send + Sync>;

/// Where ledgers live.
pub trait LedgerStorage: Send + Sync {
    /// Creates a new ledger for the managed ledger `ml_name` (recorded as the ledger's owner where
    /// the storage keeps such metadata) and opens it for writing, with `quorums` where the
    /// storage replicates (else its defaults).
    fn create_ledger(
        &self,
        ml_name: &str,
        quorums: Option<Quorums>,
    ) -> BoxFut<'_, Result<Arc<dyn WriteLedger>>>;
    /// Creates the ledger of a topic's compacted view as Pulsar's compactor creates one (on
    /// BookKeeper: CRC32 digest, empty password, custom metadata `component=compacted-ledger`,
    /// `compactedTopic={topic}`, `compactedTo={compacted_to}`, a serialized `MessageIdData`).
    /// Storages that keep no compacted ledgers (the journal keeps them in files) refuse.
    fn create_compacted_ledger(
        &self,
        topic: &str,
        compacted_to: Vec<u8>,
    ) -> BoxFut<'_, Result<Arc<dyn WriteLedger>>> {
        let _ = compacted_to;
        let context = format!("this storage keeps no compacted ledger (for {topic})");
        Box::pin(async move { Err(crate::LedgerError::Backend { context }) })
    }
    /// Opens a ledger for reading. With `recover`, it is fenced first (its writer can add no
    /// more) and closed at its last durable entry, as a new owner must do.
    fn open_ledger(&self, ledger_id: i64, recover: bool)
        -> BoxFut<'_, Result<Arc<dyn ReadLedger>>>;
    /// A ledger's metadata as the storage describes it (BookKeeper's `toSafeString`: quorums,
    /// state, ensembles), `None` where ledgers have none (the journal).
    fn ledger_metadata(&self, ledger_id: i64) -> BoxFut<'_, Result<Option<String>>> {
        let _ = ledger_id;
        Box::pin(async { Ok(None) })
    }
    /// Deletes a ledger; deleting a missing one is not an error.
    fn delete_ledger(&self, ledger_id: i64) -> BoxFut<'_, Result<()>>;
}

/// Small metadata records with versions, written by compare-and-set. Paths are ZooKeeper-style
/// (`/managed-ledgers/tenant/ns/persistent/topic`).
pub trait VersionedStore: Send + Sync {
    /// Reads a record and its version.
    fn get(&self, path: &str) -> BoxFut<'_, Result<Option<Versioned>>>;
    /// Writes a record if its version is still `expected` (`None`: create it, which fails if it
    /// exists). A lost race is [`crate::LedgerError::BadVersion`]. Returns the new version.
    fn put(
        &self,
        path: &str,
        value: Vec<u8>,
        expected: Option<Version>,
    ) -> BoxFut<'_, Result<Version>>;
    /// Deletes a record (at `expected`, or whatever its version with `None`); a missing record
    /// is not an error.
    fn delete(&self, path: &str, expected: Option<Version>) -> BoxFut<'_, Result<()>>;
    /// Names (last path segments) of the records directly below `path`.
    fn children(&self, path: &str) -> BoxFut<'_, Result<Vec<String>>>;
}
