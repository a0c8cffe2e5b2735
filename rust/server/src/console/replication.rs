//! `GET /console/api/replication`: the console's view of geo-replication from this broker: the
//! cluster's replication peers (every other cluster it has a record of, with its URLs, and what
//! this broker's topics still have to send there) and, per topic loaded here that replicates,
//! its backlog towards each remote cluster, whether the replicator's producer is connected and
//! the rates both ways. The figures are the ones the topic's stats show in `replication`
//! ([`crate::replication::view`]); like the overview, only this broker's topics.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;

use crate::context::ServerContext;
use crate::replication::view::peers;

/// One topic's replication towards one remote cluster.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicationRow {
    /// `persistent://tenant/ns/topic` (a partition's own name) or `non-persistent://...`.
    pub topic: String,
    /// The remote cluster.
    pub remote: String,
    /// Messages still to send there (the replication cursor's backlog; 0 for a
    /// non-persistent topic, which keeps none).
    pub replication_backlog: u64,
    /// Whether this broker's replicator has its producer open on the remote cluster.
    pub connected: bool,
    /// Messages per second sent there.
    pub msg_rate_out: f64,
    /// Messages sent there and receipted.
    pub msg_out_count: u64,
    /// Messages per second the remote cluster's replicator publishes here.
    pub msg_rate_in: f64,
}

/// A remote cluster as the console lists it.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PeerRow {
    /// The cluster's name.
    pub name: String,
    /// Its `serviceUrl` (HTTP), from its cluster record; absent without a record.
    pub service_url: Option<String>,
    /// Its `brokerServiceUrl` (binary protocol), from its cluster record.
    pub broker_service_url: Option<String>,
    /// Whether a cluster record exists here (a topic may still replicate to a cluster whose
    /// record was deleted: its replicator cannot connect).
    pub known: bool,
    /// Topics (partitions) loaded here that replicate there.
    pub topics: usize,
    /// Of those, the ones whose replicator is connected.
    pub connected: usize,
    /// Messages still to send there, summed over the topics.
    pub replication_backlog: u64,
}

/// Everything the replication page shows.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicationView {
    /// This cluster's name (`clusterName`).
    pub cluster: String,
    /// The other clusters, sorted by name.
    pub peers: Vec<PeerRow>,
    /// Per topic and remote cluster, sorted by topic then cluster.
    pub topics: Vec<ReplicationRow>,
}

/// Collects the view (blocking: takes topic and cursor locks).
#[must_use]
pub fn replication_view(ctx: &ServerContext) -> ReplicationView {
    let svc = &ctx.service;
    let local = svc.config.cluster_name.clone();
    let mut rows = Vec::new();
    for topic in svc.loaded_topics() {
        for peer in peers(ctx, &topic) {
            let status = peer.outbound.as_deref();
            rows.push(ReplicationRow {
                topic: topic.name.to_string(),
                replication_backlog: peer.cursor.backlog(),
                connected: status.is_some_and(|s| s.is_connected()),
                msg_rate_out: status.map_or(0.0, |s| s.msg_out.rates().0),
                msg_out_count: status.map_or(0, |s| s.msg_out.total()),
                msg_rate_in: peer
                    .inbound
                    .as_ref()
                    .map_or(0.0, |p| p.meters.msg_in.rates().0),
                remote: peer.remote,
            });
        }
    }
    for topic in svc.non_persistent_topics() {
        let name = topic.name.to_string();
        for (remote, status) in ctx.replicators.of_topic(&name) {
            rows.push(ReplicationRow {
                topic: name.clone(),
                remote,
                replication_backlog: 0,
                connected: status.is_connected(),
                msg_rate_out: status.msg_out.rates().0,
                msg_out_count: status.msg_out.total(),
                msg_rate_in: 0.0,
            });
        }
    }
    rows.sort_by(|a, b| (&a.topic, &a.remote).cmp(&(&b.topic, &b.remote)));
    let mut by_name: BTreeMap<String, PeerRow> = BTreeMap::new();
    for name in ctx.resources.clusters() {
        if name == local {
            continue;
        }
        let record = ctx.resources.cluster(&name).unwrap_or_default();
        let url = |k: &str| record.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        let row = PeerRow {
            service_url: url("serviceUrl"),
            broker_service_url: url("brokerServiceUrl"),
            known: true,
            name: name.clone(),
            ..PeerRow::default()
        };
        by_name.insert(name, row);
    }
    for r in &rows {
        let peer = by_name.entry(r.remote.clone()).or_insert_with(|| PeerRow {
            name: r.remote.clone(),
            ..PeerRow::default()
        });
        peer.topics += 1;
        peer.connected += usize::from(r.connected);
        peer.replication_backlog += r.replication_backlog;
    }
    ReplicationView {
        cluster: local,
        peers: by_name.into_values().collect(),
        topics: rows,
    }
}

/// The handler.
pub async fn replication_handler(State(ctx): State<Arc<ServerContext>>) -> Response {
    match tokio::task::spawn_blocking(move || replication_view(&ctx)).await {
        Ok(v) => Json(v).into_response(),
        Err(e) => crate::http::fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}
