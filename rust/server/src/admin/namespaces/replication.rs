//! A namespace's replication clusters (`/admin/v2/namespaces/{tenant}/{ns}/replication`), as
//! Pulsar's `internalSetNamespaceReplicationClusters` checks them: 412 for an empty list or
//! `global`, 403 for a cluster that is not registered or that the tenant's `allowedClusters`
//! leave out (an empty list here allows every cluster). Kept as the `replication_clusters`
//! field of the namespace's `Policies`; unset, the namespace stays in the local cluster.

use std::collections::BTreeSet;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use pulsar_rs_broker::policies::replication::NAMESPACE_FIELD;
use serde_json::Value;

use super::allowed_clusters::allowed_for_tenant;
use super::ns_policies::existing;
use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::Ctx;
use crate::http::fail;

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new().route(
        "/admin/v2/namespaces/{tenant}/{ns}/replication",
        Access::Tenant,
        get(get_clusters).post(set_clusters),
    )
}

async fn get_clusters(State(ctx): Ctx, Path((tenant, ns)): Path<(String, String)>) -> Response {
    let ns = match existing(&ctx, &tenant, &ns) {
        Ok(ns) => ns,
        Err(r) => return r,
    };
    match ctx
        .service
        .policies
        .namespace(&ns)
        .other
        .get(NAMESPACE_FIELD)
    {
        Some(v) if !v.is_null() => Json(v.clone()).into_response(),
        _ => Json(vec![ctx.service.config.cluster_name.clone()]).into_response(),
    }
}

async fn set_clusters(
    State(ctx): Ctx,
    Path((tenant, ns)): Path<(String, String)>,
    body: String,
) -> Response {
    let name = match existing(&ctx, &tenant, &ns) {
        Ok(ns) => ns,
        Err(r) => return r,
    };
    let clusters: Vec<String> = match serde_json::from_str(&body) {
        Ok(v) => v,
        Err(e) => return fail(StatusCode::BAD_REQUEST, format!("invalid JSON body: {e}")),
    };
    if clusters.is_empty() {
        return fail(
            StatusCode::PRECONDITION_FAILED,
            "ClusterIds should not be null or empty",
        );
    }
    let clusters: BTreeSet<String> = clusters.into_iter().collect();
    if clusters.contains("global") {
        return fail(
            StatusCode::PRECONDITION_FAILED,
            "Cannot specify global in the list of replication clusters",
        );
    }
    if let Err(r) = allowed_for_tenant(&ctx, &tenant, &clusters) {
        return r;
    }
    let list = Value::from(clusters.into_iter().collect::<Vec<_>>());
    let r = crate::cluster::sync::update_namespace(&ctx, name, move |p| {
        p.other.insert(NAMESPACE_FIELD.to_owned(), list);
    })
    .await;
    // Pulsar answers this one 200 (an async resource resumed with no entity).
    if r.status() == StatusCode::NO_CONTENT {
        return StatusCode::OK.into_response();
    }
    r
}
