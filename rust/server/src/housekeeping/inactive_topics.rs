//! Inactive-topic deletion, every `brokerDeleteInactiveTopicsFrequencySeconds` when
//! `brokerDeleteInactiveTopicsEnabled` (Pulsar's `startInactivityMonitor`).

use std::sync::Arc;

use tokio::sync::watch;

use super::every;
use crate::context::ServerContext;

/// The task, until shutdown; returns at once when the deletion is off.
pub(super) async fn run(ctx: Arc<ServerContext>, shutdown: watch::Receiver<bool>) {
    let cfg = Arc::clone(&ctx.service.config);
    if !cfg.broker_delete_inactive_topics_enabled {
        return;
    }
    let period = std::time::Duration::from_secs(u64::from(
        cfg.broker_delete_inactive_topics_frequency_seconds.max(1),
    ));
    every(period, &ctx, shutdown, |svc| {
        svc.check_gc();
    })
    .await;
}
