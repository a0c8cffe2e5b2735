//! One consumer connection of a perf run: FLOW permits, acks, end-to-end latency.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use pulsar_rs_proto::{
    commands, encode_simple,
    pb::{base_command::Type, command_ack::AckType, command_subscribe::SubType},
    Frame, MessageIdData,
};
use tokio::io::AsyncWriteExt;

use crate::batch::{for_each_message, now_nanos};
use crate::client::{Conn, Result};
use crate::stats::{new_histogram, record};

use super::{lock, topic_name, Args, ConsumerReport, Progress};

pub(super) struct ConsumerState {
    id: u64,
    used: u32,
    acks: Vec<MessageIdData>,
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn run_consumer_conn(
    args: Arc<Args>,
    indices: Vec<usize>,
    sub_type: SubType,
    progress: Arc<Progress>,
    ready: Arc<tokio::sync::Barrier>,
) -> Result<ConsumerReport> {
    let mut conn = match Conn::connect(&args.url).await {
        Ok(c) => c,
        Err(e) => {
            // Still reach the start barrier, so the other connections (and the run) go on.
            ready.wait().await;
            return Err(format!("connecting to {}: {e}", args.url).into());
        }
    };
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
        let mut got_bytes = 0u64;
        let mut second = new_histogram();
        while let Some(f) = frame.take() {
            match f {
                Frame::Payload { command, payload } => {
                    let Some(m) = command.message else { continue };
                    let now = pulsar_rs_clock::monotonic();
                    let now_ns = now_nanos();
                    let (hist, second) = (&mut report.hist, &mut second);
                    let n = for_each_message(
                        &payload.payload,
                        payload.metadata.num_messages_in_batch,
                        |ts| {
                            if ts > 0 {
                                record(hist, now_ns.saturating_sub(ts) / 1000, 1);
                                record(second, now_ns.saturating_sub(ts) / 1000, 1);
                            }
                        },
                    );
                    got_bytes += payload.payload.len() as u64;
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
            progress
                .received_bytes
                .fetch_add(got_bytes, Ordering::Relaxed);
            let _ = lock(&progress.e2e_latency).add(&second);
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
