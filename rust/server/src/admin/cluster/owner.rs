//! In a cluster, a topic's admin calls are answered by the broker that owns its bundle, as Pulsar's
//! `validateTopicOwnership`: a broker that does not own the topic answers `307` to the owner's web
//! service URL (the same path and query, with `authoritative`), after placing an unowned bundle as
//! a lookup does (so the call may land here). A call on a partitioned topic's own name is answered
//! by any broker: its metadata, stats and policies here, and a call that acts on each partition
//! (its subscriptions, its deletion) sent on to each partition's owner ([`super::fan_out`]).
//! Namespace and cluster calls are answered by any broker (a namespace the cluster has and this
//! broker has not met yet is read from the store first); a broker on its own serves everything. A
//! call that came over HTTPS is sent to the other broker's HTTPS URL (Pulsar's `isRequestHttps`),
//! so a broker client on TLS stays on TLS. A transaction admin call (`/admin/v3/transactions/...`)
//! is answered by the owner of the topic it names, or of the coordinator's assign partition.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{FromRequestParts, MatchedPath, Path, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use pulsar_rs_broker::TopicName;
use pulsar_rs_cluster::LookupAnswer;

use super::fan_out;
use crate::admin::machinery::topic_path::{self, TOPIC_ROUTE};
use crate::admin::topics::partitions;
use crate::cluster::peers::admin::url_at;
use crate::context::ServerContext;
use crate::http::cluster_fail;
use crate::http::fail;

/// The route templates under [`TOPIC_ROUTE`] answered by any broker: they address a
/// partitioned topic as a whole (its partitions are each served by their owner).
const ANY_BROKER_OPS: [&str; 4] = [
    "/partitions",
    "/partitioned-stats",
    "/partitioned-internalStats",
    "/terminate/partitions",
];

/// Route layer: passes the call on when this broker serves the topic the route names (or the
/// route names none), sends a partitioned topic's per-partition call to each owner, else
/// answers the 307 to the topic's owner.
pub(crate) async fn serve_at_owner(
    State(ctx): State<Arc<ServerContext>>,
    req: Request,
    next: Next,
) -> Response {
    let Some(member) = ctx.cluster.get() else {
        return next.run(req).await;
    };
    let (mut parts, body) = req.into_parts();
    adopt_named_namespace(&mut parts, &ctx).await;
    let route = route_topic(&mut parts, &ctx).await;
    // A transaction route names a topic, or a coordinator (its assign partition), instead.
    let txn_topic = match route {
        None => crate::admin::transactions::stats::owner_topic(&mut parts, &ctx).await,
        Some(_) => None,
    };
    let req = Request::from_parts(parts, body);
    let Some((topic, op)) = route else {
        return match txn_topic {
            Some(t) if !member.owns(&t.to_string()) => at_owner(&ctx, member, &t, req, next).await,
            _ => next.run(req).await,
        };
    };
    // A partition's call needs its partitioned topic's count here (whether the partition
    // exists): one created through another broker is read from the store once.
    if topic.partition_index().is_some()
        && ctx.service.partitions(&topic.base(), false).unwrap_or(0) == 0
    {
        if let Err(r) = partitions::count(&ctx, &topic.base()).await {
            return r;
        }
    }
    let per_partition = fan_out::fans_out(req.method(), &op);
    let full = topic.to_string();
    let anywhere = ANY_BROKER_OPS.contains(&op.as_str());
    // A call on a partitioned topic as a whole reads the store's count first (which this
    // broker's record is brought to): the topic may have been created through another broker.
    if !per_partition && !anywhere && member.owns(&full) {
        return next.run(req).await;
    }
    match partitions::count(&ctx, &topic).await {
        Ok(n) if n > 0 && per_partition => {
            return fan_out::across_owners(&ctx, member, &topic, n, req, next).await
        }
        // A partitioned topic's name is no bundle's topic.
        Ok(n) if n > 0 => return next.run(req).await,
        Ok(_) => {}
        Err(r) => return r,
    }
    if anywhere || member.owns(&full) {
        return next.run(req).await;
    }
    at_owner(&ctx, member, &topic, req, next).await
}

/// Answers a call on `topic`, which this broker does not own: `307` to the owner a lookup
/// names, or the call served here when the lookup placed the free bundle here.
async fn at_owner(
    ctx: &Arc<ServerContext>,
    member: &pulsar_rs_cluster::ClusterMember,
    topic: &TopicName,
    req: Request,
    next: Next,
) -> Response {
    let full = topic.to_string();
    let authoritative = req
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|kv| kv == "authoritative=true"));
    match member.lookup(&full, authoritative).await {
        Ok(LookupAnswer::Connect(u)) if u.service == member.urls().service => {
            // The bundle was free and is now this broker's: serve the call here.
            match crate::cluster::sync::adopt_namespace(ctx, &topic.namespace_name()).await {
                Ok(()) => next.run(req).await,
                Err(e) => fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
            }
        }
        Ok(LookupAnswer::Connect(u)) => {
            let web = web_for(&u, over_tls(&req));
            redirect(&url_at(web, req.uri(), None, true))
        }
        Ok(LookupAnswer::Redirect {
            urls,
            authoritative,
        }) => {
            let web = web_for(&urls, over_tls(&req));
            redirect(&url_at(web, req.uri(), None, authoritative))
        }
        Err(e) => cluster_fail(&e),
    }
}

/// Makes the namespace a route names known here when the cluster's store has it and this
/// broker has not met it yet (as Pulsar reads the store on a cache miss), so a call through any
/// broker acts on the cluster's namespace.
async fn adopt_named_namespace(parts: &mut axum::http::request::Parts, ctx: &Arc<ServerContext>) {
    let Ok(Path(params)) = Path::<HashMap<String, String>>::from_request_parts(parts, ctx).await
    else {
        return;
    };
    let (Some(tenant), Some(ns)) = (params.get("tenant"), params.get("ns")) else {
        return;
    };
    let ns = format!("{tenant}/{ns}");
    if ctx.service.policies.namespace_exists(&ns) {
        return;
    }
    if let Err(e) = crate::cluster::sync::adopt_namespace(ctx, &ns).await {
        tracing::debug!(namespace = %ns, error = %e, "adopting a namespace of the cluster failed");
    }
}

/// The persistent topic a route names and the rest of its template (`/stats`, `""`, ...).
async fn route_topic(
    parts: &mut axum::http::request::Parts,
    ctx: &Arc<ServerContext>,
) -> Option<(TopicName, String)> {
    let template = parts.extensions.get::<MatchedPath>()?.as_str().to_owned();
    let op = template.strip_prefix(TOPIC_ROUTE)?.to_owned();
    let Path(params) = Path::<HashMap<String, String>>::from_request_parts(parts, ctx)
        .await
        .ok()?;
    let (tenant, ns, topic) = (
        params.get("tenant")?,
        params.get("ns")?,
        params.get("topic")?,
    );
    // A name that does not parse is the handler's to refuse (412).
    let name = topic_path::name("persistent", tenant, ns, topic).ok()?;
    Some((name, op))
}

/// Whether `req` came over HTTPS (the TLS listener's connect info is on it).
fn over_tls(req: &Request) -> bool {
    req.extensions()
        .get::<axum::extract::ConnectInfo<crate::tls::listener::ClientCn>>()
        .is_some()
}

/// The web URL of `urls` to send a caller to: the HTTPS one when the call came over HTTPS and
/// the broker has one.
pub(in crate::admin) fn web_for(urls: &pulsar_rs_cluster::BrokerUrls, over_tls: bool) -> &str {
    match (&urls.web_tls, over_tls) {
        (Some(tls), true) if !tls.is_empty() => tls,
        _ => &urls.web,
    }
}

/// Whether a call came over HTTPS, as a handler's argument.
pub(in crate::admin) struct OverTls(pub bool);

impl<S: Send + Sync> FromRequestParts<S> for OverTls {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(OverTls(
            parts
                .extensions
                .get::<axum::extract::ConnectInfo<crate::tls::listener::ClientCn>>()
                .is_some(),
        ))
    }
}

fn redirect(to: &str) -> Response {
    (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, to)]).into_response()
}
