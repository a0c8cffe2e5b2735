//! What every HTTP handler of the admin port shares, below the admin routes, the web console
//! and the admin guard: Pulsar's error body, the mapping of broker errors onto status codes,
//! and running a blocking broker call off the async workers.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use pulsar_rs_broker::BrokerError;
use serde_json::json;

use crate::context::ServerContext;

/// Pulsar-style error body with a status code.
pub(crate) fn fail(status: StatusCode, reason: impl Into<String>) -> Response {
    (status, Json(json!({ "reason": reason.into() }))).into_response()
}

/// A cluster failure as an admin answer (404 for a namespace the cluster does not have, 412
/// for an invalid name, else 503).
pub(crate) fn cluster_fail(e: &pulsar_rs_cluster::ClusterError) -> Response {
    use pulsar_rs_cluster::ClusterError;
    let status = match e {
        ClusterError::NamespaceNotFound(_) => StatusCode::NOT_FOUND,
        ClusterError::InvalidName(_) => StatusCode::PRECONDITION_FAILED,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    };
    fail(status, e.to_string())
}

/// The response for a broker error: Pulsar's status code for its kind, the message as reason.
pub(crate) fn broker_fail(e: &BrokerError) -> Response {
    // A refused policy: its reason alone (a whole sentence, Pulsar's where it has one).
    if let BrokerError::InvalidConfig { key, reason } = e {
        let status = if key == pulsar_rs_broker::policies::RETENTION {
            StatusCode::BAD_REQUEST
        } else {
            StatusCode::PRECONDITION_FAILED
        };
        return fail(status, reason.clone());
    }
    let status = match e {
        BrokerError::TopicNotFound(_) | BrokerError::SubscriptionNotFound { .. } => {
            StatusCode::NOT_FOUND
        }
        BrokerError::AlreadyExists(_) => StatusCode::CONFLICT,
        BrokerError::InvalidTopicName { .. }
        | BrokerError::InvalidConfig { .. }
        | BrokerError::TopicBusy(_) => StatusCode::PRECONDITION_FAILED,
        BrokerError::NotAllowed(_) => StatusCode::BAD_REQUEST,
        BrokerError::ConsumerBusy(_) | BrokerError::ProducerBusy(_) => StatusCode::CONFLICT,
        BrokerError::NotServed(_) => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    fail(status, e.to_string())
}

/// Runs a blocking broker call on the blocking pool: 204 on success, the mapped error otherwise.
pub(crate) async fn no_content(
    ctx: &Arc<ServerContext>,
    f: impl FnOnce(&pulsar_rs_broker::BrokerService) -> Result<(), BrokerError> + Send + 'static,
) -> Response {
    let svc = Arc::clone(&ctx.service);
    match tokio::task::spawn_blocking(move || f(&svc)).await {
        Ok(Ok(())) => StatusCode::NO_CONTENT.into_response(),
        Ok(Err(e)) => broker_fail(&e),
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// Runs a blocking call on the blocking pool and renders its value with `done`; a broker
/// error is mapped by [`broker_fail`].
pub(crate) async fn blocking<T: Send + 'static>(
    ctx: &Arc<ServerContext>,
    f: impl FnOnce(&ServerContext) -> Result<T, BrokerError> + Send + 'static,
    done: impl FnOnce(T) -> Response,
) -> Response {
    let c = Arc::clone(ctx);
    match tokio::task::spawn_blocking(move || f(&c)).await {
        Ok(Ok(v)) => done(v),
        Ok(Err(e)) => broker_fail(&e),
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}
