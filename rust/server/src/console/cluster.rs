//! `GET /console/api/cluster`: the console's view of the cluster: its name, its brokers (their
//! URLs, which one leads, which one answers) and the bundles each owns. In a cluster the
//! brokers and their bundles come from the metadata store (each broker's load report, as
//! Pulsar's load manager reads it; this broker's own from memory, fresher); a broker on its own
//! is a one-broker cluster owning the bundles of its loaded topics.

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::cluster::bundles::owned_here;
use crate::context::ServerContext;
use crate::http::cluster_fail;

/// The handler.
pub async fn cluster_handler(State(ctx): State<Arc<ServerContext>>) -> Response {
    let name = ctx.service.config.cluster_name.clone();
    let mine = match owned_here(&ctx).await {
        Ok(o) => o,
        Err(r) => return r,
    };
    let Some(m) = ctx.cluster.get() else {
        let me = ctx.broker_id();
        return Json(json!({
            "cluster": name,
            "leader": me,
            "brokers": [{
                "brokerId": me,
                "serviceUrl": ctx.service_url,
                "webServiceUrl": ctx.admin_url,
                "leader": true,
                "self": true,
                "bundles": mine,
            }],
        }))
        .into_response();
    };
    let leader = match m.leader().await {
        Ok(l) => l.map(|l| l.broker_id),
        Err(e) => return cluster_fail(&e),
    };
    let ids = match m.brokers().await {
        Ok(b) => b,
        Err(e) => return cluster_fail(&e),
    };
    let mut brokers: Vec<Value> = Vec::new();
    for id in ids {
        let me = id == m.broker_id();
        let (urls, bundles) = if me {
            (m.urls().clone(), mine.clone())
        } else {
            match m.broker_data(&id).await {
                Ok(Some(d)) => (d.urls(), d.bundles.into_iter().collect()),
                // Left between the listing and the read.
                Ok(None) => continue,
                Err(e) => return cluster_fail(&e),
            }
        };
        brokers.push(json!({
            "brokerId": id,
            "serviceUrl": urls.service,
            "webServiceUrl": urls.web,
            "leader": leader.as_deref() == Some(id.as_str()),
            "self": me,
            "bundles": bundles,
        }));
    }
    Json(json!({"cluster": name, "leader": leader, "brokers": brokers})).into_response()
}
