//! This broker's load report: what the broker measures ([`LoadSource`]), and when a new report
//! is worth writing (Pulsar's `needBrokerDataUpdate`): at once when the bundles owned changed;
//! otherwise not before `loadBalancerReportUpdateMinIntervalMillis`, then when a figure moved by
//! more than `loadBalancerReportUpdateThresholdPercentage`, and at least every
//! `loadBalancerReportUpdateMaxIntervalMinutes`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::documents::{LocalBrokerData, NamespaceBundleStats, ResourceUsage};

/// What a broker measures of itself for its load report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BrokerLoad {
    /// Bundle name → what its topics carry here (bundles this broker owns).
    pub bundles: BTreeMap<String, NamespaceBundleStats>,
    /// Its CPU, percent of one core, out of 100 per core.
    pub cpu: ResourceUsage,
    /// Its memory, MB.
    pub memory: ResourceUsage,
    /// Its network in, KB/s (limit 0: unknown).
    pub bandwidth_in: ResourceUsage,
    /// Its network out, KB/s (limit 0: unknown).
    pub bandwidth_out: ResourceUsage,
}

/// Measures the broker (called about once a second by the report task, on a runtime worker:
/// it must not block).
pub type LoadSource = Arc<dyn Fn() -> BrokerLoad + Send + Sync>;

/// When to write a new report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReportPolicy {
    /// `loadBalancerReportUpdateThresholdPercentage`.
    pub threshold_percentage: f64,
    /// `loadBalancerReportUpdateMinIntervalMillis`.
    pub min_interval: Duration,
    /// `loadBalancerReportUpdateMaxIntervalMinutes`.
    pub max_interval: Duration,
}

impl Default for ReportPolicy {
    /// Pulsar's defaults.
    fn default() -> Self {
        ReportPolicy {
            threshold_percentage: 10.0,
            min_interval: Duration::from_millis(5000),
            max_interval: Duration::from_secs(15 * 60),
        }
    }
}

impl ReportPolicy {
    /// Whether `now` should replace `written`, the report written `age` ago.
    #[must_use]
    pub fn needs_update(
        &self,
        written: &LocalBrokerData,
        now: &LocalBrokerData,
        age: Duration,
    ) -> bool {
        if written.bundles != now.bundles || age >= self.max_interval {
            return true;
        }
        if age < self.min_interval {
            return false;
        }
        let change = |old: f64, new: f64| {
            if old == new {
                0.0
            } else if old == 0.0 {
                f64::INFINITY
            } else {
                ((new - old) / old).abs() * 100.0
            }
        };
        let moved = [
            change(written.msg_rate(), now.msg_rate()),
            change(written.throughput(), now.throughput()),
            change(written.cpu.percent_usage(), now.cpu.percent_usage()),
            change(written.memory.percent_usage(), now.memory.percent_usage()),
            change(
                written.bandwidth_in.percent_usage(),
                now.bandwidth_in.percent_usage(),
            ),
            change(
                written.bandwidth_out.percent_usage(),
                now.bandwidth_out.percent_usage(),
            ),
        ]
        .into_iter()
        .fold(0.0, f64::max);
        moved > self.threshold_percentage
    }
}

/// Puts `load` into `report`: its bundles' stats and the broker's totals.
pub fn fill(report: &mut LocalBrokerData, load: BrokerLoad) {
    report.cpu = load.cpu;
    report.memory = load.memory;
    report.bandwidth_in = load.bandwidth_in;
    report.bandwidth_out = load.bandwidth_out;
    for s in load.bundles.values() {
        report.msg_rate_in += s.msg_rate_in;
        report.msg_rate_out += s.msg_rate_out;
        report.msg_throughput_in += s.msg_throughput_in;
        report.msg_throughput_out += s.msg_throughput_out;
        report.num_topics += s.topics;
        report.num_consumers += s.consumer_count;
        report.num_producers += s.producer_count;
    }
    report.last_stats = load.bundles;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(rate: f64, cpu: f64) -> LocalBrokerData {
        LocalBrokerData {
            msg_rate_in: rate,
            cpu: ResourceUsage {
                usage: cpu,
                limit: 200.0,
            },
            ..LocalBrokerData::default()
        }
    }

    #[test]
    fn a_report_is_written_on_a_bundle_change_a_large_move_or_its_age() {
        let p = ReportPolicy::default();
        let s = Duration::from_secs;
        let mut other = at(100.0, 10.0);
        other.bundles.insert("ns/0x0_0xf".into());
        assert!(
            p.needs_update(&at(100.0, 10.0), &other, s(0)),
            "bundles changed"
        );
        assert!(
            !p.needs_update(&at(100.0, 10.0), &at(500.0, 10.0), s(1)),
            "before the minimum interval"
        );
        assert!(
            p.needs_update(&at(100.0, 10.0), &at(111.0, 10.0), s(6)),
            "11 % more messages"
        );
        assert!(
            !p.needs_update(&at(100.0, 10.0), &at(109.0, 10.5), s(6)),
            "under 10 %"
        );
        assert!(
            p.needs_update(&at(100.0, 10.0), &at(100.0, 12.0), s(6)),
            "20 % more CPU"
        );
        assert!(
            p.needs_update(&at(0.0, 0.0), &at(1.0, 0.0), s(6)),
            "from nothing"
        );
        assert!(
            p.needs_update(&at(100.0, 10.0), &at(100.0, 10.0), s(900)),
            "the maximum interval"
        );
    }

    #[test]
    fn the_totals_are_the_sums_of_the_bundles() {
        let mut r = LocalBrokerData::default();
        let mut load = BrokerLoad::default();
        for (b, n) in [("a/0x0_0x8", 1.0), ("a/0x8_0xf", 2.0)] {
            load.bundles.insert(
                b.into(),
                NamespaceBundleStats {
                    msg_rate_in: n,
                    msg_rate_out: 10.0 * n,
                    msg_throughput_in: 100.0 * n,
                    msg_throughput_out: 1000.0 * n,
                    consumer_count: 1,
                    producer_count: 2,
                    topics: 3,
                    cache_size: 0,
                },
            );
        }
        fill(&mut r, load);
        assert_eq!((r.msg_rate_in, r.msg_rate_out), (3.0, 30.0));
        assert_eq!((r.msg_throughput_in, r.msg_throughput_out), (300.0, 3000.0));
        assert_eq!((r.num_topics, r.num_consumers, r.num_producers), (6, 2, 4));
        assert_eq!(r.last_stats.len(), 2);
    }
}
