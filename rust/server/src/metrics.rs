//! Prometheus text exposition at `/metrics`, with Pulsar's metric names and labels
//! (`cluster`, `namespace`, `topic`, `subscription`). Non-persistent topics report the same
//! topic and subscription families (nothing stored: storage and backlog are 0) plus, per
//! subscription, the messages dropped for want of permits: Pulsar's
//! `pulsar_subscription_msg_drop_rate` and a `pulsar_subscription_msg_drop_total` counter.

use std::fmt::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};

use crate::context::ServerContext;

/// A metric family being collected: name, Prometheus type, (labels, value) samples.
type Family = (&'static str, &'static str, Vec<(String, f64)>);

/// Appends one family: `# TYPE` line then the samples.
struct Families {
    out: String,
}

impl Families {
    fn family(&mut self, name: &str, kind: &str, samples: &[(String, f64)]) {
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
        for (labels, v) in samples {
            let _ = writeln!(self.out, "{name}{{{labels}}} {v}");
        }
    }

    /// A summary without quantiles: its `_count` and `_sum`.
    fn summary(&mut self, name: &str, labels: &str, count: u64, sum: f64) {
        let _ = writeln!(self.out, "# TYPE {name} summary");
        let _ = writeln!(self.out, "{name}_count{{{labels}}} {count}");
        let _ = writeln!(self.out, "{name}_sum{{{labels}}} {sum}");
    }
}

/// `GET /metrics`.
pub async fn render(State(ctx): State<Arc<ServerContext>>) -> Response {
    let svc = Arc::clone(&ctx.service);
    let cluster = svc.config.cluster_name.clone();
    let mut topic_samples: Vec<Family> = vec![
        ("pulsar_rate_in", "gauge", vec![]),
        ("pulsar_rate_out", "gauge", vec![]),
        ("pulsar_throughput_in", "gauge", vec![]),
        ("pulsar_throughput_out", "gauge", vec![]),
        ("pulsar_in_messages_total", "counter", vec![]),
        ("pulsar_in_bytes_total", "counter", vec![]),
        ("pulsar_storage_size", "gauge", vec![]),
        ("pulsar_storage_backlog_size", "gauge", vec![]),
        ("pulsar_msg_backlog", "gauge", vec![]),
        ("pulsar_producers_count", "gauge", vec![]),
        ("pulsar_subscriptions_count", "gauge", vec![]),
        ("pulsar_consumers_count", "gauge", vec![]),
        // Last: non-persistent topics (which fill the families above in order) have none.
        ("pulsar_storage_offloaded_size", "gauge", vec![]),
        // PIP-437's `pulsar.broker.topic.messages.delayed.rejected`.
        (
            "pulsar_broker_topic_messages_delayed_rejected_total",
            "counter",
            vec![],
        ),
    ];
    let mut sub_samples: Vec<Family> = vec![
        ("pulsar_subscription_back_log", "gauge", vec![]),
        ("pulsar_subscription_backlog_size", "gauge", vec![]),
        ("pulsar_subscription_unacked_messages", "gauge", vec![]),
        ("pulsar_subscription_msg_rate_out", "gauge", vec![]),
        ("pulsar_subscription_msg_throughput_out", "gauge", vec![]),
        ("pulsar_subscription_consumers_count", "gauge", vec![]),
        ("pulsar_subscription_msg_rate_expired", "gauge", vec![]),
        ("pulsar_subscription_total_msg_expired", "counter", vec![]),
    ];
    #[allow(clippy::cast_precision_loss)]
    for t in svc.loaded_topics() {
        let labels = topic_labels(&svc, &cluster, &t.name);
        let (rate_in, tput_in) = t.msg_in.rates();
        let st = t.ledger.stats();
        let subs = t.subscriptions();
        let (mut rate_out, mut tput_out, mut backlog, mut consumers) = (0.0, 0.0, 0u64, 0usize);
        for s in &subs {
            let sl = format!("{labels},subscription=\"{}\"", s.name);
            let (r, tp) = s.out.rates();
            rate_out += r;
            tput_out += tp;
            let b = s.cursor.backlog();
            backlog = backlog.max(b);
            let n = s.consumers().len();
            consumers += n;
            let values = [
                b as f64,
                s.cursor.estimated_backlog_size() as f64,
                s.unacked_messages() as f64,
                r,
                tp,
                n as f64,
                s.expiry.rate(),
                s.expiry.total() as f64,
            ];
            for ((_, _, samples), v) in sub_samples.iter_mut().zip(values) {
                samples.push((sl.clone(), v));
            }
        }
        let values = [
            rate_in,
            rate_out,
            tput_in,
            tput_out,
            t.msg_in.total() as f64,
            t.msg_in.total_bytes() as f64,
            st.total_size as f64,
            t.backlog_size() as f64,
            backlog as f64,
            t.producers().len() as f64,
            subs.len() as f64,
            consumers as f64,
            t.ledger.offload_summary().size as f64,
            // Relaxed: a statistic.
            t.delayed_rejected.load(Ordering::Relaxed) as f64,
        ];
        for ((_, _, samples), v) in topic_samples.iter_mut().zip(values) {
            samples.push((labels.clone(), v));
        }
    }
    let drop_samples = non_persistent(&svc, &cluster, &mut topic_samples, &mut sub_samples);
    let age_samples = backlog_ages(&svc, &cluster);
    let mut f = Families { out: String::new() };
    for (name, kind, samples) in topic_samples
        .iter()
        .chain(sub_samples.iter())
        .chain(drop_samples.iter())
        .chain(age_samples.iter())
    {
        f.family(name, kind, samples);
    }
    let c = format!("cluster=\"{cluster}\"");
    let cache = svc.storage.cache_stats();
    let deletions = svc
        .storage
        .backing()
        .map_or((0, 0), |b| b.ledger_deletions());
    #[allow(clippy::cast_precision_loss)]
    let broker: [(&str, &str, f64); 15] = [
        (
            "pulsar_ml_cache_used_size",
            "gauge",
            cache.size_bytes as f64,
        ),
        (
            "pulsar_ml_cache_hits_total",
            "counter",
            cache.hits_entries as f64,
        ),
        (
            "pulsar_ml_cache_hits_throughput_total",
            "counter",
            cache.hits_bytes as f64,
        ),
        (
            "pulsar_ml_cache_misses_total",
            "counter",
            cache.misses_entries as f64,
        ),
        (
            "pulsar_ml_cache_evictions_total",
            "counter",
            cache.evicted_entries as f64,
        ),
        // Not Pulsar's: entries cursors took from their read-ahead (see the ledger's `read_ahead`).
        (
            "pulsar_ml_read_ahead_entries_total",
            "counter",
            svc.storage.read_ahead_entries() as f64,
        ),
        // Not Pulsar's: PIP-444's ledger deletions on BookKeeper, waiting for one of the
        // `managedLedgerDeleteMaxConcurrentRequests` permits and at the bookies now.
        (
            "pulsar_ml_ledger_deletions_waiting",
            "gauge",
            deletions.0 as f64,
        ),
        (
            "pulsar_ml_ledger_deletions_in_flight",
            "gauge",
            deletions.1 as f64,
        ),
        // Relaxed: metric reads.
        (
            "pulsar_broker_throttled_connections",
            "gauge",
            ctx.throttled_connections.load(Ordering::Relaxed) as f64,
        ),
        (
            "pulsar_publish_rate_limit_times",
            "counter",
            ctx.publish_throttle_events.load(Ordering::Relaxed) as f64,
        ),
        (
            "pulsar_ml_corrupt_entries",
            "gauge",
            svc.storage.corrupt_entries() as f64,
        ),
        (
            "pulsar_quarantined_topics",
            "gauge",
            svc.quarantined_topics().len() as f64,
        ),
        (
            "pulsar_topics_count",
            "gauge",
            svc.loaded_topics().len() as f64,
        ),
        (
            "pulsar_broker_publish_buffer_size",
            "gauge",
            ctx.publish_buffer.bytes.load(Ordering::Relaxed) as f64,
        ),
        (
            "pulsar_broker_throttled_connections_global_limit",
            "counter",
            ctx.publish_buffer.pauses.load(Ordering::Relaxed) as f64,
        ),
    ];
    for (name, kind, v) in broker {
        f.family(name, kind, &[(c.clone(), v)]);
    }
    transactions(&svc, &cluster, &mut f);
    if svc.config.replication_metrics_enabled {
        replication(&ctx, &cluster, &mut f);
    }
    load_balancing(&ctx, &cluster, &mut f);
    topic_list_limits(&ctx, &cluster, &mut f);
    ([("content-type", "text/plain; version=0.0.4")], f.out).into_response()
}

/// PIP-442's `pulsar_broker_topic_list_*` families: the heap and direct memory topic lists
/// hold, their limits, the requests waiting, the waits (a summary without quantiles) and the
/// waits that timed out.
#[allow(clippy::cast_precision_loss)]
fn topic_list_limits(ctx: &ServerContext, cluster: &str, f: &mut Families) {
    let c = format!("cluster=\"{cluster}\"");
    let l = &ctx.topic_list_limiter;
    for (kind, s) in [("heap", &l.heap), ("direct", &l.direct)] {
        let p = format!("pulsar_broker_topic_list_{kind}");
        for (name, metric, v) in [
            ("memory_used_bytes", "gauge", s.used() as f64),
            ("memory_limit_bytes", "gauge", s.limit() as f64),
            ("queue_size", "gauge", s.queued() as f64),
            ("queue_max_size", "gauge", s.queue_max() as f64),
            ("timeout_total", "counter", s.timeouts() as f64),
        ] {
            f.family(&format!("{p}_{name}"), metric, &[(c.clone(), v)]);
        }
        let (n, ms) = s.waits();
        f.summary(&format!("{p}_wait_time_ms"), &c, n, ms);
    }
}

/// Pulsar's `pulsar_replication_*` families: per topic and remote cluster (label
/// `remote_cluster`), what the replicator sends there and what that cluster's replicator
/// publishes here.
#[allow(clippy::cast_precision_loss)]
fn replication(ctx: &ServerContext, cluster: &str, f: &mut Families) {
    let mut families: Vec<Family> = vec![
        ("pulsar_replication_rate_in", "gauge", vec![]),
        ("pulsar_replication_rate_out", "gauge", vec![]),
        ("pulsar_replication_throughput_in", "gauge", vec![]),
        ("pulsar_replication_throughput_out", "gauge", vec![]),
        ("pulsar_replication_backlog", "gauge", vec![]),
        ("pulsar_replication_connected_count", "gauge", vec![]),
        ("pulsar_replication_rate_expired", "gauge", vec![]),
        ("pulsar_replication_delay_in_seconds", "gauge", vec![]),
    ];
    for t in ctx.service.loaded_topics() {
        let peers = crate::replication::view::peers(ctx, &t);
        if peers.is_empty() {
            continue;
        }
        let labels = topic_labels(&ctx.service, cluster, &t.name);
        for peer in peers {
            let status = peer.outbound.as_deref();
            let (rate_out, tput_out) = status.map_or((0.0, 0.0), |s| s.msg_out.rates());
            let (rate_in, tput_in) = peer
                .inbound
                .as_ref()
                .map_or((0.0, 0.0), |p| p.meters.msg_in.rates());
            let connected = status.is_some_and(|s| s.is_connected());
            let values = [
                rate_in,
                rate_out,
                tput_in,
                tput_out,
                peer.cursor.backlog() as f64,
                f64::from(u8::from(connected)),
                0.0,
                0.0,
            ];
            let l = format!("{labels},remote_cluster=\"{}\"", peer.remote);
            for ((_, _, samples), v) in families.iter_mut().zip(values) {
                samples.push((l.clone(), v));
            }
        }
    }
    for (name, kind, samples) in &families {
        f.family(name, kind, samples);
    }
    // Replicated subscriptions' snapshots, summed over the broker's topics (Pulsar's families
    // carry no topic label).
    let (pending, timed_out, done) = ctx
        .service
        .loaded_topics()
        .iter()
        .map(|t| t.replicated_subscription_snapshots())
        .fold((0usize, 0u64, (0u64, 0u64)), |(p, o, d), (tp, to, td)| {
            (p + tp, o + to, (d.0 + td.count, d.1 + td.sum_ms))
        });
    let c = format!("cluster=\"{cluster}\"");
    f.family(
        "pulsar_replicated_subscriptions_pending_snapshots",
        "gauge",
        &[(c.clone(), pending as f64)],
    );
    f.family(
        "pulsar_replicated_subscriptions_timedout_snapshots",
        "counter",
        &[(c.clone(), timed_out as f64)],
    );
    f.summary(
        "pulsar_replicated_subscriptions_snapshot_ms",
        &c,
        done.0,
        done.1 as f64,
    );
}

/// The load balancer's families, in a cluster (Pulsar's `brk_lb_*` metrics as Prometheus names
/// them): this broker's resource usage as its load report has it (percent), and the bundles the
/// leader shed and the bundles split here.
#[allow(clippy::cast_precision_loss)]
fn load_balancing(ctx: &ServerContext, cluster: &str, f: &mut Families) {
    let Some(member) = ctx.cluster.get() else {
        return;
    };
    let report = member.load_report();
    let usage = format!(
        "cluster=\"{cluster}\",broker=\"{}\",metric=\"loadBalancing\"",
        member.broker_id()
    );
    for (name, r) in [
        ("pulsar_lb_cpu_usage", report.cpu),
        ("pulsar_lb_directMemory_usage", report.direct_memory),
        ("pulsar_lb_bandwidth_in_usage", report.bandwidth_in),
        ("pulsar_lb_bandwidth_out_usage", report.bandwidth_out),
    ] {
        f.family(name, "gauge", &[(usage.clone(), r.percent_usage())]);
    }
    let c = &ctx.load_balancer;
    // Relaxed: metric reads.
    for (name, metric, v) in [
        (
            "pulsar_lb_unload_broker_count",
            "bundleUnloading",
            c.unload_broker_count.load(Ordering::Relaxed),
        ),
        (
            "pulsar_lb_unload_bundle_count",
            "bundleUnloading",
            c.unload_bundle_count.load(Ordering::Relaxed),
        ),
        (
            "pulsar_lb_bundles_split_count",
            "bundlesSplit",
            c.bundles_split_count.load(Ordering::Relaxed),
        ),
    ] {
        let labels = format!("cluster=\"{cluster}\",metric=\"{metric}\"");
        f.family(name, "counter", &[(labels, v as f64)]);
    }
}

/// Adds the non-persistent topics' samples to the topic and subscription families (in their
/// order) and returns the drop families.
#[allow(clippy::cast_precision_loss)]
fn non_persistent(
    svc: &pulsar_rs_broker::BrokerService,
    cluster: &str,
    topic_samples: &mut [Family],
    sub_samples: &mut [Family],
) -> Vec<Family> {
    let mut drops: Vec<Family> = vec![
        ("pulsar_subscription_msg_drop_rate", "gauge", vec![]),
        ("pulsar_subscription_msg_drop_total", "counter", vec![]),
    ];
    for t in svc.non_persistent_topics() {
        let labels = topic_labels(svc, cluster, &t.name);
        let (rate_in, tput_in) = t.msg_in.rates();
        let subs = t.subscriptions();
        let (mut rate_out, mut tput_out, mut consumers) = (0.0, 0.0, 0usize);
        for s in &subs {
            let sl = format!("{labels},subscription=\"{}\"", s.name);
            let attached = s.consumers();
            let (r, tp) = attached
                .iter()
                .map(|c| c.out.rates())
                .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
            rate_out += r;
            tput_out += tp;
            consumers += attached.len();
            let values = [0.0, 0.0, 0.0, r, tp, attached.len() as f64, 0.0, 0.0];
            for ((_, _, samples), v) in sub_samples.iter_mut().zip(values) {
                samples.push((sl.clone(), v));
            }
            drops[0].2.push((sl.clone(), s.msg_drop.rates().0));
            drops[1].2.push((sl, s.msg_drop.total() as f64));
        }
        let values = [
            rate_in,
            rate_out,
            tput_in,
            tput_out,
            t.msg_in.total() as f64,
            t.msg_in.total_bytes() as f64,
            0.0,
            0.0,
            0.0,
            t.producers().len() as f64,
            subs.len() as f64,
            consumers as f64,
        ];
        for ((_, _, samples), v) in topic_samples.iter_mut().zip(values) {
            samples.push((labels.clone(), v));
        }
    }
    drops
}

/// The Prometheus labels of one topic (`cluster`, `namespace`, `topic`), as Pulsar's, then
/// its custom labels (PIP-447, [`pulsar_rs_broker::BrokerService::custom_metric_labels`]).
fn topic_labels(
    svc: &pulsar_rs_broker::BrokerService,
    cluster: &str,
    name: &pulsar_rs_broker::TopicName,
) -> String {
    let mut labels = format!(
        "cluster=\"{cluster}\",namespace=\"{}\",topic=\"{name}\"",
        name.namespace_name()
    );
    for (k, v) in svc.custom_metric_labels(name) {
        let _ = write!(labels, ",{k}=\"{}\"", escape_label_value(&v));
    }
    labels
}

/// A label value as the text format writes it: `\\`, `\"` and `\n` escaped.
fn escape_label_value(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Pulsar's transaction metrics: per coordinator (`coordinator_id`) and per topic's transaction
/// buffer. Nothing without `transactionCoordinatorEnabled`.
#[allow(clippy::cast_precision_loss)]
fn transactions(svc: &pulsar_rs_broker::BrokerService, cluster: &str, f: &mut Families) {
    if !svc.transactions_enabled() {
        return;
    }
    let mut tc: Vec<Family> = vec![
        ("pulsar_txn_active_count", "gauge", vec![]),
        ("pulsar_txn_created_total", "counter", vec![]),
        ("pulsar_txn_committed_total", "counter", vec![]),
        ("pulsar_txn_aborted_total", "counter", vec![]),
        ("pulsar_txn_timeout_total", "counter", vec![]),
        ("pulsar_txn_append_log_total", "counter", vec![]),
    ];
    for c in svc.coordinators() {
        let labels = format!("cluster=\"{cluster}\",coordinator_id=\"{}\"", c.id);
        let s = &c.stats;
        // Relaxed: metric reads.
        let values = [
            c.active_count() as f64,
            s.created.load(Ordering::Relaxed) as f64,
            s.committed.load(Ordering::Relaxed) as f64,
            s.aborted.load(Ordering::Relaxed) as f64,
            s.timed_out.load(Ordering::Relaxed) as f64,
            s.append_log.load(Ordering::Relaxed) as f64,
        ];
        for ((_, _, samples), v) in tc.iter_mut().zip(values) {
            samples.push((labels.clone(), v));
        }
    }
    let mut tb: Vec<Family> = vec![
        ("pulsar_txn_tb_active_total", "gauge", vec![]),
        ("pulsar_txn_tb_committed_total", "counter", vec![]),
        ("pulsar_txn_tb_aborted_total", "counter", vec![]),
    ];
    for t in svc.loaded_topics() {
        let Some(buffer) = &t.txn_buffer else {
            continue;
        };
        let labels = topic_labels(svc, cluster, &t.name);
        // Relaxed: metric reads.
        let values = [
            buffer.ongoing_count() as f64,
            buffer.stats.committed.load(Ordering::Relaxed) as f64,
            buffer.stats.aborted.load(Ordering::Relaxed) as f64,
        ];
        for ((_, _, samples), v) in tb.iter_mut().zip(values) {
            samples.push((labels.clone(), v));
        }
    }
    for (name, kind, samples) in tc.iter().chain(tb.iter()) {
        f.family(name, kind, samples);
    }
}

/// PIP-492's `pulsar_subscription_storage_backlog_age_seconds` (with
/// `exposeSubscriptionBacklogAgeInPrometheus`): each durable subscription's backlog age as the
/// backlog quota check last kept it; no sample where it is unknown (no backlog, not yet checked).
fn backlog_ages(svc: &pulsar_rs_broker::BrokerService, cluster: &str) -> Vec<Family> {
    if !svc.config.expose_subscription_backlog_age_in_prometheus {
        return Vec::new();
    }
    let now = svc.clock().now_ms();
    let mut samples = Vec::new();
    for t in svc.loaded_topics() {
        let labels = topic_labels(svc, cluster, &t.name);
        for s in t.subscriptions().iter().filter(|s| s.durable) {
            if let Some(age) = s.backlog_age_seconds(now) {
                #[allow(clippy::cast_precision_loss)]
                samples.push((format!("{labels},subscription=\"{}\"", s.name), age as f64));
            }
        }
    }
    vec![(
        "pulsar_subscription_storage_backlog_age_seconds",
        "gauge",
        samples,
    )]
}
