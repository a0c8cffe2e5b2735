//! One producer connection of a perf run: a writer loop (rate, batching, in-flight window) and
//! a receipt reader recording publish latency.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use pulsar_rs_proto::{
    commands, encode_payload_command,
    pb::{self, base_command::Type},
};
use tokio::io::AsyncWriteExt;
use tokio::sync::Notify;

use crate::batch::{build_payload, now_nanos};
use crate::client::{Conn, Result};
use crate::stats::{new_histogram, record};

use super::{
    lock, topic_name, Args, Pending, ProducerConn, ProducerReport, ProducerState, Progress, Times,
};

pub(super) async fn run_producer_conn(
    args: Arc<Args>,
    indices: Vec<usize>,
    base: Instant,
    progress: Arc<Progress>,
    ready: Arc<tokio::sync::Barrier>,
    mut times: Times,
) -> Result<ProducerReport> {
    let mut conn = match Conn::connect(&args.url).await {
        Ok(c) => c,
        Err(e) => {
            // Still reach the start barrier, so the other connections (and the run) go on.
            ready.wait().await;
            return Err(format!("connecting to {}: {e}", args.url).into());
        }
    };
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
                let now = pulsar_rs_clock::monotonic();
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
                        let micros = now_ns.saturating_sub(f.start_ns) / 1000;
                        record(hist, micros, f.messages);
                        record(&mut lock(&progress.publish_latency), micros, f.messages);
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
        let now = pulsar_rs_clock::monotonic();
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
    let drain_end = pulsar_rs_clock::monotonic() + Duration::from_secs_f64(args.drain_timeout);
    loop {
        {
            let st = lock(&state);
            if st.closed || st.producers.iter().all(|p| p.inflight == 0) {
                break;
            }
        }
        if pulsar_rs_clock::monotonic() >= drain_end {
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
