//! Automatic bundle splitting in a cluster (Pulsar's `loadBalancerAutoBundleSplitEnabled`, the
//! modular load manager's `checkNamespaceBundleSplit`): every
//! `loadBalancerSplitIntervalMinutes`, a bundle this broker owns whose topics, sessions
//! (producers and consumers), message rate (in and out) or bandwidth (in and out) pass
//! `loadBalancerNamespaceBundleMax{Topics,Sessions,MsgRate,BandwidthMbytes}` is split with
//! `defaultNamespaceBundleSplitAlgorithm`, while its namespace has fewer than
//! `loadBalancerNamespaceMaximumBundles` bundles, at most
//! `loadBalancerMaxNumberOfBundlesToSplitPerCycle` a round; with
//! `loadBalancerAutoUnloadSplitBundlesEnabled` the halves are then unloaded, for the leader to
//! place them on the least-loaded brokers.
//!
//! Pulsar's leader decides from every broker's load report and asks the owner to split; here
//! each owner decides for its own bundles from the same figures, and splits as the admin
//! `split-bundle` does ([`pulsar_rs_cluster::ClusterMember::split_bundle`]).

use std::sync::Arc;
use std::time::Duration;

use pulsar_rs_broker::BrokerConfig;
use pulsar_rs_cluster::documents::NamespaceBundleStats;
use pulsar_rs_cluster::split::SplitAlgorithm;
use pulsar_rs_cluster::Bundle;
use tokio::sync::watch;

use super::load::bundle_loads;
use crate::context::ServerContext;

/// Whether a bundle's load passes one of the configured limits (0: that limit is off).
#[must_use]
pub fn over_limit(load: &NamespaceBundleStats, c: &BrokerConfig) -> bool {
    let over_u = |v: u64, max: u64| max > 0 && v > max;
    let over_f = |v: f64, max: f64| max > 0.0 && v > max;
    over_u(load.topics, c.load_balancer_namespace_bundle_max_topics)
        || over_u(
            load.producer_count + load.consumer_count,
            c.load_balancer_namespace_bundle_max_sessions,
        )
        || over_f(
            load.msg_rate(),
            c.load_balancer_namespace_bundle_max_msg_rate,
        )
        || over_f(
            load.throughput() / (1024.0 * 1024.0),
            c.load_balancer_namespace_bundle_max_bandwidth_mbytes,
        )
}

/// One round: splits the owned bundles over a limit; returns how many were split.
pub async fn check_once(ctx: &Arc<ServerContext>) -> usize {
    let Some(member) = ctx.cluster.get() else {
        return 0;
    };
    let c = &ctx.service.config;
    let algorithm =
        match SplitAlgorithm::parse(&c.default_namespace_bundle_split_algorithm, Vec::new()) {
            Ok(a) => a,
            Err(why) => {
                tracing::warn!(%why, "defaultNamespaceBundleSplitAlgorithm: no automatic splits");
                return 0;
            }
        };
    let owned: Vec<Bundle> = member
        .owned_bundles()
        .iter()
        .filter_map(|n| Bundle::parse(n).ok())
        .collect();
    let loads = bundle_loads(ctx, &owned);
    let mut split = 0usize;
    for bundle in &owned {
        if split >= c.load_balancer_max_number_of_bundles_to_split_per_cycle as usize {
            break;
        }
        let Some(load) = loads
            .get(&bundle.name())
            .filter(|l| over_limit(&l.stats, c))
        else {
            continue;
        };
        let count = match member.boundaries(&bundle.namespace).await {
            Ok(b) => b.len().saturating_sub(1),
            Err(e) => {
                tracing::warn!(bundle = %bundle.name(), error = %e, "reading a namespace's bundles");
                continue;
            }
        };
        if count >= c.load_balancer_namespace_maximum_bundles as usize {
            continue;
        }
        let points = algorithm.split_points(bundle, &load.hashes);
        if points.is_empty() {
            continue;
        }
        tracing::info!(bundle = %bundle.name(), ?load, "splitting a bundle over the load balancer's limits");
        let children = match member.split_bundle(bundle, &points).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(bundle = %bundle.name(), error = %e, "an automatic split");
                continue;
            }
        };
        split += 1;
        // Relaxed: a count read by metrics only.
        ctx.load_balancer
            .bundles_split_count
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if c.load_balancer_auto_unload_split_bundles_enabled {
            for child in &children {
                if let Err(e) = member.release(child).await {
                    tracing::warn!(bundle = %child.name(), error = %e, "unloading a split bundle");
                }
            }
        }
    }
    split
}

/// Checks every `loadBalancerSplitIntervalMinutes` until shutdown (a broker in a cluster, with
/// `loadBalancerAutoBundleSplitEnabled`).
pub async fn split_loop(ctx: Arc<ServerContext>, mut shutdown: watch::Receiver<bool>) {
    let c = &ctx.service.config;
    if !c.load_balancer_auto_bundle_split_enabled || ctx.cluster.get().is_none() {
        return;
    }
    let every = Duration::from_secs(c.load_balancer_split_interval_minutes.max(1) * 60);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        check_once(&ctx).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_is_over_the_limit_past_any_of_pulsars_four() {
        let c = BrokerConfig {
            load_balancer_namespace_bundle_max_topics: 2,
            load_balancer_namespace_bundle_max_sessions: 3,
            load_balancer_namespace_bundle_max_msg_rate: 100.0,
            load_balancer_namespace_bundle_max_bandwidth_mbytes: 1.0,
            ..BrokerConfig::default()
        };
        let at = |topics, sessions, msg_rate, bytes_rate| NamespaceBundleStats {
            topics,
            producer_count: sessions,
            msg_rate_in: msg_rate,
            msg_throughput_out: bytes_rate,
            ..NamespaceBundleStats::default()
        };
        assert!(
            !over_limit(&at(2, 3, 100.0, 1024.0 * 1024.0), &c),
            "at the limits"
        );
        assert!(over_limit(&at(3, 0, 0.0, 0.0), &c));
        assert!(over_limit(&at(0, 4, 0.0, 0.0), &c));
        assert!(over_limit(&at(0, 0, 100.5, 0.0), &c));
        assert!(over_limit(&at(0, 0, 0.0, 1.1 * 1024.0 * 1024.0), &c));
        let off = BrokerConfig {
            load_balancer_namespace_bundle_max_topics: 0,
            load_balancer_namespace_bundle_max_sessions: 0,
            load_balancer_namespace_bundle_max_msg_rate: 0.0,
            load_balancer_namespace_bundle_max_bandwidth_mbytes: 0.0,
            ..BrokerConfig::default()
        };
        assert!(
            !over_limit(&at(1_000_000, 1_000_000, 1e9, 1e12), &off),
            "0 turns each off"
        );
    }
}
