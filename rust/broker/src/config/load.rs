//! Reading broker settings from Pulsar's Java-properties files (`broker.conf`,
//! `standalone.conf`, unchanged), TOML files and key/value maps (Python keyword arguments).
//!
//! Every source goes through [`BrokerConfig::from_json_map`], so the rules are the same
//! everywhere: a key we implement is type-checked and applied; a key Pulsar has that we do not
//! implement is accepted and recorded in [`BrokerConfig::unimplemented_keys`] (named in one
//! warning at start-up); any other key is an error naming it and the closest known key. In a
//! properties file an empty value means the default and lists are comma-separated.

use std::path::Path;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::BrokerConfig;
use super::{offload_keys, properties, pulsar_keys};
use crate::error::BrokerError;

/// Pulsar's name for a setting we spell differently → our key.
const ALIASES: &[(&str, &str)] = &[
    (
        "isDelayedDeliveryDeliverAtTimeStrict",
        "delayedDeliveryDeliverAtTimeStrict",
    ),
    // PIP-447: the name of the setter in Pulsar's code (`setAllowedTopicPropertiesForMetrics`).
    (
        "allowedTopicPropertiesForMetrics",
        "allowedTopicPropertyKeysForMetrics",
    ),
    (
        "zooKeeperSessionTimeoutMillis",
        "metadataStoreSessionTimeoutMillis",
    ),
    // Pulsar's older spellings, still read by its configuration.
    (
        "loadBalancerBandwithInResourceWeight",
        "loadBalancerBandwidthInResourceWeight",
    ),
    (
        "loadBalancerBandwithOutResourceWeight",
        "loadBalancerBandwidthOutResourceWeight",
    ),
];

/// Pulsar's deprecated `zooKeeperSessionTimeoutMillis` counts only when positive (its
/// `broker.conf` ships `-1`: "use `metadataStoreSessionTimeoutMillis`").
const DEPRECATED_SESSION_TIMEOUT: &str = "zooKeeperSessionTimeoutMillis";
/// Pulsar's deprecated `zookeeperServers`: the metadata store when `metadataStoreUrl` is not
/// set (`ServiceConfiguration.getMetadataStoreUrl`), as `zk:{servers}`.
const DEPRECATED_ZOOKEEPER_SERVERS: &str = "zookeeperServers";
/// Our key for the metadata store.
const METADATA_STORE_URL: &str = "metadataStoreUrl";
/// Pulsar's deprecated `configurationStoreServers`: the configuration store when
/// `configurationMetadataStoreUrl` is not set (`ServiceConfiguration.getConfigurationMetadataStoreUrl`).
const DEPRECATED_CONFIGURATION_STORE_SERVERS: &str = "configurationStoreServers";
/// Our key for the configuration store.
const CONFIGURATION_METADATA_STORE_URL: &str = "configurationMetadataStoreUrl";

/// Whether a deprecated setting's value is Pulsar's "not set".
fn deprecated_unset(key: &str, value: &Value) -> bool {
    key == DEPRECATED_SESSION_TIMEOUT
        && match value {
            Value::Number(n) => n.as_i64().is_some_and(|n| n <= 0),
            Value::String(s) => s.trim().parse::<i64>().is_ok_and(|n| n <= 0),
            _ => false,
        }
}

/// Applies Pulsar's deprecated spellings: an unset one is dropped, `zookeeperServers` becomes
/// the metadata store when none is named, `configurationStoreServers` the configuration store.
fn apply_deprecated(map: &mut Map<String, Value>) {
    map.retain(|k, v| !deprecated_unset(k, v));
    for (deprecated, ours) in [
        (DEPRECATED_ZOOKEEPER_SERVERS, METADATA_STORE_URL),
        (
            DEPRECATED_CONFIGURATION_STORE_SERVERS,
            CONFIGURATION_METADATA_STORE_URL,
        ),
    ] {
        let set = |k: &str| matches!(map.get(k), Some(Value::String(s)) if !s.trim().is_empty());
        if set(ours) || !set(deprecated) {
            continue;
        }
        if let Some(Value::String(servers)) = map.remove(deprecated) {
            let servers = servers.trim();
            let url = if servers.starts_with("etcd:") {
                servers.to_owned()
            } else {
                format!("zk:{}", servers.strip_prefix("zk:").unwrap_or(servers))
            };
            map.insert(ours.into(), Value::String(url));
        }
    }
}

/// How a configuration file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigFormat {
    /// Java properties, as Pulsar's own `broker.conf` / `standalone.conf`.
    Properties,
    /// TOML with the same key names.
    Toml,
}

impl ConfigFormat {
    /// `.toml` → TOML; `.conf` / `.properties` → properties; otherwise TOML if the text parses
    /// as TOML, else properties.
    #[must_use]
    pub fn detect(path: &Path, text: &str) -> ConfigFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some("toml") => ConfigFormat::Toml,
            Some("conf" | "properties") => ConfigFormat::Properties,
            _ if toml::from_str::<toml::Table>(text).is_ok() => ConfigFormat::Toml,
            _ => ConfigFormat::Properties,
        }
    }
}

/// Our settings with their default values, as JSON (the type of each key).
fn defaults() -> &'static Map<String, Value> {
    static D: OnceLock<Map<String, Value>> = OnceLock::new();
    D.get_or_init(|| match serde_json::to_value(BrokerConfig::default()) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    })
}

fn invalid(key: &str, reason: impl Into<String>) -> BrokerError {
    BrokerError::InvalidConfig {
        key: key.to_owned(),
        reason: reason.into(),
    }
}

/// What a key is to us.
enum KeyKind {
    /// One of our settings (the canonical name).
    Ours(&'static str),
    /// A Pulsar setting we do not implement.
    PulsarOnly,
    /// A tiered-storage setting: kept as text for the offloader.
    Offload,
}

fn classify(key: &str) -> Result<KeyKind, BrokerError> {
    if offload_keys::is_offload_key(key) {
        return Ok(KeyKind::Offload);
    }
    let key = ALIASES
        .iter()
        .find(|(pulsar, _)| *pulsar == key)
        .map_or(key, |(_, ours)| ours);
    if let Some((k, _)) = defaults().get_key_value(key) {
        return Ok(KeyKind::Ours(k.as_str()));
    }
    if pulsar_keys::is_pulsar_key(key) {
        return Ok(KeyKind::PulsarOnly);
    }
    let candidates = defaults()
        .keys()
        .map(String::as_str)
        .chain(pulsar_keys::all());
    let hint = pulsar_keys::closest(key, candidates)
        .map(|c| format!("; did you mean {c}?"))
        .unwrap_or_default();
    Err(invalid(
        key,
        format!("unknown setting (Pulsar's broker has no such key){hint}"),
    ))
}

/// Deserializes the defaults with `key` set to `value`: `Err` is serde's reason.
fn probe(key: &str, value: &Value) -> Result<(), String> {
    let mut m = defaults().clone();
    m.insert(key.to_owned(), value.clone());
    serde_json::from_value::<BrokerConfig>(Value::Object(m))
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// A properties value (text) as the JSON value of `key`'s type.
fn typed(key: &str, raw: &str) -> Result<Value, String> {
    let number = || -> Option<Value> {
        raw.parse::<i64>()
            .map(Value::from)
            .or_else(|_| raw.parse::<u64>().map(Value::from))
            .ok()
            .or_else(|| raw.parse::<f64>().ok().map(Value::from))
    };
    let value = match defaults().get(key) {
        Some(Value::Bool(_)) => match raw.to_ascii_lowercase().as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => return Err(format!("expected true or false, got {raw:?}")),
        },
        Some(Value::Number(_)) => {
            number().ok_or_else(|| format!("expected a number, got {raw:?}"))?
        }
        // Optional settings: the first reading their type accepts.
        Some(Value::Null) => {
            let candidates = [number(), Some(Value::String(raw.to_owned()))];
            let mut first_err = None;
            for c in candidates.into_iter().flatten() {
                match probe(key, &c) {
                    Ok(()) => return Ok(c),
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                }
            }
            return Err(first_err.unwrap_or_default());
        }
        // Strings, and lists (given as one comma-separated string).
        _ => Value::String(raw.to_owned()),
    };
    probe(key, &value).map(|()| value)
}

/// The settings of a Java-properties text, typed; Pulsar-only keys keep their text.
///
/// # Errors
/// [`BrokerError::InvalidConfig`] naming the key and line of the first bad entry.
pub fn properties_settings(text: &str) -> Result<Map<String, Value>, BrokerError> {
    let entries = properties::parse(text).map_err(|e| invalid("<config>", e))?;
    let mut map = Map::new();
    for p in entries {
        let at_line = |e: BrokerError| match e {
            BrokerError::InvalidConfig { key, reason } => BrokerError::InvalidConfig {
                key,
                reason: format!("{reason} (line {})", p.line),
            },
            other => other,
        };
        let kind = classify(&p.key).map_err(at_line)?;
        if p.value.is_empty() || deprecated_unset(&p.key, &Value::String(p.value.clone())) {
            continue; // Pulsar: an empty value (or a deprecated key's "not set") leaves the default.
        }
        let value = match kind {
            KeyKind::Ours(k) => typed(k, &p.value).map_err(|r| at_line(invalid(&p.key, r)))?,
            KeyKind::PulsarOnly | KeyKind::Offload => Value::String(p.value.clone()),
        };
        map.insert(p.key, value);
    }
    Ok(map)
}

/// The settings of a TOML text.
///
/// # Errors
/// [`BrokerError::InvalidConfig`] for syntax errors (with their position).
pub fn toml_settings(text: &str) -> Result<Map<String, Value>, BrokerError> {
    match toml::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(invalid("<config>", "expected key = value pairs")),
        Err(e) => Err(invalid(
            "<config>",
            e.to_string().trim_end().replace('\n', " "),
        )),
    }
}

/// The settings of a configuration file, in either format.
///
/// # Errors
/// [`BrokerError::InvalidConfig`] when the file cannot be read or has a bad entry.
pub fn file_settings(path: &Path) -> Result<Map<String, Value>, BrokerError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| invalid("<config>", format!("cannot read {}: {e}", path.display())))?;
    let located = |e: BrokerError| match e {
        BrokerError::InvalidConfig { key, reason } => BrokerError::InvalidConfig {
            key,
            reason: format!("{reason} in {}", path.display()),
        },
        other => other,
    };
    match ConfigFormat::detect(path, &text) {
        ConfigFormat::Properties => properties_settings(&text),
        ConfigFormat::Toml => toml_settings(&text),
    }
    .map_err(located)
}

impl BrokerConfig {
    /// Reads a configuration file (Pulsar's Java properties or TOML, see [`ConfigFormat`]).
    ///
    /// # Errors
    /// [`BrokerError::InvalidConfig`] naming the first bad key.
    pub fn from_file(path: &Path) -> Result<Self, BrokerError> {
        Self::from_json_map(file_settings(path)?)
    }

    /// Parses a TOML document.
    ///
    /// # Errors
    /// [`BrokerError::InvalidConfig`] for syntax errors, unknown keys, wrong types or bad values.
    pub fn from_toml(text: &str) -> Result<Self, BrokerError> {
        Self::from_json_map(toml_settings(text)?)
    }

    /// Parses a Java-properties document (`broker.conf`).
    ///
    /// # Errors
    /// As [`BrokerConfig::from_toml`].
    pub fn from_properties(text: &str) -> Result<Self, BrokerError> {
        Self::from_json_map(properties_settings(text)?)
    }

    /// Builds a config from key/value pairs (Python keyword arguments, parsed files).
    ///
    /// # Errors
    /// [`BrokerError::InvalidConfig`]: a key Pulsar does not have (with the closest known key),
    /// a value of the wrong type, or a bad value.
    pub fn from_json_map(mut map: Map<String, Value>) -> Result<Self, BrokerError> {
        apply_deprecated(&mut map);
        let mut merged = defaults().clone();
        let mut unimplemented = Vec::new();
        let mut offload = std::collections::BTreeMap::new();
        for (k, v) in map {
            match classify(&k)? {
                KeyKind::Ours(key) => {
                    probe(key, &v).map_err(|reason| invalid(&k, reason))?;
                    merged.insert(key.to_owned(), v);
                }
                KeyKind::PulsarOnly => unimplemented.push(k),
                KeyKind::Offload => {
                    let text = match v {
                        Value::String(s) => s,
                        Value::Null => continue,
                        other => other.to_string(),
                    };
                    offload.insert(k, text);
                }
            }
        }
        let mut cfg: BrokerConfig = serde_json::from_value(Value::Object(merged))
            .map_err(|e| invalid("<config>", e.to_string()))?;
        unimplemented.sort();
        cfg.unimplemented_keys = unimplemented;
        cfg.offload_properties = offload;
        cfg.validate()?;
        Ok(cfg)
    }

    /// The one start-up warning naming the Pulsar settings given but not implemented (None
    /// when there are none).
    #[must_use]
    pub fn unimplemented_warning(&self) -> Option<String> {
        (!self.unimplemented_keys.is_empty()).then(|| {
            format!(
                "{} Pulsar setting(s) accepted but not implemented by pulsar-rs (ignored): {}",
                self.unimplemented_keys.len(),
                self.unimplemented_keys.join(", ")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quorums_are_checked_only_on_bookkeeper() {
        let journal = "managedLedgerDefaultEnsembleSize=1\nmanagedLedgerDefaultWriteQuorum=1\n";
        assert!(BrokerConfig::from_properties(journal).is_ok());
        let on_bk = format!("metadataStoreUrl=zk:127.0.0.1:2181\n{journal}");
        let err = BrokerConfig::from_properties(&on_bk)
            .unwrap_err()
            .to_string();
        assert!(err.contains("managedLedgerDefaultWriteQuorum"), "{err}");
        let ok = format!("{on_bk}managedLedgerDefaultAckQuorum=1\n");
        let c = BrokerConfig::from_properties(&ok).unwrap();
        assert_eq!(c.bookkeeper_zookeeper().as_deref(), Some("127.0.0.1:2181"));
        assert_eq!(
            c.cluster_metadata_store().as_deref(),
            Some("zk:127.0.0.1:2181")
        );
        // On etcd, BookKeeper's own metadata must be on a ZooKeeper.
        let err = BrokerConfig::from_properties("metadataStoreUrl=etcd:http://x:2379\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("bookkeeperMetadataServiceUri"), "{err}");
        let c = BrokerConfig::from_properties(
            "metadataStoreUrl=etcd:http://x:2379\n\
             bookkeeperMetadataServiceUri=zk+hierarchical://z:2181/ledgers\n",
        )
        .unwrap();
        assert_eq!(
            c.cluster_metadata_store().as_deref(),
            Some("etcd:http://x:2379")
        );
        assert_eq!(c.bookkeeper_zookeeper(), None);
        assert!(BrokerConfig::from_properties("metadataStoreUrl=oxia://x:6648\n").is_err());
    }

    #[test]
    fn pulsar_conf_unchanged() {
        let text = "# Pulsar\nclusterName=standalone\nbrokerServicePort=6650\nbrokerServicePortTls=\n\
            zookeeperServers=\nbookkeeperClientTimeoutInSeconds=30\nmanagedLedgerCacheSizeMB=1024\n\
            superUserRoles=localhost,superUser,\\\n  admin\nmanagedLedgerMinLedgerRolloverTimeMinutes=10\n\
            subscriptionRedeliveryTrackerEnabled=TRUE\nisDelayedDeliveryDeliverAtTimeStrict=true\n\
            tokenSecretKey=file:///x\nloadBalancerEnabled=false\n";
        let c = BrokerConfig::from_properties(text).unwrap();
        assert_eq!(c.managed_ledger_cache_size_mb, 1024);
        assert_eq!(c.broker_service_port_tls, None);
        assert_eq!(c.super_user_roles, vec!["localhost", "superUser", "admin"]);
        assert!(c.delayed_delivery_deliver_at_time_strict);
        assert_eq!(c.token_secret_key.as_deref(), Some("file:///x"));
        // bookkeeperClientTimeoutInSeconds is a setting of the BookKeeper storage now.
        assert_eq!(c.bookkeeper_client_timeout_in_seconds, 30);
        assert_eq!(c.unimplemented_keys, vec!["loadBalancerEnabled"]);
        let w = c.unimplemented_warning().unwrap();
        assert!(w.contains("loadBalancerEnabled"), "{w}");
    }

    #[test]
    fn deprecated_zookeeper_keys_count_only_when_set() {
        // Pulsar 4.0's broker.conf: both deprecated keys present, unset.
        let c = BrokerConfig::from_properties(
            "zookeeperServers=\nzooKeeperSessionTimeoutMillis=-1\nmetadataStoreSessionTimeoutMillis=7000\n",
        )
        .unwrap();
        assert_eq!(c.metadata_store_session_timeout_millis, 7000);
        assert_eq!(c.bookkeeper_zookeeper(), None);
        let c = BrokerConfig::from_properties(
            "zookeeperServers=10.0.0.1:2181\nzooKeeperSessionTimeoutMillis=9000\n\
             managedLedgerDefaultEnsembleSize=1\nmanagedLedgerDefaultWriteQuorum=1\n\
             managedLedgerDefaultAckQuorum=1\n",
        )
        .unwrap();
        assert_eq!(c.metadata_store_session_timeout_millis, 9000);
        assert_eq!(c.metadata_store_url, "zk:10.0.0.1:2181");
        // metadataStoreUrl wins over the deprecated key, which is then ignored (as in Pulsar).
        let c = BrokerConfig::from_properties(
            "metadataStoreUrl=zk:10.0.0.2:2181\nzookeeperServers=10.0.0.1:2181\n\
             managedLedgerDefaultEnsembleSize=1\nmanagedLedgerDefaultWriteQuorum=1\n\
             managedLedgerDefaultAckQuorum=1\n",
        )
        .unwrap();
        assert_eq!(c.metadata_store_url, "zk:10.0.0.2:2181");
    }

    #[test]
    fn the_configuration_store_is_the_local_one_unless_named() {
        let bk = "managedLedgerDefaultEnsembleSize=1\nmanagedLedgerDefaultWriteQuorum=1\n\
                  managedLedgerDefaultAckQuorum=1\nmetadataStoreUrl=zk:10.0.0.1:2181\n";
        let c =
            BrokerConfig::from_properties(&format!("{bk}configurationStoreServers=\n")).unwrap();
        assert_eq!(c.configuration_metadata_store(), None);
        let same = format!("{bk}configurationMetadataStoreUrl=zk:10.0.0.1:2181\n");
        let c = BrokerConfig::from_properties(&same).unwrap();
        assert_eq!(c.configuration_metadata_store(), None);
        let c = BrokerConfig::from_properties(&format!(
            "{bk}configurationStoreServers=10.0.0.9:2181\n"
        ))
        .unwrap();
        assert_eq!(
            c.configuration_metadata_store().as_deref(),
            Some("zk:10.0.0.9:2181")
        );
        // configurationMetadataStoreUrl wins over the deprecated key.
        let c = BrokerConfig::from_properties(&format!(
            "{bk}configurationStoreServers=10.0.0.9:2181\n\
             configurationMetadataStoreUrl=etcd:http://10.0.0.8:2379\n"
        ))
        .unwrap();
        assert_eq!(
            c.configuration_metadata_store().as_deref(),
            Some("etcd:http://10.0.0.8:2379")
        );
    }

    #[test]
    fn unknown_keys_name_the_closest() {
        let e = BrokerConfig::from_properties("a=1\nbrokerServicePrt=1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("invalid setting a:"), "{e}");
        let e = BrokerConfig::from_properties("brokerServicePrt=1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("brokerServicePrt"), "{e}");
        assert!(e.contains("did you mean brokerServicePort?"), "{e}");
        assert!(e.contains("line 1"), "{e}");
        let e = BrokerConfig::from_toml("managedLedgerCacheSizeMb = 3")
            .unwrap_err()
            .to_string();
        assert!(e.contains("did you mean managedLedgerCacheSizeMB?"), "{e}");
    }

    #[test]
    fn bad_values_are_one_line() {
        for (text, key) in [
            ("maxMessageSize=big", "maxMessageSize"),
            ("journalSyncData=yes", "journalSyncData"),
            ("brokerServicePortTls=70000", "brokerServicePortTls"),
            (
                "\n\ndispatcherMaxReadBatchSize=0",
                "dispatcherMaxReadBatchSize",
            ),
        ] {
            let e = BrokerConfig::from_properties(text).unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let e = BrokerConfig::from_toml("maxMessageSize = [")
            .unwrap_err()
            .to_string();
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn group_commit_keys() {
        let c = BrokerConfig::from_properties(
            "journalMaxGroupWaitMSec=1\njournalBufferedWritesThreshold=65536\n",
        )
        .unwrap();
        let s = c.storage_config();
        assert_eq!(
            s.journal_max_group_wait,
            std::time::Duration::from_millis(1)
        );
        assert_eq!(s.journal_buffered_writes_threshold, 65536);
        let d = BrokerConfig::default().storage_config();
        assert!(d.journal_max_group_wait.is_zero());
        assert_eq!(d.journal_buffered_writes_threshold, 512 * 1024);
        assert_eq!(
            d.journal_prealloc_bytes,
            16 << 20,
            "BookKeeper's journalPreAllocSizeMB"
        );
        assert_eq!(
            d.journal_adaptive_group_wait,
            std::time::Duration::from_millis(1)
        );
        let a = BrokerConfig::from_properties("journalAdaptiveGroupWaitMicros=250\n").unwrap();
        assert_eq!(
            a.storage_config().journal_adaptive_group_wait,
            std::time::Duration::from_micros(250)
        );
        let p = BrokerConfig::from_properties("journalPreAllocSizeMB=0\n").unwrap();
        assert_eq!(p.storage_config().journal_prealloc_bytes, 0);
        for (text, key) in [
            ("journalPreAllocSizeMB=2048", "journalPreAllocSizeMB"),
            ("journalPreAllocSizeMB=-1", "journalPreAllocSizeMB"),
            ("journalMaxGroupWaitMSec=5000", "journalMaxGroupWaitMSec"),
            (
                "journalAdaptiveGroupWaitMicros=2000000",
                "journalAdaptiveGroupWaitMicros",
            ),
            (
                "journalAdaptiveGroupWaitMicros=-1",
                "journalAdaptiveGroupWaitMicros",
            ),
            ("journalMaxGroupWaitMSec=-1", "journalMaxGroupWaitMSec"),
            (
                "journalBufferedWritesThreshold=0",
                "journalBufferedWritesThreshold",
            ),
        ] {
            let e = BrokerConfig::from_properties(text).unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        }
    }

    #[test]
    fn format_detection() {
        let p = Path::new;
        assert_eq!(
            ConfigFormat::detect(p("b.conf"), "a = 1"),
            ConfigFormat::Properties
        );
        assert_eq!(ConfigFormat::detect(p("b.toml"), "a=x"), ConfigFormat::Toml);
        assert_eq!(
            ConfigFormat::detect(p("b"), "a = \"x\""),
            ConfigFormat::Toml
        );
        assert_eq!(
            ConfigFormat::detect(p("b"), "a=x y"),
            ConfigFormat::Properties
        );
    }

    #[test]
    fn backlog_quota_default_limit_gb_as_pulsar() {
        // Pulsar's standalone.conf: the deprecated GB key wins when above 0.
        let c = BrokerConfig::from_properties(
            "backlogQuotaDefaultLimitGB=10\nbacklogQuotaDefaultLimitBytes=5\n",
        )
        .unwrap();
        assert_eq!(c.backlog_quota_default_limit_size(), 10 << 30);
        assert!(
            c.unimplemented_keys.is_empty(),
            "{:?}",
            c.unimplemented_keys
        );
        let c = BrokerConfig::from_properties("backlogQuotaDefaultLimitGB=0.05\n").unwrap();
        assert_eq!(c.backlog_quota_default_limit_size(), 53_687_091);
        let c = BrokerConfig::from_properties("backlogQuotaDefaultLimitBytes=4096\n").unwrap();
        assert_eq!(c.backlog_quota_default_limit_size(), 4096);
        assert_eq!(
            BrokerConfig::default().backlog_quota_default_limit_size(),
            -1
        );
    }
}
