//! Tenants (`/admin/v2/tenants`): list, get, create (PUT), update (POST), delete, with
//! Pulsar's status codes (`TenantsBase`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;

use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::Ctx;
use crate::context::ServerContext;
use crate::http::{blocking, fail};
use crate::resources::{valid_name, TenantInfo};

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new()
        .route("/admin/v2/tenants", Access::Superuser, get(list))
        .route(
            "/admin/v2/tenants/{tenant}",
            Access::Superuser,
            get(get_one).put(create).post(update).delete(delete),
        )
}

async fn list(State(ctx): Ctx) -> Response {
    Json(ctx.resources.tenants()).into_response()
}

async fn get_one(State(ctx): Ctx, Path(name): Path<String>) -> Response {
    match ctx.resources.tenant(&name) {
        Some(t) => Json(t).into_response(),
        None => fail(StatusCode::NOT_FOUND, "Tenant does not exist"),
    }
}

/// The TenantInfo of a body, checked against the known clusters.
fn info(ctx: &ServerContext, raw: &[u8]) -> Result<TenantInfo, Response> {
    let info: TenantInfo = if raw.is_empty() {
        TenantInfo::default()
    } else {
        serde_json::from_slice(raw)
            .map_err(|e| fail(StatusCode::BAD_REQUEST, format!("invalid TenantInfo: {e}")))?
    };
    if info.allowed_clusters.is_empty() {
        return Err(fail(
            StatusCode::PRECONDITION_FAILED,
            "Clusters can not be empty",
        ));
    }
    let known = ctx.resources.clusters();
    // `global` is always allowed (Pulsar's tenants may name it; it is no registered cluster).
    if info
        .allowed_clusters
        .iter()
        .any(|c| c != "global" && !known.contains(c))
    {
        return Err(fail(
            StatusCode::PRECONDITION_FAILED,
            "Clusters do not exist",
        ));
    }
    Ok(info)
}

async fn create(State(ctx): Ctx, Path(name): Path<String>, raw: axum::body::Bytes) -> Response {
    if !valid_name(&name) {
        return fail(StatusCode::PRECONDITION_FAILED, "Tenant name is not valid");
    }
    let info = match info(&ctx, &raw) {
        Ok(i) => i,
        Err(r) => return r,
    };
    let shared = (
        name.clone(),
        serde_json::to_value(&info).unwrap_or_default(),
    );
    let created = blocking(
        &ctx,
        move |c| c.resources.put_tenant(&name, info, true),
        |created| {
            if created {
                StatusCode::NO_CONTENT.into_response()
            } else {
                fail(StatusCode::CONFLICT, "Tenant already exist")
            }
        },
    )
    .await;
    // In a cluster the tenant is written to the store too, for the other brokers.
    if let (Some(m), StatusCode::NO_CONTENT) = (ctx.cluster.get(), created.status()) {
        if let Err(e) = m.ensure_tenant(&shared.0, &shared.1).await {
            return fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string());
        }
    }
    created
}

async fn update(State(ctx): Ctx, Path(name): Path<String>, raw: axum::body::Bytes) -> Response {
    if ctx.resources.tenant(&name).is_none() {
        return fail(StatusCode::NOT_FOUND, "Tenant does not exist");
    }
    let info = match info(&ctx, &raw) {
        Ok(i) => i,
        Err(r) => return r,
    };
    let shared = name.clone();
    let updated = blocking(
        &ctx,
        move |c| c.resources.put_tenant(&name, info, false),
        |updated| {
            if updated {
                StatusCode::NO_CONTENT.into_response()
            } else {
                fail(StatusCode::NOT_FOUND, "Tenant does not exist")
            }
        },
    )
    .await;
    // In a cluster the whole record is written to the store, for the other brokers.
    if updated.status() == StatusCode::NO_CONTENT {
        if let Err(e) = crate::cluster::sync::share_tenant(&ctx, &shared).await {
            return fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string());
        }
    }
    updated
}

async fn delete(State(ctx): Ctx, Path(name): Path<String>) -> Response {
    if ctx.resources.tenant(&name).is_none() {
        return fail(StatusCode::NOT_FOUND, "Tenant does not exist");
    }
    let prefix = format!("{name}/");
    if ctx
        .service
        .policies
        .namespaces()
        .iter()
        .any(|n| n.starts_with(&prefix))
    {
        return fail(
            StatusCode::CONFLICT,
            "The tenant still has active namespaces",
        );
    }
    // In a cluster, namespaces made through other brokers count too.
    if let Some(m) = ctx.cluster.get() {
        match m.namespaces().await {
            Ok(all) if all.iter().any(|n| n.starts_with(&prefix)) => {
                return fail(
                    StatusCode::CONFLICT,
                    "The tenant still has active namespaces",
                )
            }
            Ok(_) => {}
            Err(e) => return fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        }
    }
    let shared = name.clone();
    let deleted = blocking(
        &ctx,
        move |c| c.resources.delete_tenant(&name),
        |deleted| {
            if deleted {
                StatusCode::NO_CONTENT.into_response()
            } else {
                fail(StatusCode::NOT_FOUND, "Tenant does not exist")
            }
        },
    )
    .await;
    if deleted.status() == StatusCode::NO_CONTENT {
        if let Err(e) = crate::cluster::sync::unshare_tenant(&ctx, &shared).await {
            return fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string());
        }
    }
    deleted
}
