//! Topics: list, create and delete (non-partitioned and partitioned), partition metadata and
//! its update (`stats` and `partitioned-stats` live in [`super::stats`], `internalStats` and
//! `partitioned-internalStats` in [`super::internal_stats`]).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use pulsar_rs_broker::service::topic_quota::EAGER_PARTITIONS;
use pulsar_rs_broker::BrokerError;
use serde_json::{json, Value};

use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::Ctx;
use crate::admin::machinery::topic_path::{DeferredTopicPath, TopicPath};
use crate::context::ServerContext;
use crate::http::{broker_fail, fail, no_content};

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new()
        .route(
            "/admin/v2/persistent/{tenant}/{ns}",
            Access::Tenant,
            get(list_topics),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/partitioned",
            Access::Tenant,
            get(list_partitioned),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/partitions",
            Access::TopicRead,
            get(get_partitions)
                .put(create_partitions)
                .post(update_partitions)
                .delete(delete_partitioned),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}",
            Access::Tenant,
            axum::routing::put(create_topic).delete(delete_topic),
        )
}

/// `GET /admin/v2/persistent/{tenant}/{ns}`, with PIP-452's `?properties=k1=v1,k2=v2` (what
/// they do is `pulsarResourcesExtendedClassName`'s choice).
async fn list_topics(
    State(ctx): Ctx,
    Path((tenant, ns)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = crate::admin::namespaces::lifecycle::missing(&ctx, &format!("{tenant}/{ns}")) {
        return r;
    }
    let properties = match q
        .get("properties")
        .map(|p| super::listing::parse_properties(p))
    {
        Some(Err(r)) => return r,
        Some(Ok(p)) => p,
        None => std::collections::BTreeMap::new(),
    };
    if let Err(e) = crate::cluster::member::refresh_known_topics(&ctx).await {
        return fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string());
    }
    let names: Vec<String> = ctx
        .service
        .topics_of_namespace(&format!("{tenant}/{ns}"))
        .iter()
        .map(ToString::to_string)
        .collect();
    Json(ctx.service.list_by_properties(names, &properties)).into_response()
}

async fn list_partitioned(State(ctx): Ctx, Path((tenant, ns)): Path<(String, String)>) -> Response {
    if let Some(r) = crate::admin::namespaces::lifecycle::missing(&ctx, &format!("{tenant}/{ns}")) {
        return r;
    }
    Json(partitioned_names(&ctx, &format!("{tenant}/{ns}"), true)).into_response()
}

/// The partitioned topics of one domain in `namespace`.
pub(in crate::admin) fn partitioned_names(
    ctx: &ServerContext,
    namespace: &str,
    persistent: bool,
) -> Vec<String> {
    ctx.service
        .partitioned_topics(namespace)
        .iter()
        .filter(|(t, _)| t.is_persistent() == persistent)
        .map(|(t, _)| t.to_string())
        .collect()
}

async fn get_partitions(
    State(ctx): Ctx,
    TopicPath(name): TopicPath,
    axum::extract::Query(q): axum::extract::Query<std::collections::HashMap<String, String>>,
) -> Response {
    // `checkAllowAutoCreation=true` (HTTP lookups): auto-create as PARTITIONED_METADATA does.
    let auto_create = q.get("checkAllowAutoCreation").is_some_and(|v| v == "true");
    if ctx.cluster.get().is_some() {
        // In a cluster the store's record answers (a topic another broker created).
        match super::partitions::count(&ctx, &name).await {
            Ok(n) if n > 0 && name.partition_index().is_none() => {
                return Json(json!({ "partitions": n, "deleted": false })).into_response();
            }
            Ok(_) => {}
            Err(r) => return r,
        }
    }
    match ctx.service.partitions(&name, auto_create) {
        // As Pulsar: without auto-creation, a topic that is neither partitioned nor stored (nor a
        // partition within its topic's count) is 404.
        Ok(0) if !auto_create && !crate::admin::machinery::topic_path::exists(&ctx, &name) => {
            fail(StatusCode::NOT_FOUND, format!("Topic {name} not found"))
        }
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
    if let Some(r) = crate::admin::namespaces::lifecycle::missing(&ctx, &name.namespace_name()) {
        return r;
    }
    let n = match create_count(&body) {
        Ok(n) => n,
        Err(r) => return *r,
    };
    let properties = create_properties(&body, true);
    let max = ctx.service.max_partitions();
    if max > 0 && n > max {
        return fail(
            StatusCode::NOT_ACCEPTABLE,
            format!("Number of partitions should be less than or equal to {max}"),
        );
    }
    if ctx.service.partitions(&name, false).unwrap_or(0) == 0 {
        if let Err(e) = ctx.service.admit_new_topics(&name.namespace_name(), n) {
            return fail(StatusCode::PRECONDITION_FAILED, e.to_string());
        }
    }
    if let Some(member) = ctx.cluster.get() {
        // In a cluster the store's record is the one every broker answers from; the partitions
        // are created on first use by their owners (loading them here would take them over).
        match member.partitions(&name.to_string()).await {
            Ok(Some(_)) => {
                return fail(
                    StatusCode::CONFLICT,
                    format!("This topic already exists: {name}"),
                )
            }
            Ok(None) => {}
            Err(e) => return fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        }
        if let Err(e) = member.record_partitions(&name.to_string(), n).await {
            return fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string());
        }
        return no_content(&ctx, move |svc| {
            svc.create_partitioned(&name, n)?;
            store_properties(svc, &name, properties)
        })
        .await;
    }
    // As Pulsar (`tryCreatePartitionsAsync`): the partitions are created with the partitioned
    // topic, so they are listed (and collected as inactive topics) before anyone uses them; past
    // EAGER_PARTITIONS they are created on first use, so the work of one request is bounded
    // whatever count it declares (they are listed all the same).
    no_content(&ctx, move |svc| {
        svc.create_partitioned(&name, n)?;
        store_properties(svc, &name, properties)?;
        create_partitions_from(svc, &name, 0, n.min(EAGER_PARTITIONS))
    })
    .await
}

/// The `properties` of a create body: a `PartitionedTopicMetadata` document's, or (a
/// non-partitioned topic's PUT) the body itself, a JSON map; none for any other body.
fn create_properties(body: &str, partitioned: bool) -> Option<HashMap<String, String>> {
    let doc: Value = serde_json::from_str(body.trim()).ok()?;
    let map = if partitioned {
        doc.get("properties")?.clone()
    } else {
        doc
    };
    serde_json::from_value(map).ok()
}

/// Keeps the properties a topic is created with (Pulsar's `createPartitionedTopic` /
/// `createNonPartitionedTopic` with properties).
fn store_properties(
    svc: &pulsar_rs_broker::BrokerService,
    name: &pulsar_rs_broker::TopicName,
    properties: Option<HashMap<String, String>>,
) -> Result<(), BrokerError> {
    match properties {
        Some(p) if !p.is_empty() => svc.policies.update_topic(
            name,
            crate::admin::namespaces::policies::merge_properties(p),
        ),
        _ => Ok(()),
    }
}

/// Creates (loads, storing them) the persistent partitions `from..to` of `name`.
pub(in crate::admin) fn create_partitions_from(
    svc: &pulsar_rs_broker::BrokerService,
    name: &pulsar_rs_broker::TopicName,
    from: u32,
    to: u32,
) -> Result<(), pulsar_rs_broker::BrokerError> {
    if name.is_persistent() {
        for i in from..to {
            svc.topic(&name.partition(i), true)?;
        }
    }
    Ok(())
}

/// The count of a partitioned-topic create body, or the refusal Pulsar answers: 406 for a count
/// under 1, 400 for a body that is not a count.
pub(in crate::admin) fn create_count(body: &str) -> Result<u32, Box<Response>> {
    match partition_count(body) {
        Some(n) if n <= 0 => Err(Box::new(fail(
            StatusCode::NOT_ACCEPTABLE,
            "Number of partitions should be more than 0",
        ))),
        Some(n) => Ok(u32::try_from(n).unwrap_or(u32::MAX)),
        None => Err(Box::new(fail(
            StatusCode::BAD_REQUEST,
            "body must be the number of partitions",
        ))),
    }
}

/// The partition count of a create body: the number itself, or (Pulsar's
/// `application/vnd.partitioned-topic-metadata+json`, which `pulsaradmin` and the Java admin client
/// send) a `PartitionedTopicMetadata` document `{"partitions": n, ...}`.
pub(in crate::admin) fn partition_count(body: &str) -> Option<i64> {
    let body = body.trim();
    if body.starts_with('{') {
        let doc: Value = serde_json::from_str(body).ok()?;
        return doc.get("partitions")?.as_i64();
    }
    body.parse::<i64>().ok()
}

/// `POST .../partitions` (Pulsar's `updatePartitionedTopic`): the body is the new count. As Pulsar
/// answers: 409 for a topic that is not partitioned, 422 for a count below the current one (0 and
/// negative counts included), 204 and nothing changed for the current count.
async fn update_partitions(State(ctx): Ctx, path: DeferredTopicPath, body: String) -> Response {
    // The body is read before the name is checked (an undecodable body is refused first).
    let TopicPath(name) = match path {
        Ok(p) => p,
        Err(r) => return r,
    };
    let Ok(n) = body.trim().parse::<i64>() else {
        return fail(
            StatusCode::BAD_REQUEST,
            "body must be the number of partitions",
        );
    };
    let current = ctx.service.partitions(&name, false).unwrap_or(0);
    if current == 0 {
        return fail(
            StatusCode::CONFLICT,
            format!("Topic {name} is not the partitioned topic."),
        );
    }
    if n < i64::from(current) {
        return fail(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("Desired partitions {n} can't be less than the current partitions {current}."),
        );
    }
    if n == i64::from(current) {
        return StatusCode::NO_CONTENT.into_response();
    }
    let max = ctx.service.max_partitions();
    if max > 0 && n > i64::from(max) {
        return fail(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("Desired partitions {n} can't be greater than the maximum partitions per topic {max}."),
        );
    }
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    if let Some(member) = ctx.cluster.get() {
        // The store's record first: every broker's count is brought to it (`partitions::count`),
        // and the new partitions are created on first use by their owners.
        if let Err(e) = member.update_partitions(&name.to_string(), n).await {
            return fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string());
        }
        return no_content(&ctx, move |svc| svc.update_partitioned(&name, n)).await;
    }
    let svc = Arc::clone(&ctx.service);
    let grow = move || {
        svc.update_partitioned(&name, n)?;
        // Pulsar's `tryCreateExtendedPartitionsAsync`: the new partitions exist at once (up to
        // EAGER_PARTITIONS; the others on first use).
        create_partitions_from(
            &svc,
            &name,
            current.min(EAGER_PARTITIONS),
            n.min(EAGER_PARTITIONS),
        )
    };
    match tokio::task::spawn_blocking(grow).await {
        Ok(Ok(())) => StatusCode::NO_CONTENT.into_response(),
        Ok(Err(pulsar_rs_broker::BrokerError::NotAllowed(why))) => fail(StatusCode::CONFLICT, why),
        Ok(Err(e)) => broker_fail(&e),
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// `DELETE .../{topic}/partitions[?force=true]` (Pulsar's `deletePartitionedTopic`).
async fn delete_partitioned(
    State(ctx): Ctx,
    TopicPath(name): TopicPath,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let force = crate::admin::machinery::closing::forced(&q);
    if let Some(member) = ctx.cluster.get() {
        // Refused while a partition here is in use, before the store's record is touched.
        if !force {
            let (svc, n) = (Arc::clone(&ctx.service), name.clone());
            match tokio::task::spawn_blocking(move || svc.partitioned_idle(&n)).await {
                Ok(Ok(()) | Err(BrokerError::TopicNotFound(_))) => {}
                Ok(Err(e)) => return broker_fail(&e),
                Err(e) => return fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
            }
        }
        // The store's record goes first, so no broker adopts the topic again; the partitions
        // other brokers own were deleted by them (admin::fan_out).
        if let Err(e) = member.delete_partitions(&name.to_string()).await {
            return crate::http::cluster_fail(&e);
        }
    }
    crate::admin::machinery::closing::closing_producers(&ctx, move |svc| {
        svc.delete_partitioned(&name, force)
    })
    .await
}

async fn create_topic(State(ctx): Ctx, TopicPath(name): TopicPath, body: String) -> Response {
    if let Some(r) = crate::admin::namespaces::lifecycle::missing(&ctx, &name.namespace_name()) {
        return r;
    }
    if ctx.service.loaded_topic(&name).is_some()
        || ctx
            .service
            .topics_of_namespace(&name.namespace_name())
            .contains(&name)
    {
        return fail(StatusCode::CONFLICT, "This topic already exists");
    }
    // Pulsar answers a full namespace with 409 here (412 for a partitioned topic).
    if let Err(e) = ctx.service.admit_new_topics(&name.namespace_name(), 1) {
        return fail(StatusCode::CONFLICT, e.to_string());
    }
    let properties = create_properties(&body, false);
    no_content(&ctx, move |svc| {
        svc.topic(&name, true)?;
        store_properties(svc, &name, properties)
    })
    .await
}

/// `DELETE .../{topic}[?force=true]` (Pulsar's `deleteTopic`): 412 while producers or
/// consumers are connected; with `force` they are closed and the topic deleted.
async fn delete_topic(
    State(ctx): Ctx,
    TopicPath(name): TopicPath,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let force = crate::admin::machinery::closing::forced(&q);
    crate::admin::machinery::closing::closing_producers(&ctx, move |svc| {
        svc.delete_topic(&name, force)
    })
    .await
}
