//! The `icebergTable` policy and a topic table's status: `GET/POST/PUT/DELETE
//! /admin/v2/namespaces/{tenant}/{ns}/icebergTable` (the namespace's policy: `{"enabled",
//! "commitIntervalSeconds", "partitionBy"}`), the same at
//! `/admin/v2/persistent/{tenant}/{ns}/{topic}/icebergTable` for a topic's own policy, whose
//! `GET` also answers the table's status (the policy in force, the table's name, the last
//! message id committed per partition, its snapshot, rows and files, and this broker's commit
//! counters and last error). 412 for a policy that turns a table on where no catalog is
//! configured, 400 for a malformed one.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use pulsar_rs_broker::TopicName;
use pulsar_rs_table::{policy, IcebergTablePolicy};
use serde_json::{json, Value};

use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::Ctx;
use crate::admin::machinery::topic_path::ExistingTopic;
use crate::context::ServerContext;
use crate::http::{broker_fail, fail, no_content};

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new()
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/icebergTable",
            Access::Tenant,
            get(get_namespace)
                .post(set_namespace)
                .put(set_namespace)
                .delete(delete_namespace),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/icebergTable",
            Access::Tenant,
            get(get_topic)
                .post(set_topic)
                .put(set_topic)
                .delete(delete_topic),
        )
}

/// The body as a policy (400 when it is not one; 412 when it turns a table on and this broker
/// has no catalog).
#[allow(clippy::result_large_err)] // the ready response; the admin path is cold
fn parse(ctx: &ServerContext, body: &str) -> Result<Value, Response> {
    let v: Value = serde_json::from_str(body.trim())
        .map_err(|e| fail(StatusCode::BAD_REQUEST, format!("invalid JSON body: {e}")))?;
    let p = IcebergTablePolicy::parse(&v).map_err(|why| fail(StatusCode::BAD_REQUEST, why))?;
    if p.enabled && ctx.tables.is_none() {
        return Err(fail(
            StatusCode::PRECONDITION_FAILED,
            "no Iceberg catalog is configured on this broker (icebergCatalogUri)",
        ));
    }
    Ok(p.to_json())
}

#[allow(clippy::result_large_err)] // the ready response; the admin path is cold
fn namespace(ctx: &ServerContext, tenant: &str, ns: &str) -> Result<String, Response> {
    let ns = TopicName::parse(&format!("persistent://{tenant}/{ns}/x"))
        .map(|t| t.namespace_name())
        .map_err(|e| broker_fail(&e))?;
    match crate::admin::namespaces::lifecycle::missing(ctx, &ns) {
        Some(r) => Err(r),
        None => Ok(ns),
    }
}

async fn get_namespace(State(ctx): Ctx, Path((tenant, ns)): Path<(String, String)>) -> Response {
    match namespace(&ctx, &tenant, &ns) {
        Ok(ns) => Json(
            ctx.service
                .policies
                .namespace(&ns)
                .other
                .get(policy::KEY)
                .cloned()
                .unwrap_or(Value::Null),
        )
        .into_response(),
        Err(r) => r,
    }
}

async fn set_namespace(
    State(ctx): Ctx,
    Path((tenant, ns)): Path<(String, String)>,
    body: String,
) -> Response {
    let (v, ns) = match (parse(&ctx, &body), namespace(&ctx, &tenant, &ns)) {
        (Ok(v), Ok(ns)) => (v, ns),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    crate::cluster::sync::update_namespace(&ctx, ns, move |p| {
        p.other.insert(policy::KEY.to_owned(), v);
    })
    .await
}

async fn delete_namespace(State(ctx): Ctx, Path((tenant, ns)): Path<(String, String)>) -> Response {
    match namespace(&ctx, &tenant, &ns) {
        Ok(ns) => {
            crate::cluster::sync::update_namespace(&ctx, ns, |p| {
                p.other.remove(policy::KEY);
            })
            .await
        }
        Err(r) => r,
    }
}

async fn set_topic(State(ctx): Ctx, ExistingTopic(name): ExistingTopic, body: String) -> Response {
    let v = match parse(&ctx, &body) {
        Ok(v) => v,
        Err(r) => return r,
    };
    no_content(&ctx, move |svc| {
        svc.policies.update_topic(&name, move |p| {
            p.other.insert(policy::KEY.to_owned(), v);
        })?;
        svc.refresh_policies();
        Ok(())
    })
    .await
}

async fn delete_topic(State(ctx): Ctx, ExistingTopic(name): ExistingTopic) -> Response {
    no_content(&ctx, move |svc| {
        svc.policies.update_topic(&name, |p| {
            p.other.remove(policy::KEY);
        })?;
        svc.refresh_policies();
        Ok(())
    })
    .await
}

async fn get_topic(State(ctx): Ctx, ExistingTopic(name): ExistingTopic) -> Response {
    let own = ctx
        .service
        .policies
        .topic(&name)
        .other
        .get(policy::KEY)
        .cloned()
        .unwrap_or(Value::Null);
    let applied = crate::housekeeping::iceberg_tables::policy_of(&ctx.service, &name)
        .map_or(Value::Null, |p| p.to_json());
    let base = name.base();
    let mut doc = json!({
        "policy": own,
        "appliedPolicy": applied,
        "catalogConfigured": ctx.tables.is_some(),
    });
    let Some(tables) = ctx.tables.as_ref().map(Arc::clone) else {
        return Json(doc).into_response();
    };
    match tables
        .status(&base.tenant, &base.namespace, &base.local)
        .await
    {
        Ok(status) => {
            if let (Value::Object(d), Value::Object(s)) = (&mut doc, status.to_json()) {
                d.extend(s);
            }
        }
        Err(e) => {
            return fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("reading the table: {e}"),
            )
        }
    }
    // This broker's commits of the topic (or of its partitions it owns).
    let prefix = base.to_string();
    let progress: serde_json::Map<String, Value> = tables
        .progress()
        .into_iter()
        .filter(|(t, _)| *t == prefix || t.starts_with(&format!("{prefix}-partition-")))
        .map(|(t, p)| {
            (
                t,
                json!({
                    "rowsCommitted": p.rows,
                    "commits": p.commits,
                    "dataFiles": p.files,
                    "dataFileBytes": p.file_bytes,
                    "entriesRead": p.entries,
                    "lastError": p.last_error,
                }),
            )
        })
        .collect();
    doc["committedHere"] = Value::Object(progress);
    Json(doc).into_response()
}
