//! Tiered storage's seam: what a managed ledger needs from the place its closed ledgers are
//! offloaded to (Pulsar's `LedgerOffloader`), so that the managed ledger does not know the store
//! (S3-compatible object storage, from `pulsar-rs-offload`) and the store does not know the
//! managed ledger.
//!
//! * [`LedgerOffloader`] copies one closed ledger to the tier ([`LedgerOffloader::offload`]),
//!   opens an offloaded ledger for reading ([`LedgerOffloader::open_offloaded`]) and deletes it
//!   ([`LedgerOffloader::delete_offloaded`]). Its calls block the calling thread (never one of
//!   a Tokio runtime's workers: the managed ledger calls them where it would read a disk).
//! * [`OffloadContext`] is what the managed ledger records of each offload in its ledger list
//!   (Pulsar's `OffloadContext` in `ManagedLedgerInfo.LedgerInfo`).
//! * [`OffloadPolicy`] is when a managed ledger offloads and deletes its local copy (Pulsar's
//!   offload policies, resolved topic → namespace → broker by the caller).

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::Result;

/// What is recorded of one ledger's offload (Pulsar's `OffloadContext`): written before any byte
/// is uploaded (`complete` false), completed after the upload, marked once the local or bookie
/// copy is deleted.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct OffloadContext {
    /// The attempt's id: the objects' names carry it (Pulsar's `uidMsb`/`uidLsb`, a UUID).
    #[serde(with = "uuid_text")]
    pub uid: u128,
    /// The upload finished and was recorded: reads may use the offloaded copy.
    pub complete: bool,
    /// The ledger's own copy (journal or bookies) was deleted: reads must use the offloaded one.
    #[serde(default)]
    pub bookkeeper_deleted: bool,
    /// When the offload completed, ms since epoch (0 before); the deletion lag counts from it.
    #[serde(default)]
    pub timestamp_ms: u64,
    /// The driver's name as Pulsar records it (`S3`, `aws-s3`, ...).
    pub driver_name: String,
    /// The driver's metadata as Pulsar records it (`bucket`, `region`, `serviceEndpoint`,
    /// `managedLedgerOffloadDriver`): a read takes the bucket from here.
    #[serde(default)]
    pub driver_metadata: BTreeMap<String, String>,
}

impl OffloadContext {
    /// The uid in the lowercase 8-4-4-4-12 form the objects' names use.
    #[must_use]
    pub fn uuid(&self) -> String {
        uuid_string(self.uid)
    }
}

/// A 128-bit id as a lowercase 8-4-4-4-12 UUID.
#[must_use]
pub fn uuid_string(uid: u128) -> String {
    let h = format!("{uid:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Parses an 8-4-4-4-12 UUID (either case).
#[must_use]
pub fn parse_uuid(s: &str) -> Option<u128> {
    let parts: Vec<&str> = s.split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    if parts.len() != 5 || parts.iter().zip(lens).any(|(p, l)| p.len() != l) {
        return None;
    }
    u128::from_str_radix(&parts.concat(), 16).ok()
}

/// A fresh random (version 4) UUID for an offload attempt.
#[must_use]
pub fn random_uid() -> u128 {
    let mut uid: u128 = rand_u128();
    // Version 4, variant 10, as Java's `UUID.randomUUID`.
    uid = (uid & !(0xF << 76)) | (0x4 << 76);
    uid = (uid & !(0x3 << 62)) | (0x2 << 62);
    uid
}

fn rand_u128() -> u128 {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    // Two independently keyed SipHashes of the time and a counter: unique per attempt, which is
    // all an object name needs (no secrecy is involved).
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    // Relaxed: only uniqueness of the value matters.
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let half = || {
        let mut h = RandomState::new().build_hasher();
        h.write_u128(nanos);
        h.write_u64(n);
        h.write_u32(std::process::id());
        h.finish()
    };
    (u128::from(half()) << 64) | u128::from(half())
}

mod uuid_text {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(uid: &u128, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::uuid_string(*uid))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u128, D::Error> {
        let s = String::deserialize(d)?;
        super::parse_uuid(&s).ok_or_else(|| serde::de::Error::custom(format!("bad uuid {s:?}")))
    }
}

/// A closed ledger being offloaded: its entries as stored, read in order.
pub trait OffloadSource: Send + Sync {
    /// The ledger id.
    fn ledger_id(&self) -> i64;
    /// Its last entry (−1: empty; empty ledgers are never offloaded).
    fn last_entry_id(&self) -> i64;
    /// Bytes of all its entries.
    fn length(&self) -> u64;
    /// When the ledger was created, ms since epoch (the index's `ctime`).
    fn created_ms(&self) -> u64;
    /// Entries `first..=last`, in order, each exactly as stored.
    ///
    /// # Errors
    /// The ledger's storage failed (the offload then fails and is retried later).
    fn read(&self, first: i64, last: i64) -> Result<Vec<Bytes>>;
}

/// An offloaded ledger open for reading.
pub trait OffloadedLedger: Send + Sync {
    /// Its last entry.
    fn last_entry_id(&self) -> i64;
    /// Bytes of all its entries.
    fn length(&self) -> u64;
    /// Entries `first..=last`, in order, each exactly as it was offloaded.
    ///
    /// # Errors
    /// [`crate::LedgerError::Offload`] when the store cannot be reached or the objects are bad
    /// (the read is retried by its caller; nothing is skipped).
    fn read(&self, first: i64, last: i64) -> Result<Vec<Bytes>>;
}

/// A tier closed ledgers are copied to (Pulsar's `LedgerOffloader`). Blocking calls.
pub trait LedgerOffloader: Send + Sync {
    /// The driver's name as recorded in [`OffloadContext::driver_name`].
    fn driver_name(&self) -> &str;
    /// The metadata recorded with each ledger this offloader writes.
    fn driver_metadata(&self) -> BTreeMap<String, String>;
    /// Copies `source` to the tier under `uid`; `extra_metadata` holds Pulsar's
    /// `ManagedLedgerName`. Either every object is written or none is left behind.
    ///
    /// # Errors
    /// [`crate::LedgerError::Offload`].
    fn offload(
        &self,
        source: &dyn OffloadSource,
        uid: u128,
        extra_metadata: &BTreeMap<String, String>,
    ) -> Result<()>;
    /// Opens ledger `ledger_id` offloaded under `uid`, with the driver metadata recorded then.
    ///
    /// # Errors
    /// [`crate::LedgerError::Offload`].
    fn open_offloaded(
        &self,
        ledger_id: i64,
        uid: u128,
        driver_metadata: &BTreeMap<String, String>,
    ) -> Result<Arc<dyn OffloadedLedger>>;
    /// Deletes ledger `ledger_id`'s objects offloaded under `uid` (missing objects are fine).
    ///
    /// # Errors
    /// [`crate::LedgerError::Offload`].
    fn delete_offloaded(
        &self,
        ledger_id: i64,
        uid: u128,
        driver_metadata: &BTreeMap<String, String>,
    ) -> Result<()>;
}

/// Which copy of an offloaded ledger still held locally is read (Pulsar's
/// `managedLedgerDataReadPriority`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadPriority {
    /// The offloaded copy once complete (Pulsar's default, `tiered-storage-first`).
    #[default]
    TieredStorageFirst,
    /// The ledger's own copy while it exists (`bookkeeper-first`).
    BookkeeperFirst,
}

impl ReadPriority {
    /// Pulsar's name of it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ReadPriority::TieredStorageFirst => "tiered-storage-first",
            ReadPriority::BookkeeperFirst => "bookkeeper-first",
        }
    }

    /// Parses Pulsar's name.
    #[must_use]
    pub fn parse(s: &str) -> Option<ReadPriority> {
        match s {
            "tiered-storage-first" => Some(ReadPriority::TieredStorageFirst),
            "bookkeeper-first" => Some(ReadPriority::BookkeeperFirst),
            _ => None,
        }
    }
}

/// When a managed ledger offloads and deletes its local copies: Pulsar's offload policies,
/// already resolved (topic, then namespace, then broker).
#[derive(Clone, Default)]
pub struct OffloadPolicy {
    /// Where ledgers go; `None`: offloading is off (already offloaded ledgers stay readable
    /// only through a later policy's offloader).
    pub offloader: Option<Arc<dyn LedgerOffloader>>,
    /// Offload once the closed ledgers newer than a ledger hold more than this many bytes
    /// (`managedLedgerOffloadThresholdInBytes`; `None` or negative: off; 0: every closed ledger).
    pub threshold_bytes: Option<i64>,
    /// Offload ledgers closed at least this long ago (`managedLedgerOffloadThresholdInSeconds`;
    /// `None` or negative: off).
    pub threshold_seconds: Option<i64>,
    /// Delete the local copy this long after the offload (`managedLedgerOffloadDeletionLagInMillis`;
    /// `None` or negative: never).
    pub deletion_lag_ms: Option<i64>,
    /// Which copy reads prefer.
    pub read_priority: ReadPriority,
}

impl std::fmt::Debug for OffloadPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffloadPolicy")
            .field("driver", &self.offloader.as_ref().map(|o| o.driver_name()))
            .field("threshold_bytes", &self.threshold_bytes)
            .field("threshold_seconds", &self.threshold_seconds)
            .field("deletion_lag_ms", &self.deletion_lag_ms)
            .field("read_priority", &self.read_priority)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_round_trip_in_java_form() {
        let uid = 0x5eb5_e7d8_6ec8_479c_a0e8_81be_dba7_a30f_u128;
        assert_eq!(uuid_string(uid), "5eb5e7d8-6ec8-479c-a0e8-81bedba7a30f");
        assert_eq!(
            parse_uuid("5EB5E7D8-6ec8-479c-a0e8-81bedba7a30f"),
            Some(uid)
        );
        assert_eq!(parse_uuid("5eb5e7d86ec8479ca0e881bedba7a30f"), None);
        let r = random_uid();
        assert_ne!(r, random_uid());
        assert_eq!(uuid_string(r).as_bytes()[14], b'4');
    }
}
