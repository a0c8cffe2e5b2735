//! The load generator behind `pulsar-rs-perf` and `pulsar-rs perf produce|consume`, in the spirit
//! of Pulsar's `pulsar-perf`.
//!
//! Producers and consumers speak the Pulsar binary protocol directly (see
//! `pulsar_rs_perf::client`), so the same binary measures pulsar_rs and any other
//! Pulsar-compatible broker (pulsar-lite). Producers and consumers of one run share a process;
//! several of them may share a connection (`--connections`), as the official clients multiplex
//! producers over one connection per broker.
//!
//! Every message carries its send time, so consumers report end-to-end latency. Publish latency
//! is measured from the message's *intended* send time when a rate is set (no coordinated
//! omission) and from the moment it is written otherwise. [`run`] reports a line per second
//! (msg/s, MB/s, latency percentiles) through a callback and returns the summary as JSON.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};

mod consumer;
mod producer;
mod ticker;

use crate::batch::MIN_MESSAGE_SIZE;
use crate::client::Result;
use crate::stats::{new_histogram, summary_ms};
use consumer::run_consumer_conn;
use hdrhistogram::Histogram;
use producer::run_producer_conn;
use pulsar_rs_proto::pb::command_subscribe::SubType;
use serde::Serialize;
use serde_json::json;
use tokio::sync::Notify;

/// Subscription type of the consumers.
#[derive(Clone, Copy, Debug, ValueEnum, Serialize)]
pub enum SubKind {
    /// Exclusive when each topic has at most one consumer, Shared otherwise.
    Auto,
    Exclusive,
    Shared,
    Failover,
    KeyShared,
}

/// Command-line options.
#[derive(Parser, Debug, Clone, Serialize)]
#[command(
    name = "pulsar-rs-perf",
    about = "Pulsar protocol load generator",
    args_override_self = true
)]
#[allow(clippy::struct_excessive_bools)]
pub struct Args {
    /// Broker service URL.
    #[arg(long, default_value = "pulsar://127.0.0.1:6650")]
    pub url: String,
    /// pulsar-perf's `--num-producers`: producers *per topic* (default 1 per topic, as
    /// pulsar-perf); wins over `--producers`.
    #[arg(long = "num-producers")]
    pub num_producers: Option<usize>,
    /// pulsar-perf's `--num-consumers`: consumers per topic (one subscription); wins over
    /// `--consumers`.
    #[arg(long = "num-consumers")]
    pub num_consumers: Option<usize>,
    /// Producers in all, spread round-robin over the topics (default: `--num-producers`).
    #[arg(long = "producers")]
    pub total_producers: Option<usize>,
    /// Consumers in all, spread round-robin over the topics (default: `--num-consumers`).
    #[arg(long = "consumers")]
    pub total_consumers: Option<usize>,
    /// The producers in all, as resolved from the options above by [`Args::resolved`].
    #[arg(skip)]
    pub producers: usize,
    /// The consumers in all, as resolved by [`Args::resolved`].
    #[arg(skip)]
    pub consumers: usize,
    /// Number of topics.
    #[arg(long, visible_alias = "num-topics", default_value_t = 1)]
    pub topics: usize,
    /// Topic names are `persistent://public/default/<prefix>-<i>`.
    #[arg(long, default_value = "perf")]
    pub topic_prefix: String,
    /// Message size in bytes (at least 8: the send timestamp).
    #[arg(long, default_value_t = 100)]
    pub size: usize,
    /// Messages per batch (one SEND); 1 = unbatched.
    #[arg(long, visible_alias = "batch-max-messages", default_value_t = 1)]
    pub batch: usize,
    /// Total publish rate in messages/s over all producers; 0 = as fast as possible.
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// Seconds of publishing (or of consuming when there are no producers).
    #[arg(long, visible_alias = "test-duration", default_value_t = 10.0)]
    pub duration: f64,
    /// Producers stop after publishing this many messages in total (0 = no limit).
    #[arg(long, default_value_t = 0)]
    pub max_messages: u64,
    /// Maximum unacknowledged messages per producer.
    #[arg(long, default_value_t = 1000)]
    pub max_inflight: usize,
    /// Consumer receiver queue: initial FLOW permits, refilled at half.
    #[arg(long, default_value_t = 1000)]
    pub receiver_queue: u32,
    /// Subscription name.
    #[arg(long, visible_alias = "subscriber-name", default_value = "perf-sub")]
    pub subscription: String,
    /// Subscription type.
    #[arg(
        long,
        visible_alias = "subscription-type",
        value_enum,
        default_value = "auto"
    )]
    pub sub_type: SubKind,
    /// Subscribe at the earliest position (catch-up reads of an existing backlog).
    #[arg(long)]
    pub earliest: bool,
    /// Consumers stop once they received this many messages in total (0 = no target).
    #[arg(long, default_value_t = 0)]
    pub expect: u64,
    /// Consumers subscribe but never send FLOW (to build a backlog for a later catch-up run).
    #[arg(long)]
    pub no_flow: bool,
    /// Seconds to wait for outstanding receipts and messages after publishing stops.
    #[arg(long, default_value_t = 10.0)]
    pub drain_timeout: f64,
    /// Connections per role (0 = one per producer and per consumer).
    #[arg(long, default_value_t = 0)]
    pub connections: usize,
    /// Tokio worker threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
}

impl Args {
    /// The counts in all: `--num-producers` / `--num-consumers` per topic (pulsar-perf's meaning),
    /// else `--producers` / `--consumers` in all, else one of each per topic.
    #[must_use]
    pub fn resolved(mut self) -> Args {
        let per_topic = |n: Option<usize>, total: Option<usize>| match (n, total) {
            (Some(n), _) => n * self.topics,
            (None, Some(t)) => t,
            (None, None) => self.topics,
        };
        self.producers = per_topic(self.num_producers, self.total_producers);
        self.consumers = per_topic(self.num_consumers, self.total_consumers);
        self
    }
}

/// Counters shared by all tasks. Relaxed atomics: statistics and stop flags; the Notify
/// provides the wake-ups.
pub(crate) struct Progress {
    /// Messages acknowledged to producers.
    pub(crate) published: AtomicU64,
    /// Set when every producer has stopped and drained.
    pub(crate) producers_done: AtomicBool,
    /// Messages received by consumers.
    pub(crate) received: AtomicU64,
    /// Publish errors (SEND_ERROR).
    pub(crate) send_errors: AtomicU64,
    /// Set when consumers must stop (deadline).
    pub(crate) stop: AtomicBool,
    /// Woken when something changes that consumers wait on.
    pub(crate) changed: Notify,
    /// Payload bytes received by consumers (per-second MB/s).
    pub(crate) received_bytes: AtomicU64,
    /// Publish latencies since the last per-second line; taken by the ticker. Locked once per
    /// receipt frame by producer readers, once per second by the ticker.
    pub(crate) publish_latency: Mutex<Histogram<u64>>,
    /// End-to-end latencies since the last per-second line; consumers merge into it once per
    /// read batch.
    e2e_latency: Mutex<Histogram<u64>>,
}

impl Default for Progress {
    fn default() -> Self {
        Progress {
            published: AtomicU64::new(0),
            producers_done: AtomicBool::new(false),
            received: AtomicU64::new(0),
            send_errors: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            changed: Notify::new(),
            received_bytes: AtomicU64::new(0),
            publish_latency: Mutex::new(new_histogram()),
            e2e_latency: Mutex::new(new_histogram()),
        }
    }
}

/// One message batch awaiting its receipt.
pub(crate) struct Pending {
    pub(crate) first_seq: u64,
    pub(crate) messages: u64,
    pub(crate) start_ns: u64,
}

/// Per-producer state guarded by the connection's lock.
pub(crate) struct ProducerState {
    pub(crate) id: u64,
    pub(crate) name: String,
    pub(crate) next_seq: u64,
    pub(crate) inflight: usize,
    pub(crate) pending: VecDeque<Pending>,
    pub(crate) next_due: Instant,
}

/// A producer connection's shared state (writer loop and receipt reader).
pub(crate) struct ProducerConn {
    pub(crate) producers: Vec<ProducerState>,
    pub(crate) hist: Histogram<u64>,
    pub(crate) acked: u64,
    pub(crate) last_receipt: Option<Instant>,
    pub(crate) closed: bool,
}

/// What one producer connection reports.
pub(crate) struct ProducerReport {
    pub(crate) hist: Histogram<u64>,
    pub(crate) acked: u64,
    pub(crate) last_receipt: Option<Instant>,
}

/// What one consumer connection reports.
pub(crate) struct ConsumerReport {
    pub(crate) hist: Histogram<u64>,
    pub(crate) received: u64,
    pub(crate) bytes: u64,
    pub(crate) first: Option<Instant>,
    pub(crate) last: Option<Instant>,
}

pub(crate) fn topic_name(args: &Args, i: usize) -> String {
    format!(
        "persistent://public/default/{}-{}",
        args.topic_prefix,
        i % args.topics.max(1)
    )
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Splits `0..n` into at most `connections` contiguous groups (0 = one item per group).
/// Contiguous ids let a connection find a producer or consumer by `id - first id`.
pub(crate) fn groups(n: usize, connections: usize) -> Vec<Vec<usize>> {
    let c = if connections == 0 {
        n
    } else {
        connections.min(n)
    };
    if c == 0 {
        return Vec::new();
    }
    let per = n.div_ceil(c);
    (0..n)
        .collect::<Vec<_>>()
        .chunks(per)
        .map(<[usize]>::to_vec)
        .collect()
}

/// The run's (start, publishing deadline), published once every connection is set up.
pub(crate) type Times = tokio::sync::watch::Receiver<Option<(Instant, Instant)>>;

pub(crate) fn rate(n: u64, d: Duration) -> f64 {
    if d.is_zero() {
        0.0
    } else {
        n as f64 / d.as_secs_f64()
    }
}

/// Runs a load as `args` says, calling `on_line` with one line per second (msg/s, MB/s and
/// latency percentiles of that second); returns the summary as JSON.
///
/// # Errors
/// Bad arguments, or connections that cannot be set up.
pub async fn run(
    args: Arc<Args>,
    on_line: Arc<dyn Fn(&str) + Send + Sync>,
) -> Result<serde_json::Value> {
    if args.size < MIN_MESSAGE_SIZE {
        return Err(format!("--size must be at least {MIN_MESSAGE_SIZE}").into());
    }
    if args.batch == 0 || args.topics == 0 {
        return Err("--batch and --topics must be > 0".into());
    }
    let args = Arc::new(args.as_ref().clone().resolved());
    let per_topic = args.consumers.div_ceil(args.topics);
    let sub_type = match args.sub_type {
        SubKind::Auto if per_topic > 1 => SubType::Shared,
        SubKind::Auto | SubKind::Exclusive => SubType::Exclusive,
        SubKind::Shared => SubType::Shared,
        SubKind::Failover => SubType::Failover,
        SubKind::KeyShared => SubType::KeyShared,
    };
    let progress = Arc::new(Progress::default());
    let base = pulsar_rs_clock::monotonic();
    let prod_groups = groups(args.producers, args.connections);
    let cons_groups = groups(args.consumers, args.connections);
    let ready = Arc::new(tokio::sync::Barrier::new(
        prod_groups.len() + cons_groups.len() + 1,
    ));
    let (times_tx, times_rx) = tokio::sync::watch::channel(None::<(Instant, Instant)>);
    let setup_start = pulsar_rs_clock::monotonic();

    let mut consumer_tasks = Vec::new();
    for g in cons_groups {
        let (args, progress, ready) =
            (Arc::clone(&args), Arc::clone(&progress), Arc::clone(&ready));
        consumer_tasks.push(tokio::spawn(run_consumer_conn(
            args, g, sub_type, progress, ready,
        )));
    }
    let mut producer_tasks = Vec::new();
    for g in prod_groups {
        let (args, progress, ready) =
            (Arc::clone(&args), Arc::clone(&progress), Arc::clone(&ready));
        producer_tasks.push(tokio::spawn(run_producer_conn(
            args,
            g,
            base,
            progress,
            ready,
            times_rx.clone(),
        )));
    }
    ready.wait().await;
    let setup = setup_start.elapsed();
    let start = pulsar_rs_clock::monotonic();
    let deadline = start + Duration::from_secs_f64(args.duration);
    let _ = times_tx.send(Some((start, deadline)));
    let ticker = tokio::spawn(ticker::tick_lines(
        Arc::clone(&args),
        Arc::clone(&progress),
        start,
        on_line,
    ));

    let mut publish_hist = new_histogram();
    let mut acked = 0u64;
    let mut last_receipt = None::<Instant>;
    let mut errors = Vec::new();
    for t in producer_tasks {
        match t.await {
            Ok(Ok(r)) => {
                publish_hist.add(&r.hist).ok();
                acked += r.acked;
                last_receipt = last_receipt.max(r.last_receipt);
            }
            Ok(Err(e)) => errors.push(e.to_string()),
            Err(e) => errors.push(e.to_string()),
        }
    }
    progress.producers_done.store(true, Ordering::Relaxed);
    progress.changed.notify_waiters();
    // Consumers watch the hard deadline through a timer of their own.
    let consumer_deadline = if args.producers == 0 && args.expect == 0 {
        deadline
    } else if args.producers == 0 {
        start + Duration::from_secs_f64(args.duration.max(1.0) + args.drain_timeout)
    } else if args.no_flow {
        pulsar_rs_clock::monotonic()
    } else {
        pulsar_rs_clock::monotonic() + Duration::from_secs_f64(args.drain_timeout)
    };
    let stopper = {
        let progress = Arc::clone(&progress);
        tokio::spawn(async move {
            tokio::time::sleep_until(consumer_deadline.into()).await;
            progress.stop.store(true, Ordering::Relaxed);
            progress.changed.notify_waiters();
        })
    };
    let mut e2e_hist = new_histogram();
    let (mut received, mut bytes) = (0u64, 0u64);
    let (mut first, mut last) = (None::<Instant>, None::<Instant>);
    for t in consumer_tasks {
        match t.await {
            Ok(Ok(r)) => {
                e2e_hist.add(&r.hist).ok();
                received += r.received;
                bytes += r.bytes;
                first = match (first, r.first) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                last = last.max(r.last);
            }
            Ok(Err(e)) => errors.push(e.to_string()),
            Err(e) => errors.push(e.to_string()),
        }
    }
    stopper.abort();
    ticker.abort();
    let publish_time = last_receipt.map_or(Duration::ZERO, |l| l.duration_since(start));
    let consume_time = match (first, last) {
        (Some(f), Some(l)) => l.duration_since(f),
        _ => Duration::ZERO,
    };
    let msg_rate = rate(acked, publish_time);
    Ok(json!({
        "config": &*args,
        "setup_s": setup.as_secs_f64(),
        "publish": {
            "messages": acked,
            "send_errors": progress.send_errors.load(Ordering::Relaxed),
            "duration_s": publish_time.as_secs_f64(),
            "msg_per_s": msg_rate,
            "mb_per_s": msg_rate * args.size as f64 / 1e6,
            "latency_ms": summary_ms(&publish_hist),
        },
        "consume": {
            "messages": received,
            "payload_bytes": bytes,
            "duration_s": consume_time.as_secs_f64(),
            "msg_per_s": rate(received, consume_time),
            "mb_per_s": rate(bytes, consume_time) / 1e6,
            "e2e_latency_ms": summary_ms(&e2e_hist),
        },
        "errors": errors,
    }))
}

#[cfg(test)]
mod tests {
    use super::groups;

    #[test]
    fn groups_are_contiguous_and_cover_everything() {
        assert_eq!(groups(5, 2), vec![vec![0, 1, 2], vec![3, 4]]);
        assert_eq!(groups(3, 0), vec![vec![0], vec![1], vec![2]]);
        assert!(groups(0, 4).is_empty());
        let g = groups(10_000, 10);
        assert_eq!(g.len(), 10);
        assert!(g.iter().all(|c| c.windows(2).all(|w| w[1] == w[0] + 1)));
    }
}
