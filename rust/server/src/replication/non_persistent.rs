//! One replicator of a non-persistent topic towards one remote cluster (Pulsar's
//! `NonPersistentReplicator`): nothing is stored, so there is no replication cursor and no
//! backlog. The replicator taps the topic ([`NonPersistentTopic::set_replication_tap`]): each
//! message published there is queued for the remote producer while it is connected and fewer than
//! `replicationProducerQueueSize` wait, and dropped and counted otherwise (stats'
//! `msgDropRate`), as Pulsar's replicator drops what its producer cannot take. Each queued
//! message goes through [`entry::verdict`] as a persistent topic's entry does (messages from
//! another cluster stay, `replicate_to` is honoured, `replicated_from` is set), without a source
//! position. While the remote is unreachable the producer is reopened as the persistent
//! replicator's is ([`super::link`]); messages published meanwhile are dropped.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use pulsar_rs_broker::nonpersistent::{NonPersistentTopic, ReplicationTap};
use pulsar_rs_proto::pb::base_command::Type;
use tokio::sync::mpsc;

use super::entry::{self, Verdict};
use super::link::Link;
use super::registry::Status;
use super::remote::RemoteProducer;
use crate::context::ServerContext;

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
    let mut link = Link::new(&ctx, &remote, &topic.name);
    loop {
        let why = match link.open().await {
            Ok(mut producer) => {
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
        link.back_off(&why).await;
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
