//! The admin objects Pulsar standalone creates by itself (cluster `standalone`, tenant
//! `public`, namespace `public/default`, ...), remembered as written so that a user's own
//! creation of them succeeds, as it does against Pulsar.
//!
//! Pulsar's `PulsarStandalone.start()` creates them only after `PulsarService.start()` has
//! returned, that is after the web service already answers, and only when they are missing.
//! Every official client's test set-up (and many users' scripts) therefore runs
//! `clusters create standalone`, `tenants create public -r ...` and
//! `namespaces create public/default` right after the port opens, under `set -e`, and gets
//! 204: their record is the one that stays. We write the defaults before serving (no race), and
//! give the same outcome deterministically: a create (PUT) of a default that still holds
//! exactly what the start wrote replaces it and answers 204. Once anything changed it (an
//! update, a grant, a policy) or a user created it, it is an ordinary record and a create
//! answers 409 as in Pulsar.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use pulsar_rs_broker::{metadata_keys, BrokerError};
use pulsar_rs_ledger::metastore::MetaStore;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Which kind of admin object a default is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A cluster's `ClusterData`.
    Cluster,
    /// A tenant's `TenantInfo`.
    Tenant,
    /// A namespace's policies.
    Namespace,
}

#[derive(Default, Serialize, Deserialize)]
struct Record {
    #[serde(default)]
    clusters: BTreeMap<String, Value>,
    #[serde(default)]
    tenants: BTreeMap<String, Value>,
    #[serde(default)]
    namespaces: BTreeMap<String, Value>,
}

impl Record {
    fn of(&mut self, kind: Kind) -> &mut BTreeMap<String, Value> {
        match kind {
            Kind::Cluster => &mut self.clusters,
            Kind::Tenant => &mut self.tenants,
            Kind::Namespace => &mut self.namespaces,
        }
    }
}

/// The defaults the standalone start wrote, each with the JSON it wrote.
pub struct StandaloneDefaults {
    /// Where the record persists.
    meta: Arc<dyn MetaStore>,
    /// The record; written by the start ([`Self::remember`]) and by a create that replaced a
    /// default ([`Self::forget`]). The lock is held for the map change and its synchronous
    /// store write only, never across `.await`.
    record: Mutex<Record>,
}

impl StandaloneDefaults {
    /// Loads the record (empty when none).
    ///
    /// # Errors
    /// Metadata I/O or a corrupt record.
    pub fn open(meta: Arc<dyn MetaStore>) -> Result<Self, BrokerError> {
        let record = match meta.get(metadata_keys::STANDALONE_DEFAULTS)? {
            Some(raw) => serde_json::from_slice(&raw).map_err(|e| {
                BrokerError::Ledger(pulsar_rs_ledger::LedgerError::CorruptMetadata {
                    key: metadata_keys::STANDALONE_DEFAULTS.to_owned(),
                    reason: e.to_string(),
                })
            })?,
            None => Record::default(),
        };
        Ok(StandaloneDefaults {
            meta,
            record: Mutex::new(record),
        })
    }

    fn store(&self, r: &Record) -> Result<(), BrokerError> {
        let raw = serde_json::to_vec(r).unwrap_or_default();
        self.meta.put(metadata_keys::STANDALONE_DEFAULTS, &raw)?;
        Ok(())
    }

    /// Notes that the start wrote `value` as `name`.
    ///
    /// # Errors
    /// Metadata I/O.
    pub fn remember(&self, kind: Kind, name: &str, value: Value) -> Result<(), BrokerError> {
        // Lock: the map and its store write change together.
        let mut r = self.record.lock();
        r.of(kind).insert(name.to_owned(), value);
        self.store(&r)
    }

    /// Whether `name` is a default that still holds exactly what the start wrote, so that a
    /// user's create may replace it.
    #[must_use]
    pub fn untouched(&self, kind: Kind, name: &str, current: &Value) -> bool {
        // Lock: a short read of the map.
        self.record.lock().of(kind).get(name) == Some(current)
    }

    /// Drops `name` from the record: a user's create replaced it.
    ///
    /// # Errors
    /// Metadata I/O.
    pub fn forget(&self, kind: Kind, name: &str) -> Result<(), BrokerError> {
        // Lock: the map and its store write change together.
        let mut r = self.record.lock();
        if r.of(kind).remove(name).is_some() {
            self.store(&r)?;
        }
        Ok(())
    }
}
