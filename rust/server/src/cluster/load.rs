//! What this broker carries, as the cluster's load balancer reads it: each owned bundle's
//! messages and bytes per second, producers, consumers and topics (Pulsar's
//! `NamespaceBundleStats`), and the broker's own CPU and bandwidth for its load report
//! ([`pulsar_rs_cluster::BrokerLoad`]). Both the load report and the automatic bundle split read
//! the bundles' figures from here.
//!
//! CPU is this process's own (its CPU time over elapsed time, out of 100 % per core), where
//! Pulsar reads the host's or its container's: the same figure when a broker has its machine or
//! container, and the right one when several brokers share a machine. Bandwidth is the broker's
//! own bytes in and out, out of `loadBalancerOverrideBrokerNicSpeedGbps` (unset: not counted, as
//! Pulsar does for a NIC whose speed it cannot read). Memory is not counted (Pulsar 4.0 no
//! longer weighs it).

use std::collections::{BTreeMap, HashMap};

use pulsar_rs_cluster::bundles::topic_hash;
use pulsar_rs_cluster::documents::{NamespaceBundleStats, ResourceUsage};
use pulsar_rs_cluster::{BrokerLoad, Bundle};

use super::balancer::CpuSampler;
use crate::context::ServerContext;

/// What one bundle's topics carry here.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct BundleLoad {
    /// Pulsar's figures for it.
    pub stats: NamespaceBundleStats,
    /// The topics' name hashes (where a split cuts).
    pub hashes: Vec<u32>,
}

/// The load of each bundle in `owned` from the topics loaded here, by bundle name.
pub fn bundle_loads(ctx: &ServerContext, owned: &[Bundle]) -> HashMap<String, BundleLoad> {
    let mut out: HashMap<String, BundleLoad> = HashMap::new();
    let mut add = |name: &str, f: &dyn Fn(&mut NamespaceBundleStats)| {
        let Some(b) = owned.iter().find(|b| b.contains_topic(name)) else {
            return;
        };
        let l = out.entry(b.name()).or_default();
        l.stats.topics += 1;
        f(&mut l.stats);
        l.hashes.push(topic_hash(name));
    };
    for t in ctx.service.loaded_topics() {
        let (msgs_in, bytes_in) = t.msg_in.rates();
        let producers = t.producers().len() as u64;
        let (mut msgs_out, mut bytes_out, mut consumers) = (0.0, 0.0, 0u64);
        for s in t.subscriptions() {
            consumers += s.consumers().len() as u64;
            let (m, b) = s.out.rates();
            msgs_out += m;
            bytes_out += b;
        }
        add(&t.name.to_string(), &|s| {
            s.msg_rate_in += msgs_in;
            s.msg_throughput_in += bytes_in;
            s.msg_rate_out += msgs_out;
            s.msg_throughput_out += bytes_out;
            s.producer_count += producers;
            s.consumer_count += consumers;
        });
    }
    for t in ctx.service.non_persistent_topics() {
        add(&t.name.to_string(), &|_| {});
    }
    out
}

/// This broker's load now, for its report: `owned` bundles' figures, its CPU and bandwidth.
pub fn broker_load(ctx: &ServerContext, owned: &[Bundle], cpu: &CpuSampler) -> BrokerLoad {
    let bundles: BTreeMap<String, NamespaceBundleStats> = bundle_loads(ctx, owned)
        .into_iter()
        .map(|(b, l)| (b, l.stats))
        .collect();
    // KiB/s; the NIC's speed in Gbit/s as KiB/s.
    let limit = ctx
        .service
        .config
        .load_balancer_override_broker_nic_speed_gbps
        .map_or(0.0, |g| g * 1e9 / 8.0 / 1024.0);
    let kib = |f: fn(&NamespaceBundleStats) -> f64| bundles.values().map(f).sum::<f64>() / 1024.0;
    BrokerLoad {
        cpu: cpu.usage(),
        memory: ResourceUsage::default(),
        bandwidth_in: ResourceUsage {
            usage: kib(|s| s.msg_throughput_in),
            limit,
        },
        bandwidth_out: ResourceUsage {
            usage: kib(|s| s.msg_throughput_out),
            limit,
        },
        bundles,
    }
}
