//! Message TTL, every `messageExpiryCheckIntervalInMinutes` (Pulsar's
//! `startMessageExpiryMonitor`).

use std::sync::Arc;

use tokio::sync::watch;

use super::every;
use crate::context::ServerContext;

/// The task, until shutdown.
pub(super) async fn run(ctx: Arc<ServerContext>, shutdown: watch::Receiver<bool>) {
    let minutes = u64::from(
        ctx.service
            .config
            .message_expiry_check_interval_in_minutes
            .max(1),
    );
    let period = std::time::Duration::from_secs(minutes * 60);
    every(period, &ctx, shutdown, |svc| {
        svc.check_message_expiry(svc.clock().now_ms());
    })
    .await;
}
