//! The replicated subscriptions' timer: every `replicatedSubscriptionsSnapshotFrequencyMillis`,
//! each topic this broker replicates writes the markers its step returns
//! (`Topic::replicated_subscriptions_tick`: UPDATEs its subscriptions' acks made due, and a
//! snapshot REQUEST when one starts, only while every replicator of the topic is connected).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::context::ServerContext;

/// Spawns the timer; it returns at `shutdown`. Nothing runs without
/// `enableReplicatedSubscriptions`.
pub(super) fn spawn(
    tasks: &mut JoinSet<()>,
    ctx: &Arc<ServerContext>,
    shutdown: &watch::Receiver<bool>,
) {
    let config = &ctx.service.config;
    if !config.enable_replicated_subscriptions {
        return;
    }
    let period = Duration::from_millis(config.replicated_subscriptions_snapshot_frequency_millis);
    let (ctx, mut shutdown) = (Arc::clone(ctx), shutdown.clone());
    tasks.spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = shutdown.changed() => break,
            }
            step(&ctx).await;
        }
    });
}

/// One step over the topics with replicators.
async fn step(ctx: &ServerContext) {
    for (topic, remotes) in ctx.replicators.by_topic() {
        let Some(topic) = topic.upgrade() else {
            continue;
        };
        if topic.ledger.is_closed() {
            continue;
        }
        let names: Vec<String> = remotes.iter().map(|(r, _)| r.clone()).collect();
        let all_connected = remotes.iter().all(|(_, connected)| *connected);
        for marker in topic.replicated_subscriptions_tick(&names, all_connected) {
            if let Err(e) = topic.write_marker(marker).await {
                tracing::warn!(topic = %topic.name, error = %e, "writing a replicated subscription's marker");
                break;
            }
        }
    }
}
