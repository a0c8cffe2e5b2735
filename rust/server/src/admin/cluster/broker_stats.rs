//! `/admin/v2/broker-stats/load-report` (`pulsar-admin broker-stats load-report`): this
//! broker's load report, as the cluster's load balancer reads it (Pulsar's `LocalBrokerData`:
//! owned bundles with their rates, totals, CPU and bandwidth). In a cluster it is the report
//! the broker writes to the metadata store, measured now; on its own, the same figures for the
//! bundles of the topics it has loaded.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use pulsar_rs_cluster::documents::LocalBrokerData;
use pulsar_rs_cluster::member::report::fill;
use pulsar_rs_cluster::{BrokerUrls, Bundle};

use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::Ctx;
use crate::cluster::bundles;
use crate::cluster::load::broker_load;

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new().route(
        "/admin/v2/broker-stats/load-report",
        Access::Superuser,
        get(load_report),
    )
}

async fn load_report(State(ctx): Ctx) -> Response {
    if let Some(m) = ctx.cluster.get() {
        return Json(m.load_report()).into_response();
    }
    let owned = match bundles::owned_here(&ctx).await {
        Ok(o) => o,
        Err(r) => return r,
    };
    let bundles: Vec<Bundle> = owned.iter().filter_map(|n| Bundle::parse(n).ok()).collect();
    let urls = BrokerUrls {
        service: ctx.service_url.clone(),
        service_tls: ctx.service_url_tls.clone(),
        web: ctx.admin_url.clone(),
        web_tls: ctx.admin_url_tls.clone(),
    };
    let mut report = LocalBrokerData::of_broker(&urls, owned.into_iter().collect());
    fill(&mut report, broker_load(&ctx, &bundles, &ctx.cpu));
    Json(report).into_response()
}
