//! Producers: PRODUCER (creation with access mode, schema and backlog-quota checks), SEND
//! (publish with rate limiting and ordered, durable receipts) and CLOSE_PRODUCER.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use pulsar_rs_broker::{
    AccessMode, Admission, BrokerError, BrokerService, ProducerInfo, ProducerMeters, Published,
    QuotaVerdict, Topic, TopicName,
};
use pulsar_rs_ledger::{AddWaiter, Position};
use pulsar_rs_proto::{commands, pb, PayloadFrame, ServerError as Wire};

use super::frame;
use super::receipts::{self, Outcome, Receipts};
use super::replicated_send::Classified;
use super::schema::{schema_info, version_bytes};
use super::Connection;
use crate::auth::authz::Action;
use crate::error::{wire_code, ServerError};

/// A producer of this connection; owned by the connection task.
pub(super) struct Producer {
    pub(super) topic: Arc<Topic>,
    pub(super) name: String,
    pub(super) handle: u64,
    /// This producer's receipts, answered in SEND order.
    receipts: Arc<Receipts>,
    /// The same queue as the waiter its durable writes name (made once, not per SEND).
    waiter: Arc<dyn AddWaiter>,
    /// Its publish counters, shared with the topic's `ProducerInfo` (admin stats).
    meters: Arc<ProducerMeters>,
    /// Another cluster's replicator (`<replicatorPrefix>.<from>--><to>`): its SENDs are
    /// deduplicated on each message's own producer and sequence id, or on its source position.
    replicator: bool,
    /// A replicator on a connection whose CONNECT advertised
    /// `supports_repl_dedup_by_lid_and_eid`: deduplicated by source position, receipts carry it.
    by_source_position: bool,
}

impl Connection {
    /// CLOSE_PRODUCER: detaches the producer; answered once the SENDs still in flight for it
    /// are (Pulsar's close waits for the pending publishes: answered before them, the Java
    /// client fails them as closed while they are stored).
    pub(super) fn close_producer(&mut self, c: &pb::CommandCloseProducer) {
        if let Some(p) = self.producers.remove(&c.producer_id) {
            p.topic.remove_producer(&p.name, p.handle);
            self.ctx.unregister_producer(p.handle);
            self.closed_producers
                .insert(c.producer_id, pulsar_rs_clock::monotonic());
            p.receipts
                .after_pending(super::frame(&commands::success(c.request_id)));
            return;
        } else if let Some(cancelled) = self.creating_producers.get_mut(&c.producer_id) {
            // Still being created: undone when that completes.
            *cancelled = true;
        }
        self.send(&commands::success(c.request_id));
    }

    pub(super) fn producer(&mut self, c: pb::CommandProducer) {
        if let Some(p) = self
            .producers
            .get(&c.producer_id)
            .filter(|p| !self.ctx.is_registered(p.handle))
        {
            // Closed by the broker (fenced, backlog quota): this is a fresh creation.
            p.topic.remove_producer(&p.name, p.handle);
            self.producers.remove(&c.producer_id);
        }
        if let Some(p) = self.producers.get(&c.producer_id) {
            // A retry of a producer that is already created on this connection.
            let topic_matches = TopicName::parse(&c.topic).is_ok_and(|t| t == p.topic.name);
            if topic_matches {
                self.send(&commands::producer_success(
                    c.request_id,
                    p.name.clone(),
                    p.topic.dedup.last_sequence_id(&p.name),
                    None,
                ));
            } else {
                self.error(
                    c.request_id,
                    &BrokerError::ProducerBusy("producer id already in use".into()),
                );
            }
            return;
        }
        // As Pulsar's handleProducer: an initial subscription needs the subscribe permission too.
        let initial_subscription = c
            .initial_subscription_name
            .clone()
            .filter(|s| !s.is_empty());
        let allowed = self.authorized(&c.topic, Action::Produce).and_then(|()| {
            initial_subscription
                .as_deref()
                .map_or(Ok(()), |s| self.authorized_subscribe(&c.topic, s))
        });
        if let Err(msg) = allowed {
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
                move |conn: &mut Connection| conn.producer(c)
            })
        {
            return;
        }
        if self.creating_producers.contains_key(&c.producer_id) {
            self.send(&commands::error(
                c.request_id,
                Wire::ServiceNotReady,
                "Producer is already being created on this connection".to_owned(),
            ));
            return;
        }
        self.creating_producers.insert(c.producer_id, false);
        // Topic load, backlog-quota check and schema storage touch the disk: blocking pool.
        let service = Arc::clone(&self.service);
        let peer = self.peer.clone();
        let (topic_name, access_mode, epoch) =
            (c.topic.clone(), c.producer_access_mode, c.topic_epoch);
        let (wanted_name, schema) = (c.producer_name.clone(), c.schema.clone());
        // What the admin stats show of it; handle and name are set once the topic is loaded.
        let info = ProducerInfo {
            handle: 0,
            name: String::new(),
            access_mode: AccessMode::from_wire(access_mode),
            address: peer,
            producer_id: c.producer_id,
            connected_since: pulsar_rs_clock::system_time_of_ms(self.ctx.service.clock().now_ms()),
            client_version: self.client_version.clone(),
            metadata: c
                .metadata
                .iter()
                .map(|kv| (kv.key.clone(), kv.value.clone()))
                .collect(),
            meters: Arc::default(),
        };
        let meters = Arc::clone(&info.meters);
        self.offload(
            move || {
                create_producer(
                    &service,
                    &topic_name,
                    wanted_name,
                    schema.as_ref(),
                    epoch,
                    initial_subscription.as_deref(),
                    info,
                )
            },
            move |conn, result| conn.producer_created(c, result, meters),
            |result| {
                if let Ok((topic, name, handle, _, _)) = result {
                    topic.remove_producer(&name, handle);
                }
            },
        );
    }

    /// The second half of PRODUCER, on the connection task once the topic work is done.
    fn producer_created(
        &mut self,
        c: pb::CommandProducer,
        result: Result<Created, BrokerError>,
        meters: Arc<ProducerMeters>,
    ) {
        let cancelled = self
            .creating_producers
            .remove(&c.producer_id)
            .unwrap_or(true);
        if cancelled {
            // CLOSE_PRODUCER came first (it was answered): detach again.
            if let Ok((topic, name, handle, _, _)) = result {
                topic.remove_producer(&name, handle);
            }
            return;
        }
        match result {
            Ok((topic, name, handle, schema_version, admission)) => {
                let last_sequence_id = topic.dedup.last_sequence_id(&name);
                for fenced in topic.take_fenced() {
                    self.ctx.fence_producer(fenced);
                }
                let replicator = crate::replication::is_replicator_producer(
                    &self.service.config.replicator_prefix,
                    &name,
                );
                let receipts = Receipts::new(
                    c.producer_id,
                    self.tx.clone(),
                    Arc::clone(&self.inflight),
                    Arc::clone(&self.ctx),
                );
                self.ctx
                    .register_producer(handle, self.tx.clone(), c.producer_id);
                self.producers.insert(
                    c.producer_id,
                    Producer {
                        topic,
                        name: name.clone(),
                        handle,
                        waiter: Arc::clone(&receipts) as _,
                        receipts,
                        meters,
                        replicator,
                        by_source_position: replicator && self.repl_dedup_by_source_position,
                    },
                );
                let exclusive = AccessMode::from_wire(c.producer_access_mode) != AccessMode::Shared;
                match admission {
                    Admission::Ready(epoch) => self.send(&commands::producer_success_epoch(
                        c.request_id,
                        name,
                        last_sequence_id,
                        schema_version,
                        exclusive.then_some(epoch),
                        true,
                    )),
                    Admission::Queued(promoted) => {
                        // As Pulsar: "queued" now, the real answer when the topic is ours.
                        self.send(&commands::producer_success_epoch(
                            c.request_id,
                            name.clone(),
                            last_sequence_id,
                            schema_version.clone(),
                            None,
                            false,
                        ));
                        let (tx, ctx, rid) = (self.tx.clone(), Arc::clone(&self.ctx), c.request_id);
                        tokio::spawn(async move {
                            let reply = match promoted.await {
                                Ok(Ok(epoch)) => commands::producer_success_epoch(
                                    rid,
                                    name,
                                    last_sequence_id,
                                    schema_version,
                                    Some(epoch),
                                    true,
                                ),
                                Ok(Err(e)) => {
                                    ctx.unregister_producer(handle);
                                    commands::error(rid, wire_code(&e), e.to_string())
                                }
                                // The topic dropped the queue (connection gone, topic closed).
                                Err(_) => return,
                            };
                            let _ = tx.send(frame(&reply));
                        });
                    }
                }
            }
            Err(e) => self.error(c.request_id, &e),
        }
    }

    pub(super) fn publish(
        &mut self,
        s: &pb::CommandSend,
        payload: Option<PayloadFrame>,
    ) -> Result<(), ServerError> {
        let Some(p) = self.producers.get(&s.producer_id) else {
            // Java drops SENDs for a producer closed a moment ago; an id never seen is a bug.
            let keepalive = Duration::from_secs(self.service.config.keep_alive_interval_seconds);
            if self
                .closed_producers
                .get(&s.producer_id)
                .is_some_and(|t| t.elapsed() < keepalive)
            {
                return Ok(());
            }
            return Err(ServerError::BadRequest(format!(
                "SEND for unknown producer {}",
                s.producer_id
            )));
        };
        let mut payload =
            payload.ok_or_else(|| ServerError::BadRequest("SEND without payload".into()))?;
        // Another cluster's replicator: deduplicated and answered as its CONNECT negotiated.
        let classified = if p.replicator {
            Classified::replicator(s, payload.full_metadata().ok(), p.by_source_position)
        } else {
            Classified::local()
        };
        let stored_len = payload.stored.len();
        let mut stored_at = None;
        let outcome: Outcome = if !payload.checksum_valid {
            Err((
                Wire::ChecksumError,
                "Checksum failed on the broker".to_owned(),
            ))
        } else if payload.payload.len() > self.service.config.max_message_size as usize {
            // The limit is on the payload (each chunk's, for chunked messages): the C++ client
            // cuts chunks of `maxMessageSize - metadata size` bytes, so the whole stored entry
            // may exceed it by its headers (the frame limit has padding for them).
            Err((
                Wire::NotAllowedError,
                "Exceed maximum message size".to_owned(),
            ))
        } else if let Err(e) = admit_size(&p.topic, &payload) {
            Err((Wire::NotAllowedError, e.to_string()))
        } else if let Err(refused) =
            super::delivery_delay::hold(&p.topic, p.replicator, &mut payload)
        {
            Err(refused)
        } else {
            let messages = u32::try_from(s.num_messages().max(1)).unwrap_or(1);
            let bytes = payload.stored.len() as u64;
            let ids = classified.ids(&p.name, s, payload.metadata.is_non_last_chunk());
            let token = p.receipts.next_token();
            let chunk = payload.metadata.num_chunks_from_msg.is_some_and(|n| n > 1);
            // Admin stats: what this producer published.
            let record = || {
                p.meters.msg_in.record(u64::from(messages), bytes);
                if chunk {
                    p.meters.chunked.record(1, bytes);
                    // Relaxed: a statistic for the admin API.
                    p.topic.chunk_published.store(true, Ordering::Relaxed);
                }
            };
            // Pulsar routes on the SEND's txn id (both halves present).
            let txn = match (s.txnid_most_bits, s.txnid_least_bits) {
                (Some(most), Some(least)) => {
                    Some(pulsar_rs_broker::transaction::TxnId::new(most, least))
                }
                _ => None,
            };
            let r = match p.topic.publish_message_then(
                ids,
                txn,
                payload.metadata.publish_time,
                payload.stored,
                messages,
                &p.waiter,
                token,
            ) {
                Ok(Published::Queued { position, ticket }) => {
                    record();
                    stored_at = Some((position, token, ticket));
                    Ok(position)
                }
                Ok(Published::Stored { position }) => {
                    record();
                    Ok(position)
                }
                // Already persisted: Pulsar answers a receipt with message id -1:-1.
                Ok(Published::Duplicate) => Ok(Position::new(-1, -1)),
                Ok(Published::DuplicateUnknown) => Err((
                    Wire::PersistenceError,
                    "Cannot determine whether the message is a duplicate at this time".to_owned(),
                )),
                // The broker took the producer off its topic (an unload or a delete closing
                // it) and tells it CLOSE_PRODUCER: as Pulsar does for a SEND that meets its
                // `TopicClosedException` or a producer in `recentlyClosedProducers`, nothing is
                // answered; the client sends it again once reconnected. A SEND_ERROR would make
                // the client close the whole connection, every other producer on it included.
                Err(_) if !p.topic.has_producer(&p.name, p.handle) => return Ok(()),
                Err(e) => Err((wire_code(&e), e.to_string())),
            };
            let mut wait = Duration::ZERO;
            if let Some(limiter) = p.topic.publish_limiter() {
                wait = limiter.consume(u64::from(messages), bytes);
                if !wait.is_zero() {
                    // Relaxed: a statistic for the admin API.
                    p.topic.publish_rate_limited.fetch_add(1, Ordering::Relaxed);
                }
            }
            if let Some(limiter) = &self.ctx.broker_publish_limiter {
                wait = wait.max(limiter.consume(u64::from(messages), bytes));
            }
            if !wait.is_zero() {
                self.throttled_until = Some(pulsar_rs_clock::monotonic() + wait);
            }
            r
        };
        let mut send = receipts::Send {
            sequence_id: s.sequence_id,
            highest_sequence_id: s.highest_sequence_id,
            receipt_ids: classified.receipt_ids,
            bytes: stored_len,
            ticket: None,
        };
        match stored_at {
            Some((position, token, ticket)) => {
                send.ticket = ticket;
                p.receipts.answer_when_durable(send, position, token);
            }
            None => p.receipts.answer(send, outcome),
        }
        Ok(())
    }
}

/// A created producer: its topic, name, handle, schema version and admission.
type Created = (Arc<Topic>, String, u64, Option<Bytes>, Admission);

/// The storage part of PRODUCER (blocking pool): loads the topic, checks its backlog quota,
/// stores the schema and attaches the producer.
fn create_producer(
    service: &BrokerService,
    topic: &str,
    wanted_name: Option<String>,
    schema: Option<&pb::Schema>,
    topic_epoch: Option<u64>,
    initial_subscription: Option<&str>,
    mut info: ProducerInfo,
) -> Result<Created, BrokerError> {
    let name = TopicName::parse(topic)?;
    if name.partition_index().is_none() && service.partitions(&name, false)? > 0 {
        return Err(BrokerError::NotAllowed(format!(
            "{name} is partitioned: produce to its partitions"
        )));
    }
    let topic = service.topic(&name, true)?;
    let now = service.clock().now_ms();
    if let QuotaVerdict::Blocked(policy) = service.check_backlog_quota(&topic, now)? {
        return Err(BrokerError::QuotaExceeded(policy));
    }
    let schema_version = service
        .producer_schema(&topic, schema.map(schema_info))?
        .map(version_bytes);
    // `initial_subscription_name` (a dead-letter producer's, for one): created at the earliest
    // position before the producer is ready, as Pulsar's handleProducer, so nothing published
    // before anyone subscribes is lost to it.
    if let Some(sub) = initial_subscription.filter(|s| topic.subscription(s).is_none()) {
        if !topic.effective_policy().allow_auto_subscription_creation {
            return Err(BrokerError::NotAllowed(
                "Could not create the initial subscription due to the auto subscription creation is not allowed.".into(),
            ));
        }
        topic.durable_subscription(sub, true, true)?;
    }
    let handle = service.next_seq();
    let pname =
        wanted_name.unwrap_or_else(|| format!("{}-{}", service.config.cluster_name, handle));
    info.handle = handle;
    info.name.clone_from(&pname);
    let admission = topic.add_producer(info, topic_epoch)?;
    Ok((topic, pname, handle, schema_version, admission))
}

/// The topic's `maxMessageSize` policy (Pulsar's `isExceedMaximumMessageSize`): on the stored
/// message, metadata included; chunks are exempt, as each was cut to the broker's limit.
fn admit_size(
    topic: &pulsar_rs_broker::Topic,
    payload: &PayloadFrame,
) -> Result<(), pulsar_rs_broker::BrokerError> {
    if payload.metadata.num_chunks_from_msg.is_some_and(|n| n > 1) {
        return Ok(());
    }
    topic.limits().admit_message(payload.stored.len())
}
