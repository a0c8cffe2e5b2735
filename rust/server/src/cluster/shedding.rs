//! Load shedding in a cluster (Pulsar's `loadBalancerSheddingEnabled`, the modular load
//! manager's `doLoadShedding`): every `loadBalancerSheddingIntervalMinutes` the leader reads
//! every broker's load report, asks the `loadBalancerLoadSheddingStrategy`
//! ([`pulsar_rs_cluster::shedding`]) which bundles to move, and unloads each on its owner (the
//! owner's admin `unload`, with this broker's client credentials; its own directly). The next
//! lookup of a topic in it places the bundle on the least-loaded broker. A bundle shed is not
//! shed again within `loadBalancerSheddingGracePeriodMinutes`, and nothing is shed with fewer
//! than two brokers.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{Method, StatusCode};
use pulsar_rs_broker::BrokerConfig;
use pulsar_rs_cluster::documents::ResourceWeights;
use pulsar_rs_cluster::shedding::{Shedder, SheddingConfig, Strategy};
use pulsar_rs_cluster::{Bundle, ClusterMember};
use tokio::sync::watch;

use super::peers::admin as peer;
use crate::context::ServerContext;

/// The strategies' settings from the broker's configuration.
#[must_use]
pub fn shedding_config(c: &BrokerConfig) -> SheddingConfig {
    SheddingConfig {
        threshold_percentage: c.load_balancer_broker_threshold_shedder_percentage,
        history_resource_percentage: c.load_balancer_history_resource_percentage,
        bundle_unload_min_throughput_mbytes: c.load_balancer_bundle_unload_min_throughput_threshold,
        weights: ResourceWeights {
            cpu: c.load_balancer_cpu_resource_weight,
            direct_memory: c.load_balancer_direct_memory_resource_weight,
            bandwidth_in: c.load_balancer_bandwidth_in_resource_weight,
            bandwidth_out: c.load_balancer_bandwidth_out_resource_weight,
        },
        msg_rate_difference_threshold: c.load_balancer_msg_rate_difference_shedder_threshold,
        msg_throughput_multiplier_threshold: c
            .load_balancer_msg_throughput_multiplier_difference_shedder_threshold,
        max_unload_percentage: c.max_unload_percentage,
        min_unload_message: c.min_unload_message as f64,
        min_unload_message_throughput: c.min_unload_message_throughput as f64,
        max_unload_bundle_num_per_shedding: c.max_unload_bundle_num_per_shedding,
        avg_low_threshold: c.load_balancer_avg_shedder_low_threshold,
        avg_high_threshold: c.load_balancer_avg_shedder_high_threshold,
        avg_hit_count_low_threshold: c.load_balancer_avg_shedder_hit_count_low_threshold,
        avg_hit_count_high_threshold: c.load_balancer_avg_shedder_hit_count_high_threshold,
    }
}

/// Whether a bundle `AvgShedder` sheds goes to the broker it paired its owner with: both
/// `loadBalancerLoadSheddingStrategy` and `loadBalancerLoadPlacementStrategy` name
/// `AvgShedder` (Pulsar 5.0's defaults). With another shedding strategy, or
/// `LeastLongTermMessageRate` placement, the least-loaded broker takes it.
#[must_use]
pub fn plans_placement(strategy: Strategy, c: &BrokerConfig) -> bool {
    strategy == Strategy::Avg
        && c.load_balancer_load_placement_strategy
            .trim()
            .rsplit('.')
            .next()
            .is_some_and(|s| s == "AvgShedder")
}

/// The configured strategy; an unknown one is named in a warning and `ThresholdShedder` used,
/// as Pulsar falls back when it cannot load the class.
#[must_use]
pub fn strategy(c: &BrokerConfig) -> Strategy {
    Strategy::parse(&c.load_balancer_load_shedding_strategy).unwrap_or_else(|why| {
        tracing::warn!(%why, "loadBalancerLoadSheddingStrategy: using ThresholdShedder");
        Strategy::Threshold
    })
}

/// The leader's shedding state across rounds. Owned by the shedding task.
#[derive(Debug)]
pub struct SheddingRounds {
    /// The configured strategy, read once.
    strategy: Strategy,
    /// Its settings, read once.
    config: SheddingConfig,
    /// Whether `AvgShedder` also places what it sheds ([`plans_placement`]), read once.
    plans_placement: bool,
    /// The strategy's history.
    shedder: Shedder,
    /// Bundle → when it was shed (the grace period).
    recently_unloaded: HashMap<String, Instant>,
}

impl SheddingRounds {
    /// No rounds yet, with the strategy and settings of `c`.
    #[must_use]
    pub fn new(c: &BrokerConfig) -> Self {
        let strategy = strategy(c);
        SheddingRounds {
            strategy,
            plans_placement: plans_placement(strategy, c),
            config: shedding_config(c),
            shedder: Shedder::default(),
            recently_unloaded: HashMap::new(),
        }
    }

    /// One round, on the leader: the bundles unloaded, each with the broker it left.
    pub async fn run_once(&mut self, ctx: &Arc<ServerContext>) -> Vec<(String, String)> {
        let Some(member) = ctx.cluster.get() else {
            return Vec::new();
        };
        if !member.is_leader() {
            // A leader starts its averages afresh, as Pulsar's new leader does.
            self.shedder = Shedder::default();
            return Vec::new();
        }
        let c = &ctx.service.config;
        let reports = match member.load_reports().await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "load shedding: reading the load reports");
                return Vec::new();
            }
        };
        if reports.len() <= 1 {
            return Vec::new();
        }
        let grace = Duration::from_secs(c.load_balancer_shedding_grace_period_minutes * 60);
        self.recently_unloaded.retain(|_, at| at.elapsed() < grace);
        let recent: HashSet<String> = self.recently_unloaded.keys().cloned().collect();
        let picks =
            self.shedder
                .find_bundles_to_unload(self.strategy, &reports, &recent, &self.config);
        let mut done: Vec<(String, String)> = Vec::new();
        for (broker, bundle) in picks {
            let Some(web) = reports
                .get(&broker)
                .and_then(|d| ctx.broker_client.web_url(&d.urls()).ok())
            else {
                continue;
            };
            let destination = self
                .shedder
                .planned_destination(&bundle)
                .filter(|_| self.plans_placement);
            if let (Some(to), Ok(parsed)) = (destination, Bundle::parse(&bundle)) {
                // AvgShedder's placement: the next lookup puts it on the quieter broker.
                member.set_affinity(&parsed, to);
            }
            tracing::info!(%bundle, %broker, ?destination, "load shedding: unloading a bundle");
            match unload(ctx, member, &broker, &web, &bundle).await {
                Ok(()) => {
                    self.recently_unloaded
                        .insert(bundle.clone(), pulsar_rs_clock::monotonic());
                    done.push((broker, bundle));
                }
                Err(why) => {
                    tracing::warn!(%bundle, %broker, %why, "load shedding: the unload failed")
                }
            }
        }
        let brokers: HashSet<&String> = done.iter().map(|(b, _)| b).collect();
        // Relaxed: counts read by metrics only.
        let counters = &ctx.load_balancer;
        counters
            .unload_broker_count
            .fetch_add(brokers.len() as u64, Ordering::Relaxed);
        counters
            .unload_bundle_count
            .fetch_add(done.len() as u64, Ordering::Relaxed);
        done
    }
}

/// Unloads `bundle` on `broker` (this one directly, another through its admin API).
async fn unload(
    ctx: &Arc<ServerContext>,
    member: &ClusterMember,
    broker: &str,
    web: &str,
    bundle: &str,
) -> Result<(), String> {
    let parsed = Bundle::parse(bundle).map_err(|e| e.to_string())?;
    if broker == member.broker_id() {
        return member.release(&parsed).await.map_err(|e| e.to_string());
    }
    let authorization = ctx.broker_client.authorization().await?;
    let url = format!(
        "{}/admin/v2/namespaces/{}/{}/unload",
        web.trim_end_matches('/'),
        parsed.namespace,
        parsed.range()
    );
    let (status, body) = peer::call(
        &ctx.broker_client,
        &Method::PUT,
        &url,
        &Bytes::new(),
        authorization.as_ref(),
    )
    .await?;
    if status.is_success() || status == StatusCode::NOT_FOUND {
        // 404: the bundle went meanwhile (split or unloaded): nothing left to shed.
        Ok(())
    } else {
        Err(format!(
            "PUT {url}: {status} {}",
            String::from_utf8_lossy(&body)
        ))
    }
}

/// Sheds every `loadBalancerSheddingIntervalMinutes` until shutdown (a broker in a cluster,
/// with `loadBalancerSheddingEnabled`; only the leader's rounds do anything).
pub async fn shedding_loop(ctx: Arc<ServerContext>, mut shutdown: watch::Receiver<bool>) {
    let c = &ctx.service.config;
    if !c.load_balancer_shedding_enabled || ctx.cluster.get().is_none() {
        return;
    }
    let every = Duration::from_secs(c.load_balancer_shedding_interval_minutes.max(1) * 60);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    let mut rounds = SheddingRounds::new(c);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        rounds.run_once(&ctx).await;
    }
}
