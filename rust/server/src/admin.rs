//! Admin REST API (Pulsar's `/admin/v2/...` paths) and Prometheus metrics.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use pulsar_rs_broker::{BrokerError, TopicName};
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

/// Serves the admin API until shutdown (plain TCP, or a [`crate::tls::TlsListener`]).
pub async fn serve<L>(listener: L, ctx: Arc<ServerContext>, mut shutdown: watch::Receiver<bool>)
where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    let app = Router::new()
        .route("/admin/v2/brokers/health", get(|| async { "ok" }))
        .route("/admin/v2/persistent/{tenant}/{ns}", get(list_topics))
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/partitioned",
            get(list_partitioned),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/partitions",
            get(get_partitions)
                .put(create_partitions)
                .delete(delete_partitioned),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}",
            axum::routing::put(create_topic).delete(delete_topic),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/stats",
            get(topic_stats),
        )
        .route("/metrics", get(crate::metrics::render))
        .merge(crate::admin_policies::routes())
        .merge(crate::authz::routes())
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&ctx),
            crate::auth::admin_guard,
        ))
        .merge(crate::console::routes(&ctx))
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

async fn list_topics(State(ctx): Ctx, Path((tenant, ns)): Path<(String, String)>) -> Response {
    let names: Vec<String> = ctx
        .service
        .topics_of_namespace(&format!("{tenant}/{ns}"))
        .iter()
        .map(ToString::to_string)
        .collect();
    Json(names).into_response()
}

async fn list_partitioned(State(ctx): Ctx, Path((tenant, ns)): Path<(String, String)>) -> Response {
    let names: Vec<String> = ctx
        .service
        .partitioned_topics(&format!("{tenant}/{ns}"))
        .iter()
        .map(|(t, _)| t.to_string())
        .collect();
    Json(names).into_response()
}

async fn get_partitions(
    State(ctx): Ctx,
    Path((tenant, ns, topic)): Path<(String, String, String)>,
) -> Response {
    let name = match topic_name(&tenant, &ns, &topic) {
        Ok(n) => n,
        Err(r) => return *r,
    };
    match ctx.service.partitions(&name, false) {
        Ok(n) => Json(json!({ "partitions": n })).into_response(),
        Err(e) => broker_fail(&e),
    }
}

async fn create_partitions(
    State(ctx): Ctx,
    Path((tenant, ns, topic)): Path<(String, String, String)>,
    body: String,
) -> Response {
    let name = match topic_name(&tenant, &ns, &topic) {
        Ok(n) => n,
        Err(r) => return *r,
    };
    let Ok(n) = body.trim().parse::<u32>() else {
        return fail(
            StatusCode::BAD_REQUEST,
            "body must be the number of partitions",
        );
    };
    no_content(&ctx, move |svc| svc.create_partitioned(&name, n)).await
}

async fn delete_partitioned(
    State(ctx): Ctx,
    Path((tenant, ns, topic)): Path<(String, String, String)>,
) -> Response {
    let name = match topic_name(&tenant, &ns, &topic) {
        Ok(n) => n,
        Err(r) => return *r,
    };
    no_content(&ctx, move |svc| svc.delete_partitioned(&name)).await
}

async fn create_topic(
    State(ctx): Ctx,
    Path((tenant, ns, topic)): Path<(String, String, String)>,
) -> Response {
    let name = match topic_name(&tenant, &ns, &topic) {
        Ok(n) => n,
        Err(r) => return *r,
    };
    if ctx.service.loaded_topic(&name).is_some()
        || ctx
            .service
            .topics_of_namespace(&name.namespace_name())
            .contains(&name)
    {
        return fail(StatusCode::CONFLICT, "This topic already exists");
    }
    no_content(&ctx, move |svc| svc.topic(&name, true).map(drop)).await
}

async fn delete_topic(
    State(ctx): Ctx,
    Path((tenant, ns, topic)): Path<(String, String, String)>,
) -> Response {
    let name = match topic_name(&tenant, &ns, &topic) {
        Ok(n) => n,
        Err(r) => return *r,
    };
    no_content(&ctx, move |svc| svc.delete_topic(&name)).await
}

async fn topic_stats(
    State(ctx): Ctx,
    Path((tenant, ns, topic)): Path<(String, String, String)>,
) -> Response {
    let name = match topic_name(&tenant, &ns, &topic) {
        Ok(n) => n,
        Err(r) => return *r,
    };
    let topic = match ctx.service.topic(&name, false) {
        Ok(t) => t,
        Err(e) => return broker_fail(&e),
    };
    let (rate_in, tput_in) = topic.msg_in.rates();
    let ml = topic.ledger.stats();
    let mut subs = serde_json::Map::new();
    let (mut rate_out, mut tput_out) = (0.0, 0.0);
    for s in topic.subscriptions() {
        let (r, t) = s.out.rates();
        rate_out += r;
        tput_out += t;
        let consumers: Vec<serde_json::Value> = s
            .consumers()
            .iter()
            .map(|c| {
                let (cr, ct) = c.out.rates();
                json!({
                    "consumerName": c.name,
                    "msgRateOut": cr,
                    "msgThroughputOut": ct,
                    "availablePermits": c.permits.get(),
                    "unackedMessages": c.unacked(),
                    "blockedConsumerOnUnackedMsgs": c.is_blocked(),
                    "address": c.address,
                })
            })
            .collect();
        subs.insert(
            s.name.clone(),
            json!({
                "msgRateOut": r,
                "msgThroughputOut": t,
                "msgBacklog": s.cursor.backlog(),
                "backlogSize": s.cursor.estimated_backlog_size(),
                "unackedMessages": s.unacked_messages(),
                "blockedSubscriptionOnUnackedMsgs": s.is_blocked_on_unacked(),
                "msgDelayed": s.delayed_len(),
                "activeConsumerName": s.active_consumer().map(|c| c.name.clone()),
                "type": s.sub_type().map_or("None", |t| t.as_str()),
                "isDurable": s.durable,
                "consumers": consumers,
            }),
        );
    }
    let publishers: Vec<serde_json::Value> = topic
        .producers()
        .iter()
        .map(|p| json!({ "producerName": p.name, "address": p.address }))
        .collect();
    Json(json!({
        "msgRateIn": rate_in,
        "msgThroughputIn": tput_in,
        "msgRateOut": rate_out,
        "msgThroughputOut": tput_out,
        "msgInCounter": topic.msg_in.total(),
        "bytesInCounter": topic.msg_in.total_bytes(),
        "storageSize": ml.total_size,
        "backlogSize": topic.backlog_size(),
        "publishers": publishers,
        "subscriptions": subs,
    }))
    .into_response()
}
