//! Admin REST API (Pulsar's `/admin/v2/...` paths) and Prometheus metrics: the router, the
//! server loop. The routes live in rooms, one module per resource inside each:
//!
//! * [`topics`]: topics, their partitions, stats, subscriptions, messages, schemas, compaction,
//!   termination, unloading and the REST lookup;
//! * [`namespaces`]: tenants, namespaces and their policies, permissions (checked in
//!   [`crate::auth::authz`]);
//! * [`cluster`]: brokers, clusters, bundles, the load report and the dynamic configuration;
//! * [`transactions`]: Pulsar's `/admin/v3/transactions` (stats and coordinators);
//! * [`machinery`]: what every route goes through: the guard (who the caller is), the access
//!   table (what it may call), the rate limit, the owner's redirect and the fan-out in a
//!   cluster, the topic a path names, streamed bodies, and the OpenAPI description.

// Helpers across the admin tree return the ready 4xx response as their error; the admin path is
// cold, so the size of `Response` in a `Result` does not matter here.
#![allow(clippy::result_large_err)]

mod cluster;
mod machinery;
mod namespaces;
mod topics;
mod transactions;

use std::sync::Arc;

use axum::routing::get;
use axum::Router;
use tokio::sync::watch;

use self::cluster::owner;
use self::machinery::access::{self, Access, AccessTable, Routes};
use self::machinery::{guard, openapi, rate_limit};
use crate::console::History;
use crate::context::ServerContext;

/// Serves the admin API on plain TCP until shutdown; the console's routes read `history`.
pub async fn serve<L>(
    listener: L,
    ctx: Arc<ServerContext>,
    history: Arc<History>,
    mut shutdown: watch::Receiver<bool>,
) where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    let stop = async move {
        let _ = shutdown.changed().await;
    };
    if let Err(e) = axum::serve(listener, router(ctx, history))
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
    history: Arc<History>,
    mut shutdown: watch::Receiver<bool>,
) {
    let stop = async move {
        let _ = shutdown.changed().await;
    };
    let app = router(ctx, history)
        .into_make_service_with_connect_info::<crate::tls::listener::ClientCn>();
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .await
    {
        tracing::warn!(error = %e, "admin server failed");
    }
}

fn router(ctx: Arc<ServerContext>, history: Arc<History>) -> Router {
    let limit = rate_limit::RequestLimit::from_config(&ctx.service.config);
    let (routes, access) = Routes::new()
        .route(
            "/admin/v2/openapi.json",
            Access::Superuser,
            get(openapi::serve),
        )
        .merge(cluster::brokers::routes())
        .merge(cluster::broker_stats::routes())
        .merge(cluster::dynamic_config::routes())
        .merge(cluster::bundles::routes())
        .merge(cluster::clusters::routes())
        .merge(namespaces::tenants::routes())
        .merge(namespaces::lifecycle::routes())
        .merge(topics::lifecycle::routes())
        .merge(topics::stats::routes())
        .merge(topics::internal_stats::routes())
        .merge(topics::compaction::routes())
        .merge(topics::offload::routes())
        .merge(topics::iceberg_table::routes())
        .merge(topics::non_persistent::routes())
        .route("/metrics", Access::Metrics, get(crate::metrics::render))
        .merge(topics::policies_delete::routes())
        .merge(namespaces::policies::routes())
        .merge(namespaces::ns_policies::routes())
        .merge(namespaces::metric_labels::routes())
        .merge(namespaces::replication::routes())
        .merge(topics::schemas::routes())
        .merge(topics::subscriptions::routes())
        .merge(topics::messages::routes())
        .merge(topics::search::routes())
        .merge(namespaces::permissions::routes())
        .merge(topics::lookup::routes())
        .merge(transactions::stats::routes())
        .merge(transactions::coordinators::routes())
        .merge(topics::unload::routes())
        .merge(topics::terminate::routes())
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
            crate::console::api_routes(history)
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
