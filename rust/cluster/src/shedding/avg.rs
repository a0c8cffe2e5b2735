//! `AvgShedder` (PIP-364, Pulsar's default shedding and placement strategy as of 5.0): the
//! brokers are scored by their weighted resource usage (0–100) and sorted; the quietest is paired
//! with the busiest, the second quietest with the second busiest, and so on. A pair whose scores
//! are `loadBalancerAvgShedderLowThreshold` apart counts a low hit on both brokers, and one
//! `loadBalancerAvgShedderHighThreshold` apart a high hit too; a pair under the low threshold
//! clears both brokers' counts. A pair sheds once either broker has
//! `loadBalancerAvgShedderHitCountHighThreshold` high hits or
//! `loadBalancerAvgShedderHitCountLowThreshold` low hits in a row (the counts are then cleared):
//! the busier broker unloads its busiest bundles that fit within `maxUnloadPercentage` of the
//! pair's difference in messages per second (when over `minUnloadMessage`), else in bytes per
//! second (when over `minUnloadMessageThroughput`), and each bundle is planned to go to the
//! quieter broker of its pair (the placement role).

use std::collections::{BTreeMap, HashMap, HashSet};

use super::{busiest, SheddingConfig};
use crate::documents::{LocalBrokerData, NamespaceBundleStats};

/// `AvgShedder`'s state across rounds. Owned by the leader's shedding task.
#[derive(Debug, Default)]
pub struct AvgShedder {
    /// Broker id → consecutive rounds its pair was over the high threshold.
    hits_high: HashMap<String, u32>,
    /// Broker id → consecutive rounds its pair was over the low threshold.
    hits_low: HashMap<String, u32>,
    /// Bundle → the broker it was shed towards (Pulsar's `bundleBrokerMap`), for its placement.
    planned: HashMap<String, String>,
}

impl AvgShedder {
    /// A broker's score: its weighted resource usage, 0–100 (not averaged over rounds).
    fn score(data: &LocalBrokerData, c: &SheddingConfig) -> f64 {
        data.max_resource_usage_with_weight(&c.weights) * 100.0
    }

    /// The broker this round's shedding of `bundle` planned it for, if any.
    #[must_use]
    pub fn planned_destination(&self, bundle: &str) -> Option<&str> {
        self.planned.get(bundle).map(String::as_str)
    }

    /// The consecutive (high, low) hits counted for `broker`.
    #[must_use]
    pub fn hits(&self, broker: &str) -> (u32, u32) {
        (
            self.hits_high.get(broker).copied().unwrap_or_default(),
            self.hits_low.get(broker).copied().unwrap_or_default(),
        )
    }

    fn forget(&mut self, broker: &str) {
        self.hits_high.remove(broker);
        self.hits_low.remove(broker);
    }

    /// The (quieter, busier) pairs whose difference reaches the low threshold, counting the
    /// hits of this round.
    fn pairs(&mut self, sorted: &[(f64, &String)], c: &SheddingConfig) -> Vec<(String, String)> {
        let mut pairs = Vec::new();
        let (mut i, mut j) = (0usize, sorted.len());
        while i < j {
            j -= 1;
            let ((min_score, min), (max_score, max)) = (sorted[i], sorted[j]);
            let gap = max_score - min_score;
            if gap < c.avg_low_threshold {
                self.forget(max);
                self.forget(min);
            } else {
                pairs.push((min.clone(), max.clone()));
                for b in [min, max] {
                    *self.hits_low.entry(b.clone()).or_default() += 1;
                    if gap < c.avg_high_threshold {
                        self.hits_high.remove(b);
                    } else {
                        *self.hits_high.entry(b.clone()).or_default() += 1;
                    }
                }
            }
            i += 1;
        }
        pairs
    }

    /// The bundles to unload this round, each with the broker that owns it.
    pub fn find_bundles_to_unload(
        &mut self,
        brokers: &BTreeMap<String, LocalBrokerData>,
        recently_unloaded: &HashSet<String>,
        c: &SheddingConfig,
    ) -> Vec<(String, String)> {
        self.planned.clear();
        self.hits_high.retain(|b, _| brokers.contains_key(b));
        self.hits_low.retain(|b, _| brokers.contains_key(b));
        let mut sorted: Vec<(f64, &String)> = brokers
            .iter()
            .map(|(id, d)| (Self::score(d, c), id))
            .collect();
        // Ties by broker id, so that a round is the same whatever the reports' order.
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(b.1)));
        let pairs = self.pairs(&sorted, c);
        let mut out = Vec::new();
        if pairs.is_empty() {
            self.hits_high.clear();
            self.hits_low.clear();
            return out;
        }
        for (under, over) in pairs {
            let (high_u, low_u) = self.hits(&under);
            let (high_o, low_o) = self.hits(&over);
            let hit = high_u.max(high_o) >= c.avg_hit_count_high_threshold
                || low_u.max(low_o) >= c.avg_hit_count_low_threshold;
            if !hit {
                continue;
            }
            self.forget(&under);
            self.forget(&over);
            self.select(
                &brokers[&under],
                &brokers[&over],
                &under,
                &over,
                recently_unloaded,
                c,
                &mut out,
            );
        }
        out
    }

    /// The bundles `over` sheds towards `under`, added to `out` and planned for `under`.
    #[allow(clippy::too_many_arguments)]
    fn select(
        &mut self,
        min: &LocalBrokerData,
        max: &LocalBrokerData,
        under: &str,
        over: &str,
        recently_unloaded: &HashSet<String>,
        c: &SheddingConfig,
        out: &mut Vec<(String, String)>,
    ) {
        let msg_required = (max.msg_rate() - min.msg_rate()) * c.max_unload_percentage;
        let bytes_required = (max.throughput() - min.throughput()) * c.max_unload_percentage;
        let (mut required, measure): (f64, fn(&NamespaceBundleStats) -> f64) = if msg_required
            > c.min_unload_message
        {
            (msg_required, NamespaceBundleStats::msg_rate)
        } else if bytes_required > c.min_unload_message_throughput {
            (bytes_required, NamespaceBundleStats::throughput)
        } else {
            tracing::info!(%over, %under, msg_required, bytes_required, "AvgShedder: what the pair would move is under minUnloadMessage and minUnloadMessageThroughput");
            return;
        };
        if max.bundles.len() == 1 {
            tracing::warn!(broker = %over, "AvgShedder: the broker's only bundle makes its load; it is not shed");
        }
        tracing::info!(%over, %under, required, "AvgShedder: shedding load from the busier broker of a pair");
        for (bundle, traffic) in busiest(max, recently_unloaded, measure) {
            if traffic > 0.0 && traffic <= required {
                required -= traffic;
                self.planned.insert(bundle.clone(), under.to_owned());
                out.push((over.to_owned(), bundle));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shedding::tests::{broker, cluster};

    fn pair_50_apart() -> BTreeMap<String, LocalBrokerData> {
        cluster(vec![
            (
                "a",
                broker(
                    80.0,
                    &[("ns/1", 6000.0), ("ns/2", 3000.0), ("ns/3", 1000.0)],
                ),
            ),
            ("b", broker(30.0, &[("ns/4", 2000.0)])),
        ])
    }

    #[test]
    fn a_pair_over_the_high_threshold_sheds_at_its_second_hit() {
        let c = SheddingConfig::default();
        let brokers = pair_50_apart();
        let mut s = AvgShedder::default();
        let none = HashSet::new();
        assert!(s.find_bundles_to_unload(&brokers, &none, &c).is_empty());
        assert_eq!(s.hits("a"), (1, 1));
        assert_eq!(s.hits("b"), (1, 1));
        let got = s.find_bundles_to_unload(&brokers, &none, &c);
        // 10000 vs 2000 msg/s: 20 % of 8000 = 1600 to move; 6000 and 3000 are too big.
        assert_eq!(got, vec![("a".to_owned(), "ns/3".to_owned())]);
        assert_eq!(s.planned_destination("ns/3"), Some("b"));
        assert_eq!(s.hits("a"), (0, 0), "a shedding pair's counts start again");
        // maxUnloadPercentage 0.5 (PIP-364's even split): 4000 to move, 3000 and 1000 fit.
        let half = SheddingConfig {
            max_unload_percentage: 0.5,
            ..SheddingConfig::default()
        };
        let mut s = AvgShedder::default();
        s.find_bundles_to_unload(&brokers, &none, &half);
        let got = s.find_bundles_to_unload(&brokers, &none, &half);
        assert_eq!(
            got,
            vec![
                ("a".to_owned(), "ns/2".to_owned()),
                ("a".to_owned(), "ns/3".to_owned())
            ]
        );
        // Recently unloaded bundles stay.
        let recent: HashSet<String> = ["ns/2".to_owned()].into();
        let mut s = AvgShedder::default();
        s.find_bundles_to_unload(&brokers, &recent, &half);
        assert_eq!(
            s.find_bundles_to_unload(&brokers, &recent, &half),
            vec![("a".to_owned(), "ns/3".to_owned())]
        );
    }

    #[test]
    fn a_pair_between_the_thresholds_sheds_at_its_eighth_hit_and_a_calm_round_resets_it() {
        let c = SheddingConfig::default();
        let apart = cluster(vec![
            ("a", broker(50.0, &[("ns/1", 6000.0), ("ns/2", 1000.0)])),
            ("b", broker(30.0, &[("ns/4", 1000.0)])),
        ]);
        let calm = cluster(vec![
            ("a", broker(40.0, &[("ns/1", 6000.0), ("ns/2", 1000.0)])),
            ("b", broker(30.0, &[("ns/4", 1000.0)])),
        ]);
        let none = HashSet::new();
        let mut s = AvgShedder::default();
        for round in 1..=7 {
            assert!(
                s.find_bundles_to_unload(&apart, &none, &c).is_empty(),
                "round {round}"
            );
        }
        assert_eq!(s.hits("a"), (0, 7));
        // 10 points apart: under the low threshold, the counts go.
        assert!(s.find_bundles_to_unload(&calm, &none, &c).is_empty());
        assert_eq!(s.hits("a"), (0, 0));
        for _ in 1..=7 {
            assert!(s.find_bundles_to_unload(&apart, &none, &c).is_empty());
        }
        // 7000 vs 1000: 1200 msg/s to move, the 1000 bundle.
        assert_eq!(
            s.find_bundles_to_unload(&apart, &none, &c),
            vec![("a".to_owned(), "ns/2".to_owned())]
        );
    }

    #[test]
    fn hits_count_per_broker_across_changing_partners() {
        // PIP-364's example: broker3 is the quietest; the busiest alternates between broker1
        // and broker2. broker3's low hits add up whichever it is paired with.
        let c = SheddingConfig {
            avg_hit_count_low_threshold: 3,
            ..SheddingConfig::default()
        };
        let busy = &[("ns/1", 5000.0), ("ns/2", 800.0)];
        let one = cluster(vec![
            ("broker1", broker(55.0, busy)),
            ("broker2", broker(35.0, busy)),
            ("broker3", broker(20.0, &[])),
        ]);
        let two = cluster(vec![
            ("broker1", broker(35.0, busy)),
            ("broker2", broker(55.0, busy)),
            ("broker3", broker(20.0, &[])),
        ]);
        let none = HashSet::new();
        let mut s = AvgShedder::default();
        assert!(s.find_bundles_to_unload(&one, &none, &c).is_empty());
        assert!(s.find_bundles_to_unload(&two, &none, &c).is_empty());
        // broker1 left the pairs (paired with itself): its count went.
        assert_eq!(s.hits("broker1"), (0, 0));
        assert_eq!(s.hits("broker3"), (0, 2));
        let got = s.find_bundles_to_unload(&one, &none, &c);
        // 5800 vs 0 msg/s: 1160 to move, the 800 bundle, towards broker3.
        assert_eq!(got, vec![("broker1".to_owned(), "ns/2".to_owned())]);
        assert_eq!(s.planned_destination("ns/2"), Some("broker3"));
    }

    #[test]
    fn small_differences_fall_back_to_bytes_then_to_nothing() {
        let c = SheddingConfig {
            avg_hit_count_high_threshold: 1,
            ..SheddingConfig::default()
        };
        // 20 % of 3000 msg/s = 600 < minUnloadMessage 1000; bytes: 20 % of 3000 KB/s = 600 KB/s
        // < 1 MB/s: nothing moves.
        let small = cluster(vec![
            ("a", broker(90.0, &[("ns/1", 2000.0), ("ns/2", 1000.0)])),
            ("b", broker(10.0, &[])),
        ]);
        let none = HashSet::new();
        assert!(AvgShedder::default()
            .find_bundles_to_unload(&small, &none, &c)
            .is_empty());
        // Big messages: the bytes decide (20 % of 10 MB/s = 2 MB/s), the 1.5 MB/s bundle goes.
        let mut heavy = small.clone();
        let a = heavy.get_mut("a").unwrap();
        a.last_stats.get_mut("ns/1").unwrap().msg_throughput_in = 8.5 * 1024.0 * 1024.0;
        a.last_stats.get_mut("ns/2").unwrap().msg_throughput_in = 1.5 * 1024.0 * 1024.0;
        a.msg_throughput_in = 10.0 * 1024.0 * 1024.0;
        assert_eq!(
            AvgShedder::default().find_bundles_to_unload(&heavy, &none, &c),
            vec![("a".to_owned(), "ns/2".to_owned())]
        );
    }
}
