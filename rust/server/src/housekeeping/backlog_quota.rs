//! Periodic backlog quota check (`backlogQuotaCheckIntervalInSeconds`, when
//! `backlogQuotaCheckEnabled`): producer-blocking policies disconnect the topic's producers;
//! eviction moves the slowest cursors. With `exposeSubscriptionBacklogAgeInPrometheus` it also
//! keeps each durable subscription's backlog age (PIP-492).

use std::sync::Arc;

use tokio::sync::watch;

use crate::context::ServerContext;

/// The task, until shutdown; returns at once when the check is off.
pub(super) async fn run(ctx: Arc<ServerContext>, mut shutdown: watch::Receiver<bool>) {
    let cfg = Arc::clone(&ctx.service.config);
    if !cfg.backlog_quota_check_enabled {
        return;
    }
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(
        cfg.backlog_quota_check_interval_in_seconds.max(1),
    ));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        let service = Arc::clone(&ctx.service);
        let now = service.clock().now_ms();
        let ages = cfg.expose_subscription_backlog_age_in_prometheus;
        let outcome = tokio::task::spawn_blocking(move || {
            let mut blocked = Vec::new();
            for t in service.loaded_topics() {
                // PIP-492: on the blocking pool, as the read of an entry may block.
                if ages {
                    for s in t.subscriptions() {
                        if let Err(e) = s.update_backlog_age() {
                            tracing::warn!(topic = %t.name, subscription = %s.name, error = %e, "subscription backlog age");
                        }
                    }
                }
                match service.check_backlog_quota(&t, now) {
                    Ok(pulsar_rs_broker::QuotaVerdict::Blocked(_)) => {
                        blocked.extend(t.take_producers())
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(topic = %t.name, error = %e, "backlog quota check failed")
                    }
                }
            }
            blocked
        })
        .await;
        for handle in outcome.unwrap_or_default() {
            ctx.fence_producer(handle);
        }
    }
}
