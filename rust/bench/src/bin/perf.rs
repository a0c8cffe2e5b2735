//! `pulsar-rs-perf`: a load generator in the spirit of Pulsar's `pulsar-perf`.
//!
//! Producers and consumers speak the Pulsar binary protocol directly (see
//! `pulsar_rs_bench::client`), so the same binary measures pulsar_rs and any other
//! Pulsar-compatible broker (pulsar-lite). Producers and consumers of one run share a process;
//! several of them may share a connection (`--connections`), as the official clients multiplex
//! producers over one connection per broker.
//!
//! Every message carries its send time, so consumers report end-to-end latency. Publish latency
//! is measured from the message's *intended* send time when a rate is set (no coordinated
//! omission) and from the moment it is written otherwise. The result is one JSON object on stdout.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use clap::{Parser, ValueEnum};
use hdrhistogram::Histogram;
use pulsar_rs_bench::batch::{build_payload, for_each_message, now_nanos, MIN_MESSAGE_SIZE};
use pulsar_rs_bench::client::{Conn, Result};
use pulsar_rs_bench::stats::{new_histogram, record, summary_ms};
use pulsar_rs_proto::{
    commands, encode_payload_command, encode_simple,
    pb::{self, base_command::Type, command_ack::AckType, command_subscribe::SubType},
    Frame, MessageIdData,
};
use serde::Serialize;
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::sync::Notify;

/// Subscription type of the consumers.
#[derive(Clone, Copy, Debug, ValueEnum, Serialize)]
enum SubKind {
    /// Exclusive when each topic has at most one consumer, Shared otherwise.
    Auto,
    Exclusive,
    Shared,
    Failover,
    KeyShared,
}

/// Command-line options.
#[derive(Parser, Debug, Clone, Serialize)]
#[command(name = "pulsar-rs-perf", about = "Pulsar protocol load generator")]
struct Args {
    /// Broker service URL.
    #[arg(long, default_value = "pulsar://127.0.0.1:6650")]
    url: String,
    /// Number of producers (spread round-robin over the topics).
    #[arg(long, default_value_t = 1)]
    producers: usize,
    /// Number of consumers (spread round-robin over the topics, one subscription).
    #[arg(long, default_value_t = 1)]
    consumers: usize,
    /// Number of topics.
    #[arg(long, default_value_t = 1)]
    topics: usize,
    /// Topic names are `persistent://public/default/<prefix>-<i>`.
    #[arg(long, default_value = "perf")]
    topic_prefix: String,
    /// Message size in bytes (at least 8: the send timestamp).
    #[arg(long, default_value_t = 100)]
    size: usize,
    /// Messages per batch (one SEND); 1 = unbatched.
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// Total publish rate in messages/s over all producers; 0 = as fast as possible.
    #[arg(long, default_value_t = 0.0)]
    rate: f64,
    /// Seconds of publishing (or of consuming when there are no producers).
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Producers stop after publishing this many messages in total (0 = no limit).
    #[arg(long, default_value_t = 0)]
    max_messages: u64,
    /// Maximum unacknowledged messages per producer.
    #[arg(long, default_value_t = 1000)]
    max_inflight: usize,
    /// Consumer receiver queue: initial FLOW permits, refilled at half.
    #[arg(long, default_value_t = 1000)]
    receiver_queue: u32,
    /// Subscription name.
    #[arg(long, default_value = "perf-sub")]
    subscription: String,
    /// Subscription type.
    #[arg(long, value_enum, default_value = "auto")]
    sub_type: SubKind,
    /// Subscribe at the earliest position (catch-up reads of an existing backlog).
    #[arg(long)]
    earliest: bool,
    /// Consumers stop once they received this many messages in total (0 = no target).
    #[arg(long, default_value_t = 0)]
    expect: u64,
    /// Consumers subscribe but never send FLOW (to build a backlog for a later catch-up run).
    #[arg(long)]
    no_flow: bool,
    /// Seconds to wait for outstanding receipts and messages after publishing stops.
    #[arg(long, default_value_t = 10.0)]
    drain_timeout: f64,
    /// Connections per role (0 = one per producer and per consumer).
    #[arg(long, default_value_t = 0)]
    connections: usize,
    /// Tokio worker threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

/// Counters shared by all tasks.
#[derive(Default)]
struct Progress {
    /// Messages acknowledged to producers.
    published: AtomicU64,
    /// Set when every producer has stopped and drained.
    producers_done: AtomicBool,
    /// Messages received by consumers.
    received: AtomicU64,
    /// Publish errors (SEND_ERROR).
    send_errors: AtomicU64,
    /// Set when consumers must stop (deadline).
    stop: AtomicBool,
    /// Woken when something changes that consumers wait on.
    changed: Notify,
}

/// One message batch awaiting its receipt.
struct Pending {
    first_seq: u64,
    messages: u64,
    start_ns: u64,
}

/// Per-producer state guarded by the connection's lock.
struct ProducerState {
    id: u64,
    name: String,
    next_seq: u64,
    inflight: usize,
    pending: VecDeque<Pending>,
    next_due: Instant,
}

/// A producer connection's shared state (writer loop and receipt reader).
struct ProducerConn {
    producers: Vec<ProducerState>,
    hist: Histogram<u64>,
    acked: u64,
    last_receipt: Option<Instant>,
    closed: bool,
}

/// What one producer connection reports.
struct ProducerReport {
    hist: Histogram<u64>,
    acked: u64,
    last_receipt: Option<Instant>,
}

/// What one consumer connection reports.
struct ConsumerReport {
    hist: Histogram<u64>,
    received: u64,
    bytes: u64,
    first: Option<Instant>,
    last: Option<Instant>,
}

fn topic_name(args: &Args, i: usize) -> String {
    format!(
        "persistent://public/default/{}-{}",
        args.topic_prefix,
        i % args.topics.max(1)
    )
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Splits `0..n` into at most `connections` contiguous groups (0 = one item per group).
/// Contiguous ids let a connection find a producer or consumer by `id - first id`.
fn groups(n: usize, connections: usize) -> Vec<Vec<usize>> {
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
type Times = tokio::sync::watch::Receiver<Option<(Instant, Instant)>>;

async fn run_producer_conn(
    args: Arc<Args>,
    indices: Vec<usize>,
    base: Instant,
    progress: Arc<Progress>,
    ready: Arc<tokio::sync::Barrier>,
    mut times: Times,
) -> Result<ProducerReport> {
    let mut conn = Conn::connect(&args.url).await?;
    let list: Vec<(String, u64)> = indices
        .iter()
        .map(|&i| (topic_name(&args, i), i as u64))
        .collect();
    let names = conn.create_producers(&list).await;
    ready.wait().await;
    let names = names?;
    let (start, deadline) = times
        .wait_for(Option::is_some)
        .await
        .ok()
        .and_then(|t| *t)
        .ok_or("run aborted during setup")?;
    let batched = args.batch > 1;
    let per_producer_rate = args.rate / args.producers.max(1) as f64;
    let interval = (per_producer_rate > 0.0)
        .then(|| Duration::from_secs_f64(args.batch as f64 / per_producer_rate));
    let n = list.len().max(1) as u32;
    let state = Arc::new(Mutex::new(ProducerConn {
        producers: list
            .iter()
            .zip(names)
            .enumerate()
            .map(|(k, ((_, id), name))| ProducerState {
                id: *id,
                name,
                next_seq: 0,
                inflight: 0,
                pending: VecDeque::new(),
                // Stagger the producers of a rate-limited run over one interval.
                next_due: start + interval.map_or(Duration::ZERO, |iv| iv * k as u32 / n),
            })
            .collect(),
        hist: new_histogram(),
        acked: 0,
        last_receipt: None,
        closed: false,
    }));
    let window = Arc::new(Notify::new());
    let Conn {
        mut reader,
        mut writer,
    } = conn;

    // Receipt reader.
    let reader_task = {
        let (state, window, progress) = (Arc::clone(&state), Arc::clone(&window), progress.clone());
        let first_id = list.first().map_or(0, |(_, id)| *id);
        tokio::spawn(async move {
            let mut pongs = 0u32;
            loop {
                let frame = match reader.next().await {
                    Ok(Some(f)) => f,
                    Ok(None) | Err(_) => break,
                };
                let cmd = frame.command();
                let now = Instant::now();
                let now_ns = now.duration_since(base).as_nanos() as u64;
                let mut st = lock(&state);
                let ProducerConn {
                    producers,
                    hist,
                    acked,
                    last_receipt,
                    ..
                } = &mut *st;
                // A receipt covers every batch up to the one starting at `sequence_id` (some
                // brokers do not echo `highest_sequence_id`).
                let (id, seq, error) = if let Some(r) = &cmd.send_receipt {
                    (r.producer_id, r.sequence_id, false)
                } else if let Some(e) = &cmd.send_error {
                    (e.producer_id, e.sequence_id, true)
                } else {
                    if cmd.r#type == Type::Ping as i32 {
                        pongs += 1;
                    }
                    continue;
                };
                let Some(p) = producers
                    .get_mut((id - first_id) as usize)
                    .filter(|p| p.id == id)
                else {
                    continue;
                };
                while p.pending.front().is_some_and(|f| f.first_seq <= seq) {
                    let f = p.pending.pop_front().expect("front exists");
                    p.inflight -= f.messages as usize;
                    if error {
                        progress
                            .send_errors
                            .fetch_add(f.messages, Ordering::Relaxed);
                    } else {
                        record(hist, now_ns.saturating_sub(f.start_ns) / 1000, f.messages);
                        *acked += f.messages;
                        progress.published.fetch_add(f.messages, Ordering::Relaxed);
                    }
                }
                *last_receipt = Some(now);
                drop(st);
                window.notify_one();
            }
            lock(&state).closed = true;
            window.notify_one();
            pongs
        })
    };

    // Writer loop.
    let mut buf = BytesMut::with_capacity(256 * 1024);
    let mut payload = BytesMut::with_capacity(args.batch * (args.size + 16));
    let max_inflight = args.max_inflight.max(args.batch);
    let limit = match args.max_messages {
        0 => u64::MAX,
        m => m.div_ceil(args.producers.max(1) as u64),
    };
    loop {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        let mut next_wake = deadline;
        {
            let mut st = lock(&state);
            if st.closed || st.producers.iter().all(|p| p.next_seq >= limit) {
                break;
            }
            for p in &mut st.producers {
                let mut sent = 0;
                while buf.len() < 256 * 1024
                    && sent < 64
                    && p.inflight + args.batch <= max_inflight
                    && p.next_seq < limit
                {
                    let start_ns = if let Some(iv) = interval {
                        if p.next_due > now {
                            next_wake = next_wake.min(p.next_due);
                            break;
                        }
                        let due = p.next_due;
                        p.next_due += iv;
                        due.duration_since(base).as_nanos() as u64
                    } else {
                        now.duration_since(base).as_nanos() as u64
                    };
                    let seq = p.next_seq;
                    payload.clear();
                    build_payload(
                        &mut payload,
                        args.batch,
                        args.size,
                        seq,
                        now_nanos(),
                        batched,
                    );
                    let md = pb::MessageMetadata {
                        producer_name: p.name.clone(),
                        sequence_id: seq,
                        publish_time: now_nanos() / 1_000_000,
                        num_messages_in_batch: batched.then_some(args.batch as i32),
                        ..Default::default()
                    };
                    let mut cmd = commands::send(p.id, seq, args.batch as i32);
                    if let Some(s) = cmd.send.as_mut() {
                        s.highest_sequence_id = batched.then_some(seq + args.batch as u64 - 1);
                    }
                    encode_payload_command(&cmd, &md, &payload, &mut buf);
                    p.next_seq += args.batch as u64;
                    p.inflight += args.batch;
                    p.pending.push_back(Pending {
                        first_seq: seq,
                        messages: args.batch as u64,
                        start_ns,
                    });
                    sent += 1;
                }
            }
        }
        if buf.is_empty() {
            // Window full or nothing due: wait for a receipt, the next due time or the end.
            let wake = next_wake.max(now + Duration::from_micros(200));
            tokio::select! {
                () = window.notified() => {}
                () = tokio::time::sleep_until(wake.into()) => {}
            }
            continue;
        }
        if writer.write_all(&buf).await.is_err() {
            break;
        }
        buf.clear();
    }

    // Drain outstanding receipts.
    let drain_end = Instant::now() + Duration::from_secs_f64(args.drain_timeout);
    loop {
        {
            let st = lock(&state);
            if st.closed || st.producers.iter().all(|p| p.inflight == 0) {
                break;
            }
        }
        if Instant::now() >= drain_end {
            break;
        }
        tokio::select! {
            () = window.notified() => {}
            () = tokio::time::sleep(Duration::from_millis(10)) => {}
        }
    }
    let _ = writer.shutdown().await;
    drop(writer);
    reader_task.abort();
    let _ = reader_task.await;
    let mut st = lock(&state);
    Ok(ProducerReport {
        hist: std::mem::replace(&mut st.hist, new_histogram()),
        acked: st.acked,
        last_receipt: st.last_receipt,
    })
}

struct ConsumerState {
    id: u64,
    used: u32,
    acks: Vec<MessageIdData>,
}

#[allow(clippy::too_many_arguments)]
async fn run_consumer_conn(
    args: Arc<Args>,
    indices: Vec<usize>,
    sub_type: SubType,
    progress: Arc<Progress>,
    ready: Arc<tokio::sync::Barrier>,
) -> Result<ConsumerReport> {
    let mut conn = Conn::connect(&args.url).await?;
    let id_base = 1_000_000u64;
    let list: Vec<(String, u64)> = indices
        .iter()
        .map(|&i| (topic_name(&args, i), id_base + i as u64))
        .collect();
    let sub = conn
        .subscribe_all(&list, &args.subscription, sub_type, args.earliest)
        .await;
    ready.wait().await;
    sub?;
    let mut consumers: Vec<ConsumerState> = list
        .iter()
        .map(|(_, id)| ConsumerState {
            id: *id,
            used: 0,
            acks: Vec::new(),
        })
        .collect();
    let first_id = list.first().map_or(0, |(_, id)| *id);
    let cumulative = matches!(sub_type, SubType::Exclusive | SubType::Failover);
    let mut out = BytesMut::with_capacity(64 * 1024);
    if !args.no_flow {
        for c in &consumers {
            encode_simple(&commands::flow(c.id, args.receiver_queue), &mut out);
        }
        conn.writer.write_all(&out).await?;
        out.clear();
    }
    let mut report = ConsumerReport {
        hist: new_histogram(),
        received: 0,
        bytes: 0,
        first: None,
        last: None,
    };
    let Conn {
        mut reader,
        mut writer,
    } = conn;
    let refill = (args.receiver_queue / 2).max(1);
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    loop {
        let done = {
            let received = progress.received.load(Ordering::Relaxed);
            (args.expect > 0 && received >= args.expect)
                || (args.producers > 0
                    && progress.producers_done.load(Ordering::Relaxed)
                    && received >= progress.published.load(Ordering::Relaxed))
                || progress.stop.load(Ordering::Relaxed)
        };
        if done {
            break;
        }
        let mut frame = tokio::select! {
            f = reader.next() => match f? {
                Some(f) => Some(f),
                None => break,
            },
            _ = tick.tick() => None,
            () = progress.changed.notified() => None,
        };
        let mut got = 0u64;
        while let Some(f) = frame.take() {
            match f {
                Frame::Payload { command, payload } => {
                    let Some(m) = command.message else { continue };
                    let now = Instant::now();
                    let now_ns = now_nanos();
                    let hist = &mut report.hist;
                    let n = for_each_message(
                        &payload.payload,
                        payload.metadata.num_messages_in_batch,
                        |ts| {
                            if ts > 0 {
                                record(hist, now_ns.saturating_sub(ts) / 1000, 1);
                            }
                        },
                    );
                    report.received += n;
                    report.bytes += payload.payload.len() as u64;
                    report.first.get_or_insert(now);
                    report.last = Some(now);
                    got += n;
                    if let Some(c) = consumers
                        .get_mut((m.consumer_id - first_id) as usize)
                        .filter(|c| c.id == m.consumer_id)
                    {
                        c.used += u32::try_from(n).unwrap_or(u32::MAX);
                        let id = pulsar_rs_proto::commands::message_id(
                            m.message_id.ledger_id,
                            m.message_id.entry_id,
                        );
                        if cumulative {
                            c.acks.clear();
                        }
                        c.acks.push(id);
                    }
                }
                Frame::Simple(cmd) => {
                    if cmd.r#type == Type::Ping as i32 {
                        encode_simple(&commands::pong(), &mut out);
                    }
                }
            }
            frame = reader.try_next()?;
        }
        if got > 0 {
            progress.received.fetch_add(got, Ordering::Relaxed);
            progress.changed.notify_waiters();
        }
        for c in &mut consumers {
            if !c.acks.is_empty() {
                let ty = if cumulative {
                    AckType::Cumulative
                } else {
                    AckType::Individual
                };
                encode_simple(
                    &commands::ack(c.id, ty, std::mem::take(&mut c.acks)),
                    &mut out,
                );
            }
            if c.used >= refill && !args.no_flow {
                encode_simple(&commands::flow(c.id, c.used), &mut out);
                c.used = 0;
            }
        }
        if !out.is_empty() {
            writer.write_all(&out).await?;
            out.clear();
        }
    }
    Ok(report)
}

fn rate(n: u64, d: Duration) -> f64 {
    if d.is_zero() {
        0.0
    } else {
        n as f64 / d.as_secs_f64()
    }
}

async fn run(args: Arc<Args>) -> Result<serde_json::Value> {
    if args.size < MIN_MESSAGE_SIZE {
        return Err(format!("--size must be at least {MIN_MESSAGE_SIZE}").into());
    }
    if args.batch == 0 || args.topics == 0 {
        return Err("--batch and --topics must be > 0".into());
    }
    let per_topic = args.consumers.div_ceil(args.topics);
    let sub_type = match args.sub_type {
        SubKind::Auto if per_topic > 1 => SubType::Shared,
        SubKind::Auto | SubKind::Exclusive => SubType::Exclusive,
        SubKind::Shared => SubType::Shared,
        SubKind::Failover => SubType::Failover,
        SubKind::KeyShared => SubType::KeyShared,
    };
    let progress = Arc::new(Progress::default());
    let base = Instant::now();
    let prod_groups = groups(args.producers, args.connections);
    let cons_groups = groups(args.consumers, args.connections);
    let ready = Arc::new(tokio::sync::Barrier::new(
        prod_groups.len() + cons_groups.len() + 1,
    ));
    let (times_tx, times_rx) = tokio::sync::watch::channel(None::<(Instant, Instant)>);
    let setup_start = Instant::now();

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
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(args.duration);
    let _ = times_tx.send(Some((start, deadline)));

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
        Instant::now()
    } else {
        Instant::now() + Duration::from_secs_f64(args.drain_timeout)
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

fn main() {
    let args = Arc::new(Args::parse());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()
        .expect("tokio runtime");
    match rt.block_on(run(Arc::clone(&args))) {
        Ok(v) => println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default()),
        Err(e) => {
            eprintln!("pulsar-rs-perf: {e}");
            std::process::exit(1);
        }
    }
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
