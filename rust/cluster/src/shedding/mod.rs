//! Load shedding: which bundles the leader unloads so that their load goes to other brokers
//! (Pulsar's modular load manager's `LoadSheddingStrategy`), decided from every broker's load
//! report. Three of Pulsar's strategies, chosen by `loadBalancerLoadSheddingStrategy`:
//!
//! * [`Strategy::Avg`] (`AvgShedder`, Pulsar 5.0's default): pairs of the busiest and the
//!   quietest brokers, shedding after repeated hits ([`avg`]).
//! * [`Strategy::Threshold`] (`ThresholdShedder`, the default of Pulsar 2.10 to 4.x): a broker whose weighted
//!   resource usage (averaged over the rounds, `loadBalancerHistoryResourcePercentage` of the
//!   past) passes the cluster's average by `loadBalancerBrokerThresholdShedderPercentage` sheds
//!   its busiest bundles until the throughput shed brings it 5 % under that line.
//! * [`Strategy::Uniform`] (`UniformLoadShedder`): when the busiest broker carries
//!   `loadBalancerMsgRateDifferenceShedderThreshold` percent more messages per second than the
//!   quietest (or `loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold` times its
//!   bytes), it sheds bundles worth `maxUnloadPercentage` of the difference.
//!
//! A bundle unloaded within `loadBalancerSheddingGracePeriodMinutes` is not chosen again, and a
//! broker with a single bundle keeps it, as in Pulsar.

pub mod avg;

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::documents::{LocalBrokerData, ResourceWeights};

const MB: f64 = 1024.0 * 1024.0;
/// `ThresholdShedder`'s margin: shed until 5 % under the threshold.
const ADDITIONAL_THRESHOLD_PERCENT_MARGIN: f64 = 0.05;

/// Which strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// `org.apache.pulsar.broker.loadbalance.impl.AvgShedder`.
    Avg,
    /// `org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder`.
    Threshold,
    /// `org.apache.pulsar.broker.loadbalance.impl.UniformLoadShedder`.
    Uniform,
}

impl Strategy {
    /// The strategy a `loadBalancerLoadSheddingStrategy` class name (or its simple name) names.
    ///
    /// # Errors
    /// A strategy this broker does not implement, naming the ones it does.
    pub fn parse(class: &str) -> Result<Strategy, String> {
        match class.trim().rsplit('.').next().unwrap_or_default() {
            "AvgShedder" => Ok(Strategy::Avg),
            "ThresholdShedder" => Ok(Strategy::Threshold),
            "UniformLoadShedder" => Ok(Strategy::Uniform),
            other => Err(format!(
                "load shedding strategy {other:?} is not implemented (AvgShedder, \
                 ThresholdShedder, UniformLoadShedder are)"
            )),
        }
    }
}

/// The settings the strategies read (Pulsar's names and defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct SheddingConfig {
    /// `loadBalancerBrokerThresholdShedderPercentage`.
    pub threshold_percentage: f64,
    /// `loadBalancerHistoryResourcePercentage`.
    pub history_resource_percentage: f64,
    /// `loadBalancerBundleUnloadMinThroughputThreshold`, MB/s.
    pub bundle_unload_min_throughput_mbytes: f64,
    /// `loadBalancer*ResourceWeight`.
    pub weights: ResourceWeights,
    /// `loadBalancerMsgRateDifferenceShedderThreshold`, percent.
    pub msg_rate_difference_threshold: f64,
    /// `loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold`.
    pub msg_throughput_multiplier_threshold: f64,
    /// `maxUnloadPercentage`.
    pub max_unload_percentage: f64,
    /// `minUnloadMessage`, messages per second.
    pub min_unload_message: f64,
    /// `minUnloadMessageThroughput`, bytes per second.
    pub min_unload_message_throughput: f64,
    /// `maxUnloadBundleNumPerShedding` (-1: no limit).
    pub max_unload_bundle_num_per_shedding: i64,
    /// `loadBalancerAvgShedderLowThreshold`, score points.
    pub avg_low_threshold: f64,
    /// `loadBalancerAvgShedderHighThreshold`, score points.
    pub avg_high_threshold: f64,
    /// `loadBalancerAvgShedderHitCountLowThreshold`.
    pub avg_hit_count_low_threshold: u32,
    /// `loadBalancerAvgShedderHitCountHighThreshold`.
    pub avg_hit_count_high_threshold: u32,
}

impl Default for SheddingConfig {
    fn default() -> Self {
        SheddingConfig {
            threshold_percentage: 10.0,
            history_resource_percentage: 0.9,
            bundle_unload_min_throughput_mbytes: 10.0,
            weights: ResourceWeights::default(),
            msg_rate_difference_threshold: 50.0,
            msg_throughput_multiplier_threshold: 4.0,
            max_unload_percentage: 0.2,
            min_unload_message: 1000.0,
            min_unload_message_throughput: MB,
            max_unload_bundle_num_per_shedding: -1,
            avg_low_threshold: 15.0,
            avg_high_threshold: 40.0,
            avg_hit_count_low_threshold: 8,
            avg_hit_count_high_threshold: 2,
        }
    }
}

/// The leader's shedding state across rounds: each broker's averaged usage (the
/// `ThresholdShedder`'s history) and `AvgShedder`'s hit counts. Owned by the leader's shedding
/// task.
#[derive(Debug, Default)]
pub struct Shedder {
    /// Broker id → its usage averaged over the rounds, a fraction.
    history: HashMap<String, f64>,
    /// `AvgShedder`'s hit counts and planned destinations.
    avg: avg::AvgShedder,
}

impl Shedder {
    /// The bundles to unload this round, each with the broker that owns it: `brokers` are the
    /// load reports of the brokers registered now, `recently_unloaded` the bundles unloaded
    /// within the grace period.
    pub fn find_bundles_to_unload(
        &mut self,
        strategy: Strategy,
        brokers: &BTreeMap<String, LocalBrokerData>,
        recently_unloaded: &HashSet<String>,
        c: &SheddingConfig,
    ) -> Vec<(String, String)> {
        self.history.retain(|b, _| brokers.contains_key(b));
        match strategy {
            Strategy::Avg => self
                .avg
                .find_bundles_to_unload(brokers, recently_unloaded, c),
            Strategy::Threshold => self.threshold(brokers, recently_unloaded, c),
            Strategy::Uniform => uniform(brokers, recently_unloaded, c),
        }
    }

    /// The broker `AvgShedder` planned `bundle` for in this round, if it shed it.
    #[must_use]
    pub fn planned_destination(&self, bundle: &str) -> Option<&str> {
        self.avg.planned_destination(bundle)
    }

    /// This round's averaged usage of every broker, and their mean.
    fn average_usage(
        &mut self,
        brokers: &BTreeMap<String, LocalBrokerData>,
        c: &SheddingConfig,
    ) -> f64 {
        let mut total = 0.0;
        for (id, data) in brokers {
            let mut now = data.max_resource_usage_with_weight(&c.weights);
            if now > 1.0 {
                // A misconfigured limit: Pulsar skips the signals over 100 %.
                now = now.min(1.0);
                tracing::warn!(broker = %id, "a resource usage over 100 %: check the resource limits and weights");
            }
            let h = self.history.get(id).map_or(now, |old| {
                old * c.history_resource_percentage + (1.0 - c.history_resource_percentage) * now
            });
            self.history.insert(id.clone(), h);
            total += h;
        }
        if brokers.is_empty() {
            0.0
        } else {
            total / brokers.len() as f64
        }
    }

    fn threshold(
        &mut self,
        brokers: &BTreeMap<String, LocalBrokerData>,
        recently_unloaded: &HashSet<String>,
        c: &SheddingConfig,
    ) -> Vec<(String, String)> {
        let threshold = c.threshold_percentage / 100.0;
        let min_throughput = c.bundle_unload_min_throughput_mbytes * MB;
        let avg = self.average_usage(brokers, c);
        let mut out = Vec::new();
        if avg == 0.0 {
            return out;
        }
        for (id, data) in brokers {
            let usage = self.history.get(id).copied().unwrap_or_default();
            if usage < avg + threshold {
                continue;
            }
            let share = usage - avg - threshold + ADDITIONAL_THRESHOLD_PERCENT_MARGIN;
            let to_offload = data.throughput() * share;
            if to_offload < min_throughput {
                tracing::info!(broker = %id, usage, avg, to_offload_mbytes = to_offload / MB, "overloaded, but what it would shed is under loadBalancerBundleUnloadMinThroughputThreshold");
                continue;
            }
            if data.bundles.len() <= 1 {
                tracing::warn!(broker = %id, usage, avg, "overloaded by its only bundle (or none): nothing to shed");
                continue;
            }
            tracing::info!(broker = %id, usage, avg, threshold, to_offload_mbytes = to_offload / MB, "shedding load from a broker over the average");
            let mut marked = 0.0;
            for (bundle, throughput) in busiest(data, recently_unloaded, |s| s.throughput()) {
                if marked < to_offload || !out.iter().any(|(b, _)| b == id) {
                    out.push((id.clone(), bundle));
                    marked += throughput;
                }
            }
        }
        out
    }
}

/// The bundles `data` owns and reports, not recently unloaded, busiest first by `measure`.
fn busiest(
    data: &LocalBrokerData,
    recently_unloaded: &HashSet<String>,
    measure: impl Fn(&crate::documents::NamespaceBundleStats) -> f64,
) -> Vec<(String, f64)> {
    let mut v: Vec<(String, f64)> = data
        .last_stats
        .iter()
        .filter(|(b, _)| data.bundles.contains(*b) && !recently_unloaded.contains(*b))
        .map(|(b, s)| (b.clone(), measure(s)))
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

fn uniform(
    brokers: &BTreeMap<String, LocalBrokerData>,
    recently_unloaded: &HashSet<String>,
    c: &SheddingConfig,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let by = |f: fn(&LocalBrokerData) -> f64| {
        let max = brokers
            .iter()
            .map(|(id, d)| (f(d), id))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        let min = brokers.values().map(f).min_by(f64::total_cmp).map(|m| {
            if m.abs() <= 1e-6 {
                1.0
            } else {
                m
            }
        });
        max.zip(min).map(|((max, id), min)| (id.clone(), max, min))
    };
    let (Some((rate_broker, max_rate, min_rate)), Some((bytes_broker, max_bytes, min_bytes))) = (
        by(LocalBrokerData::msg_rate),
        by(LocalBrokerData::throughput),
    ) else {
        return out;
    };
    let rate_exceeded = c.msg_rate_difference_threshold > 0.0
        && (max_rate - min_rate) * 100.0 / min_rate > c.msg_rate_difference_threshold;
    let bytes_exceeded = c.msg_throughput_multiplier_threshold > 0.0
        && max_bytes / min_bytes > c.msg_throughput_multiplier_threshold;
    let (broker, mut required, minimum, measure): (_, _, _, fn(&_) -> f64) = if rate_exceeded {
        (
            rate_broker,
            ((max_rate - min_rate) * c.max_unload_percentage).trunc(),
            c.min_unload_message,
            crate::documents::NamespaceBundleStats::msg_rate,
        )
    } else if bytes_exceeded {
        (
            bytes_broker,
            ((max_bytes - min_bytes) * c.max_unload_percentage).trunc(),
            c.min_unload_message_throughput,
            crate::documents::NamespaceBundleStats::throughput,
        )
    } else {
        return out;
    };
    let data = &brokers[&broker];
    if data.bundles.len() <= 1 || required < minimum {
        return out;
    }
    tracing::info!(%broker, max_rate, min_rate, max_bytes, min_bytes, "shedding load for a uniform spread");
    for (bundle, load) in busiest(data, recently_unloaded, measure) {
        if c.max_unload_bundle_num_per_shedding >= 0
            && out.len() as i64 >= c.max_unload_bundle_num_per_shedding
        {
            break;
        }
        if load <= required {
            required -= load;
            out.push((broker.clone(), bundle));
        }
    }
    out
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::documents::{NamespaceBundleStats, ResourceUsage};

    /// A broker at `cpu` % with bundles of `rate` msg/s in (and `rate` KB/s in); also used by
    /// the strategies' own tests.
    pub(in crate::shedding) fn broker(cpu: f64, bundles: &[(&str, f64)]) -> LocalBrokerData {
        let mut d = LocalBrokerData {
            cpu: ResourceUsage {
                usage: cpu,
                limit: 100.0,
            },
            ..LocalBrokerData::default()
        };
        for (b, rate) in bundles {
            d.bundles.insert((*b).to_owned());
            d.last_stats.insert(
                (*b).to_owned(),
                NamespaceBundleStats {
                    msg_rate_in: *rate,
                    msg_throughput_in: rate * 1024.0,
                    ..NamespaceBundleStats::default()
                },
            );
            d.msg_rate_in += rate;
            d.msg_throughput_in += rate * 1024.0;
        }
        d
    }

    pub(in crate::shedding) fn cluster(
        v: Vec<(&str, LocalBrokerData)>,
    ) -> BTreeMap<String, LocalBrokerData> {
        v.into_iter().map(|(k, d)| (k.to_owned(), d)).collect()
    }

    #[test]
    fn strategies_by_pulsars_class_names() {
        assert_eq!(
            Strategy::parse("org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder"),
            Ok(Strategy::Threshold)
        );
        assert_eq!(Strategy::parse("UniformLoadShedder"), Ok(Strategy::Uniform));
        assert_eq!(
            Strategy::parse("org.apache.pulsar.broker.loadbalance.impl.AvgShedder"),
            Ok(Strategy::Avg)
        );
        let err = Strategy::parse("org.apache.pulsar.broker.loadbalance.impl.OverloadShedder")
            .unwrap_err();
        assert!(err.contains("OverloadShedder"), "{err}");
    }

    #[test]
    fn threshold_sheds_the_busiest_bundles_of_the_broker_over_the_average() {
        let c = SheddingConfig {
            bundle_unload_min_throughput_mbytes: 0.0,
            ..SheddingConfig::default()
        };
        let brokers = cluster(vec![
            (
                "a",
                broker(
                    80.0,
                    &[
                        ("ns/0x0_0x4", 1000.0),
                        ("ns/0x4_0x8", 3000.0),
                        ("ns/0x8_0xc", 10.0),
                    ],
                ),
            ),
            ("b", broker(10.0, &[])),
            ("c", broker(12.0, &[("ns/0xc_0xf", 5.0)])),
        ]);
        let mut s = Shedder::default();
        let got = s.find_bundles_to_unload(Strategy::Threshold, &brokers, &HashSet::new(), &c);
        // avg 34 %, a at 80 %: shed (0.80-0.34-0.10+0.05)=41 % of 4010 KB/s, the 3000 bundle
        // alone covers it.
        assert_eq!(got, vec![("a".to_owned(), "ns/0x4_0x8".to_owned())]);

        // Recently unloaded bundles are skipped: the next busiest goes.
        let recent: HashSet<String> = ["ns/0x4_0x8".to_owned()].into();
        let mut s = Shedder::default();
        let got = s.find_bundles_to_unload(Strategy::Threshold, &brokers, &recent, &c);
        assert_eq!(
            got,
            vec![
                ("a".to_owned(), "ns/0x0_0x4".to_owned()),
                ("a".to_owned(), "ns/0x8_0xc".to_owned())
            ]
        );
    }

    #[test]
    fn threshold_leaves_brokers_under_the_line_or_under_the_minimum_or_with_one_bundle() {
        let brokers = cluster(vec![
            ("a", broker(40.0, &[("x/1", 1000.0), ("x/2", 1000.0)])),
            ("b", broker(25.0, &[])),
        ]);
        let mut s = Shedder::default();
        let zero = SheddingConfig {
            bundle_unload_min_throughput_mbytes: 0.0,
            ..SheddingConfig::default()
        };
        // avg 32.5 %: a at 40 % is under 42.5 %.
        assert!(s
            .find_bundles_to_unload(Strategy::Threshold, &brokers, &HashSet::new(), &zero)
            .is_empty());
        // Over the line, but 2 MB/s * share under the default 10 MB/s minimum.
        let brokers = cluster(vec![
            ("a", broker(90.0, &[("x/1", 1000.0), ("x/2", 1000.0)])),
            ("b", broker(5.0, &[])),
        ]);
        let mut s = Shedder::default();
        assert!(s
            .find_bundles_to_unload(
                Strategy::Threshold,
                &brokers,
                &HashSet::new(),
                &SheddingConfig::default()
            )
            .is_empty());
        // One bundle: kept.
        let brokers = cluster(vec![
            ("a", broker(90.0, &[("x/1", 1000.0)])),
            ("b", broker(5.0, &[])),
        ]);
        let mut s = Shedder::default();
        assert!(s
            .find_bundles_to_unload(Strategy::Threshold, &brokers, &HashSet::new(), &zero)
            .is_empty());
    }

    #[test]
    fn threshold_averages_usage_over_rounds() {
        let c = SheddingConfig {
            bundle_unload_min_throughput_mbytes: 0.0,
            ..SheddingConfig::default()
        };
        let calm = cluster(vec![
            ("a", broker(10.0, &[("x/1", 1000.0), ("x/2", 1000.0)])),
            ("b", broker(10.0, &[])),
        ]);
        let spike = cluster(vec![
            ("a", broker(90.0, &[("x/1", 1000.0), ("x/2", 1000.0)])),
            ("b", broker(10.0, &[])),
        ]);
        let mut s = Shedder::default();
        assert!(s
            .find_bundles_to_unload(Strategy::Threshold, &calm, &HashSet::new(), &c)
            .is_empty());
        // One spike after a calm round: a's average is 0.9*0.10 + 0.1*0.90 = 18 %, avg 14 %.
        assert!(s
            .find_bundles_to_unload(Strategy::Threshold, &spike, &HashSet::new(), &c)
            .is_empty());
        // A fresh leader (no history) sees the spike whole.
        let mut fresh = Shedder::default();
        assert_eq!(
            fresh
                .find_bundles_to_unload(Strategy::Threshold, &spike, &HashSet::new(), &c)
                .len(),
            1
        );
    }

    #[test]
    fn uniform_sheds_a_share_of_the_message_rate_difference() {
        let brokers = cluster(vec![
            (
                "a",
                broker(0.0, &[("x/1", 6000.0), ("x/2", 1500.0), ("x/3", 500.0)]),
            ),
            ("b", broker(0.0, &[("x/4", 1000.0)])),
        ]);
        let c = SheddingConfig::default();
        let got = uniform(&brokers, &HashSet::new(), &c);
        // 8000 vs 1000: 700 % over 50 %; 20 % of 7000 = 1400 msg/s to move: 6000 and 1500 are
        // too big, 500 fits.
        assert_eq!(got, vec![("a".to_owned(), "x/3".to_owned())]);
        let even = cluster(vec![
            ("a", broker(0.0, &[("x/1", 1400.0), ("x/2", 100.0)])),
            ("b", broker(0.0, &[("x/4", 1000.0)])),
        ]);
        assert!(
            uniform(&even, &HashSet::new(), &c).is_empty(),
            "50 % apart is not over 50 %"
        );
    }
}
