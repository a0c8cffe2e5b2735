//! In a cluster, a topic's admin calls are answered by the broker that owns its bundle, as
//! Pulsar's `validateTopicOwnership`: a broker that does not own the topic answers `307` to the
//! owner's web service URL (the same path and query, with `authoritative`), after placing an
//! unowned bundle as a lookup does (so the call may land here). Calls on a partitioned topic's
//! own name (its metadata, its partitioned stats, its policies) are answered by any broker, as
//! are namespace and cluster calls; a broker on its own serves everything.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{FromRequestParts, MatchedPath, Path, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use pulsar_rs_broker::TopicName;
use pulsar_rs_cluster::LookupAnswer;

use super::cluster::cluster_fail;
use super::topic_path;
use crate::http::fail;
use crate::ServerContext;

/// The route templates under `/admin/v2/persistent/{tenant}/{ns}/{topic}` answered by any broker:
/// they address a partitioned topic as a whole (its partitions are each served by their owner).
const ANY_BROKER_OPS: [&str; 3] = [
    "/partitions",
    "/partitioned-stats",
    "/partitioned-internalStats",
];

/// Route layer: passes the call on when this broker serves the topic the route names (or the
/// route names none), else answers the 307 to its owner.
pub(crate) async fn serve_at_owner(
    State(ctx): State<Arc<ServerContext>>,
    req: Request,
    next: Next,
) -> Response {
    let Some(member) = ctx.cluster.get() else {
        return next.run(req).await;
    };
    let (mut parts, body) = req.into_parts();
    let topic = bundle_topic(&mut parts, &ctx).await;
    let req = Request::from_parts(parts, body);
    let Some(topic) = topic else {
        return next.run(req).await;
    };
    let full = topic.to_string();
    if member.owns(&full) {
        return next.run(req).await;
    }
    match super::partitions::count(&ctx, &topic).await {
        // A partitioned topic's name is no bundle's topic.
        Ok(n) if n > 0 => return next.run(req).await,
        Ok(_) => {}
        Err(r) => return r,
    }
    let authoritative = req
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|kv| kv == "authoritative=true"));
    match member.lookup(&full, authoritative).await {
        Ok(LookupAnswer::Connect(u)) if u.service == member.urls().service => {
            // The bundle was free and is now this broker's: serve the call here.
            match crate::cluster::adopt_namespace(&ctx, &topic.namespace_name()).await {
                Ok(()) => next.run(req).await,
                Err(e) => fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
            }
        }
        Ok(LookupAnswer::Connect(u)) => redirect(&u.web, &req, true),
        Ok(LookupAnswer::Redirect {
            urls,
            authoritative,
        }) => redirect(&urls.web, &req, authoritative),
        Err(e) => cluster_fail(&e),
    }
}

/// The persistent topic a route names, when its calls belong to the topic's owner.
async fn bundle_topic(
    parts: &mut axum::http::request::Parts,
    ctx: &Arc<ServerContext>,
) -> Option<TopicName> {
    let template = parts.extensions.get::<MatchedPath>()?.as_str().to_owned();
    let op = template.strip_prefix("/admin/v2/persistent/{tenant}/{ns}/{topic}")?;
    if ANY_BROKER_OPS.contains(&op) {
        return None;
    }
    let Path(params) = Path::<HashMap<String, String>>::from_request_parts(parts, ctx)
        .await
        .ok()?;
    let (tenant, ns, topic) = (
        params.get("tenant")?,
        params.get("ns")?,
        params.get("topic")?,
    );
    // A name that does not parse is the handler's to refuse (412).
    topic_path::name("persistent", tenant, ns, topic).ok()
}

/// `307` to the same call at `web` (a broker's `http://host:port`), `authoritative` set.
fn redirect(web: &str, req: &Request, authoritative: bool) -> Response {
    let uri = req.uri();
    let mut query: Vec<&str> = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|kv| !kv.is_empty() && !kv.starts_with("authoritative="))
        .collect();
    let flag = format!("authoritative={authoritative}");
    query.push(&flag);
    let to = format!(
        "{}{}?{}",
        web.trim_end_matches('/'),
        uri.path(),
        query.join("&")
    );
    (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, to)]).into_response()
}
