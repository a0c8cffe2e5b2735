//! The managed ledger of pulsar_rs on Apache BookKeeper: the ledger-storage seam of
//! `pulsar_rs_ledger::seam` implemented over real bookies and ZooKeeper, in the formats a Pulsar
//! broker uses, so that a managed ledger on the seam keeps a topic where Pulsar would:
//!
//! * ledgers on bookies ([`BkLedgerStorage`]): E/Qw/Qa from `managedLedgerDefaultEnsembleSize` /
//!   `WriteQuorum` / `AckQuorum`, CRC32C digests, Pulsar's default (empty) password, and Pulsar's
//!   custom metadata on each ledger; a recovery open fences the previous writer;
//! * the ledger list and cursors in the metadata store, ZooKeeper or etcd
//!   ([`MetadataVersionedStore`]), at `/managed-ledgers/{tenant}/{ns}/persistent/{topic}[/{cursor}]`,
//!   each write a compare-and-set on the record's version.
//!
//! [`backing`] puts both under a broker's `Storage` (`pulsar_rs_ledger::Storage::open_on_backing`),
//! so the broker's own managed ledgers live on the bookies.
//!
//! Modules, each importing only those before it: `errors`; `settings`; `metadata_store`;
//! `bk_ledgers`.

pub mod bk_ledgers;
pub mod errors;
pub mod metadata_store;
pub mod settings;

pub use bk_ledgers::BkLedgerStorage;
pub use metadata_store::MetadataVersionedStore;
pub use settings::BkSettings;

use std::sync::Arc;

/// Connects to the bookies and the metadata store named by `settings`.
///
/// # Errors
/// The metadata store cannot be reached or a URI does not parse.
pub async fn connect(
    settings: &BkSettings,
) -> pulsar_rs_ledger::Result<(Arc<BkLedgerStorage>, Arc<MetadataVersionedStore>)> {
    let ledgers = BkLedgerStorage::connect(settings).await?;
    let store = MetadataVersionedStore::connect(&settings.metadata_store()?).await?;
    Ok((Arc::new(ledgers), Arc::new(store)))
}

/// The bookies and the metadata store named by `settings`, with a runtime of their own for the
/// clients, ready to back a broker's storage. Blocks the calling thread while connecting (call it
/// where blocking is allowed: not on an async task).
///
/// # Errors
/// The metadata store cannot be reached, a URI does not parse, or the runtime cannot start.
pub fn backing(
    settings: &BkSettings,
) -> pulsar_rs_ledger::Result<pulsar_rs_ledger::seam::SeamBacking> {
    use pulsar_rs_ledger::seam::{LedgerStorage, SeamBacking, VersionedStore};
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("bookkeeper-client")
        .enable_all()
        .build()
        .map_err(|e| {
            pulsar_rs_ledger::LedgerError::io("starting the BookKeeper client runtime", e)
        })?;
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let s = settings.clone();
    runtime.spawn(async move {
        let _ = tx.send(connect(&s).await);
    });
    let (ledgers, store) = rx
        .recv()
        .map_err(|_| pulsar_rs_ledger::LedgerError::Closed {
            what: "BookKeeper client runtime".into(),
        })??;
    Ok(SeamBacking::new(
        ledgers as Arc<dyn LedgerStorage>,
        store as Arc<dyn VersionedStore>,
        runtime,
        format!("bookkeeper {}", settings.metadata_store_url),
    ))
}
