//! Deduplication snapshots and inactive-producer purge, every
//! `brokerDeduplicationSnapshotFrequencyInSeconds`.

use std::sync::Arc;

use tokio::sync::watch;

use crate::context::ServerContext;

/// The task: a tick every period (the first at once), until shutdown.
pub(super) async fn run(ctx: Arc<ServerContext>, mut shutdown: watch::Receiver<bool>) {
    let period = ctx
        .service
        .config
        .broker_deduplication_snapshot_frequency_in_seconds
        .max(1);
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(period));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        let service = Arc::clone(&ctx.service);
        let now = service.clock().now_ms();
        let _ = tokio::task::spawn_blocking(move || service.deduplication_tick(now)).await;
    }
}
