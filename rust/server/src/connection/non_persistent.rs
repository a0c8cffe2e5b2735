//! Producers and consumers of `non-persistent://` topics: SENDs are answered at once with
//! message id 0:0 and handed to the attached consumers (no storage); FLOW adds permits; ACK,
//! REDELIVER and SEEK are accepted and do nothing, as in Pulsar's `NonPersistentSubscription`.

use std::collections::HashMap;
use std::sync::Arc;

use pulsar_rs_broker::nonpersistent::{NonPersistentSubscription, NonPersistentTopic};
use pulsar_rs_broker::{BrokerError, Consumer, ConsumerSink, SubType, TopicName};
use pulsar_rs_proto::pb::base_command::Type;
use pulsar_rs_proto::{commands, BaseCommand, PayloadFrame, ServerError as Wire};

use super::Connection;
use crate::auth::authz::Action;
use crate::error::ServerError;

/// A non-persistent producer of this connection.
pub(super) struct NpProducer {
    topic: Arc<NonPersistentTopic>,
    name: String,
    handle: u64,
}

/// A non-persistent consumer of this connection.
pub(super) struct NpConsumer {
    topic: Arc<NonPersistentTopic>,
    sub: Arc<NonPersistentSubscription>,
    consumer: Arc<Consumer>,
}

/// The connection's non-persistent producers and consumers; owned by the connection task.
#[derive(Default)]
pub(super) struct NpState {
    producers: HashMap<u64, NpProducer>,
    consumers: HashMap<u64, NpConsumer>,
}

impl NpState {
    /// Detaches everything (connection closed).
    pub(super) fn cleanup(&mut self, ctx: &crate::context::ServerContext) {
        for (_, p) in self.producers.drain() {
            p.topic.remove_producer(&p.name, p.handle);
            ctx.unregister_producer(p.handle);
        }
        for (_, c) in self.consumers.drain() {
            c.topic.unsubscribe_consumer(&c.sub, &c.consumer);
        }
    }
}

fn non_persistent_name(topic: &str) -> Option<TopicName> {
    TopicName::parse(topic).ok().filter(|t| !t.is_persistent())
}

impl Connection {
    /// Handles `cmd` if it concerns a non-persistent topic, producer or consumer.
    pub(super) fn non_persistent(
        &mut self,
        ty: Type,
        cmd: &BaseCommand,
        payload: Option<&PayloadFrame>,
    ) -> Option<Result<(), ServerError>> {
        match ty {
            Type::Producer => {
                let c = cmd.producer.as_deref()?;
                let name = non_persistent_name(&c.topic)?;
                if self
                    .np
                    .producers
                    .get(&c.producer_id)
                    .is_some_and(|p| !self.ctx.is_registered(p.handle))
                {
                    // Closed by the broker (its topic unloaded or deleted): a fresh creation.
                    self.np.producers.remove(&c.producer_id);
                }
                if self.np.producers.contains_key(&c.producer_id) {
                    let p = &self.np.producers[&c.producer_id];
                    self.send(&commands::producer_success(
                        c.request_id,
                        p.name.clone(),
                        -1,
                        None,
                    ));
                    return Some(Ok(()));
                }
                if let Err(msg) = self.authorized(&c.topic, Action::Produce) {
                    self.send(&commands::error(
                        c.request_id,
                        Wire::AuthorizationError,
                        msg,
                    ));
                    return Some(Ok(()));
                }
                // In a cluster only the bundle's owner serves it, as a persistent topic.
                if self.refuse_unowned(c.request_id, &c.topic, || {
                    let cmd = cmd.clone();
                    move |conn: &mut Connection| {
                        // Parsed once already: no malformed command to close the connection for.
                        let _ = conn.non_persistent(ty, &cmd, None);
                    }
                }) {
                    return Some(Ok(()));
                }
                let r = (|| {
                    if name.partition_index().is_none()
                        && self.service.partitions(&name, false)? > 0
                    {
                        return Err(BrokerError::NotAllowed(format!(
                            "{name} is partitioned: produce to its partitions"
                        )));
                    }
                    let topic = self.service.non_persistent_topic(&name, true)?;
                    topic.admit(&self.service.policies.effective(&name).limits, None)?;
                    let handle = self.service.next_seq();
                    let pname = c.producer_name.clone().unwrap_or_else(|| {
                        format!("{}-{}", self.service.config.cluster_name, handle)
                    });
                    topic.add_producer(&pname, handle)?;
                    Ok(NpProducer {
                        topic,
                        name: pname,
                        handle,
                    })
                })();
                match r {
                    Ok(p) => {
                        // Pulsar: last_sequence_id is -1 on non-persistent topics.
                        self.send(&commands::producer_success(
                            c.request_id,
                            p.name.clone(),
                            -1,
                            None,
                        ));
                        // Registered, so the broker can close it (`ServerContext::fence_producer`).
                        self.ctx
                            .register_producer(p.handle, self.tx.clone(), c.producer_id);
                        self.np.producers.insert(c.producer_id, p);
                    }
                    Err(e) => self.error(c.request_id, &e),
                }
                Some(Ok(()))
            }
            Type::Send => {
                let s = cmd.send.as_ref()?;
                let p = self.np.producers.get(&s.producer_id)?;
                let Some(payload) = payload else {
                    return Some(Err(ServerError::BadRequest("SEND without payload".into())));
                };
                let reply = if !payload.checksum_valid {
                    commands::send_error(
                        s.producer_id,
                        s.sequence_id,
                        Wire::ChecksumError,
                        "Checksum failed on the broker",
                    )
                } else if payload.payload.len() > self.service.config.max_message_size as usize {
                    commands::send_error(
                        s.producer_id,
                        s.sequence_id,
                        Wire::NotAllowedError,
                        "Exceed maximum message size",
                    )
                } else {
                    // Pulsar answers first (message id 0:0), then dispatches.
                    let messages = u32::try_from(s.num_messages().max(1)).unwrap_or(1);
                    let r = commands::send_receipt(
                        s.producer_id,
                        s.sequence_id,
                        s.highest_sequence_id,
                        0,
                        0,
                    );
                    self.send(&r);
                    p.topic.publish(&payload.stored, messages);
                    return Some(Ok(()));
                };
                self.send(&reply);
                Some(Ok(()))
            }
            Type::CloseProducer => {
                let c = cmd.close_producer.as_ref()?;
                let p = self.np.producers.remove(&c.producer_id)?;
                p.topic.remove_producer(&p.name, p.handle);
                self.ctx.unregister_producer(p.handle);
                self.send(&commands::success(c.request_id));
                Some(Ok(()))
            }
            Type::Subscribe => {
                let c = cmd.subscribe.as_deref()?;
                let name = non_persistent_name(&c.topic)?;
                if let Err(msg) = self.authorized_subscribe(&c.topic, &c.subscription) {
                    self.send(&commands::error(
                        c.request_id,
                        Wire::AuthorizationError,
                        msg,
                    ));
                    return Some(Ok(()));
                }
                if self.refuse_unowned(c.request_id, &c.topic, || {
                    let cmd = cmd.clone();
                    move |conn: &mut Connection| {
                        // Parsed once already: no malformed command to close the connection for.
                        let _ = conn.non_persistent(ty, &cmd, None);
                    }
                }) {
                    return Some(Ok(()));
                }
                // A consumer the broker closed (its topic unloaded or deleted) is replaced by
                // its client's new SUBSCRIBE, as on a persistent topic.
                if self
                    .np
                    .consumers
                    .get(&c.consumer_id)
                    .is_some_and(|slot| slot.consumer.is_closed())
                {
                    self.np.consumers.remove(&c.consumer_id);
                }
                if !self.np.consumers.contains_key(&c.consumer_id) {
                    self.sink.hold_notices(c.consumer_id);
                }
                let r = (|| {
                    if self.np.consumers.contains_key(&c.consumer_id) {
                        return Err(BrokerError::ConsumerBusy(
                            "Consumer is already present on the connection".into(),
                        ));
                    }
                    if c.read_compacted() {
                        return Err(BrokerError::NotAllowed(
                            "readCompacted only valid on persistent topics".into(),
                        ));
                    }
                    let sub_type = SubType::from_wire(c.sub_type).ok_or_else(|| {
                        BrokerError::NotAllowed(format!("unknown subscription type {}", c.sub_type))
                    })?;
                    if name.partition_index().is_none()
                        && self.service.partitions(&name, false)? > 0
                    {
                        return Err(BrokerError::NotAllowed(format!(
                            "{name} is partitioned: subscribe to its partitions"
                        )));
                    }
                    let topic = self
                        .service
                        .non_persistent_topic(&name, c.force_topic_creation())?;
                    topic.admit(
                        &self.service.policies.effective(&name).limits,
                        Some(&c.subscription),
                    )?;
                    let consumer = Consumer::new(
                        c.consumer_id,
                        c.consumer_name
                            .clone()
                            .unwrap_or_else(|| format!("consumer-{}", self.service.next_seq())),
                        c.priority_level.unwrap_or(0),
                        sub_type,
                        self.peer.clone(),
                        Arc::clone(&self.sink) as Arc<dyn ConsumerSink>,
                        self.service.clock(),
                    );
                    let key_shared = c
                        .key_shared_meta
                        .as_ref()
                        .map(super::consumer::key_shared_meta)
                        .unwrap_or_default();
                    let sub = topic.subscribe(
                        &c.subscription,
                        Arc::clone(&consumer),
                        &key_shared,
                        &self.service.config,
                    )?;
                    Ok(NpConsumer {
                        topic,
                        sub,
                        consumer,
                    })
                })();
                match r {
                    Ok(slot) => {
                        self.np.consumers.insert(c.consumer_id, slot);
                        self.send(&commands::success(c.request_id));
                        self.sink.release_notices(c.consumer_id);
                    }
                    Err(e) => {
                        self.sink.drop_notices(c.consumer_id);
                        self.error(c.request_id, &e);
                    }
                }
                Some(Ok(()))
            }
            Type::Flow => {
                let f = cmd.flow.as_ref()?;
                let c = self.np.consumers.get(&f.consumer_id)?;
                c.consumer.permits.add(i64::from(f.message_permits));
                Some(Ok(()))
            }
            Type::Ack => {
                let a = cmd.ack.as_ref()?;
                self.np.consumers.get(&a.consumer_id)?;
                Some(Ok(()))
            }
            Type::RedeliverUnacknowledgedMessages => {
                let r = cmd.redeliver_unacknowledged_messages.as_ref()?;
                self.np.consumers.get(&r.consumer_id)?;
                Some(Ok(()))
            }
            Type::Seek => {
                // NonPersistentSubscription.resetCursor does nothing: SEEK succeeds.
                let s = cmd.seek.as_ref()?;
                self.np.consumers.get(&s.consumer_id)?;
                self.send(&commands::success(s.request_id));
                Some(Ok(()))
            }
            Type::CloseConsumer | Type::Unsubscribe => {
                let (id, request_id) = match ty {
                    Type::CloseConsumer => {
                        let c = cmd.close_consumer.as_ref()?;
                        (c.consumer_id, c.request_id)
                    }
                    _ => {
                        let u = cmd.unsubscribe.as_ref()?;
                        (u.consumer_id, u.request_id)
                    }
                };
                let c = self.np.consumers.remove(&id)?;
                c.topic.unsubscribe_consumer(&c.sub, &c.consumer);
                self.send(&commands::success(request_id));
                Some(Ok(()))
            }
            _ => None,
        }
    }
}
