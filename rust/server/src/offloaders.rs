//! The offloaders topics' resolved offload settings name ([`pulsar_rs_broker::service::offload`]):
//! one [`BlobStoreOffloader`] (and its runtime) per distinct store configuration, made on first
//! use and shared by every topic naming it, as Pulsar keeps one offloader per distinct policy.
//! The broker's own settings are checked at start-up, so a bad driver or a missing bucket stops
//! the broker with the key named instead of failing each offload later.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;
use pulsar_rs_broker::service::offload::OffloaderFactory;
use pulsar_rs_broker::BrokerConfig;
use pulsar_rs_ledger::LedgerOffloader;
use pulsar_rs_offload::{BlobStoreOffloader, OffloadConfig};

use crate::ServerError;

/// The store-relevant part of resolved settings (the keys the offloader reads): the cache key.
fn store_settings(settings: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    settings
        .iter()
        .filter(|(k, _)| OffloadConfig::KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Checks the broker's own offload settings (a bad driver, bucket, endpoint or block size is a
/// start-up error naming it).
///
/// # Errors
/// [`ServerError::BadRequest`] with the offloader's reason.
pub fn check(config: &BrokerConfig) -> Result<(), ServerError> {
    OffloadConfig::from_properties(&config.offload_properties)
        .map(|_| ())
        .map_err(|e| ServerError::BadRequest(format!("invalid offload settings: {e}")))
}

/// The factory the broker's topics get their offloaders from.
#[must_use]
pub fn factory(cluster_name: &str) -> OffloaderFactory {
    // Offloaders made so far, by store settings. Lock: held while one is made (rare, and
    // making one starts no I/O), never across an offload.
    let made: Mutex<HashMap<BTreeMap<String, String>, Arc<dyn LedgerOffloader>>> =
        Mutex::new(HashMap::new());
    let base: BTreeMap<String, String> = [
        ("PulsarClusterName".to_owned(), cluster_name.to_owned()),
        (
            "S3ManagedLedgerOffloaderSoftwareVersion".to_owned(),
            env!("CARGO_PKG_VERSION").to_owned(),
        ),
    ]
    .into();
    Arc::new(move |settings: &BTreeMap<String, String>| {
        let key = store_settings(settings);
        let mut made = made.lock();
        if let Some(o) = made.get(&key) {
            return Ok(Some(Arc::clone(o)));
        }
        let Some(config) = OffloadConfig::from_properties(&key).map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        let offloader: Arc<dyn LedgerOffloader> = Arc::new(
            BlobStoreOffloader::new(config)
                .map_err(|e| e.to_string())?
                .with_base_metadata(base.clone()),
        );
        made.insert(key, Arc::clone(&offloader));
        Ok(Some(offloader))
    })
}
