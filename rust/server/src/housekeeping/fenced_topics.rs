//! On BookKeeper, every second: topics another owner fenced are unloaded and their producers
//! told CloseProducer, so clients reconnect (Pulsar closes such a topic at the failed add).

use std::sync::Arc;

use tokio::sync::watch;

use crate::context::ServerContext;

/// The task, until shutdown.
pub(super) async fn run(ctx: Arc<ServerContext>, mut shutdown: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        let service = Arc::clone(&ctx.service);
        let handles = tokio::task::spawn_blocking(move || service.unload_fenced_topics()).await;
        for handle in handles.unwrap_or_default() {
            ctx.fence_producer(handle);
        }
    }
}
