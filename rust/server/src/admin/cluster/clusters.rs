//! Clusters (`/admin/v2/clusters`): list, get, create (PUT), update (POST), delete, with
//! Pulsar's status codes (`ClustersBase`: create and update answer 200, delete 204) and
//! Pulsar's `ClusterData` defaults shown where the record leaves them out. In a cluster each
//! change is also written to the configuration store ([`crate::cluster::registry`]).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use pulsar_rs_broker::BrokerError;

use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::Ctx;
use crate::http::{blocking, fail};
use crate::resources::{valid_name, with_pulsar_defaults, ClusterData};

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new()
        .route("/admin/v2/clusters", Access::Authenticated, get(list))
        .route(
            "/admin/v2/clusters/{cluster}",
            Access::Superuser,
            get(get_one).put(create).post(update).delete(delete),
        )
}

async fn list(State(ctx): Ctx) -> Response {
    Json(ctx.resources.clusters()).into_response()
}

async fn get_one(State(ctx): Ctx, Path(name): Path<String>) -> Response {
    match ctx.resources.cluster(&name) {
        Some(d) => Json(with_pulsar_defaults(d)).into_response(),
        None => fail(StatusCode::NOT_FOUND, "Cluster does not exist"),
    }
}

fn body(raw: &[u8]) -> Result<ClusterData, Response> {
    if raw.is_empty() {
        return Err(fail(StatusCode::BAD_REQUEST, "ClusterData is missing"));
    }
    serde_json::from_slice(raw)
        .map_err(|e| fail(StatusCode::BAD_REQUEST, format!("invalid ClusterData: {e}")))
}

async fn create(State(ctx): Ctx, Path(name): Path<String>, raw: axum::body::Bytes) -> Response {
    if !valid_name(&name) {
        return fail(StatusCode::PRECONDITION_FAILED, "Cluster name is not valid");
    }
    let data = match body(&raw) {
        Ok(d) => d,
        Err(r) => return r,
    };
    let shared = name.clone();
    let created = blocking(
        &ctx,
        move |c| c.resources.put_cluster(&name, data, true),
        |created| {
            if created {
                StatusCode::OK.into_response()
            } else {
                fail(StatusCode::CONFLICT, "Cluster already exists")
            }
        },
    )
    .await;
    share(&ctx, &shared, created).await
}

/// In a cluster, a record created or changed here (`answer` 200) is written to the
/// configuration store, for every broker that uses it.
async fn share(ctx: &crate::context::ServerContext, name: &str, answer: Response) -> Response {
    if answer.status() == StatusCode::OK {
        if let Err(e) = crate::cluster::registry::share_cluster(ctx, name).await {
            return fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string());
        }
    }
    answer
}

async fn update(State(ctx): Ctx, Path(name): Path<String>, raw: axum::body::Bytes) -> Response {
    let data = match body(&raw) {
        Ok(d) => d,
        Err(r) => return r,
    };
    let shared = name.clone();
    let updated = blocking(
        &ctx,
        move |c| c.resources.put_cluster(&name, data, false),
        |updated| {
            if updated {
                StatusCode::OK.into_response()
            } else {
                fail(StatusCode::NOT_FOUND, "Cluster does not exist")
            }
        },
    )
    .await;
    share(&ctx, &shared, updated).await
}

/// Pulsar deletes a cluster that tenants still list (its `isClusterUsed` counts only the
/// v1 namespaces `tenant/cluster/ns`, which pulsar-rs does not keep).
async fn delete(State(ctx): Ctx, Path(name): Path<String>) -> Response {
    let shared = name.clone();
    let deleted = blocking(
        &ctx,
        move |c| -> Result<bool, BrokerError> { c.resources.delete_cluster(&name) },
        |deleted| {
            if deleted {
                StatusCode::NO_CONTENT.into_response()
            } else {
                fail(StatusCode::NOT_FOUND, "Cluster does not exist")
            }
        },
    )
    .await;
    if deleted.status() == StatusCode::NO_CONTENT {
        if let Err(e) = crate::cluster::registry::unshare_cluster(&ctx, &shared).await {
            return fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string());
        }
    }
    deleted
}
