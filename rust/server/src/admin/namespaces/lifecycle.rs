//! Namespaces (`/admin/v2/namespaces/{tenant}[/{ns}]`): list, create (PUT with an optional
//! `Policies` body), get (the `Policies` document with Pulsar's field names), delete (409 when
//! it holds topics), with Pulsar's status codes (v2 `Namespaces`).
//!
//! The document is stored as the broker's namespace `Policies` ([`crate::policies_document`]);
//! in a cluster it is also written to the metadata store, where every broker reads it.

// Helpers return the ready 4xx response as their error; the admin path is cold.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use pulsar_rs_broker::policies::Policies;
use serde_json::{Map, Value};

use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::Ctx;
use crate::cluster::bundles;
use crate::context::ServerContext;
use crate::http::{blocking, fail};
use crate::policies_document::{document, parse_document};
use crate::resources::valid_name;
use crate::standalone_defaults::Kind;

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new()
        .route("/admin/v2/namespaces/{tenant}", Access::Tenant, get(list))
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}",
            Access::Tenant,
            get(get_one).put(create).delete(delete),
        )
}

/// The 404 for a namespace that does not exist, or `None`.
pub(crate) fn missing(ctx: &ServerContext, ns: &str) -> Option<Response> {
    (!ctx.service.policies.namespace_exists(ns))
        .then(|| fail(StatusCode::NOT_FOUND, "Namespace does not exist"))
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
    let mut doc = document(&p, &ctx.service.config.cluster_name);
    // The bundles `namespaces bundles` answers (in a cluster the store's, split or not).
    match bundles::boundaries(&ctx, &ns).await {
        Ok(b) => match serde_json::to_value(pulsar_rs_cluster::bundles::bundles_data(&b)) {
            Ok(v) => doc[bundles::BUNDLES_FIELD] = v,
            Err(e) => return fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        },
        Err(r) => return r,
    }
    Json(doc).into_response()
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
    // The replication clusters the body names (Pulsar's `validatePolicies`; an empty list is
    // the local cluster).
    let named: Vec<String> = doc
        .get(pulsar_rs_broker::policies::replication::NAMESPACE_FIELD)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    if let Err(r) = super::allowed_clusters::allowed_for_tenant(&ctx, &tenant, &named) {
        return r;
    }
    let mut policies = match parse_document(&doc, &ctx.service.config.cluster_name) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let default_bundles = ctx.service.config.default_number_of_namespace_bundles;
    match bundles::at_creation(&doc, default_bundles) {
        Ok(b) => bundles::record(&mut policies, &b),
        Err(r) => return r,
    }
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
    match crate::cluster::sync::share_new_namespace(&ctx, &tenant, &shared).await {
        Ok(()) => created,
        Err(e) => fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    }
}

/// `DELETE /admin/v2/namespaces/{tenant}/{ns}[?force=true]` (Pulsar's `deleteNamespace`): 409
/// while the namespace has topics; with `force` (allowed by `forceDeleteNamespaceAllowed`,
/// else 405) its topics are deleted first, their clients disconnected.
async fn delete(
    State(ctx): Ctx,
    Path((tenant, ns)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let ns = format!("{tenant}/{ns}");
    if crate::admin::machinery::closing::forced(&q) {
        if !ctx.service.config.force_delete_namespace_allowed {
            return fail(
                StatusCode::METHOD_NOT_ALLOWED,
                "Broker doesn't allow forced deletion of namespaces",
            );
        }
        if ctx.cluster.get().is_some() {
            // The topics are their owners' to delete, across brokers: not done yet.
            return fail(
                StatusCode::NOT_IMPLEMENTED,
                "forced namespace deletion is not supported in a cluster yet",
            );
        }
        if let Some(r) = missing(&ctx, &ns) {
            return r;
        }
        let of = ns.clone();
        let deleted = crate::admin::machinery::closing::closing_producers(&ctx, move |svc| {
            svc.delete_namespace_topics(&of)
        })
        .await;
        if deleted.status() != StatusCode::NO_CONTENT {
            return deleted;
        }
    }
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
