//! Test support for the managed ledger of pulsar_rs (a dev-dependency only: the shipped library
//! holds no test doubles).
//!
//! * [`SeamManagedLedger`] (with its [`SeamCursor`]): a reference managed ledger written only
//!   against the ledger-storage seam (`pulsar_rs_ledger::seam`), in Pulsar's records, so the
//!   seam's two implementations (the local journal, BookKeeper) are checked by the same managed
//!   ledger, and against a Pulsar broker's records.
//! * [`simfs`]: an in-memory file system that models the page cache, for power-cut tests of the
//!   journal and of the broker above it.
//!
//! Modules: `simfs`; `seam_managed_ledger`, its cursor a room inside it (`seam_cursor`).

pub mod seam_managed_ledger;
pub mod simfs;

pub use seam_managed_ledger::{SeamCursor, SeamLedgerConfig, SeamManagedLedger};
