//! The schema registry: every topic's schema versions (a partitioned topic's partitions share
//! their base topic's), stored in the metadata store, with Pulsar's rules for adding a version
//! (`putSchemaIfAbsent`), checking a consumer's schema (`checkConsumerCompatibility`) and
//! deleting (a "deleted" marker version: later versions start a fresh history, as Pulsar's
//! `deleteSchema`).
//!
//! [`avro`] parses Avro definitions and resolves reader against writer, [`compat`] applies the
//! strategies (named in [`crate::config::schema_strategy`], as they are a broker setting too),
//! [`info`] is one stored version.

pub mod avro;
pub mod compat;
pub mod info;

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use pulsar_rs_clock::Clock;
use pulsar_rs_ledger::{LedgerError, MetaStore};

use self::info::SchemaInfo;
use crate::config::schema_strategy::Strategy;
use crate::error::BrokerError;
use crate::metadata_keys;

/// A topic's schema versions; a version number is its index.
pub struct SchemaRegistry {
    /// Where versions persist.
    meta: Arc<dyn MetaStore>,
    /// The broker's clock, for each version's timestamp.
    clock: Arc<dyn Clock>,
    /// Base topic name → every version, oldest first (deleted markers included). Short lock:
    /// never held across storage I/O.
    cache: Mutex<HashMap<String, Vec<SchemaInfo>>>,
    /// Base topic name → the lock that serializes that topic's changes (read, check, persist,
    /// publish), so two producers cannot both add a version from the same history. A topic's
    /// lock is held across its metadata write (the next version depends on the durable one);
    /// other topics' registrations and every reader go on meanwhile. The map's own lock is short.
    updates: Mutex<HashMap<String, Arc<Mutex<()>>>>,
}

/// Why a consumer's schema was refused.
fn incompatible(why: impl Into<String>) -> BrokerError {
    BrokerError::IncompatibleSchema(why.into())
}

/// The versions after the latest deletion, with their version numbers.
fn active(all: &[SchemaInfo]) -> Vec<(u64, SchemaInfo)> {
    let start = all.iter().rposition(|s| s.deleted).map_or(0, |i| i + 1);
    all.iter()
        .enumerate()
        .skip(start)
        .map(|(i, s)| (i as u64, s.clone()))
        .collect()
}

impl SchemaRegistry {
    /// A registry over a metadata store.
    #[must_use]
    pub fn new(meta: Arc<dyn MetaStore>, clock: Arc<dyn Clock>) -> Self {
        SchemaRegistry {
            meta,
            clock,
            cache: Mutex::new(HashMap::new()),
            updates: Mutex::new(HashMap::new()),
        }
    }

    /// Every version of a topic's schema (deleted markers included), oldest first.
    ///
    /// # Errors
    /// Metadata I/O, or a corrupt record ([`LedgerError::CorruptMetadata`]).
    pub fn versions(&self, base: &str) -> Result<Vec<SchemaInfo>, LedgerError> {
        if let Some(v) = self.cache.lock().get(base) {
            return Ok(v.clone());
        }
        let key = metadata_keys::schema(base);
        let all: Vec<SchemaInfo> = match self.meta.get(&key)? {
            Some(raw) => {
                serde_json::from_slice(&raw).map_err(|e| LedgerError::CorruptMetadata {
                    key: key.clone(),
                    reason: e.to_string(),
                })?
            }
            None => Vec::new(),
        };
        self.cache.lock().insert(base.to_owned(), all.clone());
        Ok(all)
    }

    /// The versions in force (after the latest deletion), with their numbers.
    ///
    /// # Errors
    /// Metadata I/O or a corrupt record.
    pub fn active(&self, base: &str) -> Result<Vec<(u64, SchemaInfo)>, BrokerError> {
        Ok(active(&self.versions(base)?))
    }

    /// The latest version in force, if any.
    ///
    /// # Errors
    /// Metadata I/O or a corrupt record.
    pub fn latest(&self, base: &str) -> Result<Option<(u64, SchemaInfo)>, BrokerError> {
        Ok(self.active(base)?.pop())
    }

    /// The version of an identical schema in force, if any.
    ///
    /// # Errors
    /// Metadata I/O or a corrupt record.
    pub fn find(&self, base: &str, schema: &SchemaInfo) -> Result<Option<u64>, BrokerError> {
        Ok(self
            .active(base)?
            .into_iter()
            .find(|(_, s)| compat::same_schema(s, schema))
            .map(|(v, _)| v))
    }

    /// The lock serializing changes of `base`'s schema (created on first use).
    fn topic_lock(&self, base: &str) -> Arc<Mutex<()>> {
        // Short lock: a map lookup.
        Arc::clone(self.updates.lock().entry(base.to_owned()).or_default())
    }

    fn store(&self, base: &str, all: Vec<SchemaInfo>) -> Result<(), BrokerError> {
        let raw = serde_json::to_vec(&all).unwrap_or_default();
        self.meta.put(&metadata_keys::schema(base), &raw)?;
        // Short lock: published once durable.
        self.cache.lock().insert(base.to_owned(), all);
        Ok(())
    }

    /// Pulsar's `addSchema`: the version of an identical schema in force, else (when
    /// `auto_update`) a new version once `strategy` accepts it.
    ///
    /// # Errors
    /// [`BrokerError::IncompatibleSchema`] with Pulsar's message; storage failures.
    pub fn put_if_absent(
        &self,
        base: &str,
        mut schema: SchemaInfo,
        strategy: Strategy,
        auto_update: bool,
    ) -> Result<u64, BrokerError> {
        // The common case (a schema already in force) answers from the cache, without waiting
        // for another topic's registration to reach the disk.
        if let Some(v) = self.find(base, &schema)? {
            return Ok(v);
        }
        // This topic's lock, held across the check and the write: its versions are decided one
        // at a time; other topics do not wait (registrations run on the blocking pool).
        let lock = self.topic_lock(base);
        let _update = lock.lock();
        let mut all = self.versions(base)?;
        let current = active(&all);
        if let Some((v, _)) = current
            .iter()
            .find(|(_, s)| compat::same_schema(s, &schema))
        {
            return Ok(*v);
        }
        if !auto_update {
            return Err(incompatible(
                "Schema not found and schema auto updating is disabled.",
            ));
        }
        let in_force: Vec<SchemaInfo> = current.into_iter().map(|(_, s)| s).collect();
        compat::for_producer(&in_force, &schema, strategy).map_err(incompatible)?;
        schema.deleted = false;
        schema.timestamp = self.clock.now_ms_i64();
        all.push(schema);
        let version = (all.len() - 1) as u64;
        self.store(base, all)?;
        Ok(version)
    }

    /// Pulsar's `checkConsumerCompatibility`.
    ///
    /// # Errors
    /// [`BrokerError::IncompatibleSchema`]; `Ok(false)` when the topic has no schema in force.
    pub fn check_consumer(
        &self,
        base: &str,
        schema: &SchemaInfo,
        strategy: Strategy,
    ) -> Result<bool, BrokerError> {
        let in_force: Vec<SchemaInfo> = self.active(base)?.into_iter().map(|(_, s)| s).collect();
        match compat::for_consumer(&in_force, schema, strategy) {
            Ok(()) => Ok(true),
            Err(None) => Ok(false),
            Err(Some(why)) => Err(incompatible(why)),
        }
    }

    /// Pulsar's `checkCompatible` for the admin `compatibility` endpoint.
    ///
    /// # Errors
    /// [`BrokerError::IncompatibleSchema`]; storage failures.
    pub fn check(
        &self,
        base: &str,
        schema: &SchemaInfo,
        strategy: Strategy,
    ) -> Result<(), BrokerError> {
        let in_force: Vec<SchemaInfo> = self.active(base)?.into_iter().map(|(_, s)| s).collect();
        let r = if strategy.is_transitive() {
            compat::check_with_all(&in_force, schema, strategy)
        } else {
            match in_force.last() {
                Some(latest) => compat::check_with_latest(latest, schema, strategy),
                None => Ok(()),
            }
        };
        r.map_err(incompatible)
    }

    /// Deletes the schema (Pulsar's `deleteSchema`): a deleted marker becomes the latest version.
    /// Returns its version, or `None` when there was nothing in force.
    ///
    /// # Errors
    /// Storage failures.
    pub fn delete(&self, base: &str) -> Result<Option<u64>, BrokerError> {
        // This topic's lock across the write, as in `add`.
        let lock = self.topic_lock(base);
        let _update = lock.lock();
        let mut all = self.versions(base)?;
        if active(&all).is_empty() {
            return Ok(None);
        }
        all.push(SchemaInfo {
            schema_type: 0,
            name: String::new(),
            data: Vec::new(),
            properties: Vec::new(),
            deleted: true,
            timestamp: self.clock.now_ms_i64(),
        });
        let version = (all.len() - 1) as u64;
        self.store(base, all)?;
        Ok(Some(version))
    }

    /// Forgets every version (the topic was deleted).
    ///
    /// # Errors
    /// Metadata I/O.
    pub fn remove(&self, base: &str) -> Result<(), BrokerError> {
        // This topic's lock across the delete, as in `add`.
        let lock = self.topic_lock(base);
        let _update = lock.lock();
        self.meta.delete(&metadata_keys::schema(base))?;
        self.cache.lock().remove(base);
        // The topic's lock stays in `updates`: a registration waiting on it must keep
        // excluding one that starts after this.
        Ok(())
    }
}

#[cfg(test)]
mod tests;
