//! Where a topic is served, decided as Pulsar's `NamespaceService.findBrokerServiceUrl` with the
//! modular load manager decides it:
//!
//! 1. the bundle's owner, if it has one: `Connect` to it;
//! 2. unowned, and the request `authoritative`: this broker takes it;
//! 3. unowned, and this broker leads: the least-loaded broker is chosen; if that is this
//!    broker it takes the bundle, otherwise the client is sent there with `authoritative`, so
//!    that broker takes it without asking again;
//! 4. unowned, and another broker leads: the client is sent to the leader (not authoritative);
//!    with no live leader this broker decides as a leader would.

use std::time::Duration;

use crate::bundles::{find_bundle, topic_hash, topic_parts, Bundle};
use crate::documents::{BrokerUrls, LocalBrokerData};
use crate::error::Result;

use super::ownership::Owner;
use super::ClusterMember;

/// How long the leader counts a bundle it placed against the chosen broker's load before that
/// broker's report shows it.
const PREALLOCATION_TTL: Duration = Duration::from_secs(30);

/// The messages per second a bundle counts for at least in a placement: Pulsar's estimate of a
/// bundle it has no figures for (50 in, 50 out), so that idle brokers are filled by bundle count.
const DEFAULT_BUNDLE_MSG_RATE: f64 = 100.0;

/// A broker's placement score (Pulsar's `LeastLongTermMessageRate`): the messages per second of
/// the bundles it owns, each at least [`DEFAULT_BUNDLE_MSG_RATE`], plus `placed` bundles the
/// leader sent there since its last report.
fn placement_score(data: &LocalBrokerData, placed: usize) -> f64 {
    let owned: f64 = data
        .bundles
        .iter()
        .map(|b| {
            data.last_stats
                .get(b)
                .map_or(0.0, crate::documents::NamespaceBundleStats::msg_rate)
                .max(DEFAULT_BUNDLE_MSG_RATE)
        })
        .sum();
    owned + placed as f64 * DEFAULT_BUNDLE_MSG_RATE
}

/// A lookup's answer (`CommandLookupTopicResponse`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupAnswer {
    /// The topic is served at these URLs (this broker or the owner): connect there.
    Connect(BrokerUrls),
    /// Ask the broker at these URLs again, with `authoritative`.
    Redirect {
        /// Where to ask.
        urls: BrokerUrls,
        /// Whether that broker must take the bundle without asking further.
        authoritative: bool,
    },
}

/// The broker a placement chose.
enum Candidate {
    /// This broker.
    Me,
    /// Another broker: where to send the client.
    Other(BrokerUrls),
}

impl ClusterMember {
    /// The bundle a topic (full name) belongs to.
    ///
    /// # Errors
    /// An invalid name; the namespace missing from the store; store failures.
    pub async fn bundle_of(&self, full_name: &str) -> Result<Bundle> {
        let ns = topic_parts(full_name)?.namespace_name();
        let bounds = self.boundaries(&ns).await?;
        Ok(find_bundle(&ns, &bounds, full_name))
    }

    /// Answers a lookup of `full_name`.
    ///
    /// # Errors
    /// An invalid name; the namespace missing from the store; the bundle being unloaded; store
    /// failures.
    pub async fn lookup(&self, full_name: &str, authoritative: bool) -> Result<LookupAnswer> {
        let bundle = self.bundle_of(full_name).await?;
        match self.owner(&bundle).await? {
            Some(Owner::Me) => return Ok(LookupAnswer::Connect(self.urls().clone())),
            Some(Owner::Other(u)) => return Ok(LookupAnswer::Connect(u)),
            None => {}
        }
        let candidate = if authoritative {
            Candidate::Me
        } else if self.is_leader() {
            self.least_loaded(&bundle).await?
        } else {
            match self.live_leader().await? {
                Some(leader) => {
                    return Ok(LookupAnswer::Redirect {
                        urls: leader.urls(),
                        authoritative: false,
                    })
                }
                None => self.least_loaded(&bundle).await?,
            }
        };
        match candidate {
            Candidate::Me => Ok(match self.acquire(&bundle).await? {
                Owner::Me => LookupAnswer::Connect(self.urls().clone()),
                Owner::Other(u) => LookupAnswer::Connect(u),
            }),
            Candidate::Other(urls) => Ok(LookupAnswer::Redirect {
                urls,
                authoritative: true,
            }),
        }
    }

    /// The leader's registration, when another broker leads and is registered.
    async fn live_leader(&self) -> Result<Option<LocalBrokerData>> {
        let Some(leader) = self.leader().await? else {
            return Ok(None);
        };
        if leader.broker_id == self.broker_id() {
            return Ok(None);
        }
        self.broker_data(&leader.broker_id).await
    }

    /// Records, on the leader, where `bundle` goes at its next placement (an unload's
    /// `destinationBroker`, Pulsar's `setNamespaceBundleAffinity`).
    pub fn set_affinity(&self, bundle: &Bundle, broker_id: &str) {
        self.affinity
            .lock()
            .insert(bundle.name(), broker_id.to_owned());
    }

    /// The least-loaded registered broker for `bundle`: the one an unload named, if it is
    /// registered; else, among the brokers not overloaded (all of them if every one is), the
    /// lowest [`placement_score`], ties spread by a hash of bundle and broker.
    async fn least_loaded(&self, bundle: &Bundle) -> Result<Candidate> {
        let name = bundle.name();
        let wanted = self.affinity.lock().remove(&name);
        if let Some(id) = wanted {
            if id == self.broker_id() {
                return Ok(Candidate::Me);
            }
            if let Some(data) = self.broker_data(&id).await? {
                tracing::info!(bundle = %name, broker = %id, "bundle placed where its unload asked");
                return Ok(Candidate::Other(data.urls()));
            }
        }
        let mut best: Option<((bool, u64, u32), String, LocalBrokerData)> = None;
        for (id, data) in self.load_reports().await? {
            let placed = {
                let mut pre = self.preallocated.lock();
                pre.retain(|b, (_, at)| at.elapsed() < PREALLOCATION_TTL && b != &name);
                pre.iter()
                    .filter(|(b, (to, _))| to == &id && !data.bundles.contains(*b))
                    .count()
            };
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let key = (
                data.max_resource_usage() > self.config.overloaded_threshold,
                placement_score(&data, placed).round() as u64,
                topic_hash(&format!("{name}@{id}")),
            );
            if best.as_ref().is_none_or(|(k, _, _)| key < *k) {
                best = Some((key, id, data));
            }
        }
        let Some((_, id, data)) = best else {
            return Ok(Candidate::Me);
        };
        if id == self.broker_id() {
            return Ok(Candidate::Me);
        }
        self.preallocated
            .lock()
            .insert(name, (id.clone(), pulsar_rs_clock::monotonic()));
        tracing::debug!(bundle = %bundle.name(), broker = %id, "bundle placed");
        Ok(Candidate::Other(data.urls()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::NamespaceBundleStats;

    #[test]
    fn idle_brokers_are_scored_by_bundles_and_busy_ones_by_their_rates() {
        let mut idle = LocalBrokerData::default();
        idle.bundles.extend(["a/1".to_owned(), "a/2".to_owned()]);
        assert_eq!(placement_score(&idle, 0), 200.0);
        assert_eq!(placement_score(&idle, 1), 300.0);
        let mut busy = LocalBrokerData::default();
        busy.bundles.insert("a/3".to_owned());
        busy.last_stats.insert(
            "a/3".to_owned(),
            NamespaceBundleStats {
                msg_rate_in: 400.0,
                msg_rate_out: 400.0,
                ..NamespaceBundleStats::default()
            },
        );
        assert_eq!(placement_score(&busy, 0), 800.0, "one bundle at 800 msg/s");
        assert!(placement_score(&idle, 0) < placement_score(&busy, 0));
    }
}
