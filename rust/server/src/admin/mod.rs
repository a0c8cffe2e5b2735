//! Admin REST API (Pulsar's `/admin/v2/...` paths) and Prometheus metrics: the router, the
//! server loop and the helpers every resource module shares (error bodies, blocking calls,
//! path parsing). One module per resource: [`clusters`], [`tenants`], [`namespaces`],
//! [`topics`], [`stats`], [`compaction`], [`policies`], [`schemas`], [`subscriptions`], [`messages`] (peek /
//! examine / by id), [`lookup`] (REST lookup) (permissions live in
//! [`crate::auth::authz`]); [`guard`] authenticates and authorizes every request, and
//! [`topic_path`] reads the topic a path names; in a cluster, [`owner`] sends a topic's calls to
//! the broker that owns it.

// Helpers across the admin tree return the ready 4xx response as their error; the admin path is
// cold, so the size of `Response` in a `Result` does not matter here.
#![allow(clippy::result_large_err)]

mod access;
mod broker_stats;
mod brokers;
mod closing;
mod cluster;
mod clusters;
mod compaction;
mod coordinators;
mod dynamic_config;
mod fan_out;
mod guard;
mod internal_stats;
mod lookup;
mod messages;
pub mod namespaces;
mod non_persistent;
mod ns_policies;
mod openapi;
mod owner;
mod partitions;
pub(crate) mod peer;
mod permissions;
mod policies;
mod quota_retention;
mod rate_limit;
mod schemas;
mod stats;
mod streamed;
mod subscriptions;
mod tenants;
mod terminate;
mod topic_path;
mod topics;
mod transactions;
mod unload;

use self::access::{Access, AccessTable, Routes};
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use pulsar_rs_broker::{BrokerError, Topic, TopicName};
use tokio::sync::watch;

use crate::http::{broker_fail, fail};
use crate::ServerContext;

type Ctx = State<Arc<ServerContext>>;

/// Loads a topic on the blocking pool (a first load reads its ledger metadata); the error is
/// the ready response.
pub(crate) async fn load_topic(
    ctx: &Arc<ServerContext>,
    name: TopicName,
) -> Result<Arc<Topic>, Response> {
    let svc = Arc::clone(&ctx.service);
    match tokio::task::spawn_blocking(move || svc.topic(&name, false)).await {
        Ok(Ok(t)) => Ok(t),
        Ok(Err(e)) => Err(broker_fail(&e)),
        Err(e) => Err(fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
    }
}

/// The loaded topics a path addresses: the topic, or every partition of a partitioned topic
/// (in a cluster, every partition this broker owns: [`fan_out`] sends the call to the others').
pub(crate) fn targets(
    ctx: &ServerContext,
    name: &TopicName,
) -> Result<Vec<Arc<Topic>>, BrokerError> {
    let n = ctx.service.partitions(name, false)?;
    if n == 0 {
        return Ok(vec![ctx.service.topic(name, false)?]);
    }
    let served = |p: &TopicName| ctx.cluster.get().is_none_or(|m| m.owns(&p.to_string()));
    // Bounded by what exists (and the first EAGER_PARTITIONS), not by the declared count.
    ctx.service
        .partition_targets(name, n)
        .iter()
        .filter(|p| served(p))
        .map(|p| ctx.service.topic(p, true))
        .collect()
}

/// Serves the admin API on plain TCP until shutdown.
pub async fn serve<L>(listener: L, ctx: Arc<ServerContext>, mut shutdown: watch::Receiver<bool>)
where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    let stop = async move {
        let _ = shutdown.changed().await;
    };
    if let Err(e) = axum::serve(listener, router(ctx))
        .with_graceful_shutdown(stop)
        .await
    {
        tracing::warn!(error = %e, "admin server failed");
    }
}

/// Serves the admin API over HTTPS until shutdown; each request knows its client certificate's
/// CN (`AuthenticationProviderTls`).
pub async fn serve_tls(
    listener: crate::tls::listener::TlsListener,
    ctx: Arc<ServerContext>,
    mut shutdown: watch::Receiver<bool>,
) {
    let stop = async move {
        let _ = shutdown.changed().await;
    };
    let app = router(ctx).into_make_service_with_connect_info::<crate::tls::listener::ClientCn>();
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .await
    {
        tracing::warn!(error = %e, "admin server failed");
    }
}

fn router(ctx: Arc<ServerContext>) -> Router {
    let limit = rate_limit::RequestLimit::from_config(&ctx.service.config);
    let (routes, access) = Routes::new()
        .route(
            "/admin/v2/openapi.json",
            Access::Superuser,
            get(openapi::serve),
        )
        .merge(brokers::routes())
        .merge(broker_stats::routes())
        .merge(dynamic_config::routes())
        .merge(cluster::routes())
        .merge(clusters::routes())
        .merge(tenants::routes())
        .merge(namespaces::routes())
        .merge(topics::routes())
        .merge(stats::routes())
        .merge(internal_stats::routes())
        .merge(compaction::routes())
        .merge(non_persistent::routes())
        .route("/metrics", Access::Metrics, get(crate::metrics::render))
        .merge(policies::routes())
        .merge(ns_policies::routes())
        .merge(schemas::routes())
        .merge(subscriptions::routes())
        .merge(messages::routes())
        .merge(permissions::routes())
        .merge(lookup::routes())
        .merge(transactions::routes())
        .merge(coordinators::routes())
        .merge(unload::routes())
        .merge(terminate::routes())
        .into_parts();
    let app = routes
        // Inside the guard and the authorization: a caller is refused before any redirect.
        .route_layer(axum::middleware::from_fn_with_state(
            Arc::clone(&ctx),
            owner::serve_at_owner,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            (Arc::clone(&ctx), access),
            access::authorize,
        ))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&ctx),
            guard::admin_guard,
        ))
        // The console's page and assets are public; its API is for superusers.
        .merge(crate::console::page_routes())
        .merge(
            crate::console::api_routes()
                .route_layer(axum::middleware::from_fn_with_state(
                    (Arc::clone(&ctx), AccessTable::all(Access::Superuser)),
                    access::authorize,
                ))
                .route_layer(axum::middleware::from_fn_with_state(
                    Arc::clone(&ctx),
                    guard::admin_guard,
                )),
        )
        .with_state(ctx);
    match limit {
        // Outermost, so a refused request costs no authentication or handler work.
        Some(l) => app.layer(axum::middleware::from_fn_with_state(l, rate_limit::limit)),
        None => app,
    }
}
