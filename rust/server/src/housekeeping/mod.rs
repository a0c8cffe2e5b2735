//! The broker's housekeeping: periodic tasks over every loaded topic, each on its own setting,
//! spawned at start and stopped with the server. One module per task:
//! [`deduplication`], [`message_expiry`], [`inactive_topics`], [`compaction`],
//! [`fenced_topics`] (on BookKeeper), [`backlog_quota`] and [`iceberg_tables`].

mod backlog_quota;
mod compaction;
mod deduplication;
mod fenced_topics;
pub(crate) mod iceberg_tables;
mod inactive_topics;
mod message_expiry;

use std::sync::Arc;
use std::time::Duration;

use pulsar_rs_broker::BrokerService;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::context::ServerContext;

/// Spawns every housekeeping task on `tasks`; each returns at `shutdown`.
pub(crate) fn spawn(
    tasks: &mut JoinSet<()>,
    ctx: &Arc<ServerContext>,
    shutdown: &watch::Receiver<bool>,
) {
    tasks.spawn(deduplication::run(Arc::clone(ctx), shutdown.clone()));
    tasks.spawn(message_expiry::run(Arc::clone(ctx), shutdown.clone()));
    tasks.spawn(inactive_topics::run(Arc::clone(ctx), shutdown.clone()));
    tasks.spawn(compaction::run(Arc::clone(ctx), shutdown.clone()));
    if ctx.service.config.cluster_metadata_store().is_some() {
        tasks.spawn(fenced_topics::run(Arc::clone(ctx), shutdown.clone()));
    }
    tasks.spawn(backlog_quota::run(Arc::clone(ctx), shutdown.clone()));
    tasks.spawn(iceberg_tables::run(Arc::clone(ctx), shutdown.clone()));
}

/// Runs `f` on the blocking pool every `period`, the first time one period after start (as
/// Pulsar's `scheduleAtFixedRate(task, interval, interval)`), until shutdown.
async fn every(
    period: Duration,
    ctx: &Arc<ServerContext>,
    mut shutdown: watch::Receiver<bool>,
    f: impl Fn(&BrokerService) + Send + Sync + Clone + 'static,
) {
    let mut tick = tokio::time::interval(period);
    // The first tick completes at once: skip it, so the first run comes one period after start.
    tick.tick().await;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        let service = Arc::clone(&ctx.service);
        let f = f.clone();
        let _ = tokio::task::spawn_blocking(move || f(&service)).await;
    }
}
