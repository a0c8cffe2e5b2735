//! One replicator of a non-persistent topic towards one remote cluster (Pulsar's
//! `NonPersistentReplicator`): nothing is stored, so there is no replication cursor and no
//! backlog. The replicator taps the topic ([`NonPersistentTopic::set_replication_tap`]): each
//! message published there is queued for the remote producer while it is connected and fewer than
//! `replicationProducerQueueSize` wait, and dropped and counted otherwise (stats'
//! `msgDropRate`), as Pulsar's replicator drops what its producer cannot take. Each queued
//! message goes through [`entry::verdict`] as a persistent topic's entry does (messages from
//! another cluster stay, `replicate_to` is honoured, `replicated_from` is set), without a source
//! position. While the remote is unreachable the producer is reopened with the persistent
//! replicator's backoff; messages published meanwhile are dropped.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use pulsar_rs_broker::nonpersistent::{NonPersistentTopic, ReplicationTap};
use pulsar_rs_broker::topic::repl_source::replicator_producer_name;
use pulsar_rs_proto::pb::base_command::Type;
use tokio::sync::mpsc;

use super::entry::{self, Verdict};
use super::registry::Status;
use super::remote::RemoteProducer;
use super::remote_cluster::RemoteCluster;
use crate::context::ServerContext;

/// How long opening the remote producer may take (lookup, CONNECT, PRODUCER).
const OPEN_TIMEOUT: Duration = Duration::from_secs(30);
/// Pulsar's replicator backoff: 100 ms doubling to 1 min.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(60);

/// A published message on its way: the stored entry and its message count.
type Queued = (Bytes, u32);

/// Removes the replicator's tap from the topic when its task ends or is aborted.
struct Untap {
    topic: Arc<NonPersistentTopic>,
    remote: String,
    tap: ReplicationTap,
}

impl Drop for Untap {
    fn drop(&mut self) {
        self.topic.remove_replication_tap(&self.remote, &self.tap);
    }
}

/// The tap: queues a message while the producer is connected and the queue has room, else
/// drops and counts it. Never blocks the publishing connection.
fn tap(status: &Arc<Status>, queue: mpsc::Sender<Queued>) -> ReplicationTap {
    let status = Arc::clone(status);
    Arc::new(move |stored: &Bytes, messages: u32| {
        if !status.is_connected() || queue.try_send((stored.clone(), messages)).is_err() {
            status
                .msg_drop
                .record(u64::from(messages), stored.len() as u64);
        }
    })
}

/// Runs the replicator of `topic` towards `remote` until its task is aborted (the topic went
/// or stopped replicating there).
pub(super) async fn run(
    ctx: Arc<ServerContext>,
    topic: Arc<NonPersistentTopic>,
    remote: String,
    status: Arc<Status>,
) {
    let window = (ctx.service.config.replication_producer_queue_size as usize).max(1);
    let (queue, mut queued) = mpsc::channel::<Queued>(window);
    let tap = tap(&status, queue);
    topic.set_replication_tap(&remote, Arc::clone(&tap));
    let _untap = Untap {
        topic: Arc::clone(&topic),
        remote: remote.clone(),
        tap,
    };
    let local = ctx.service.config.cluster_name.clone();
    let name = replicator_producer_name(&ctx.service.config.replicator_prefix, &local, &remote);
    let topic_name = topic.name.to_string();
    let (mut backoff, mut failures, mut partitioned_on_remote) = (BACKOFF_MIN, 0u32, false);
    loop {
        if !partitioned_on_remote {
            match super::partitions::ensure_on_remote(&ctx, &remote, &topic.name).await {
                Ok(()) => partitioned_on_remote = true,
                Err(e) => tracing::debug!(topic = %topic_name, remote = %remote, "replicator: {e}"),
            }
        }
        let opened = match RemoteCluster::of(&ctx, &remote)
            .await
            .and_then(|r| Ok((r.broker_url()?, r)))
        {
            Ok((url, r)) => {
                RemoteProducer::open(&r.client, &url, &topic_name, &name, OPEN_TIMEOUT).await
            }
            Err(e) => Err(e),
        };
        let why = match opened {
            Ok(mut producer) => {
                backoff = BACKOFF_MIN;
                failures = 0;
                tracing::info!(topic = %topic_name, remote = %remote, at = %producer.address, "non-persistent replicator connected");
                status.connected(&producer.address, ctx.service.clock().now_ms());
                let why = pump(&mut producer, &mut queued, &status, window, &local, &remote).await;
                status.disconnected();
                // What waited for the lost producer is dropped, as Pulsar's pending sends fail.
                while let Ok((stored, messages)) = queued.try_recv() {
                    status
                        .msg_drop
                        .record(u64::from(messages), stored.len() as u64);
                }
                why
            }
            Err(e) => e,
        };
        failures += 1;
        if failures == 1 || failures.is_multiple_of(10) {
            tracing::warn!(topic = %topic_name, remote = %remote, failures, "non-persistent replicator: {why}; retrying in {backoff:?}");
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// Sends what the tap queues until the producer fails; returns why.
async fn pump(
    producer: &mut RemoteProducer,
    queued: &mut mpsc::Receiver<Queued>,
    status: &Status,
    window: usize,
    local: &str,
    remote: &str,
) -> String {
    let no_transactions = |_: u64, _: u64| false;
    // Sent and not yet receipted, in order: (messages, bytes) of each.
    let mut pending: VecDeque<(u64, u64)> = VecDeque::new();
    let mut sequence_id = 0u64;
    loop {
        tokio::select! {
            event = producer.next_event() => {
                let Some(cmd) = event else {
                    return "the connection to the remote broker closed".into();
                };
                match Type::try_from(cmd.r#type) {
                    Ok(Type::SendReceipt) => {
                        if let Some((messages, bytes)) = pending.pop_front() {
                            status.msg_out.record(messages, bytes);
                        }
                    }
                    Ok(Type::SendError) => {
                        let e = cmd.send_error.unwrap_or_default();
                        return format!("the remote refused a message: {}", e.message);
                    }
                    Ok(Type::CloseProducer) => {
                        return "the remote broker closed the producer (its topic moved or unloaded)".into();
                    }
                    _ => {}
                }
            }
            next = queued.recv(), if pending.len() < window => {
                // The sender lives in the tap, which lives as long as this task.
                let Some((stored, _)) = next else {
                    return "the topic's tap closed".into();
                };
                if let Verdict::Send { metadata, payload, num_messages } =
                    entry::verdict(&stored, None, local, remote, &no_transactions)
                {
                    sequence_id += 1;
                    if let Err(why) = producer.send(sequence_id, &metadata, &payload, num_messages) {
                        return why;
                    }
                    let messages = u64::try_from(num_messages).unwrap_or(1);
                    pending.push_back((messages, stored.len() as u64));
                }
            }
        }
    }
}
