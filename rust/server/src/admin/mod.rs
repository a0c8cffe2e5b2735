//! Admin REST API (Pulsar's `/admin/v2/...` paths) and Prometheus metrics: the router, the
//! server loop and the helpers every resource module shares (error bodies, blocking calls,
//! path parsing). One module per resource: [`topics`], [`policies`], [`subscriptions`]
//! (permissions live in [`crate::authz`]).

mod policies;
mod subscriptions;
mod topics;

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use pulsar_rs_broker::{BrokerError, Topic, TopicName};
use serde_json::json;
use tokio::sync::watch;

use crate::ServerContext;

type Ctx = State<Arc<ServerContext>>;

/// Pulsar-style error body with a status code.
pub(crate) fn fail(status: StatusCode, reason: impl Into<String>) -> Response {
    (status, Json(json!({ "reason": reason.into() }))).into_response()
}

pub(crate) fn broker_fail(e: &BrokerError) -> Response {
    let status = match e {
        BrokerError::TopicNotFound(_) | BrokerError::SubscriptionNotFound(_) => {
            StatusCode::NOT_FOUND
        }
        BrokerError::AlreadyExists(_) => StatusCode::CONFLICT,
        BrokerError::InvalidTopicName { .. } | BrokerError::InvalidConfig { .. } => {
            StatusCode::PRECONDITION_FAILED
        }
        BrokerError::NotAllowed(_) => StatusCode::BAD_REQUEST,
        BrokerError::ConsumerBusy(_) | BrokerError::ProducerBusy(_) => StatusCode::CONFLICT,
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

/// The topic named by a REST path; the error is the ready 4xx response (boxed: it is large).
pub(crate) fn topic_name(tenant: &str, ns: &str, topic: &str) -> Result<TopicName, Box<Response>> {
    TopicName::parse(&format!("persistent://{tenant}/{ns}/{topic}"))
        .map_err(|e| Box::new(broker_fail(&e)))
}

/// The topic of a path, which must exist (partitioned or not); the error is the 404.
#[allow(clippy::result_large_err)] // cold path; the error is the ready response
pub(crate) fn existing_topic(
    ctx: &ServerContext,
    tenant: &str,
    ns: &str,
    topic: &str,
) -> Result<TopicName, Response> {
    let name = topic_name(tenant, ns, topic).map_err(|r| *r)?;
    let partitioned = ctx.service.partitions(&name, false).unwrap_or(0) > 0;
    let exists = partitioned
        || ctx.service.loaded_topic(&name).is_some()
        || ctx
            .service
            .topics_of_namespace(&name.namespace_name())
            .contains(&name);
    if exists {
        Ok(name)
    } else {
        Err(fail(
            StatusCode::NOT_FOUND,
            format!("Topic {name} not found"),
        ))
    }
}

/// The loaded topics a path addresses: the topic, or every partition of a partitioned topic.
pub(crate) fn targets(
    ctx: &ServerContext,
    name: &TopicName,
) -> Result<Vec<Arc<Topic>>, BrokerError> {
    let n = ctx.service.partitions(name, false)?;
    if n == 0 {
        return Ok(vec![ctx.service.topic(name, false)?]);
    }
    (0..n)
        .map(|i| ctx.service.topic(&name.partition(i), true))
        .collect()
}

/// Serves the admin API until shutdown (plain TCP, or a [`crate::tls::TlsListener`]).
pub async fn serve<L>(listener: L, ctx: Arc<ServerContext>, mut shutdown: watch::Receiver<bool>)
where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    let app = Router::new()
        .route("/admin/v2/brokers/health", get(|| async { "ok" }))
        .merge(topics::routes())
        .route("/metrics", get(crate::metrics::render))
        .merge(policies::routes())
        .merge(subscriptions::routes())
        .merge(crate::authz::routes())
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&ctx),
            crate::auth::admin_guard,
        ))
        .with_state(ctx);
    let stop = async move {
        let _ = shutdown.changed().await;
    };
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .await
    {
        tracing::warn!(error = %e, "admin server failed");
    }
}
