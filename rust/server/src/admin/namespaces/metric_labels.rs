//! PIP-447 (Pulsar 4.2): a namespace's `allowedTopicPropertyKeysForMetrics` (GET, POST a JSON
//! array of keys, DELETE), kept as the `allowed_topic_properties_for_metrics` field of its
//! `Policies`: the topic property keys its topics' metrics carry as labels (with
//! `exposeCustomTopicMetricLabelsEnabled`; unset or empty, the broker's
//! `allowedTopicPropertyKeysForMetrics`).

// Helpers return the ready 4xx response as their error; the admin path is cold.
#![allow(clippy::result_large_err)]

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use pulsar_rs_broker::policies::ALLOWED_TOPIC_PROPERTIES_FOR_METRICS as KEY;
use serde_json::Value;

use super::ns_policies::{existing, field, parse, write, NsPath};
use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::Ctx;
use crate::http::fail;

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new().route(
        "/admin/v2/namespaces/{tenant}/{ns}/allowedTopicPropertyKeysForMetrics",
        Access::Tenant,
        get(get_keys).post(set_keys).delete(remove_keys),
    )
}

/// The keys, `[]` when none are set (Pulsar's field is an empty set by default).
async fn get_keys(State(ctx): Ctx, Path((tenant, ns)): NsPath) -> Response {
    match existing(&ctx, &tenant, &ns) {
        Ok(ns) => Json(
            field(&ctx.service.policies.namespace(&ns), KEY)
                .unwrap_or_else(|| Value::Array(Vec::new())),
        )
        .into_response(),
        Err(r) => r,
    }
}

async fn set_keys(ctx: Ctx, Path(p): NsPath, body: String) -> Response {
    let keys: Vec<String> = match parse(&body) {
        Ok(k) => k,
        Err(r) => return r,
    };
    if keys.iter().any(|k| k.trim().is_empty()) {
        return fail(
            StatusCode::PRECONDITION_FAILED,
            "Topic property keys for metrics must not be empty",
        );
    }
    let mut keys = keys;
    keys.sort();
    keys.dedup();
    write(&ctx, p, KEY, Some(keys.into())).await
}

async fn remove_keys(ctx: Ctx, Path(p): NsPath) -> Response {
    write(&ctx, p, KEY, None).await
}
