//! The local [`VersionedStore`]: seam records kept in the data directory's [`MetaStore`] (one
//! checksummed, fsynced file per record), each prefixed by its version. One process owns a data
//! directory (its `LOCK`), so a compare-and-set only has to be atomic within this process.
//!
//! Records live under the key prefix [`SEAM_RECORDS_PREFIX`], one key per path. The storage reads
//! the managed-ledger records there at open ([`seam_ledger_ids`]) so the journal keeps the ledgers
//! they name.

use std::sync::Arc;

use parking_lot::Mutex;
use prost::Message;

use super::formats::ManagedLedgerInfo;
use super::{BoxFut, Version, Versioned, VersionedStore};
pub use crate::metastore::SEAM_RECORDS_PREFIX;
use crate::metastore::{child_key, key_name, MetaStore};
use crate::{LedgerError, Result};

/// Seam records in a [`MetaStore`].
pub struct LocalVersionedStore {
    /// The data directory's metadata store; shared.
    meta: Arc<dyn MetaStore>,
    /// Makes each compare-and-set (read the version, write the record) atomic. Held across the
    /// record's fsync on purpose: only writers of seam records wait for it, on Tokio's blocking
    /// pool, never an appender and never across an `.await`.
    cas: Arc<Mutex<()>>,
}

impl LocalVersionedStore {
    /// Seam records in `meta`.
    #[must_use]
    pub fn new(meta: Arc<dyn MetaStore>) -> Arc<LocalVersionedStore> {
        Arc::new(LocalVersionedStore {
            meta,
            cas: Arc::new(Mutex::new(())),
        })
    }

    /// Runs `f` on the blocking pool with the store and the compare-and-set lock.
    fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn MetaStore, &Mutex<()>) -> Result<T> + Send + 'static,
    ) -> BoxFut<'_, Result<T>> {
        let meta = Arc::clone(&self.meta);
        let cas = Arc::clone(&self.cas);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || f(meta.as_ref(), &cas))
                .await
                .map_err(|e| LedgerError::Backend {
                    context: format!("metadata task: {e}"),
                })?
        })
    }
}

fn record_key(path: &str) -> String {
    child_key(SEAM_RECORDS_PREFIX, path)
}

fn split(key: &str, raw: &[u8]) -> Result<Versioned> {
    let corrupt = || LedgerError::CorruptMetadata {
        key: key.to_owned(),
        reason: "seam record shorter than its version".into(),
    };
    let head: [u8; 8] = raw
        .get(..8)
        .ok_or_else(corrupt)?
        .try_into()
        .map_err(|_| corrupt())?;
    Ok((raw[8..].to_vec(), i64::from_be_bytes(head)))
}

fn read(meta: &dyn MetaStore, key: &str) -> Result<Option<Versioned>> {
    meta.get(key)?.map(|raw| split(key, &raw)).transpose()
}

impl VersionedStore for LocalVersionedStore {
    fn get(&self, path: &str) -> BoxFut<'_, Result<Option<Versioned>>> {
        let key = record_key(path);
        self.blocking(move |meta, _| read(meta, &key))
    }

    fn put(
        &self,
        path: &str,
        value: Vec<u8>,
        expected: Option<Version>,
    ) -> BoxFut<'_, Result<Version>> {
        let key = record_key(path);
        let path = path.to_owned();
        self.blocking(move |meta, cas| {
            // Lock: the compare-and-set, read to write (see the field).
            let _one = cas.lock();
            let now = read(meta, &key)?.map(|(_, v)| v);
            if now != expected {
                return Err(LedgerError::BadVersion { key: path });
            }
            let next = expected.map_or(0, |v| v + 1);
            let mut raw = Vec::with_capacity(8 + value.len());
            raw.extend_from_slice(&next.to_be_bytes());
            raw.extend_from_slice(&value);
            meta.put(&key, &raw)?;
            Ok(next)
        })
    }

    fn delete(&self, path: &str, expected: Option<Version>) -> BoxFut<'_, Result<()>> {
        let key = record_key(path);
        let path = path.to_owned();
        self.blocking(move |meta, cas| {
            // Lock: the compare-and-set, read to write (see the field).
            let _one = cas.lock();
            match (read(meta, &key)?, expected) {
                (None, _) => Ok(()),
                (Some((_, v)), Some(e)) if v != e => Err(LedgerError::BadVersion { key: path }),
                _ => meta.delete(&key),
            }
        })
    }

    fn children(&self, path: &str) -> BoxFut<'_, Result<Vec<String>>> {
        let parent = format!("{}/", path.trim_end_matches('/'));
        self.blocking(move |meta, _| {
            Ok(meta
                .list(SEAM_RECORDS_PREFIX)?
                .iter()
                .map(|k| key_name(k))
                .filter_map(|p| {
                    p.strip_prefix(&parent)
                        .filter(|rest| !rest.is_empty() && !rest.contains('/'))
                        .map(str::to_owned)
                })
                .collect())
        })
    }
}

/// Ledger ids named by the seam's managed-ledger records in `meta` (cursor records, whose first
/// field is a number where a ledger list has a message, do not parse as one and are skipped),
/// and the keys of records that could not be read.
pub(crate) fn seam_ledger_ids(meta: &dyn MetaStore) -> Result<(Vec<i64>, Vec<String>)> {
    let mut ids = Vec::new();
    let mut unreadable = Vec::new();
    for key in meta.list(SEAM_RECORDS_PREFIX)? {
        if !key_name(&key).starts_with("/managed-ledgers/") {
            continue;
        }
        match meta
            .get(&key)
            .and_then(|r| r.map(|raw| split(&key, &raw)).transpose())
        {
            Ok(Some((raw, _))) => {
                if let Ok(info) = ManagedLedgerInfo::decode(&raw[..]) {
                    ids.extend(info.ledger_info.iter().map(|l| l.ledger_id));
                }
            }
            Ok(None) => {}
            Err(LedgerError::CorruptMetadata { .. }) => unreadable.push(key),
            Err(e) => return Err(e),
        }
    }
    Ok((ids, unreadable))
}
