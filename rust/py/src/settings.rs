//! Keyword settings → [`StorageConfig`] / [`LedgerConfig`], by Pulsar's `broker.conf` key names.
//!
//! Each key maps one-to-one onto a field; units follow the key's name (MB, Mbytes, Millis,
//! Minutes). Minutes and sizes accept floats so tests can use small values. An unknown key, a value
//! of the wrong type (a `bool` is not a number here) or out of range raises `InvalidConfigError`
//! naming the key. The ledger crate's own validation runs afterwards and names the key too.

use std::time::Duration;

use pulsar_rs_ledger::{LedgerConfig, StorageConfig};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};

use crate::error::invalid_config;

/// Every key accepted, in documentation order.
pub(crate) const KEYS: &[&str] = &[
    "journalSyncData",
    "journalMaxSizeMB",
    "journalMaxGroupWaitMSec",
    "journalBufferedWritesThreshold",
    "journalAdaptiveGroupWaitMicros",
    "journalPreAllocSizeMB",
    "journalDirectWrites",
    "managedLedgerCacheSizeMB",
    "managedLedgerCacheEvictionWatermark",
    "managedLedgerCacheEvictionTimeThresholdMillis",
    "managedLedgerCacheEvictionIntervalMs",
    "managedLedgerMaxEntriesPerLedger",
    "managedLedgerMaxSizePerLedgerMbytes",
    "managedLedgerMinLedgerRolloverTimeMinutes",
    "managedLedgerMaxLedgerRolloverTimeMinutes",
    "defaultRetentionTimeInMinutes",
    "defaultRetentionSizeInMB",
];

const MIB: f64 = 1024.0 * 1024.0;

/// Both configs, parsed from keyword arguments.
pub(crate) fn parse(
    py: Python<'_>,
    settings: Option<&Bound<'_, PyDict>>,
) -> PyResult<(StorageConfig, LedgerConfig)> {
    let mut sc = StorageConfig::default();
    let mut lc = LedgerConfig::default();
    let Some(settings) = settings else {
        return Ok((sc, lc));
    };
    for (k, v) in settings.iter() {
        let key: String = k
            .cast::<PyString>()
            .map_err(|_| invalid_config(py, &k.to_string(), "setting names must be strings"))?
            .to_str()?
            .to_owned();
        let key = key.as_str();
        match key {
            "journalSyncData" => sc.journal_sync_data = boolean(py, key, &v)?,
            "journalMaxSizeMB" => {
                sc.journal_max_segment_bytes = bytes(py, key, &v, MIB)?;
            }
            "journalMaxGroupWaitMSec" => {
                sc.journal_max_group_wait = duration(py, key, &v, 1e-3)?;
            }
            "journalBufferedWritesThreshold" => {
                sc.journal_buffered_writes_threshold = integer(py, key, &v)?;
            }
            "journalAdaptiveGroupWaitMicros" => {
                sc.journal_adaptive_group_wait = duration(py, key, &v, 1e-6)?;
            }
            "journalPreAllocSizeMB" => {
                sc.journal_prealloc_bytes = bytes(py, key, &v, MIB)?;
            }
            "journalDirectWrites" => sc.journal_direct_writes = boolean(py, key, &v)?,
            "managedLedgerCacheSizeMB" => sc.cache_size_bytes = bytes(py, key, &v, MIB)?,
            "managedLedgerCacheEvictionWatermark" => {
                sc.cache_eviction_watermark = number(py, key, &v)?;
            }
            "managedLedgerCacheEvictionTimeThresholdMillis" => {
                sc.cache_eviction_time_threshold = duration(py, key, &v, 1e-3)?;
            }
            "managedLedgerCacheEvictionIntervalMs" => {
                sc.cache_eviction_interval = duration(py, key, &v, 1e-3)?;
            }
            "managedLedgerMaxEntriesPerLedger" => {
                lc.max_entries_per_ledger = integer(py, key, &v)?;
            }
            "managedLedgerMaxSizePerLedgerMbytes" => {
                lc.max_size_per_ledger_bytes = bytes(py, key, &v, MIB)?;
            }
            "managedLedgerMinLedgerRolloverTimeMinutes" => {
                lc.min_rollover_time = duration(py, key, &v, 60.0)?;
            }
            "managedLedgerMaxLedgerRolloverTimeMinutes" => {
                lc.max_rollover_time = duration(py, key, &v, 60.0)?;
            }
            "defaultRetentionTimeInMinutes" => {
                lc.retention_time_ms = signed(py, key, &v, 60_000.0)?;
            }
            "defaultRetentionSizeInMB" => lc.retention_size_bytes = signed(py, key, &v, MIB)?,
            _ => {
                return Err(invalid_config(
                    py,
                    key,
                    &format!("unknown setting (known: {})", KEYS.join(", ")),
                ))
            }
        }
    }
    Ok((sc, lc))
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map_or_else(|_| "?".into(), |n| n.to_string())
}

fn boolean(py: Python<'_>, key: &str, v: &Bound<'_, PyAny>) -> PyResult<bool> {
    v.cast::<PyBool>()
        .map(|b| b.is_true())
        .map_err(|_| invalid_config(py, key, &format!("expected a bool, got {}", type_name(v))))
}

/// A finite int or float (not a bool).
fn number(py: Python<'_>, key: &str, v: &Bound<'_, PyAny>) -> PyResult<f64> {
    let ok = !v.is_instance_of::<PyBool>()
        && (v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>());
    let x = if ok { v.extract::<f64>().ok() } else { None };
    match x {
        Some(x) if x.is_finite() => Ok(x),
        Some(_) => Err(invalid_config(py, key, "must be finite")),
        None => Err(invalid_config(
            py,
            key,
            &format!("expected a number, got {}", type_name(v)),
        )),
    }
}

fn non_negative(py: Python<'_>, key: &str, v: &Bound<'_, PyAny>) -> PyResult<f64> {
    let x = number(py, key, v)?;
    if x < 0.0 {
        return Err(invalid_config(py, key, &format!("must be >= 0, got {x}")));
    }
    Ok(x)
}

/// A non-negative int (not a bool, not a float).
fn integer(py: Python<'_>, key: &str, v: &Bound<'_, PyAny>) -> PyResult<u64> {
    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
        return Err(invalid_config(
            py,
            key,
            &format!("expected an int, got {}", type_name(v)),
        ));
    }
    v.extract::<u64>()
        .map_err(|_| invalid_config(py, key, &format!("must be an int >= 0, got {v}")))
}

/// A size in `unit` bytes.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn bytes(py: Python<'_>, key: &str, v: &Bound<'_, PyAny>, unit: f64) -> PyResult<u64> {
    let x = non_negative(py, key, v)? * unit;
    if x >= u64::MAX as f64 {
        return Err(invalid_config(py, key, "too large"));
    }
    Ok(x.round() as u64)
}

/// A duration in `unit` seconds.
fn duration(py: Python<'_>, key: &str, v: &Bound<'_, PyAny>, unit: f64) -> PyResult<Duration> {
    let x = non_negative(py, key, v)?;
    Duration::try_from_secs_f64(x * unit).map_err(|_| invalid_config(py, key, "too large"))
}

/// `-1` (no limit) or a non-negative amount, converted to `unit`s.
#[allow(clippy::cast_possible_truncation)]
fn signed(py: Python<'_>, key: &str, v: &Bound<'_, PyAny>, unit: f64) -> PyResult<i64> {
    let x = number(py, key, v)?;
    if x == -1.0 {
        return Ok(-1);
    }
    if x < 0.0 {
        return Err(invalid_config(
            py,
            key,
            &format!("must be -1 (no limit) or >= 0, got {x}"),
        ));
    }
    let scaled = x * unit;
    if scaled >= i64::MAX as f64 {
        return Err(invalid_config(py, key, "too large"));
    }
    Ok(scaled.round() as i64)
}

#[cfg(test)]
mod tests {
    use pulsar_rs_broker::BrokerConfig;
    use serde_json::{json, Map, Value};

    use super::*;

    /// Every key, with a value other than its default, as both the Python keywords and the
    /// broker's settings take it (whole numbers: the broker's MB keys are integers).
    fn sample(retention: i64) -> Map<String, Value> {
        let v = json!({
            "journalSyncData": false,
            "journalMaxSizeMB": 7,
            "journalMaxGroupWaitMSec": 3,
            "journalBufferedWritesThreshold": 4096,
            "journalAdaptiveGroupWaitMicros": 250,
            "journalPreAllocSizeMB": 2,
            "journalDirectWrites": false,
            "managedLedgerCacheSizeMB": 5,
            "managedLedgerCacheEvictionWatermark": 0.75,
            "managedLedgerCacheEvictionTimeThresholdMillis": 300,
            "managedLedgerCacheEvictionIntervalMs": 20,
            "managedLedgerMaxEntriesPerLedger": 123,
            "managedLedgerMaxSizePerLedgerMbytes": 9,
            "managedLedgerMinLedgerRolloverTimeMinutes": 2,
            "managedLedgerMaxLedgerRolloverTimeMinutes": 30,
            "defaultRetentionTimeInMinutes": retention,
            "defaultRetentionSizeInMB": retention,
        });
        let Value::Object(map) = v else {
            unreachable!("a JSON object")
        };
        map
    }

    /// `ManagedLedger(**kw)` and the broker (`BrokerConfig::storage_config`/`ledger_config`)
    /// each turn a key's value into the storage config in their own code (Python's keywords
    /// take fractions of MB and minutes, the broker's settings do not): this ties their units
    /// and defaults, key by key.
    #[test]
    fn keywords_mean_what_the_broker_settings_mean() {
        Python::initialize();
        Python::attach(|py| {
            for retention in [45, -1] {
                let map = sample(retention);
                let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
                let mut all = KEYS.to_vec();
                keys.sort_unstable();
                all.sort_unstable();
                assert_eq!(keys, all, "the sample covers every key");
                let kw = PyDict::new(py);
                for (k, v) in &map {
                    match v {
                        Value::Bool(b) => kw.set_item(k, *b).unwrap(),
                        Value::Number(n) if n.is_i64() => kw.set_item(k, n.as_i64()).unwrap(),
                        Value::Number(n) => kw.set_item(k, n.as_f64()).unwrap(),
                        other => unreachable!("{other}"),
                    }
                }
                let (sc, lc) = parse(py, Some(&kw)).unwrap();
                let broker = BrokerConfig::from_json_map(map).unwrap();
                assert_eq!(sc, broker.storage_config());
                assert_eq!(lc, broker.ledger_config());
            }
            let (sc, lc) = parse(py, None).unwrap();
            let broker = BrokerConfig::default();
            assert_eq!(sc, broker.storage_config());
            assert_eq!(lc, broker.ledger_config());
        });
    }
}
