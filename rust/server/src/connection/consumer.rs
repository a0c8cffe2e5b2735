//! Consumers: SUBSCRIBE, FLOW, ACK, REDELIVER_UNACKNOWLEDGED_MESSAGES, UNSUBSCRIBE, SEEK,
//! CLOSE_CONSUMER, GET_LAST_MESSAGE_ID and CONSUMER_STATS, plus the sink that turns the
//! broker's consumer events into frames.

use std::collections::HashMap;
use std::sync::Arc;

use pulsar_rs_broker::transaction::pending_ack::AckedId;
use pulsar_rs_broker::transaction::pending_ack_store::HeldAck;
use pulsar_rs_broker::transaction::TxnId;
use pulsar_rs_broker::{
    BrokerError, BrokerService, Consumer, ConsumerEvent, ConsumerSink, KeySharedMeta,
    KeySharedMode, SubType, Subscription, Topic, TopicName,
};
use pulsar_rs_ledger::Position;
use pulsar_rs_proto::{commands, pb, ServerError as Wire};

use super::schema::schema_info;
use super::{frame, Connection};
use crate::error::wire_code;
use crate::writer::{Delivery, Outbound, Writability};

/// The consumer sink of a connection: encodes events into frames for the writer.
pub(super) struct Sink {
    /// The connection's outbound queue.
    pub(super) tx: crate::outbound::OutboundTx,
    /// Message bytes in that queue, shared with the writer.
    pub(super) writability: Arc<Writability>,
    /// Consumers whose SUBSCRIBE is not answered yet → the latest ACTIVE_CONSUMER_CHANGE for
    /// them, sent right after the success (Pulsar's notification follows the subscribe; the Go
    /// client drops one for a consumer it has not registered yet). Written by the connection
    /// task (hold, release) and by whoever sends events (dispatchers); the lock covers only a
    /// map update and a non-blocking queue push, so a held notice and the release keep order.
    pub(super) held: parking_lot::Mutex<HashMap<u64, Option<bool>>>,
}

impl Sink {
    /// Holds `consumer_id`'s active-consumer notices until [`Sink::release_notices`].
    pub(super) fn hold_notices(&self, consumer_id: u64) {
        self.held.lock().insert(consumer_id, None);
    }

    /// The SUBSCRIBE was answered: the held notice, if any, goes out now.
    pub(super) fn release_notices(&self, consumer_id: u64) {
        let mut held = self.held.lock();
        if let Some(Some(active)) = held.remove(&consumer_id) {
            let _ = self.tx.send(frame(&commands::active_consumer_change(
                consumer_id,
                active,
            )));
        }
    }

    /// The SUBSCRIBE failed or was cancelled: its held notice is dropped.
    pub(super) fn drop_notices(&self, consumer_id: u64) {
        self.held.lock().remove(&consumer_id);
    }
}

impl ConsumerSink for Sink {
    fn send(&self, event: ConsumerEvent) -> bool {
        let item = match event {
            ConsumerEvent::Message {
                consumer_id,
                position,
                partition,
                redelivery_count,
                ack_set,
                data,
            } => {
                let message = Delivery {
                    consumer_id,
                    ledger_id: position.ledger_id as u64,
                    entry_id: position.entry_id as u64,
                    partition,
                    redelivery_count,
                    ack_set,
                };
                // Counted before it is queued, so the writer never subtracts it first.
                let len = data.len();
                self.writability.add(len);
                if self.tx.send(Outbound::Message(message, data)).is_err() {
                    self.writability.written(len);
                    return false;
                }
                return true;
            }
            ConsumerEvent::ActiveConsumerChange {
                consumer_id,
                active,
            } => {
                let mut held = self.held.lock();
                if let Some(latest) = held.get_mut(&consumer_id) {
                    *latest = Some(active);
                    return true;
                }
                return self
                    .tx
                    .send(frame(&commands::active_consumer_change(
                        consumer_id,
                        active,
                    )))
                    .is_ok();
            }
            ConsumerEvent::Closed { consumer_id } => frame(&commands::close_consumer(consumer_id)),
            ConsumerEvent::ReachedEndOfTopic { consumer_id } => {
                frame(&pb::CommandReachedEndOfTopic { consumer_id }.into())
            }
        };
        self.tx.send(item).is_ok()
    }

    fn is_writable(&self) -> bool {
        self.writability.is_writable()
    }
}

/// A consumer of this connection; owned by the connection task.
pub(super) struct ConsumerSlot {
    pub(super) topic: Arc<Topic>,
    pub(super) sub: Arc<Subscription>,
    pub(super) consumer: Arc<Consumer>,
}

impl Connection {
    /// FLOW: more permits for a consumer.
    pub(super) fn flow(&self, f: &pb::CommandFlow) {
        if let Some(c) = self.consumers.get(&f.consumer_id) {
            c.sub.flow(&c.consumer, f.message_permits);
        }
    }

    /// REDELIVER_UNACKNOWLEDGED_MESSAGES: the given ids, or all unacked ones when none.
    pub(super) fn redeliver(&self, r: &pb::CommandRedeliverUnacknowledgedMessages) {
        if let Some(c) = self.consumers.get(&r.consumer_id) {
            let ids: Vec<Position> = r.message_ids.iter().map(position).collect();
            c.sub
                .redeliver(&c.consumer, if ids.is_empty() { None } else { Some(&ids) });
        }
    }

    /// CLOSE_CONSUMER: detaches the consumer from its subscription.
    pub(super) fn close_consumer(&mut self, c: &pb::CommandCloseConsumer) {
        if let Some(slot) = self.consumers.remove(&c.consumer_id) {
            detach_consumer(&slot);
        } else if let Some(cancelled) = self.creating_consumers.get_mut(&c.consumer_id) {
            // Still subscribing: detached when that completes.
            *cancelled = true;
        }
        self.send(&commands::success(c.request_id));
    }

    pub(super) fn subscribe(&mut self, c: pb::CommandSubscribe) {
        if let Some(slot) = self.consumers.get(&c.consumer_id) {
            if !slot.consumer.is_closed() {
                // As Pulsar's `handleSubscribe`: the consumer with this id already exists, so
                // a repeated SUBSCRIBE (a client retrying after a timeout) succeeds.
                self.send(&commands::success(c.request_id));
                return;
            }
            self.consumers.remove(&c.consumer_id);
        }
        if let Err(msg) = self.authorized_subscribe(&c.topic, &c.subscription) {
            self.send(&commands::error(
                c.request_id,
                Wire::AuthorizationError,
                msg,
            ));
            return;
        }
        if self.refuse_missing_namespace(c.request_id, &c.topic)
            || self.refuse_unowned(c.request_id, &c.topic, || {
                let c = c.clone();
                move |conn: &mut Connection| conn.subscribe(c)
            })
        {
            return;
        }
        if self.creating_consumers.contains_key(&c.consumer_id) {
            // Pulsar answers a SUBSCRIBE for a consumer still being created ServiceNotReady.
            self.send(&commands::error(
                c.request_id,
                Wire::ServiceNotReady,
                "Consumer is already present on the connection",
            ));
            return;
        }
        self.creating_consumers.insert(c.consumer_id, false);
        self.sink.hold_notices(c.consumer_id);
        // Topic load, cursor creation (write + fsync) and schema storage: blocking pool.
        let service = Arc::clone(&self.service);
        let sink = Arc::clone(&self.sink) as Arc<dyn ConsumerSink>;
        let peer = self.peer.clone();
        let client_version = self.client_version.clone();
        self.offload(
            move || {
                let r = attach_consumer(&service, sink, peer, client_version, &c);
                (c, r)
            },
            |conn, (c, result)| conn.subscribed(&c, result),
            |(_, result)| {
                if let Ok(slot) = result {
                    detach_consumer(&slot);
                }
            },
        );
    }

    /// The second half of SUBSCRIBE, on the connection task.
    fn subscribed(&mut self, c: &pb::CommandSubscribe, result: Result<ConsumerSlot, BrokerError>) {
        let cancelled = self
            .creating_consumers
            .remove(&c.consumer_id)
            .unwrap_or(true);
        match result {
            Ok(slot) if cancelled => {
                self.sink.drop_notices(c.consumer_id);
                detach_consumer(&slot);
            }
            Ok(slot) => {
                self.sink.writability.watch(&slot.sub);
                self.consumers.insert(c.consumer_id, slot);
                self.send(&commands::success(c.request_id));
                self.sink.release_notices(c.consumer_id);
            }
            Err(e) => {
                self.sink.drop_notices(c.consumer_id);
                self.error(c.request_id, &e);
            }
        }
    }

    pub(super) fn ack(&self, a: &pb::CommandAck) {
        let Some(c) = self.consumers.get(&a.consumer_id) else {
            return;
        };
        let cumulative = a.ack_type == pb::command_ack::AckType::Cumulative as i32;
        let txn = match (a.txnid_most_bits, a.txnid_least_bits) {
            (Some(most), Some(least)) => Some(TxnId::new(most, least)),
            _ => None,
        };
        if let Some(txn) = txn {
            self.ack_in_txn(c, a, txn, cumulative);
            return;
        }
        let result = if cumulative {
            if c.sub.sub_type().is_some_and(SubType::is_multi) || a.message_id.len() != 1 {
                Ok(()) // Java ignores these
            } else {
                let id = &a.message_id[0];
                if id.ack_set.is_empty() {
                    c.sub.ack_cumulative(&c.consumer, position(id))
                } else {
                    // A message inside a batch (batch index acknowledgement).
                    c.sub
                        .ack_cumulative_in_batch(&c.consumer, position(id), id.ack_set.clone())
                }
            }
        } else {
            let ids: Vec<(Position, Option<Vec<i64>>)> = a
                .message_id
                .iter()
                .map(|m| {
                    (
                        position(m),
                        (!m.ack_set.is_empty()).then(|| m.ack_set.clone()),
                    )
                })
                .collect();
            c.sub.ack_individual(&c.consumer, &ids);
            Ok(())
        };
        if let Some(req) = a.request_id {
            let err = result.err().map(|e| (wire_code(&e), e.to_string()));
            self.send(&commands::ack_response(a.consumer_id, req, err));
        }
    }

    /// A transactional ACK: held by the subscription (conflicts refused at once), then made
    /// durable in the coordinator's log before ACK_RESPONSE; released again if that fails.
    fn ack_in_txn(&self, c: &ConsumerSlot, a: &pb::CommandAck, txn: TxnId, cumulative: bool) {
        let ids: Vec<AckedId> = a.message_id.iter().map(acked_id).collect();
        let held = if !self.service.transactions_enabled() {
            Err(BrokerError::NotAllowed(
                "Server don't support transaction ack!".into(),
            ))
        } else if cumulative {
            if ids.len() == 1 {
                c.sub.ack_cumulative_txn(&c.consumer, txn, &ids[0])
            } else {
                Err(BrokerError::NotAllowed(
                    "Invalid cumulative ack received with multiple message ids.".into(),
                ))
            }
        } else {
            c.sub.ack_individual_txn(&c.consumer, txn, &ids)
        };
        let (consumer_id, request_id) = (a.consumer_id, a.request_id);
        let reply = move |r: Result<(), BrokerError>| {
            request_id.map(|req| {
                let err = r.err().map(|e| (wire_code(&e), e.to_string()));
                frame(&commands::ack_response(consumer_id, req, err))
            })
        };
        if let Err(e) = held {
            if let Some(out) = reply(Err(e)) {
                let _ = self.tx.send(out);
            }
            return;
        }
        // Cumulative acks on Shared/Key_Shared are ignored (nothing held): nothing to persist.
        let ignored = cumulative && c.sub.sub_type().is_some_and(SubType::is_multi);
        let svc = Arc::clone(&self.service);
        let sub = Arc::clone(&c.sub);
        let tx = self.tx.clone();
        let ack = HeldAck {
            topic: c.topic.name.to_string(),
            subscription: sub.name.clone(),
            positions: ids,
            cumulative,
        };
        tokio::spawn(async move {
            let r = if ignored {
                Ok(())
            } else {
                let positions = ack.positions.clone();
                let r = svc.persist_txn_ack(txn, ack).await;
                if r.is_err() {
                    sub.release_txn_acks(txn, &positions, cumulative);
                }
                r
            };
            if let Some(out) = reply(r) {
                let _ = tx.send(out);
            }
        });
    }

    pub(super) fn unsubscribe(&mut self, u: &pb::CommandUnsubscribe) {
        let Some(slot) = self.consumers.get(&u.consumer_id) else {
            self.error(
                u.request_id,
                &BrokerError::NotAllowed("consumer not found".into()),
            );
            return;
        };
        let others = slot
            .sub
            .consumers()
            .iter()
            .any(|c| c.id != slot.consumer.id || !Arc::ptr_eq(c, &slot.consumer));
        if others && !u.force() {
            self.error(
                u.request_id,
                &BrokerError::ConsumerBusy("Subscription has other connected consumers".into()),
            );
            return;
        }
        let slot = self
            .consumers
            .remove(&u.consumer_id)
            .expect("checked above");
        slot.sub.disconnect_all();
        let request_id = u.request_id;
        // Deleting the cursor removes its file: blocking pool.
        self.offload_reply(
            move || match slot.topic.remove_subscription(&slot.sub.name) {
                Ok(()) => commands::success(request_id),
                Err(e) => commands::error(request_id, wire_code(&e), e.to_string()),
            },
        );
    }

    pub(super) fn seek(&mut self, s: &pb::CommandSeek) {
        let Some(slot) = self.consumers.get(&s.consumer_id) else {
            self.error(
                s.request_id,
                &BrokerError::NotAllowed("consumer not found".into()),
            );
            return;
        };
        let sub = Arc::clone(&slot.sub);
        let topic = Arc::clone(&slot.topic);
        let (request_id, message_id, time) =
            (s.request_id, s.message_id.clone(), s.message_publish_time);
        // `seek_by_time` reads entries (preads): blocking pool.
        self.offload_reply(move || {
            // As Pulsar: every consumer of the subscription is disconnected first (they
            // reconnect and send fresh FLOW permits), then the cursor moves, then SUCCESS.
            let result = match (&message_id, time) {
                (Some(id), _) => {
                    let p = position(id);
                    let target = if p.ledger_id < 0 {
                        topic.ledger.first_position().next()
                    } else {
                        p
                    };
                    sub.seek(target);
                    Ok(())
                }
                (None, Some(t)) => sub.seek_by_time(t),
                (None, None) => Err(BrokerError::NotAllowed(
                    "SEEK without message id or publish time".into(),
                )),
            };
            match result {
                Ok(()) => commands::success(request_id),
                Err(e) => commands::error(request_id, wire_code(&e), e.to_string()),
            }
        });
    }

    pub(super) fn last_message_id(&self, g: &pb::CommandGetLastMessageId) {
        let Some(slot) = self.consumers.get(&g.consumer_id) else {
            self.error(
                g.request_id,
                &BrokerError::NotAllowed("consumer not found".into()),
            );
            return;
        };
        let (topic, sub, request_id) =
            (Arc::clone(&slot.topic), Arc::clone(&slot.sub), g.request_id);
        let compacted = slot.consumer.reads_compacted();
        // The last entry is read for its batch size: blocking pool.
        self.offload_reply(move || {
            let last = if compacted {
                topic.last_message_id_compacted()
            } else {
                topic.last_message_id()
            };
            match last {
                Ok((p, batch_index)) => {
                    let id = pb::MessageIdData {
                        partition: Some(topic.partition),
                        batch_index: Some(batch_index),
                        ..commands::message_id(p.ledger_id as u64, p.entry_id as u64)
                    };
                    let md = sub.cursor.mark_delete_position();
                    let md = commands::message_id(md.ledger_id as u64, md.entry_id as u64);
                    commands::get_last_message_id_response(request_id, id, Some(md))
                }
                Err(e) => commands::error(request_id, wire_code(&e), e.to_string()),
            }
        });
    }

    pub(super) fn consumer_stats(&self, c: &pb::CommandConsumerStats) {
        let Some(slot) = self.consumers.get(&c.consumer_id) else {
            self.send(&commands::consumer_stats_response_error(
                c.request_id,
                Wire::ConsumerNotFound,
                "consumer not found",
            ));
            return;
        };
        let k = &slot.consumer;
        let (rate, tput) = k.out.rates();
        let (redeliver, _) = k.redelivered.rates();
        let since: chrono_like::Rfc3339 = k.connected_since.into();
        let stats = pb::CommandConsumerStatsResponse {
            msg_rate_out: Some(rate),
            msg_throughput_out: Some(tput),
            msg_rate_redeliver: Some(redeliver),
            consumer_name: Some(k.name.clone()),
            available_permits: Some(u64::try_from(k.permits.get().max(0)).unwrap_or(0)),
            unacked_messages: Some(u64::try_from(k.unacked().max(0)).unwrap_or(0)),
            blocked_consumer_on_unacked_msgs: Some(k.is_blocked()),
            address: Some(k.address.clone()),
            connected_since: Some(since.0),
            r#type: Some(k.sub_type.as_str().to_owned()),
            msg_rate_expired: Some(0.0),
            msg_backlog: Some(slot.sub.cursor.backlog()),
            ..Default::default()
        };
        self.send(&commands::consumer_stats_response(c.request_id, stats));
    }
}

/// The storage part of SUBSCRIBE (blocking pool): loads the topic, opens or creates the
/// cursor, checks or stores the schema and attaches the consumer.
fn attach_consumer(
    service: &BrokerService,
    sink: Arc<dyn ConsumerSink>,
    peer: String,
    client_version: String,
    c: &pb::CommandSubscribe,
) -> Result<ConsumerSlot, BrokerError> {
    let name = TopicName::parse(&c.topic)?;
    let sub_type = SubType::from_wire(c.sub_type).ok_or_else(|| {
        BrokerError::NotAllowed(format!("unknown subscription type {}", c.sub_type))
    })?;
    if c.subscription.is_empty() {
        return Err(BrokerError::NotAllowed("empty subscription name".into()));
    }
    if name.partition_index().is_none() && service.partitions(&name, false)? > 0 {
        return Err(BrokerError::NotAllowed(format!(
            "{name} is partitioned: subscribe to its partitions"
        )));
    }
    pulsar_rs_broker::subscription::compacted_read::check_subscribe(sub_type, c.read_compacted())?;
    let topic = service.topic(&name, c.force_topic_creation())?;
    // Before the subscription exists, as Pulsar checks it before `topic.subscribe`.
    if let Some(schema) = &c.schema {
        service.consumer_schema(&topic, &schema_info(schema))?;
    }
    topic.admit_consumer(None, &peer)?;
    let sub = if c.durable() {
        let earliest = c.initial_position() == pb::command_subscribe::InitialPosition::Earliest;
        let sub = topic.durable_subscription(
            &c.subscription,
            earliest,
            topic.effective_policy().allow_auto_subscription_creation,
        )?;
        // As Pulsar's: `replicateSubscriptionState` true makes the subscription replicated
        // (kept in its cursor); false or absent never undoes it.
        if c.replicate_subscription_state == Some(true) && !sub.is_replicated() {
            sub.set_replicated(true);
        }
        sub
    } else {
        let start = reader_start(&topic, c.start_message_id.as_ref());
        topic.reader_subscription(&c.subscription, start)?
    };
    let consumer_name = c
        .consumer_name
        .clone()
        .unwrap_or_else(|| format!("consumer-{}", service.next_seq()));
    let consumer = Consumer::new(
        c.consumer_id,
        consumer_name,
        c.priority_level.unwrap_or(0),
        sub_type,
        peer,
        sink,
        service.clock(),
    );
    consumer.set_read_compacted(c.read_compacted());
    consumer.set_client(
        client_version,
        c.metadata
            .iter()
            .map(|kv| (kv.key.clone(), kv.value.clone()))
            .collect(),
    );
    let key_shared = c.key_shared_meta.as_ref().map(key_shared_meta);
    // The subscription's type first, then its consumer count, as Pulsar's dispatchers check.
    let admitted = sub
        .admits_type(sub_type)
        .and_then(|()| topic.admit_consumer(Some(&sub), &consumer.address))
        .and_then(|()| sub.add_consumer(Arc::clone(&consumer), key_shared));
    if let Err(e) = admitted {
        if !sub.durable && sub.consumers().is_empty() {
            let _ = topic.remove_subscription(&sub.name);
        }
        return Err(e);
    }
    Ok(ConsumerSlot {
        topic,
        sub,
        consumer,
    })
}

/// Detaches a consumer; a reader's subscription goes away with its last consumer.
pub(super) fn detach_consumer(slot: &ConsumerSlot) {
    slot.sub.remove_consumer(&slot.consumer);
    if !slot.sub.durable && slot.sub.consumers().is_empty() {
        let _ = slot.topic.remove_subscription(&slot.sub.name);
    }
}

/// Where a reader starts (the mark-delete of its cursor). Earliest and latest are Pulsar's
/// sentinels. For a concrete id, Java's broker wraps the start id in a `BatchMessageIdImpl` and
/// so always steps back one entry: the start entry itself is delivered and the client drops it
/// (or the batch messages before the index) unless `startMessageIdInclusive` is set. The C++
/// client relies on this both for inclusive readers and when resubscribing after a reconnect.
fn reader_start(topic: &Topic, id: Option<&pb::MessageIdData>) -> Position {
    let Some(id) = id else {
        return topic.ledger.last_confirmed();
    };
    let p = position(id);
    if p.ledger_id < 0 {
        return Position::EARLIEST;
    }
    if p == Position::LATEST || p.ledger_id == i64::MAX {
        return topic.ledger.last_confirmed();
    }
    topic.ledger.previous_position(p)
}

/// The broker's view of SUBSCRIBE's `KeySharedMeta` (ranges are inclusive; negative bounds
/// are passed on as out of range so the broker refuses them).
pub(super) fn key_shared_meta(m: &pb::KeySharedMeta) -> KeySharedMeta {
    let bound = |v: i32| u32::try_from(v).unwrap_or(u32::MAX);
    KeySharedMeta {
        mode: if m.key_shared_mode == pb::KeySharedMode::Sticky as i32 {
            KeySharedMode::Sticky
        } else {
            KeySharedMode::AutoSplit
        },
        ranges: m
            .hash_ranges
            .iter()
            .map(|r| (bound(r.start), bound(r.end)))
            .collect(),
        allow_out_of_order_delivery: m.allow_out_of_order_delivery(),
    }
}

fn position(m: &pb::MessageIdData) -> Position {
    // u64 on the wire; -1 (earliest) arrives as 2^64-1 and is reinterpreted as i64.
    Position::new(m.ledger_id as i64, m.entry_id as i64)
}

/// A message id of an ACK as a transaction holds it (a batch-index ack keeps its ack set).
#[allow(clippy::cast_sign_loss)]
fn acked_id(m: &pb::MessageIdData) -> AckedId {
    AckedId {
        position: position(m),
        ack_set: m.ack_set.iter().map(|w| *w as u64).collect(),
        batch_size: m.batch_size.map_or(0, |n| n.max(0) as u32),
    }
}

/// RFC 3339 rendering of a `SystemTime` without a date library.
mod chrono_like {
    use std::time::SystemTime;

    pub struct Rfc3339(pub String);

    impl From<SystemTime> for Rfc3339 {
        fn from(t: SystemTime) -> Self {
            let secs = pulsar_rs_clock::system_time_ms(t) / 1000;
            let days = secs / 86_400;
            let rem = secs % 86_400;
            // Civil-from-days (Howard Hinnant's algorithm).
            let z = days as i64 + 719_468;
            let era = z.div_euclid(146_097);
            let doe = z.rem_euclid(146_097);
            let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
            let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
            let mp = (5 * doy + 2) / 153;
            let d = doy - (153 * mp + 2) / 5 + 1;
            let m = if mp < 10 { mp + 3 } else { mp - 9 };
            let y = yoe + era * 400 + i64::from(m <= 2);
            Rfc3339(format!(
                "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
                rem / 3600,
                rem % 3600 / 60,
                rem % 60
            ))
        }
    }
}
