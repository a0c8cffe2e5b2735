//! The compaction monitor: every `brokerServiceCompactionMonitorIntervalInSeconds`, compacts
//! the topics whose backlog exceeds their `compactionThreshold`.

use std::sync::Arc;

use tokio::sync::watch;

use super::every;
use crate::context::ServerContext;

/// The task, until shutdown.
pub(super) async fn run(ctx: Arc<ServerContext>, shutdown: watch::Receiver<bool>) {
    let secs = ctx
        .service
        .config
        .broker_service_compaction_monitor_interval_in_seconds
        .max(1);
    every(
        std::time::Duration::from_secs(secs),
        &ctx,
        shutdown,
        |svc| {
            svc.compaction_tick();
        },
    )
    .await;
}
