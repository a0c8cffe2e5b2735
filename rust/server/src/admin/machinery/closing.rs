//! Topic changes that close their clients (a delete, a forced delete, an unload): the change
//! runs on the blocking pool (it closes ledgers and writes metadata), then each producer it
//! unregistered is told `CLOSE_PRODUCER`, so its client reconnects, as after Pulsar's.

use std::collections::HashMap;
use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use pulsar_rs_broker::{BrokerError, BrokerService};

use crate::context::ServerContext;
use crate::http::{broker_fail, fail};

/// Runs `change` (answering the handles of the producers it unregistered), then closes those
/// producers: 204, or the error.
pub(in crate::admin) async fn closing_producers(
    ctx: &Arc<ServerContext>,
    change: impl FnOnce(&BrokerService) -> Result<Vec<u64>, BrokerError> + Send + 'static,
) -> Response {
    let svc = Arc::clone(&ctx.service);
    match tokio::task::spawn_blocking(move || change(&svc)).await {
        Ok(Ok(producers)) => {
            for handle in producers {
                ctx.fence_producer(handle);
            }
            StatusCode::NO_CONTENT.into_response()
        }
        Ok(Err(e)) => broker_fail(&e),
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// Pulsar's `force` query parameter of a delete (`false` unless `true`).
pub(in crate::admin) fn forced(q: &HashMap<String, String>) -> bool {
    q.get("force").is_some_and(|v| v == "true")
}
