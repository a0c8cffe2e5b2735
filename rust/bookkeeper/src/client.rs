//! The entry point: a BookKeeper client over one ZooKeeper metadata store, creating ledgers,
//! opening them for reading (with or without recovery) and deleting them.

use std::time::Duration;

use crate::bookie_client::BookieClient;
use crate::digest::{master_key, DigestType};
use crate::error::{BkError, Result};
use crate::metadata::{LedgerMetadata, LedgerState};
use crate::placement::new_ensemble;
use crate::reader::LedgerReader;
use crate::recovery::recover;
use crate::writer::LedgerWriter;
use crate::zk_store::ZkStore;

/// A BookKeeper client.
#[derive(Clone)]
pub struct BookKeeper {
    /// Cloneable; shared by every ledger handle.
    store: ZkStore,
    /// Cloneable; one connection per bookie, shared by every ledger handle.
    bookies: BookieClient,
}

/// Ensemble, quorums and password of a new ledger (Pulsar's defaults: 2/2/2, empty password).
#[derive(Debug, Clone)]
pub struct LedgerConfig {
    pub ensemble_size: usize,
    pub write_quorum: usize,
    pub ack_quorum: usize,
    pub password: Vec<u8>,
    pub custom_metadata: Vec<(String, Vec<u8>)>,
    /// CRC32C for Pulsar's managed ledgers (the default), CRC32 for its compacted ledgers.
    pub digest_type: DigestType,
}

impl Default for LedgerConfig {
    fn default() -> Self {
        LedgerConfig {
            ensemble_size: 2,
            write_quorum: 2,
            ack_quorum: 2,
            password: Vec::new(),
            custom_metadata: Vec::new(),
            digest_type: DigestType::Crc32c,
        }
    }
}

impl BookKeeper {
    /// Connects to the metadata store named by a `metadataServiceUri`
    /// (`zk+hierarchical://host:port/ledgers`); `timeout` bounds each bookie request.
    pub async fn connect(metadata_service_uri: &str, timeout: Duration) -> Result<BookKeeper> {
        let (servers, root) = ZkStore::parse_uri(metadata_service_uri)?;
        let store = ZkStore::connect(&servers, &root).await?;
        let bookies = BookieClient::new(Some(store.clone()), timeout);
        Ok(BookKeeper { store, bookies })
    }

    /// The metadata store.
    pub fn store(&self) -> &ZkStore {
        &self.store
    }

    /// A ledger's metadata as the metadata store holds it now.
    pub async fn ledger_metadata(&self, ledger_id: i64) -> Result<LedgerMetadata> {
        Ok(self.store.read_ledger_metadata(ledger_id).await?.0)
    }

    /// Creates a ledger on a new ensemble of writable bookies and opens it for writing.
    pub async fn create_ledger(&self, cfg: &LedgerConfig) -> Result<LedgerWriter> {
        if !(cfg.ensemble_size >= cfg.write_quorum
            && cfg.write_quorum >= cfg.ack_quorum
            && cfg.ack_quorum >= 1)
        {
            return Err(BkError::InvalidArgument(format!(
                "need E >= Qw >= Qa >= 1, got {}/{}/{}",
                cfg.ensemble_size, cfg.write_quorum, cfg.ack_quorum
            )));
        }
        let ensemble = new_ensemble(self.store.writable_bookies().await?, cfg.ensemble_size)?;
        // BookKeeper's client stamps `ctime` with its own wall clock, as this does.
        let ctime = pulsar_rs_clock::Clock::now_ms_i64(&pulsar_rs_clock::SystemClock);
        let m = LedgerMetadata::new_open(
            cfg.write_quorum,
            cfg.ack_quorum,
            ensemble,
            &cfg.password,
            ctime,
            cfg.custom_metadata.clone(),
            cfg.digest_type,
        );
        loop {
            let id = self.store.generate_ledger_id().await?;
            match self.store.create_ledger_metadata(id, &m).await {
                Ok(version) => {
                    return Ok(LedgerWriter::new(
                        id,
                        &cfg.password,
                        m,
                        version,
                        self.bookies.clone(),
                        self.store.clone(),
                    ))
                }
                // An id taken by a ledger created outside the generator: take the next one.
                Err(BkError::InvalidArgument(_)) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Opens a ledger for reading after recovering it: fences it and closes it at the last entry
    /// an ack quorum may hold (`BookKeeper.openLedger`). Its old writer can add no more.
    pub async fn open_ledger(&self, ledger_id: i64, password: &[u8]) -> Result<LedgerReader> {
        let key = master_key(password);
        let metadata = recover(&self.store, &self.bookies, ledger_id, password, key).await?;
        Ok(LedgerReader {
            ledger_id,
            metadata,
            bookies: self.bookies.clone(),
        })
    }

    /// Opens a ledger for reading as it is, without fencing (`openLedgerNoRecovery`).
    pub async fn open_ledger_no_recovery(
        &self,
        ledger_id: i64,
        password: &[u8],
    ) -> Result<LedgerReader> {
        let (metadata, _) = self.store.read_ledger_metadata(ledger_id).await?;
        if metadata.password != password {
            return Err(BkError::Unauthorized { ledger_id });
        }
        metadata.check_digest_supported()?;
        Ok(LedgerReader {
            ledger_id,
            metadata,
            bookies: self.bookies.clone(),
        })
    }

    /// Whether the ledger is closed in its metadata.
    pub async fn is_closed(&self, ledger_id: i64) -> Result<bool> {
        Ok(self.store.read_ledger_metadata(ledger_id).await?.0.state == LedgerState::Closed)
    }

    /// Deletes a ledger's metadata; bookies garbage-collect its entries.
    pub async fn delete_ledger(&self, ledger_id: i64) -> Result<()> {
        self.store.delete_ledger_metadata(ledger_id).await
    }
}
