//! Admin REST for `non-persistent://` topics: the namespace's topic lists, `stats` (with
//! `msgDropRate` on the topic, its publishers' side, each subscription and each replicator),
//! partitioned-topic metadata, and a topic's delete and unload.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, put};
use axum::Json;
use serde_json::json;

use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::closing::closing_producers;
use crate::admin::machinery::state::Ctx;
use crate::admin::machinery::topic_path::{DeferredTopicPath, TopicPath};
use crate::http::{broker_fail, no_content};

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new()
        .route(
            "/admin/v2/non-persistent/{tenant}/{ns}",
            Access::Tenant,
            get(list_topics),
        )
        .route(
            "/admin/v2/non-persistent/{tenant}/{ns}/partitioned",
            Access::Tenant,
            get(list_partitioned),
        )
        .route(
            "/admin/v2/non-persistent/{tenant}/{ns}/{topic}/stats",
            Access::Tenant,
            get(stats),
        )
        .route(
            "/admin/v2/non-persistent/{tenant}/{ns}/{topic}/partitions",
            Access::Tenant,
            get(get_partitions).put(create_partitions),
        )
        .route(
            "/admin/v2/non-persistent/{tenant}/{ns}/{topic}",
            Access::Tenant,
            delete(delete_topic),
        )
        .route(
            "/admin/v2/non-persistent/{tenant}/{ns}/{topic}/unload",
            Access::Tenant,
            put(unload_topic),
        )
}

/// `DELETE /admin/v2/non-persistent/{t}/{ns}/{topic}[?force=true]`: 404 for a topic not loaded
/// (a non-persistent topic exists only while loaded), 412 while producers or consumers are
/// connected; with `force` they are closed.
async fn delete_topic(
    State(ctx): Ctx,
    TopicPath(name): TopicPath,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let force = crate::admin::machinery::closing::forced(&q);
    closing_producers(&ctx, move |svc| svc.remove_non_persistent(&name, force)).await
}

/// `PUT /admin/v2/non-persistent/{t}/{ns}/{topic}/unload`: the topic closed, its clients
/// reconnect to a new one of that name; 404 for a topic not loaded.
async fn unload_topic(State(ctx): Ctx, TopicPath(name): TopicPath) -> Response {
    closing_producers(&ctx, move |svc| svc.remove_non_persistent(&name, true)).await
}

/// `GET /admin/v2/non-persistent/{tenant}/{ns}`: the namespace's live non-persistent topics, as
/// Pulsar's `NonPersistentTopics.getList` (partitions appear once loaded).
async fn list_topics(State(ctx): Ctx, Path((tenant, ns)): Path<(String, String)>) -> Response {
    let namespace = format!("{tenant}/{ns}");
    if let Some(r) = crate::admin::namespaces::lifecycle::missing(&ctx, &namespace) {
        return r;
    }
    let mut names: Vec<String> = ctx
        .service
        .non_persistent_topics()
        .iter()
        .filter(|t| t.name.namespace_name() == namespace)
        .map(|t| t.name.to_string())
        .collect();
    names.sort();
    Json(names).into_response()
}

/// `GET /admin/v2/non-persistent/{tenant}/{ns}/partitioned`.
async fn list_partitioned(State(ctx): Ctx, Path((tenant, ns)): Path<(String, String)>) -> Response {
    let namespace = format!("{tenant}/{ns}");
    if let Some(r) = crate::admin::namespaces::lifecycle::missing(&ctx, &namespace) {
        return r;
    }
    Json(super::lifecycle::partitioned_names(&ctx, &namespace, false)).into_response()
}

async fn stats(State(ctx): Ctx, TopicPath(name): TopicPath) -> Response {
    let topic = match ctx.service.non_persistent_topic(&name, false) {
        Ok(t) => t,
        Err(e) => return broker_fail(&e),
    };
    let (rate_in, tput_in) = topic.msg_in.rates();
    let mut subs = serde_json::Map::new();
    let (mut rate_out, mut tput_out) = (0.0, 0.0);
    for s in topic.subscriptions() {
        let consumers: Vec<serde_json::Value> = s
            .consumers()
            .iter()
            .map(|c| {
                let (cr, ct) = c.out.rates();
                rate_out += cr;
                tput_out += ct;
                json!({
                    "consumerName": c.name,
                    "msgRateOut": cr,
                    "msgThroughputOut": ct,
                    "msgOutCounter": c.out.total(),
                    "availablePermits": c.permits.get(),
                    "address": c.address,
                })
            })
            .collect();
        subs.insert(
            s.name.clone(),
            json!({
                "type": s.sub_type().map_or("Exclusive", |t| t.as_str()),
                "msgBacklog": 0,
                "msgDropRate": s.msg_drop.rates().0,
                "msgDropCounter": s.msg_drop.total(),
                "consumers": consumers,
                "isDurable": false,
            }),
        );
    }
    // Another cluster's replicator producer is not a publisher (Pulsar lists it under
    // `replication`).
    let prefix = &ctx.service.config.replicator_prefix;
    let publishers: Vec<serde_json::Value> = topic
        .producers()
        .into_iter()
        .filter(|p| !crate::replication::is_replicator_producer(prefix, p))
        .map(|p| json!({ "producerName": p, "msgDropRate": 0.0 }))
        .collect();
    Json(json!({
        "msgRateIn": rate_in,
        "msgThroughputIn": tput_in,
        "msgInCounter": topic.msg_in.total(),
        "bytesInCounter": topic.msg_in.total_bytes(),
        "msgRateOut": rate_out,
        "msgThroughputOut": tput_out,
        "msgDropRate": topic.msg_drop.rates().0,
        "storageSize": 0,
        "backlogSize": 0,
        "publishers": publishers,
        "subscriptions": subs,
        "replication": super::replication_stats::non_persistent_replication_json(&ctx, &topic),
    }))
    .into_response()
}

async fn get_partitions(State(ctx): Ctx, TopicPath(name): TopicPath) -> Response {
    match ctx.service.partitions(&name, false) {
        Ok(n) => Json(json!({ "partitions": n, "deleted": false })).into_response(),
        Err(e) => broker_fail(&e),
    }
}

async fn create_partitions(State(ctx): Ctx, path: DeferredTopicPath, body: String) -> Response {
    // The body is read before the name is checked (an undecodable body is refused first).
    let TopicPath(name) = match path {
        Ok(p) => p,
        Err(r) => return r,
    };
    let n = match super::lifecycle::create_count(&body) {
        Ok(n) => n,
        Err(r) => return *r,
    };
    let max = ctx.service.max_partitions();
    if max > 0 && n > max {
        return crate::http::fail(
            axum::http::StatusCode::NOT_ACCEPTABLE,
            format!("Number of partitions should be less than or equal to {max}"),
        );
    }
    // The metadata write runs on the blocking pool.
    no_content(&ctx, move |svc| svc.create_partitioned(&name, n)).await
}
