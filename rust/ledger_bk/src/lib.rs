//! The managed ledger of pulsar_rs on Apache BookKeeper: the ledger-storage seam of
//! `pulsar_rs_ledger::seam` implemented over real bookies and ZooKeeper, in the formats a Pulsar
//! broker uses, so that `SeamManagedLedger` keeps a topic where Pulsar would:
//!
//! * ledgers on bookies ([`BkLedgerStorage`]): E/Qw/Qa from `managedLedgerDefaultEnsembleSize` /
//!   `WriteQuorum` / `AckQuorum`, CRC32C digests, Pulsar's default (empty) password, and Pulsar's
//!   custom metadata on each ledger; a recovery open fences the previous writer;
//! * the ledger list and cursors in ZooKeeper ([`ZkVersionedStore`]) at
//!   `/managed-ledgers/{tenant}/{ns}/persistent/{topic}[/{cursor}]`, each write a compare-and-set
//!   on the znode version.
//!
//! Modules, each importing only those before it: `errors`; `settings`; `zk_store`; `bk_ledgers`.

pub mod bk_ledgers;
pub mod errors;
pub mod settings;
pub mod zk_store;

pub use bk_ledgers::BkLedgerStorage;
pub use settings::BkSettings;
pub use zk_store::ZkVersionedStore;

use std::sync::Arc;

/// Connects to the bookies and the metadata store named by `settings`.
///
/// # Errors
/// The metadata store cannot be reached or a URI does not parse.
pub async fn connect(
    settings: &BkSettings,
) -> pulsar_rs_ledger::Result<(Arc<BkLedgerStorage>, Arc<ZkVersionedStore>)> {
    let ledgers = BkLedgerStorage::connect(settings).await?;
    let store = ZkVersionedStore::connect(&settings.metadata_servers()?).await?;
    Ok((Arc::new(ledgers), Arc::new(store)))
}
