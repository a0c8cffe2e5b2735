//! [`BkLedgerStorage`]: the seam's ledgers on BookKeeper bookies, through `pulsar_rs_bookkeeper`.
//! A ledger is created as Pulsar creates one (E/Qw/Qa from the settings, CRC32C, the managed
//! ledger's password, and the custom metadata `application=pulsar`, `component=managed-ledger`,
//! `pulsar/managed-ledger={name}`); a recovery open is BookKeeper's `openLedger`, which fences the
//! ledger on its bookies so the previous writer's adds fail with `EFENCED`.

use std::sync::Arc;

use bytes::Bytes;
use pulsar_rs_bookkeeper::{BookKeeper, DigestType, LedgerConfig, LedgerReader, LedgerWriter};
use pulsar_rs_ledger::seam::{BoxFut, LedgerStorage, Quorums, ReadLedger, WriteLedger};
use pulsar_rs_ledger::Result;

use crate::errors::from_bk;
use crate::settings::BkSettings;

/// Ledgers on bookies.
pub struct BkLedgerStorage {
    /// The BookKeeper client (cloneable, shared by every ledger handle).
    bk: BookKeeper,
    /// Ensemble, quorums and password of new ledgers; immutable.
    settings: BkSettings,
}

impl BkLedgerStorage {
    /// Connects to the BookKeeper cluster named by `settings`.
    ///
    /// # Errors
    /// The metadata store cannot be reached or the settings are invalid.
    pub async fn connect(settings: &BkSettings) -> Result<BkLedgerStorage> {
        settings.validate()?;
        let bk = BookKeeper::connect(&settings.bookkeeper_uri()?, settings.client_timeout)
            .await
            .map_err(from_bk)?;
        Ok(BkLedgerStorage {
            bk,
            settings: settings.clone(),
        })
    }

    /// The BookKeeper client.
    #[must_use]
    pub fn client(&self) -> &BookKeeper {
        &self.bk
    }
}

/// A ledger open for writing on bookies.
struct BkWriter {
    /// The BookKeeper client's handle (cloneable; shared with its request tasks).
    writer: LedgerWriter,
}

/// A ledger open for reading on bookies.
struct BkReader {
    /// The BookKeeper client's handle (immutable once opened).
    reader: LedgerReader,
}

impl LedgerStorage for BkLedgerStorage {
    fn create_ledger(
        &self,
        ml_name: &str,
        quorums: Option<Quorums>,
    ) -> BoxFut<'_, Result<Arc<dyn WriteLedger>>> {
        let q = quorums.unwrap_or(Quorums {
            ensemble: self.settings.ensemble_size,
            write: self.settings.write_quorum,
            ack: self.settings.ack_quorum,
        });
        let cfg = LedgerConfig {
            ensemble_size: q.ensemble,
            write_quorum: q.write,
            ack_quorum: q.ack,
            password: self.settings.password.clone(),
            custom_metadata: vec![
                ("application".into(), b"pulsar".to_vec()),
                ("component".into(), b"managed-ledger".to_vec()),
                ("pulsar/managed-ledger".into(), ml_name.as_bytes().to_vec()),
            ],
            digest_type: DigestType::Crc32c,
        };
        Box::pin(async move {
            let writer = self.bk.create_ledger(&cfg).await.map_err(from_bk)?;
            Ok(Arc::new(BkWriter { writer }) as Arc<dyn WriteLedger>)
        })
    }

    fn create_compacted_ledger(
        &self,
        topic: &str,
        compacted_to: Vec<u8>,
    ) -> BoxFut<'_, Result<Arc<dyn WriteLedger>>> {
        let cfg = LedgerConfig {
            ensemble_size: self.settings.ensemble_size,
            write_quorum: self.settings.write_quorum,
            ack_quorum: self.settings.ack_quorum,
            // Pulsar's `Compactor.COMPACTED_TOPIC_LEDGER_PASSWORD` and `_DIGEST_TYPE`.
            password: Vec::new(),
            digest_type: DigestType::Crc32,
            custom_metadata: vec![
                ("application".into(), b"pulsar".to_vec()),
                ("component".into(), b"compacted-ledger".to_vec()),
                ("compactedTopic".into(), topic.as_bytes().to_vec()),
                ("compactedTo".into(), compacted_to),
            ],
        };
        Box::pin(async move {
            let writer = self.bk.create_ledger(&cfg).await.map_err(from_bk)?;
            Ok(Arc::new(BkWriter { writer }) as Arc<dyn WriteLedger>)
        })
    }

    fn ledger_metadata(&self, ledger_id: i64) -> BoxFut<'_, Result<Option<String>>> {
        Box::pin(async move {
            let m = self.bk.ledger_metadata(ledger_id).await.map_err(from_bk)?;
            Ok(Some(m.to_safe_string()))
        })
    }

    fn open_ledger(
        &self,
        ledger_id: i64,
        recover: bool,
    ) -> BoxFut<'_, Result<Arc<dyn ReadLedger>>> {
        Box::pin(async move {
            let password = &self.settings.password;
            let reader = if recover {
                self.bk.open_ledger(ledger_id, password).await
            } else {
                self.bk.open_ledger_no_recovery(ledger_id, password).await
            }
            .map_err(from_bk)?;
            Ok(Arc::new(BkReader { reader }) as Arc<dyn ReadLedger>)
        })
    }

    fn delete_ledger(&self, ledger_id: i64) -> BoxFut<'_, Result<()>> {
        Box::pin(async move { self.bk.delete_ledger(ledger_id).await.map_err(from_bk) })
    }
}

impl WriteLedger for BkWriter {
    fn id(&self) -> i64 {
        self.writer.id()
    }

    fn append(&self, data: Bytes) -> BoxFut<'static, Result<i64>> {
        // The client frames the entry with its digest header (one copy, as BookKeeper's own
        // client composes it); the send is queued before this returns, so entry ids follow the
        // order of the calls.
        let added = self.writer.append(&data);
        Box::pin(async move { added.await.map_err(from_bk) })
    }

    fn last_add_confirmed(&self) -> i64 {
        self.writer.last_add_confirmed()
    }

    fn length(&self) -> u64 {
        // The client records the length in the ledger's metadata when it closes it.
        u64::try_from(self.writer.metadata().length).unwrap_or(0)
    }

    fn close(&self) -> BoxFut<'_, Result<()>> {
        Box::pin(async move { self.writer.close().await.map_err(from_bk) })
    }
}

impl ReadLedger for BkReader {
    fn id(&self) -> i64 {
        self.reader.id()
    }

    fn last_entry_id(&self) -> Option<i64> {
        self.reader.last_entry_id()
    }

    fn length(&self) -> u64 {
        u64::try_from(self.reader.metadata().length).unwrap_or(0)
    }

    fn read(&self, first: i64, last: i64) -> BoxFut<'_, Result<Vec<Bytes>>> {
        Box::pin(async move {
            let entries = self
                .reader
                .read_entries(first, last)
                .await
                .map_err(from_bk)?;
            Ok(entries.into_iter().map(|e| e.payload).collect())
        })
    }

    fn read_last_add_confirmed(&self) -> BoxFut<'_, Result<i64>> {
        Box::pin(async move { self.reader.read_last_add_confirmed().await.map_err(from_bk) })
    }
}
