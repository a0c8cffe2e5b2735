//! Namespaces (`/admin/v2/namespaces/{tenant}[/{ns}]`): list, create (PUT with an optional
//! `Policies` body), get (the `Policies` document with Pulsar's field names), delete (409 when
//! it holds topics), with Pulsar's status codes (v2 `Namespaces`).
//!
//! The document is stored as the broker's namespace `Policies`: the fields the broker applies
//! are typed (rates keyed by cluster in the document, backlog quotas, retention), every other
//! field of the document is kept as given and returned.

// Helpers return the ready 4xx response as their error; the admin path is cold.
#![allow(clippy::result_large_err)]

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use pulsar_rs_broker::policies::backlog_quota::BacklogQuota;
use pulsar_rs_broker::policies::Policies;
use serde_json::{json, Map, Value};

use super::Ctx;
use crate::http::{blocking, fail};
use crate::resources::valid_name;
use crate::standalone_defaults::Kind;
use crate::ServerContext;

/// The routes of this module.
pub(super) fn routes() -> Router<Arc<ServerContext>> {
    Router::new()
        .route("/admin/v2/namespaces/{tenant}", get(list))
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}",
            get(get_one).put(create).delete(delete),
        )
}

/// The 404 for a namespace that does not exist, or `None`.
pub(crate) fn missing(ctx: &ServerContext, ns: &str) -> Option<Response> {
    (!ctx.service.policies.namespace_exists(ns))
        .then(|| fail(StatusCode::NOT_FOUND, "Namespace does not exist"))
}

/// Renders stored policies as Pulsar's `Policies` document.
#[must_use]
pub fn document(p: &Policies, cluster: &str) -> Value {
    let per_cluster = |v: Option<Value>| match v {
        Some(v) => json!({ cluster: v }),
        None => json!({}),
    };
    let to = |v: Option<serde_json::Result<Value>>| v.and_then(Result::ok);
    let dispatch = per_cluster(to(p.dispatch_rate.map(serde_json::to_value)));
    let mut doc = json!({
        "auth_policies": serde_json::to_value(&p.auth_policies).unwrap_or_default(),
        "replication_clusters": [cluster],
        "bundles": {"boundaries": ["0x00000000", "0xffffffff"], "numBundles": 1},
        "backlog_quota_map": serde_json::to_value(&p.backlog_quota_map).unwrap_or_default(),
        "clusterDispatchRate": dispatch.clone(),
        "topicDispatchRate": dispatch,
        "subscriptionDispatchRate":
            per_cluster(to(p.subscription_dispatch_rate.map(serde_json::to_value))),
        "replicatorDispatchRate": {},
        "clusterSubscribeRate": {},
        "publishMaxMessageRate": per_cluster(to(p.publish_rate.map(serde_json::to_value))),
        "latency_stats_sample_rate": {},
        "subscription_expiration_time_minutes": 0,
        "retention_policies": to(p.retention.map(serde_json::to_value)),
        "deleted": false,
        "encryption_required": false,
        "subscription_auth_mode": "None",
        "offload_threshold": -1,
        "schema_auto_update_compatibility_strategy": "Full",
        "schema_compatibility_strategy": p.schema_compatibility_strategy.unwrap_or_default(),
        "is_allow_auto_update_schema": p.is_allow_auto_update_schema.unwrap_or(true),
        "schema_validation_enforced": p.schema_validation_enforced.unwrap_or(false),
        "subscription_types_enabled": [],
        "properties": {},
    });
    if let Value::Object(m) = &mut doc {
        for (k, v) in &p.other {
            m.insert(k.clone(), v.clone());
        }
        if let Some(on) = p.deduplication_enabled {
            m.insert("deduplicationEnabled".into(), on.into());
        }
        if let Some(ttl) = p.message_ttl_in_seconds {
            m.insert("message_ttl_in_seconds".into(), ttl.into());
        }
        if let Some(Ok(v)) = p.inactive_topic_policies.map(serde_json::to_value) {
            m.insert("inactive_topic_policies".into(), v);
        }
        // The limits, when set (Pulsar leaves a null `Integer` out of the document).
        for (name, v) in limit_fields(p) {
            if let Some(v) = v {
                m.insert(name.into(), v.into());
            }
        }
    }
    doc
}

/// The namespace limits of a `Policies` document, by their JSON names.
fn limit_fields(p: &Policies) -> [(&'static str, Option<i32>); 5] {
    [
        ("max_producers_per_topic", p.max_producers_per_topic),
        ("max_consumers_per_topic", p.max_consumers_per_topic),
        (
            "max_consumers_per_subscription",
            p.max_consumers_per_subscription,
        ),
        ("max_subscriptions_per_topic", p.max_subscriptions_per_topic),
        ("max_topics_per_namespace", p.max_topics_per_namespace),
    ]
}

/// Fields the document renders itself (a body's values for them are not kept in `other`).
const RENDERED: [&str; 20] = [
    "deduplicationEnabled",
    "schema_compatibility_strategy",
    "is_allow_auto_update_schema",
    "schema_validation_enforced",
    "message_ttl_in_seconds",
    "inactive_topic_policies",
    "auth_policies",
    "backlog_quota_map",
    "clusterDispatchRate",
    "topicDispatchRate",
    "subscriptionDispatchRate",
    "publishMaxMessageRate",
    "retention_policies",
    "bundles",
    "replication_clusters",
    "max_producers_per_topic",
    "max_consumers_per_topic",
    "max_consumers_per_subscription",
    "max_subscriptions_per_topic",
    "max_topics_per_namespace",
];

/// Parses a `Policies` document (as Pulsar's admin clients send it) into stored policies.
///
/// # Errors
/// A field of the wrong shape, as the 400 response.
pub fn parse_document(doc: &Map<String, Value>, cluster: &str) -> Result<Policies, Response> {
    fn field<T: serde::de::DeserializeOwned>(name: &str, v: &Value) -> Result<T, Response> {
        serde_json::from_value(v.clone())
            .map_err(|e| fail(StatusCode::BAD_REQUEST, format!("invalid {name}: {e}")))
    }
    // A per-cluster map: this cluster's entry, else the only one.
    let mine = |name: &str| -> Option<&Value> {
        let m = doc.get(name)?.as_object()?;
        m.get(cluster)
            .or_else(|| (m.len() == 1).then(|| m.values().next()).flatten())
            .filter(|v| !v.is_null())
    };
    let mut p = Policies::default();
    if let Some(v) = mine("publishMaxMessageRate") {
        p.publish_rate = Some(field("publishMaxMessageRate", v)?);
    }
    if let Some(v) = mine("topicDispatchRate").or_else(|| mine("clusterDispatchRate")) {
        p.dispatch_rate = Some(field("topicDispatchRate", v)?);
    }
    if let Some(v) = mine("subscriptionDispatchRate") {
        p.subscription_dispatch_rate = Some(field("subscriptionDispatchRate", v)?);
    }
    if let Some(v) = doc.get("auth_policies").filter(|v| !v.is_null()) {
        p.auth_policies = field("auth_policies", v)?;
        crate::auth::authz::validate_actions(&p.auth_policies).map_err(|e| {
            fail(
                StatusCode::BAD_REQUEST,
                format!("invalid auth_policies: {e}"),
            )
        })?;
    }
    if let Some(v) = doc.get("retention_policies").filter(|v| !v.is_null()) {
        p.retention = Some(field("retention_policies", v)?);
    }
    if let Some(v) = doc.get("message_ttl_in_seconds").filter(|v| !v.is_null()) {
        p.message_ttl_in_seconds = Some(field("message_ttl_in_seconds", v)?);
    }
    if let Some(v) = doc.get("inactive_topic_policies").filter(|v| !v.is_null()) {
        p.inactive_topic_policies = Some(field("inactive_topic_policies", v)?);
    }
    if let Some(v) = doc
        .get("schema_compatibility_strategy")
        .filter(|v| !v.is_null())
    {
        p.schema_compatibility_strategy = Some(field("schema_compatibility_strategy", v)?);
    }
    if let Some(v) = doc
        .get("is_allow_auto_update_schema")
        .filter(|v| !v.is_null())
    {
        p.is_allow_auto_update_schema = Some(field("is_allow_auto_update_schema", v)?);
    }
    if let Some(v) = doc
        .get("schema_validation_enforced")
        .filter(|v| !v.is_null())
    {
        p.schema_validation_enforced = Some(field("schema_validation_enforced", v)?);
    }
    if let Some(Value::Object(m)) = doc.get("backlog_quota_map") {
        for (kind, q) in m {
            // `BacklogQuota` reads Pulsar's `limit` / `limitSize` pair itself.
            let q: BacklogQuota = field("backlog_quota_map", q)?;
            p.backlog_quota_map.insert(kind.clone(), q);
        }
    }
    if let Some(v) = doc.get("deduplicationEnabled").filter(|v| !v.is_null()) {
        p.deduplication_enabled = Some(field("deduplicationEnabled", v)?);
    }
    for (name, slot) in [
        ("max_producers_per_topic", &mut p.max_producers_per_topic),
        ("max_consumers_per_topic", &mut p.max_consumers_per_topic),
        (
            "max_consumers_per_subscription",
            &mut p.max_consumers_per_subscription,
        ),
        (
            "max_subscriptions_per_topic",
            &mut p.max_subscriptions_per_topic,
        ),
        ("max_topics_per_namespace", &mut p.max_topics_per_namespace),
    ] {
        if let Some(v) = doc.get(name).filter(|v| !v.is_null()) {
            // Kept as given: Pulsar stores and shows a negative limit, and reads it as unset
            // (`AbstractTopic.normalizeValue`; `Limits::resolve` here).
            *slot = Some(field(name, v)?);
        }
    }
    for (k, v) in doc {
        if !RENDERED.contains(&k.as_str()) {
            p.other.insert(k.clone(), v.clone());
        }
    }
    Ok(p)
}

async fn list(State(ctx): Ctx, Path(tenant): Path<String>) -> Response {
    if ctx.resources.tenant(&tenant).is_none() {
        return fail(StatusCode::NOT_FOUND, "Tenant does not exist");
    }
    let prefix = format!("{tenant}/");
    let names: Vec<String> = ctx
        .service
        .policies
        .namespaces()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    Json(names).into_response()
}

async fn get_one(State(ctx): Ctx, Path((tenant, ns)): Path<(String, String)>) -> Response {
    let ns = format!("{tenant}/{ns}");
    if let Some(r) = missing(&ctx, &ns) {
        return r;
    }
    let p = ctx.service.policies.namespace(&ns);
    Json(document(&p, &ctx.service.config.cluster_name)).into_response()
}

async fn create(
    State(ctx): Ctx,
    Path((tenant, name)): Path<(String, String)>,
    raw: axum::body::Bytes,
) -> Response {
    if !valid_name(&name) {
        return fail(
            StatusCode::PRECONDITION_FAILED,
            "Namespace name is not valid",
        );
    }
    if ctx.resources.tenant(&tenant).is_none() {
        return fail(StatusCode::NOT_FOUND, "Tenant does not exist");
    }
    let doc: Map<String, Value> = if raw.iter().all(u8::is_ascii_whitespace) {
        Map::new()
    } else {
        match serde_json::from_slice::<Option<Map<String, Value>>>(&raw) {
            Ok(d) => d.unwrap_or_default(),
            Err(e) => {
                return fail(
                    StatusCode::BAD_REQUEST,
                    format!("body must be a Policies JSON object: {e}"),
                )
            }
        }
    };
    let policies = match parse_document(&doc, &ctx.service.config.cluster_name) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let ns = format!("{tenant}/{name}");
    let shared = ns.clone();
    let created = blocking(
        &ctx,
        move |c| {
            let defaults = &c.resources.defaults;
            let untouched = |cur: &Policies| {
                let cur = serde_json::to_value(cur).unwrap_or_default();
                defaults.untouched(Kind::Namespace, &ns, &cur)
            };
            let replaced = c.service.policies.namespace_exists(&ns);
            match c
                .service
                .policies
                .create_namespace_replacing(&ns, policies, untouched)
            {
                Ok(()) => {
                    if replaced {
                        defaults.forget(Kind::Namespace, &ns)?;
                    }
                    c.service.refresh_policies();
                    Ok(true)
                }
                Err(pulsar_rs_broker::BrokerError::AlreadyExists(_)) => Ok(false),
                Err(e) => Err(e),
            }
        },
        |created| {
            if created {
                StatusCode::NO_CONTENT.into_response()
            } else {
                fail(StatusCode::CONFLICT, "Namespace already exists")
            }
        },
    )
    .await;
    if created.status() != StatusCode::NO_CONTENT {
        return created;
    }
    match share_namespace(&ctx, &tenant, &shared).await {
        Ok(()) => created,
        Err(r) => r,
    }
}

/// In a cluster, writes a namespace this broker created (and its tenant) to the store, where
/// lookups read its bundles and other brokers find it.
async fn share_namespace(ctx: &ServerContext, tenant: &str, ns: &str) -> Result<(), Response> {
    let Some(m) = ctx.cluster.get() else {
        return Ok(());
    };
    let info =
        serde_json::to_value(ctx.resources.tenant(tenant).unwrap_or_default()).unwrap_or_default();
    let shared = match m.ensure_tenant(tenant, &info).await {
        Ok(()) => m.ensure_namespace(ns).await,
        Err(e) => Err(e),
    };
    shared.map_err(|e| fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))
}

async fn delete(State(ctx): Ctx, Path((tenant, ns)): Path<(String, String)>) -> Response {
    let ns = format!("{tenant}/{ns}");
    if let Some(r) = missing(&ctx, &ns) {
        return r;
    }
    let busy = !ctx.service.topics_of_namespace(&ns).is_empty()
        || !ctx.service.partitioned_topics(&ns).is_empty();
    if busy {
        return fail(StatusCode::CONFLICT, "Cannot delete non empty namespace");
    }
    let shared = ns.clone();
    let deleted = blocking(
        &ctx,
        move |c| c.service.policies.delete_namespace(&ns),
        |()| StatusCode::NO_CONTENT.into_response(),
    )
    .await;
    if let (Some(m), StatusCode::NO_CONTENT) = (ctx.cluster.get(), deleted.status()) {
        if let Err(e) = m.delete_namespace(&shared).await {
            return fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string());
        }
    }
    deleted
}
