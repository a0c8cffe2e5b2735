//! Pulsar's `httpRequestsLimitEnabled` / `httpRequestsMaxPerSecond` (its `RateLimitingFilter`):
//! admin HTTP requests above the broker-wide rate are refused with 429 before any handler runs.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use pulsar_rs_broker::rate::TokenBucket;

use crate::http::fail;

/// The admin request budget; absent when the limit is off.
pub(crate) struct RequestLimit {
    /// Requests per second, burst of one second's worth; shared by every request task (its
    /// counters are atomics, see [`TokenBucket`]).
    bucket: TokenBucket,
}

impl RequestLimit {
    /// The limit of these settings, if enabled.
    pub(crate) fn from_config(c: &pulsar_rs_broker::config::BrokerConfig) -> Option<Arc<Self>> {
        c.http_requests_limit_enabled.then(|| {
            Arc::new(RequestLimit {
                bucket: TokenBucket::new(c.http_requests_max_per_second),
            })
        })
    }
}

/// Middleware: 429 "Too Many Requests" when the budget is spent.
pub(crate) async fn limit(
    State(limit): State<Arc<RequestLimit>>,
    req: Request,
    next: Next,
) -> Response {
    if !limit.bucket.try_consume(1.0) {
        return fail(StatusCode::TOO_MANY_REQUESTS, "Too Many Requests");
    }
    next.run(req).await
}
