//! Inactive-topic deletion, every `brokerDeleteInactiveTopicsFrequencySeconds` when
//! `brokerDeleteInactiveTopicsEnabled` (Pulsar's `startInactivityMonitor`), or PIP-470's
//! closing instead when `brokerCloseInactiveTopicsEnabled`.

use std::sync::Arc;

use tokio::sync::watch;

use super::every;
use crate::context::ServerContext;

/// The task, until shutdown; returns at once when neither the deletion nor PIP-470's closing
/// is on.
pub(super) async fn run(ctx: Arc<ServerContext>, shutdown: watch::Receiver<bool>) {
    let cfg = Arc::clone(&ctx.service.config);
    if cfg.broker_close_inactive_topics_enabled {
        return close(ctx, shutdown).await;
    }
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

/// PIP-470: inactive topics closed instead, on the same schedule, off the runtime; producers
/// that attached while their topic was being closed are closed too (their clients reconnect).
async fn close(ctx: Arc<ServerContext>, mut shutdown: watch::Receiver<bool>) {
    let period = std::time::Duration::from_secs(u64::from(
        ctx.service
            .config
            .broker_delete_inactive_topics_frequency_seconds
            .max(1),
    ));
    let mut tick = tokio::time::interval(period);
    // The first tick completes at once: the first check comes one period after start.
    tick.tick().await;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        let service = Arc::clone(&ctx.service);
        let handles = tokio::task::spawn_blocking(move || {
            let now = service.clock().now_ms();
            service.close_inactive_topics(now).1
        })
        .await;
        for handle in handles.unwrap_or_default() {
            ctx.fence_producer(handle);
        }
    }
}
