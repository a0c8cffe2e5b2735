//! One replicator: a topic's entries towards one remote cluster (Pulsar's
//! `PersistentReplicator`). It reads its replication cursor, sends each entry the
//! [`entry::verdict`] lets through on its [`RemoteProducer`] (at most
//! `replicationProducerQueueSize` unanswered, at most at its `replicatorDispatchRate`), and
//! acknowledges an entry on the cursor when the
//! remote's receipt comes (or at once when it is skipped). When the remote is unreachable or
//! refuses, the cursor is rewound to its first unacknowledged entry and the producer reopened
//! with a backoff from 100 ms to 1 min, as Pulsar's: nothing is dropped, the backlog waits on
//! the cursor (a restart reads it again, so an entry may be sent twice, as with Pulsar's).

use std::sync::Arc;

use pulsar_rs_broker::rate::RateLimiter;
use pulsar_rs_broker::topic::Topic;
use pulsar_rs_broker::transaction::TxnId;
use pulsar_rs_ledger::{Cursor, Entry, Position};
use pulsar_rs_proto::pb::base_command::Type;

use super::entry::{self, Verdict};
use super::in_flight::{InFlight, Sent};
use super::link::Link;
use super::registry::Status;
use super::remote::RemoteProducer;
use crate::context::ServerContext;

/// Bytes read from the cursor at a time.
const READ_BYTES: u64 = 5 * 1024 * 1024;
/// Entries read from the cursor at most at a time.
const READ_ENTRIES: usize = 100;

/// What a wait on the cursor or the producer gave.
enum Woken {
    /// The remote answered (or the connection closed: `None`).
    Event(Option<Box<pulsar_rs_proto::BaseCommand>>),
    /// Entries from the cache, or `Ok(None)`: the next ones are on disk.
    Read(pulsar_rs_ledger::Result<Option<Vec<Entry>>>),
}

/// A disk read on the blocking pool, never inside a `select!`: once it has taken entries it
/// always returns them.
async fn read_from_disk(
    cursor: &Arc<Cursor>,
    n: usize,
    bound: Position,
) -> pulsar_rs_ledger::Result<Vec<Entry>> {
    let c = Arc::clone(cursor);
    tokio::task::spawn_blocking(move || c.read_entries_bounded(n, READ_BYTES, bound))
        .await
        .unwrap_or_else(|e| {
            Err(pulsar_rs_ledger::LedgerError::Closed {
                what: format!("a replicator's read: {e}"),
            })
        })
}

/// Runs the replicator of `topic` towards `remote` until the topic closes (the task is
/// aborted sooner when the topic stops replicating there).
pub(super) async fn run(
    ctx: Arc<ServerContext>,
    topic: Arc<Topic>,
    remote: String,
    cursor: Arc<Cursor>,
    status: Arc<Status>,
) {
    let local = ctx.service.config.cluster_name.clone();
    let mut link = Link::new(&ctx, &remote, &topic.name);
    while !topic.ledger.is_closed() {
        let why = match link.open().await {
            Ok(mut producer) => {
                status.connected(&producer.address, ctx.service.clock().now_ms());
                let why = pump(
                    &ctx,
                    &topic,
                    &cursor,
                    &mut producer,
                    &status,
                    &local,
                    &remote,
                )
                .await;
                status.disconnected();
                // Unacknowledged entries are read again by the next producer.
                cursor.rewind();
                why
            }
            Err(e) => e,
        };
        if topic.ledger.is_closed() {
            break;
        }
        link.back_off(&why).await;
    }
}

/// A replicated-subscription marker `remote` sent here, read at `at`: the topic acts on it
/// (blocking pool: an UPDATE may open a cursor) and the marker it answers with is written.
async fn received_marker(
    topic: &Arc<Topic>,
    remote: &str,
    at: Position,
    marker_type: i32,
    payload: bytes::Bytes,
) {
    let t = Arc::clone(topic);
    let answer =
        tokio::task::spawn_blocking(move || t.received_marker(at, marker_type, &payload)).await;
    let written = match answer {
        Ok(Ok(Some(entry))) => topic.write_marker(entry).await.map(|_| ()),
        Ok(Ok(None)) => Ok(()),
        Ok(Err(e)) => Err(e),
        Err(_) => return,
    };
    if let Err(e) = written {
        tracing::warn!(topic = %topic.name, remote, error = %e, "a replicated subscription's marker");
    }
}

/// Sends and acknowledges until the producer fails; returns why.
async fn pump(
    ctx: &ServerContext,
    topic: &Arc<Topic>,
    cursor: &Arc<Cursor>,
    producer: &mut RemoteProducer,
    status: &Status,
    local: &str,
    remote: &str,
) -> String {
    let window = ctx.service.config.replication_producer_queue_size as usize;
    // Sent and not yet answered; receipts read as the remote negotiated.
    let mut pending = InFlight::new(producer.by_source_position());
    let mut sequence_id = 0u64;
    // An open transaction's messages are not read before it ends (its max read position).
    let bound = || match &topic.txn_buffer {
        Some(tb) => tb.max_read_position(|| topic.ledger.last_confirmed()),
        None => Position::LATEST,
    };
    let aborted = |most: u64, least: u64| {
        topic
            .txn_buffer
            .as_ref()
            .is_some_and(|tb| tb.is_aborted(TxnId::new(most, least)))
    };
    // The replicator's rate (`replicatorDispatchRate`), read again after each read (not for each
    // receipt: they come one per entry).
    let mut rate = (0.0, 0.0);
    let mut limiter: Option<RateLimiter> = None;
    loop {
        let room = window.saturating_sub(pending.len()).min(READ_ENTRIES);
        // Waiting for an append and cache hits are cancel-safe (nothing taken across an await).
        let woken = tokio::select! {
            event = producer.next_event() => Woken::Event(event.map(Box::new)),
            read = cursor.wait_and_read_cached_until(room, READ_BYTES, &bound), if room > 0 => {
                Woken::Read(read)
            }
        };
        let entries = match woken {
            Woken::Event(None) => return "the connection to the remote broker closed".into(),
            Woken::Event(Some(cmd)) => {
                match Type::try_from(cmd.r#type) {
                    Ok(Type::SendReceipt) => {
                        let receipt = cmd.send_receipt.unwrap_or_default();
                        let settled = match pending.receipt(&receipt) {
                            Ok(settled) => settled,
                            Err(why) => return why,
                        };
                        let mut acked = Vec::with_capacity(settled.len());
                        for s in settled {
                            status.msg_out.record(s.messages, s.bytes);
                            acked.push(s.position);
                        }
                        cursor.delete(&acked);
                    }
                    Ok(Type::SendError) => {
                        let e = cmd.send_error.unwrap_or_default();
                        return format!("the remote refused a message: {}", e.message);
                    }
                    Ok(Type::CloseProducer) => {
                        return "the remote broker closed the producer (its topic moved or unloaded)"
                            .into();
                    }
                    _ => {}
                }
                continue;
            }
            Woken::Read(Err(e)) => return format!("reading the replication cursor: {e}"),
            Woken::Read(Ok(Some(entries))) => entries,
            Woken::Read(Ok(None)) => match read_from_disk(cursor, room, bound()).await {
                Ok(entries) => entries,
                Err(e) => return format!("reading the replication cursor: {e}"),
            },
        };
        let mut skipped = Vec::new();
        let mut received = Vec::new();
        let (mut sent_messages, mut sent_bytes) = (0u64, 0u64);
        for e in entries {
            match entry::verdict(&e.data, Some(e.position), local, remote, &aborted) {
                Verdict::Skip(why) => {
                    tracing::trace!(position = %e.position, remote, "not replicated: {why}");
                    skipped.push(e.position);
                }
                Verdict::Received {
                    marker_type,
                    payload,
                } => {
                    received.push((e.position, marker_type, payload));
                    skipped.push(e.position);
                }
                Verdict::Send {
                    metadata,
                    payload,
                    num_messages,
                } => {
                    sequence_id += 1;
                    if let Err(why) = producer.send(sequence_id, &metadata, &payload, num_messages)
                    {
                        return why;
                    }
                    let messages = u64::try_from(num_messages).unwrap_or(1);
                    sent_messages += messages;
                    sent_bytes += e.data.len() as u64;
                    pending.push(Sent {
                        sequence_id,
                        position: e.position,
                        messages,
                        bytes: e.data.len() as u64,
                        marker: metadata.marker_type.is_some(),
                    });
                }
            }
        }
        for (at, marker_type, payload) in received {
            received_marker(topic, remote, at, marker_type, payload).await;
        }
        cursor.delete(&skipped);
        // Over the rate: the next read waits (receipts queue meanwhile).
        let wanted = ctx.service.policies.replicator_rate(&topic.name);
        if wanted != rate {
            rate = wanted;
            limiter = RateLimiter::new(rate.0, rate.1);
        }
        if let Some(l) = &limiter {
            let wait = l.consume(sent_messages, sent_bytes);
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
        }
    }
}
