//! Pulsar's REST lookup, for clients built on an `http://` or `https://` service URL (the C++
//! client's `HTTPLookupService`): `GET /lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}` answers
//! `{"brokerUrl", "brokerUrlTls", "httpUrl", "httpUrlTls"}` for the listener named by the
//! `listenerName` query parameter or the `X-Pulsar-ListenerName` header;
//! `GET /admin/v2/namespaces/{tenant}/{ns}/topics?mode=...` lists a namespace's topics (pattern
//! subscriptions). Partitioned metadata is the admin `.../partitions` path
//! (`?checkAllowAutoCreation=true` creates as a PARTITIONED_METADATA lookup does).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use super::topic_path::TopicPath;
use crate::http::fail;
use crate::ServerContext;

type Ctx = State<Arc<ServerContext>>;

/// The REST lookup routes.
pub(crate) fn routes() -> Router<Arc<ServerContext>> {
    Router::new()
        .route(
            "/lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}",
            get(lookup_topic),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/topics",
            get(namespace_topics),
        )
}

async fn lookup_topic(
    State(ctx): Ctx,
    // The name is only validated: this broker owns every topic.
    TopicPath(_): TopicPath,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let listener = q.get("listenerName").map(String::as_str).or_else(|| {
        headers
            .get("X-Pulsar-ListenerName")
            .and_then(|v| v.to_str().ok())
    });
    match ctx.lookups.urls(listener) {
        Ok(u) => Json(json!({
            "brokerUrl": u.broker_url,
            "brokerUrlTls": u.broker_url_tls.unwrap_or_default(),
            "httpUrl": ctx.admin_url,
            "httpUrlTls": ctx.admin_url_tls.clone().unwrap_or_default(),
            "nativeUrl": u.broker_url,
        }))
        .into_response(),
        Err(msg) => fail(StatusCode::SERVICE_UNAVAILABLE, msg),
    }
}

async fn namespace_topics(
    State(ctx): Ctx,
    Path((tenant, ns)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let mode = q.get("mode").map_or("PERSISTENT", String::as_str);
    if !matches!(mode, "PERSISTENT" | "NON_PERSISTENT" | "ALL") {
        return fail(
            StatusCode::BAD_REQUEST,
            format!("mode must be PERSISTENT, NON_PERSISTENT or ALL, not {mode}"),
        );
    }
    let names = ctx.service.discoverable_topics(
        &format!("{tenant}/{ns}"),
        mode != "NON_PERSISTENT",
        mode != "PERSISTENT",
    );
    Json(names).into_response()
}
