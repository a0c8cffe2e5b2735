//! Pulsar's REST lookup, for clients built on an `http://` or `https://` service URL (the C++
//! client's `HTTPLookupService`): `GET /lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}` answers
//! `{"brokerUrl", "brokerUrlTls", "httpUrl", "httpUrlTls"}` for the listener named by the
//! `listenerName` query parameter or the `X-Pulsar-ListenerName` header;
//! `GET /admin/v2/namespaces/{tenant}/{ns}/topics?mode=...` lists a namespace's topics (pattern
//! subscriptions). Partitioned metadata is the admin `.../partitions` path
//! (`?checkAllowAutoCreation=true` creates as a PARTITIONED_METADATA lookup does).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{OriginalUri, Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use serde_json::json;

use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::topic_path::TopicPath;
use crate::context::ServerContext;
use crate::http::fail;

type Ctx = State<Arc<ServerContext>>;

/// The REST lookup routes.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .route(
            "/lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}",
            Access::Lookup,
            get(lookup_topic),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/topics",
            Access::NamespaceTopics,
            get(namespace_topics),
        )
}

async fn lookup_topic(
    State(ctx): Ctx,
    TopicPath(topic): TopicPath,
    Query(q): Query<HashMap<String, String>>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Response {
    if let Some(member) = ctx.cluster.get() {
        let authoritative = q.get("authoritative").is_some_and(|v| v == "true");
        return cluster_lookup(member, &topic.to_string(), authoritative, uri.path()).await;
    }
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

/// The REST lookup in a cluster (`TopicLookupBase.internalLookupTopicAsync`): the owner's
/// `LookupData`, or 307 to the broker to ask next with `?authoritative=`.
async fn cluster_lookup(
    member: &pulsar_rs_cluster::ClusterMember,
    topic: &str,
    authoritative: bool,
    path: &str,
) -> Response {
    use pulsar_rs_cluster::LookupAnswer;
    match member.lookup(topic, authoritative).await {
        Ok(LookupAnswer::Connect(u)) => Json(json!({
            "brokerUrl": u.service,
            "brokerUrlTls": u.service_tls.clone().unwrap_or_default(),
            "httpUrl": u.web,
            "httpUrlTls": u.web_tls.clone().unwrap_or_default(),
            "nativeUrl": u.service,
        }))
        .into_response(),
        Ok(LookupAnswer::Redirect {
            urls,
            authoritative,
        }) => {
            let to = format!(
                "{}{path}?authoritative={authoritative}",
                urls.web.trim_end_matches('/')
            );
            (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, to)]).into_response()
        }
        Err(e) => crate::http::cluster_fail(&e),
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
    // As Pulsar's Namespaces.getTopics: a namespace that does not exist is 404, not `[]`.
    if let Some(r) = crate::admin::namespaces::lifecycle::missing(&ctx, &format!("{tenant}/{ns}")) {
        return r;
    }
    if let Err(e) = crate::cluster::member::refresh_known_topics(&ctx).await {
        return fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string());
    }
    let names = ctx.service.discoverable_topics(
        &format!("{tenant}/{ns}"),
        mode != "NON_PERSISTENT",
        mode != "PERSISTENT",
    );
    Json(names).into_response()
}
