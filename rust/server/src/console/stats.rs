//! The console's overview: every topic of the broker with its rates, storage and backlog, and
//! the partitioned topics (the admin API lists topics one namespace at a time; the console
//! needs them all at once). Per-topic details come from the admin API itself (`stats`,
//! `internalStats`, policies).

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use pulsar_rs_broker::{BrokerService, Topic};
use serde::Serialize;

use crate::context::ServerContext;

/// One topic (or partition) as the overview shows it.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicRow {
    /// `persistent://tenant/ns/topic`.
    pub name: String,
    /// The partitioned topic this is a partition of.
    pub partitioned_topic: Option<String>,
    /// Whether the topic is loaded (only loaded topics have rates and subscriptions).
    pub loaded: bool,
    /// Messages published per second.
    pub msg_rate_in: f64,
    /// Messages dispatched per second, all subscriptions.
    pub msg_rate_out: f64,
    /// Bytes published per second.
    pub msg_throughput_in: f64,
    /// Bytes dispatched per second.
    pub msg_throughput_out: f64,
    /// Bytes stored by the topic's managed ledger.
    pub storage_size: u64,
    /// Messages in backlog, summed over subscriptions.
    pub msg_backlog: u64,
    /// Bytes in backlog (from the slowest subscription).
    pub backlog_size: u64,
    /// Connected producers.
    pub producers: usize,
    /// Subscriptions.
    pub subscriptions: usize,
    /// Connected consumers, all subscriptions.
    pub consumers: usize,
}

impl TopicRow {
    /// The current figures of a loaded topic.
    #[must_use]
    pub fn of(t: &Topic) -> TopicRow {
        let (msg_rate_in, msg_throughput_in) = t.msg_in.rates();
        let mut row = TopicRow {
            name: t.name.to_string(),
            partitioned_topic: t.name.partition_index().map(|_| t.name.base().to_string()),
            loaded: true,
            msg_rate_in,
            msg_throughput_in,
            storage_size: t.ledger.stats().total_size,
            backlog_size: t.backlog_size(),
            producers: t.producers().len(),
            ..TopicRow::default()
        };
        for s in t.subscriptions() {
            let (r, tp) = s.out.rates();
            row.msg_rate_out += r;
            row.msg_throughput_out += tp;
            row.msg_backlog += s.cursor.backlog();
            row.consumers += s.consumers().len();
            row.subscriptions += 1;
        }
        row
    }
}

/// A partitioned topic.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PartitionedRow {
    /// `persistent://tenant/ns/topic` (without a partition suffix).
    pub name: String,
    /// Number of partitions.
    pub partitions: u32,
}

/// Everything the overview page shows.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Overview {
    /// When this was taken, milliseconds since the Unix epoch.
    pub now: u64,
    /// Cluster name (`clusterName`).
    pub cluster: String,
    /// Topics and partitions, loaded or only stored, sorted by name.
    pub topics: Vec<TopicRow>,
    /// Partitioned topics, sorted by name.
    pub partitioned: Vec<PartitionedRow>,
}

/// Collects the overview (blocking: takes topic and cursor locks).
#[must_use]
pub fn overview(svc: &BrokerService) -> Overview {
    let loaded = svc.loaded_topics();
    let mut namespaces: BTreeSet<String> = loaded.iter().map(|t| t.name.namespace_name()).collect();
    namespaces.insert("public/default".to_owned());
    let mut topics: Vec<TopicRow> = loaded.iter().map(|t| TopicRow::of(t)).collect();
    let mut partitioned = Vec::new();
    for ns in &namespaces {
        for name in svc.topics_of_namespace(ns) {
            if svc.loaded_topic(&name).is_none() {
                topics.push(TopicRow {
                    name: name.to_string(),
                    partitioned_topic: name.partition_index().map(|_| name.base().to_string()),
                    ..TopicRow::default()
                });
            }
        }
        partitioned.extend(
            svc.partitioned_topics(ns)
                .into_iter()
                .map(|(t, n)| PartitionedRow {
                    name: t.to_string(),
                    partitions: n,
                }),
        );
    }
    topics.sort_by(|a, b| a.name.cmp(&b.name));
    Overview {
        now: svc.clock().now_ms(),
        cluster: svc.config.cluster_name.clone(),
        topics,
        partitioned,
    }
}

/// `GET /console/api/overview`.
pub async fn overview_handler(State(ctx): State<Arc<ServerContext>>) -> Response {
    let svc = Arc::clone(&ctx.service);
    match tokio::task::spawn_blocking(move || overview(&svc)).await {
        Ok(o) => Json(o).into_response(),
        Err(e) => crate::http::fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}
