//! The JSON documents Pulsar keeps at those paths, with Pulsar's field names, so that Apache
//! Pulsar brokers and pulsar_rs brokers read each other's records. Fields this broker does not
//! use are kept where Pulsar's readers need them (a load report's resource usage).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// `NamespaceEphemeralData`: who owns a bundle (the ephemeral ownership lock's value).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceEphemeralData {
    /// `pulsar://host:port` of the owner.
    #[serde(default)]
    pub native_url: Option<String>,
    /// `pulsar+ssl://host:port` of the owner, when it serves TLS.
    #[serde(default)]
    pub native_url_tls: Option<String>,
    /// `http://host:port` of the owner's web service.
    #[serde(default)]
    pub http_url: Option<String>,
    /// `https://host:port` of the owner's web service, when it serves TLS.
    #[serde(default)]
    pub http_url_tls: Option<String>,
    /// Set while the owner unloads the bundle: lookups must not send clients there.
    #[serde(default)]
    pub disabled: bool,
}

/// A broker's URLs, as lookups give them out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BrokerUrls {
    /// `pulsar://host:port`.
    pub service: String,
    /// `pulsar+ssl://host:port`.
    pub service_tls: Option<String>,
    /// `http://host:port`.
    pub web: String,
    /// `https://host:port`.
    pub web_tls: Option<String>,
}

impl From<&BrokerUrls> for NamespaceEphemeralData {
    fn from(u: &BrokerUrls) -> Self {
        NamespaceEphemeralData {
            native_url: Some(u.service.clone()),
            native_url_tls: u.service_tls.clone(),
            http_url: Some(u.web.clone()),
            http_url_tls: u.web_tls.clone(),
            disabled: false,
        }
    }
}

impl From<&NamespaceEphemeralData> for BrokerUrls {
    fn from(d: &NamespaceEphemeralData) -> Self {
        BrokerUrls {
            service: d.native_url.clone().unwrap_or_default(),
            service_tls: d.native_url_tls.clone(),
            web: d.http_url.clone().unwrap_or_default(),
            web_tls: d.http_url_tls.clone(),
        }
    }
}

/// `ResourceUsage` of a load report.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct ResourceUsage {
    /// Used.
    #[serde(default)]
    pub usage: f64,
    /// Available.
    #[serde(default)]
    pub limit: f64,
}

impl ResourceUsage {
    /// Used over available, in percent; 0 when the limit is unknown (Pulsar's `percentUsage`).
    #[must_use]
    pub fn percent_usage(&self) -> f64 {
        if self.limit > 0.0 {
            self.usage / self.limit * 100.0
        } else {
            0.0
        }
    }
}

/// The weights of each resource in a broker's usage (Pulsar's `loadBalancer*ResourceWeight`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResourceWeights {
    /// `loadBalancerCPUResourceWeight`.
    pub cpu: f64,
    /// `loadBalancerDirectMemoryResourceWeight`.
    pub direct_memory: f64,
    /// `loadBalancerBandwidthInResourceWeight`.
    pub bandwidth_in: f64,
    /// `loadBalancerBandwidthOutResourceWeight`.
    pub bandwidth_out: f64,
}

impl Default for ResourceWeights {
    /// Pulsar 4.0's defaults.
    fn default() -> Self {
        ResourceWeights {
            cpu: 1.0,
            direct_memory: 0.0,
            bandwidth_in: 1.0,
            bandwidth_out: 1.0,
        }
    }
}

/// `NamespaceBundleStats`: what one bundle's topics carried on its owner (a load report's
/// `lastStats`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceBundleStats {
    /// Messages per second published.
    #[serde(default)]
    pub msg_rate_in: f64,
    /// Bytes per second published.
    #[serde(default)]
    pub msg_throughput_in: f64,
    /// Messages per second delivered.
    #[serde(default)]
    pub msg_rate_out: f64,
    /// Bytes per second delivered.
    #[serde(default)]
    pub msg_throughput_out: f64,
    /// Consumers.
    #[serde(default)]
    pub consumer_count: u64,
    /// Producers.
    #[serde(default)]
    pub producer_count: u64,
    /// Topics loaded.
    #[serde(default)]
    pub topics: u64,
    /// Bytes held in the entry cache.
    #[serde(default)]
    pub cache_size: u64,
}

impl NamespaceBundleStats {
    /// Messages per second, in and out.
    #[must_use]
    pub fn msg_rate(&self) -> f64 {
        self.msg_rate_in + self.msg_rate_out
    }

    /// Bytes per second, in and out.
    #[must_use]
    pub fn throughput(&self) -> f64 {
        self.msg_throughput_in + self.msg_throughput_out
    }
}

/// `LocalBrokerData`: a broker's registration and load report (the modular load manager's
/// ephemeral `/loadbalance/brokers/{brokerId}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct LocalBrokerData {
    /// `http://host:port`.
    #[serde(default)]
    pub web_service_url: Option<String>,
    /// `https://host:port`.
    #[serde(default)]
    pub web_service_url_tls: Option<String>,
    /// `pulsar://host:port`.
    #[serde(default)]
    pub pulsar_service_url: Option<String>,
    /// `pulsar+ssl://host:port`.
    #[serde(default)]
    pub pulsar_service_url_tls: Option<String>,
    /// Serves persistent topics.
    #[serde(default)]
    pub persistent_topics_enabled: bool,
    /// Serves non-persistent topics.
    #[serde(default)]
    pub non_persistent_topics_enabled: bool,
    /// CPU usage (percent of the cores).
    #[serde(default)]
    pub cpu: ResourceUsage,
    /// Heap memory, MB.
    #[serde(default)]
    pub memory: ResourceUsage,
    /// Direct memory, MB.
    #[serde(default)]
    pub direct_memory: ResourceUsage,
    /// Network in, KB/s.
    #[serde(default)]
    pub bandwidth_in: ResourceUsage,
    /// Network out, KB/s.
    #[serde(default)]
    pub bandwidth_out: ResourceUsage,
    /// Messages per second published to this broker.
    #[serde(default)]
    pub msg_rate_in: f64,
    /// Messages per second delivered by this broker.
    #[serde(default)]
    pub msg_rate_out: f64,
    /// Bytes per second published to this broker.
    #[serde(default)]
    pub msg_throughput_in: f64,
    /// Bytes per second delivered by this broker.
    #[serde(default)]
    pub msg_throughput_out: f64,
    /// Topics loaded.
    #[serde(default)]
    pub num_topics: u64,
    /// Consumers connected.
    #[serde(default)]
    pub num_consumers: u64,
    /// Producers connected.
    #[serde(default)]
    pub num_producers: u64,
    /// Bundle name → what its topics carry here.
    #[serde(default)]
    pub last_stats: BTreeMap<String, NamespaceBundleStats>,
    /// Bundles this broker owns (`tenant/ns/0xLOW_0xHIGH`).
    #[serde(default)]
    pub bundles: BTreeSet<String>,
    /// Their number.
    #[serde(default)]
    pub num_bundles: usize,
    /// When this report was written (ms since the epoch).
    #[serde(default)]
    pub last_update: u64,
    /// When the broker started (ms since the epoch).
    #[serde(default)]
    pub start_timestamp: u64,
    /// Version string.
    #[serde(default)]
    pub broker_version_string: Option<String>,
    /// The load manager that wrote the report.
    #[serde(default)]
    pub load_manager_class_name: Option<String>,
}

impl LocalBrokerData {
    /// A pulsar-rs broker's report at `urls`, owning `bundles`, written now (no load yet).
    #[must_use]
    pub fn of_broker(urls: &BrokerUrls, bundles: BTreeSet<String>) -> LocalBrokerData {
        LocalBrokerData {
            web_service_url: Some(urls.web.clone()),
            web_service_url_tls: urls.web_tls.clone(),
            pulsar_service_url: Some(urls.service.clone()),
            pulsar_service_url_tls: urls.service_tls.clone(),
            persistent_topics_enabled: true,
            non_persistent_topics_enabled: true,
            num_bundles: bundles.len(),
            bundles,
            last_update: now_ms(),
            broker_version_string: Some(format!("pulsar-rs-{}", env!("CARGO_PKG_VERSION"))),
            load_manager_class_name: Some(
                "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl".into(),
            ),
            ..LocalBrokerData::default()
        }
    }

    /// The highest of its resources' usage times their weight, as a fraction (Pulsar's
    /// `getMaxResourceUsageWithWeight`, memory no longer counted as of Pulsar 4.0).
    #[must_use]
    pub fn max_resource_usage_with_weight(&self, w: &ResourceWeights) -> f64 {
        [
            self.cpu.percent_usage() * w.cpu,
            self.direct_memory.percent_usage() * w.direct_memory,
            self.bandwidth_in.percent_usage() * w.bandwidth_in,
            self.bandwidth_out.percent_usage() * w.bandwidth_out,
        ]
        .into_iter()
        .fold(0.0, f64::max)
            / 100.0
    }

    /// The highest of its resources' usage, as a fraction (Pulsar's `getMaxResourceUsage`, the
    /// overload test of a placement: every resource at weight 1).
    #[must_use]
    pub fn max_resource_usage(&self) -> f64 {
        self.max_resource_usage_with_weight(&ResourceWeights {
            cpu: 1.0,
            direct_memory: 1.0,
            bandwidth_in: 1.0,
            bandwidth_out: 1.0,
        })
    }

    /// Messages per second, in and out.
    #[must_use]
    pub fn msg_rate(&self) -> f64 {
        self.msg_rate_in + self.msg_rate_out
    }

    /// Bytes per second, in and out.
    #[must_use]
    pub fn throughput(&self) -> f64 {
        self.msg_throughput_in + self.msg_throughput_out
    }

    /// The URLs a lookup gives out for this broker.
    #[must_use]
    pub fn urls(&self) -> BrokerUrls {
        BrokerUrls {
            service: self.pulsar_service_url.clone().unwrap_or_default(),
            service_tls: self.pulsar_service_url_tls.clone(),
            web: self.web_service_url.clone().unwrap_or_default(),
            web_tls: self.web_service_url_tls.clone(),
        }
    }
}

/// `LeaderBroker`: the leader's record at `/loadbalance/leader`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct LeaderBroker {
    /// The leader's broker id (`host:webServicePort`).
    #[serde(default)]
    pub broker_id: String,
    /// The leader's web service URL.
    #[serde(default)]
    pub service_url: String,
}

/// `PartitionedTopicMetadata`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct PartitionedTopicMetadata {
    /// The partition count (0: not partitioned).
    pub partitions: u32,
    /// Marked while Pulsar deletes the topic (written `false`, as Pulsar writes it).
    #[serde(default)]
    pub deleted: bool,
}

impl PartitionedTopicMetadata {
    /// A partitioned topic of `partitions` partitions.
    #[must_use]
    pub fn new(partitions: u32) -> PartitionedTopicMetadata {
        PartitionedTopicMetadata {
            partitions,
            deleted: false,
        }
    }
}

/// `BundlesData`: a namespace's bundle boundaries, as `"0x%08x"` strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct BundlesData {
    /// Sorted boundaries, first `0x00000000`, last `0xffffffff`.
    #[serde(default)]
    pub boundaries: Vec<String>,
    /// `boundaries.len() - 1`.
    #[serde(default)]
    pub num_bundles: usize,
}

/// The part of `Policies` (and of `LocalPolicies`) a lookup reads: the bundles.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
pub struct BundlesOf {
    /// Absent in a `LocalPolicies` that was never split.
    #[serde(default)]
    pub bundles: Option<BundlesData>,
}

/// Current time in ms since the epoch, for the reports' timestamps (the one clock).
#[must_use]
pub fn now_ms() -> u64 {
    use pulsar_rs_clock::Clock;
    pulsar_rs_clock::SystemClock.now_ms()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ownership_record_reads_pulsars() {
        // As Apache Pulsar 4.0 writes it (NamespaceEphemeralData, Jackson).
        let raw = r#"{"nativeUrl":"pulsar://h:6650","nativeUrlTls":null,"httpUrl":"http://h:8080","httpUrlTls":null,"disabled":false,"advertisedListeners":{}}"#;
        let d: NamespaceEphemeralData = serde_json::from_str(raw).unwrap();
        assert_eq!(d.native_url.as_deref(), Some("pulsar://h:6650"));
        assert_eq!(BrokerUrls::from(&d).web, "http://h:8080");
    }

    #[test]
    fn policies_bundles_read() {
        let raw = r#"{"auth_policies":{},"bundles":{"boundaries":["0x00000000","0x80000000","0xffffffff"],"numBundles":2},"replication_clusters":["test"]}"#;
        let p: BundlesOf = serde_json::from_str(raw).unwrap();
        assert_eq!(p.bundles.unwrap().num_bundles, 2);
    }
}
