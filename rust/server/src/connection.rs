//! One client connection: reads frames, runs commands against the broker, and queues replies
//! and messages for the writer task.
//!
//! Publish backpressure (seed 001): with `maxPendingPublishRequestsPerConnection` SENDs in
//! flight, the connection stops reading its socket and resumes at half. Receipts go out in order
//! per producer because one task per producer awaits the durable completions in append order.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use pulsar_rs_broker::dedup::{SendIds, Ticket};
use pulsar_rs_broker::{
    AccessMode, BrokerError, BrokerService, Consumer, ConsumerEvent, ConsumerSink, KeySharedMeta,
    KeySharedMode, ProducerInfo, Published, QuotaVerdict, SchemaInfo, SubType, Subscription, Topic,
    TopicName,
};
use pulsar_rs_ledger::Position;
use pulsar_rs_proto::pb::{self, base_command::Type};
use pulsar_rs_proto::{commands, BaseCommand, Frame, PayloadFrame, ServerError as Wire};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, Notify};

use crate::authz::Action;
use crate::error::{wire_code, ServerError};
use crate::writer::{self, Outbound};
use crate::ServerContext;

/// Encodes a simple command into a frame.
fn frame(cmd: &BaseCommand) -> Outbound {
    let mut out = BytesMut::with_capacity(64);
    pulsar_rs_proto::encode_simple(cmd, &mut out);
    Outbound::Frame(out.freeze())
}

/// The consumer sink of a connection: encodes events into frames for the writer.
struct Sink {
    /// The connection's outbound queue.
    tx: mpsc::UnboundedSender<Outbound>,
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
                let cmd = commands::message(
                    consumer_id,
                    position.ledger_id as u64,
                    position.entry_id as u64,
                    partition,
                    redelivery_count,
                    ack_set,
                );
                let mut head = BytesMut::with_capacity(48);
                pulsar_rs_proto::encode_message_header(&cmd, data.len(), &mut head);
                Outbound::Message(head.freeze(), data)
            }
            ConsumerEvent::ActiveConsumerChange {
                consumer_id,
                active,
            } => frame(&commands::active_consumer_change(consumer_id, active)),
            ConsumerEvent::Closed { consumer_id } => frame(&commands::close_consumer(consumer_id)),
        };
        self.tx.send(item).is_ok()
    }
}

type Completion = Option<oneshot::Receiver<pulsar_rs_ledger::Result<()>>>;

/// A SEND waiting for its receipt.
struct PendingSend {
    sequence_id: u64,
    highest_sequence_id: Option<u64>,
    result: Result<(Position, Completion), (Wire, String)>,
    /// Bytes held in the broker-wide publish buffer until the receipt goes out.
    bytes: usize,
    /// Deduplication's record of the write, told the outcome before the receipt goes out.
    ticket: Option<Ticket>,
}

struct Producer {
    topic: Arc<Topic>,
    name: String,
    handle: u64,
    /// Ordered queue to this producer's receipt task.
    receipts: mpsc::UnboundedSender<PendingSend>,
    /// Receipts queued to that task and not yet sent. While zero, an append that completed at
    /// once is answered directly, saving a task hop per SEND.
    queued: Arc<AtomicUsize>,
}

struct ConsumerSlot {
    topic: Arc<Topic>,
    sub: Arc<Subscription>,
    consumer: Arc<Consumer>,
}

/// Shared between the reader and receipt tasks: SENDs accepted and not yet answered.
struct Inflight {
    count: AtomicUsize,
    drained: Notify,
}

struct Connection {
    ctx: Arc<ServerContext>,
    service: Arc<BrokerService>,
    peer: String,
    tx: mpsc::UnboundedSender<Outbound>,
    sink: Arc<Sink>,
    producers: HashMap<u64, Producer>,
    consumers: HashMap<u64, ConsumerSlot>,
    inflight: Arc<Inflight>,
    connected: bool,
    /// Set by a SEND that exhausted a publish rate limit: stop reading until then.
    throttled_until: Option<tokio::time::Instant>,
    /// Producers closed on this connection, with when (late SENDs for them are dropped).
    closed_producers: HashMap<u64, Instant>,
    last_seen: Instant,
    ping_outstanding: bool,
    /// The authenticated role (`None`: authentication off and no anonymous role), or why
    /// CONNECT failed authentication: then the first request is refused (see `auth`).
    role: Result<Option<String>, String>,
}

/// Serves one accepted socket until it closes or the broker shuts down.
pub async fn serve(
    socket: TcpStream,
    ctx: Arc<ServerContext>,
    shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let peer = socket
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let _ = socket.set_nodelay(true);
    let (rd, wr) = socket.into_split();
    serve_io(rd, wr, peer, ctx, shutdown).await;
}

/// Serves one connection given as its read and write halves (plain TCP or TLS).
pub async fn serve_io<R, W>(
    mut rd: R,
    wr: W,
    peer: String,
    ctx: Arc<ServerContext>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel();
    let writer = tokio::spawn(writer::run(rx, wr));
    let mut conn = Connection {
        service: Arc::clone(&ctx.service),
        ctx,
        peer,
        sink: Arc::new(Sink { tx: tx.clone() }),
        tx,
        producers: HashMap::new(),
        consumers: HashMap::new(),
        inflight: Arc::new(Inflight {
            count: AtomicUsize::new(0),
            drained: Notify::new(),
        }),
        connected: false,
        throttled_until: None,
        closed_producers: HashMap::new(),
        last_seen: Instant::now(),
        ping_outstanding: false,
        role: Ok(None),
    };
    let max_frame =
        conn.service.config.max_message_size as usize + pulsar_rs_proto::MESSAGE_SIZE_FRAME_PADDING;
    let max_pending = conn
        .service
        .config
        .max_pending_publish_requests_per_connection as usize;
    let keepalive = Duration::from_secs(conn.service.config.keep_alive_interval_seconds.max(1));
    let mut ticker = tokio::time::interval(keepalive);
    ticker.tick().await;
    let mut buf = BytesMut::with_capacity(64 * 1024);
    'outer: loop {
        // Backpressure on the broker-wide publish buffer (`maxMessagePublishBufferSizeInMB`).
        if conn.ctx.publish_buffer.bytes.load(Ordering::Acquire) > conn.ctx.publish_buffer.limit
            && conn.ctx.publish_buffer.limit > 0
        {
            conn.ctx
                .throttled_connections
                .fetch_add(1, Ordering::Relaxed);
            conn.ctx.publish_buffer.wait_for_room().await;
            conn.ctx
                .throttled_connections
                .fetch_sub(1, Ordering::Relaxed);
        }
        // Backpressure: stop reading while too many SENDs are in flight; resume at half.
        // Acquire: pairs with the receipt task's Release decrement, so its writes are visible.
        if conn.inflight.count.load(Ordering::Acquire) >= max_pending {
            conn.ctx
                .throttled_connections
                .fetch_add(1, Ordering::Relaxed);
            while conn.inflight.count.load(Ordering::Acquire) > max_pending / 2 {
                let drained = conn.inflight.drained.notified();
                if conn.inflight.count.load(Ordering::Acquire) <= max_pending / 2 {
                    break;
                }
                drained.await;
            }
            conn.ctx
                .throttled_connections
                .fetch_sub(1, Ordering::Relaxed);
        }
        tokio::select! {
            r = rd.read_buf(&mut buf) => match r {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    conn.last_seen = Instant::now();
                    conn.ping_outstanding = false;
                }
            },
            _ = ticker.tick() => {
                if conn.ping_outstanding && conn.last_seen.elapsed() > keepalive * 2 {
                    tracing::info!(peer = %conn.peer, "closing connection: keepalive timed out");
                    break;
                }
                if conn.connected {
                    conn.ping_outstanding = true;
                    conn.send(&commands::ping());
                }
                continue;
            }
            _ = shutdown.changed() => break,
        }
        loop {
            // Publish rate limiting: a throttled connection is not read (nor its buffered
            // frames handled) until the limiter's debt is paid; SENDs are never refused.
            if let Some(until) = conn.throttled_until.take() {
                let now = tokio::time::Instant::now();
                if until > now {
                    conn.ctx
                        .throttled_connections
                        .fetch_add(1, Ordering::Relaxed);
                    conn.ctx
                        .publish_throttle_events
                        .fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep_until(until).await;
                    conn.ctx
                        .throttled_connections
                        .fetch_sub(1, Ordering::Relaxed);
                }
            }
            match pulsar_rs_proto::decode_frame(&mut buf, max_frame) {
                Ok(None) => break,
                Ok(Some(f)) => {
                    if let Err(e) = conn.handle(f).await {
                        tracing::warn!(peer = %conn.peer, error = %e, "closing connection");
                        break 'outer;
                    }
                }
                Err(e) => {
                    tracing::warn!(peer = %conn.peer, error = %e, "closing connection: malformed frame");
                    break 'outer;
                }
            }
        }
    }
    conn.cleanup();
    let _ = conn.tx.send(Outbound::Close);
    drop(conn);
    let _ = writer.await;
}

impl Connection {
    fn send(&self, cmd: &BaseCommand) {
        let _ = self.tx.send(frame(cmd));
    }

    fn cleanup(&mut self) {
        for (_, p) in self.producers.drain() {
            p.topic.remove_producer(&p.name, p.handle);
            self.ctx.unregister_producer(p.handle);
        }
        for (_, c) in self.consumers.drain() {
            detach_consumer(&c);
        }
    }

    async fn handle(&mut self, f: Frame) -> Result<(), ServerError> {
        let (cmd, payload) = f.into_parts();
        let ty = Type::try_from(cmd.r#type)
            .map_err(|_| ServerError::BadRequest(format!("unknown command type {}", cmd.r#type)))?;
        if !self.connected && ty != Type::Connect {
            return Err(ServerError::BadRequest(format!("{ty:?} before CONNECT")));
        }
        if let Err(reason) = &self.role {
            if !matches!(ty, Type::Connect | Type::Ping | Type::Pong) {
                if let Some(reply) = crate::auth::refusal(ty, &cmd, reason) {
                    self.send(&reply);
                }
                return Err(ServerError::Authentication(reason.clone()));
            }
        }
        macro_rules! body {
            ($field:ident) => {
                cmd.$field
                    .ok_or_else(|| ServerError::BadRequest(format!("{ty:?} without its body")))?
            };
        }
        match ty {
            Type::Connect => self.connect(&*body!(connect)),
            Type::Ping => {
                self.send(&commands::pong());
                Ok(())
            }
            Type::Pong => Ok(()),
            Type::PartitionedMetadata => {
                self.partitioned_metadata(&*body!(partition_metadata));
                Ok(())
            }
            Type::Lookup => {
                self.lookup(&*body!(lookup_topic));
                Ok(())
            }
            Type::Producer => {
                self.producer(*body!(producer));
                Ok(())
            }
            Type::Send => self.publish(&body!(send), payload),
            Type::CloseProducer => {
                let c = body!(close_producer);
                if let Some(p) = self.producers.remove(&c.producer_id) {
                    p.topic.remove_producer(&p.name, p.handle);
                    self.ctx.unregister_producer(p.handle);
                    self.closed_producers.insert(c.producer_id, Instant::now());
                }
                self.send(&commands::success(c.request_id));
                Ok(())
            }
            Type::Subscribe => {
                self.subscribe(*body!(subscribe));
                Ok(())
            }
            Type::Flow => {
                let f = body!(flow);
                if let Some(c) = self.consumers.get(&f.consumer_id) {
                    c.sub.flow(&c.consumer, f.message_permits);
                }
                Ok(())
            }
            Type::Ack => {
                self.ack(&body!(ack));
                Ok(())
            }
            Type::RedeliverUnacknowledgedMessages => {
                let r = body!(redeliver_unacknowledged_messages);
                if let Some(c) = self.consumers.get(&r.consumer_id) {
                    let ids: Vec<Position> = r.message_ids.iter().map(position).collect();
                    c.sub
                        .redeliver(&c.consumer, if ids.is_empty() { None } else { Some(&ids) });
                }
                Ok(())
            }
            Type::CloseConsumer => {
                let c = body!(close_consumer);
                if let Some(slot) = self.consumers.remove(&c.consumer_id) {
                    detach_consumer(&slot);
                }
                self.send(&commands::success(c.request_id));
                Ok(())
            }
            Type::Unsubscribe => {
                self.unsubscribe(&*body!(unsubscribe));
                Ok(())
            }
            Type::Seek => {
                self.seek(&*body!(seek));
                Ok(())
            }
            Type::GetLastMessageId => {
                self.last_message_id(&*body!(get_last_message_id));
                Ok(())
            }
            Type::ConsumerStats => {
                self.consumer_stats(&*body!(consumer_stats));
                Ok(())
            }
            Type::GetTopicsOfNamespace => {
                self.topics_of_namespace(&*body!(get_topics_of_namespace));
                Ok(())
            }
            Type::GetSchema => {
                self.get_schema(&*body!(get_schema));
                Ok(())
            }
            Type::GetOrCreateSchema => {
                self.get_or_create_schema(*body!(get_or_create_schema));
                Ok(())
            }
            other => Err(ServerError::BadRequest(format!(
                "unsupported command {other:?}"
            ))),
        }
    }

    fn connect(&mut self, c: &pb::CommandConnect) -> Result<(), ServerError> {
        if self.connected {
            return Err(ServerError::BadRequest("second CONNECT".into()));
        }
        let version = c
            .protocol_version()
            .min(pulsar_rs_proto::MAX_PROTOCOL_VERSION);
        self.connected = true;
        self.role = self.ctx.auth.authenticate_connect(c).map_err(|e| {
            tracing::info!(peer = %self.peer, error = %e, "authentication failed");
            e.to_string()
        });
        tracing::debug!(peer = %self.peer, client = %c.client_version, version, "connected");
        let max = i32::try_from(self.service.config.max_message_size).unwrap_or(i32::MAX);
        self.send(&commands::connected(
            &format!("pulsar-rs-{}", env!("CARGO_PKG_VERSION")),
            version,
            max,
        ));
        Ok(())
    }

    fn partitioned_metadata(&self, c: &pb::CommandPartitionedTopicMetadata) {
        if let Err(msg) = self.authorized(&c.topic, Action::Lookup) {
            let code = Wire::AuthorizationError;
            self.send(&commands::partitioned_metadata_failed(
                c.request_id,
                code,
                msg,
            ));
            return;
        }
        let reply = match TopicName::parse(&c.topic).and_then(|t| {
            self.service
                .partitions(&t, c.metadata_auto_creation_enabled())
        }) {
            Ok(n) => commands::partitioned_metadata(c.request_id, n),
            Err(e) => {
                commands::partitioned_metadata_failed(c.request_id, wire_code(&e), e.to_string())
            }
        };
        self.send(&reply);
    }

    fn lookup(&self, c: &pb::CommandLookupTopic) {
        if let Err(msg) = self.authorized(&c.topic, Action::Lookup) {
            let code = Wire::AuthorizationError;
            self.send(&commands::lookup_failed(c.request_id, code, msg));
            return;
        }
        let tls_url = self.ctx.service_url_tls.as_deref();
        let reply = match TopicName::parse(&c.topic) {
            Ok(_) => commands::lookup_connect(c.request_id, &self.ctx.service_url, tls_url),
            Err(e) => commands::lookup_failed(c.request_id, wire_code(&e), e.to_string()),
        };
        self.send(&reply);
    }

    /// Authorization of `action` on `topic` for this connection's role.
    fn authorized(&self, topic: &str, action: Action) -> Result<(), String> {
        let role = self.role.as_ref().ok().and_then(Option::as_deref);
        self.ctx.authz.check_name(role, topic, action)
    }

    fn error(&self, request_id: u64, e: &BrokerError) {
        self.send(&commands::error(request_id, wire_code(e), e.to_string()));
    }

    fn producer(&mut self, c: pb::CommandProducer) {
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
        if let Err(msg) = self.authorized(&c.topic, Action::Produce) {
            self.send(&commands::error(
                c.request_id,
                Wire::AuthorizationError,
                msg,
            ));
            return;
        }
        let result = (|| -> Result<(Arc<Topic>, String, u64, Option<Bytes>), BrokerError> {
            let name = TopicName::parse(&c.topic)?;
            if name.partition_index().is_none() && self.service.partitions(&name, false)? > 0 {
                return Err(BrokerError::NotAllowed(format!(
                    "{name} is partitioned: produce to its partitions"
                )));
            }
            let topic = self.service.topic(&name, true)?;
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
            if let QuotaVerdict::Blocked(policy) = self.service.check_backlog_quota(&topic, now)? {
                return Err(BrokerError::QuotaExceeded(policy));
            }
            let schema_version = match &c.schema {
                Some(s) => Some(version_bytes(
                    self.service.add_schema(&topic, schema_info(s))?,
                )),
                None => None,
            };
            let handle = self.service.next_seq();
            let pname = c
                .producer_name
                .clone()
                .unwrap_or_else(|| format!("{}-{}", self.service.config.cluster_name, handle));
            topic.add_producer(ProducerInfo {
                handle,
                name: pname.clone(),
                access_mode: AccessMode::from_wire(c.producer_access_mode),
                address: self.peer.clone(),
            })?;
            Ok((topic, pname, handle, schema_version))
        })();
        match result {
            Ok((topic, name, handle, schema_version)) => {
                let last_sequence_id = topic.dedup.last_sequence_id(&name);
                for fenced in topic.take_fenced() {
                    self.ctx.fence_producer(fenced);
                }
                let queued = Arc::new(AtomicUsize::new(0));
                let receipts = spawn_receipts(
                    c.producer_id,
                    self.tx.clone(),
                    Arc::clone(&self.inflight),
                    Arc::clone(&queued),
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
                        receipts,
                        queued,
                    },
                );
                self.send(&commands::producer_success(
                    c.request_id,
                    name,
                    last_sequence_id,
                    schema_version,
                ));
            }
            Err(e) => self.error(c.request_id, &e),
        }
    }

    fn publish(
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
        let payload =
            payload.ok_or_else(|| ServerError::BadRequest("SEND without payload".into()))?;
        let stored_len = payload.stored.len();
        let mut ticket = None;
        let result = if !payload.checksum_valid {
            Err((
                Wire::ChecksumError,
                "Checksum failed on the broker".to_owned(),
            ))
        } else if payload.stored.len() > self.service.config.max_message_size as usize {
            Err((
                Wire::NotAllowedError,
                "Exceed maximum message size".to_owned(),
            ))
        } else {
            let messages = u32::try_from(s.num_messages().max(1)).unwrap_or(1);
            let bytes = payload.stored.len() as u64;
            let ids = SendIds {
                producer: &p.name,
                sequence_id: s.sequence_id,
                highest_sequence_id: s.highest_sequence_id,
            };
            let r = match p
                .topic
                .publish_message(ids, &payload.metadata, payload.stored, messages)
            {
                Ok(Published::Stored {
                    position,
                    completion,
                    ticket: t,
                }) => {
                    ticket = t;
                    Ok((position, completion))
                }
                Ok(Published::Duplicate) => Ok((Position::new(-1, -1), None)),
                Ok(Published::DuplicateUnknown) => Err((
                    Wire::PersistenceError,
                    "Cannot determine whether the message is a duplicate at this time".to_owned(),
                )),
                Err(e) => Err((wire_code(&e), e.to_string())),
            };
            let mut wait = Duration::ZERO;
            let topic_limiter = p.topic.publish_limiter();
            let limiters = topic_limiter
                .as_deref()
                .into_iter()
                .chain(self.ctx.broker_publish_limiter.as_ref());
            for limiter in limiters {
                wait = wait.max(limiter.consume(u64::from(messages), bytes));
            }
            if !wait.is_zero() {
                self.throttled_until = Some(tokio::time::Instant::now() + wait);
            }
            r
        };
        // Acquire: pairs with the receipt task's Release decrement, which follows its last
        // send; seeing zero means every earlier receipt of this producer is already queued.
        let immediate =
            !matches!(result, Ok((_, Some(_)))) && p.queued.load(Ordering::Acquire) == 0;
        if immediate {
            let cmd = receipt_command(
                s.producer_id,
                s.sequence_id,
                s.highest_sequence_id,
                result.map(|(pos, _)| pos),
            );
            let _ = self.tx.send(frame(&cmd));
            return Ok(());
        }
        // Release: pairs with the reader's Acquire load in the backpressure check.
        self.inflight.count.fetch_add(1, Ordering::Release);
        // Relaxed: only this task increments; the task's decrement is the synchronising one.
        p.queued.fetch_add(1, Ordering::Relaxed);
        // Release: pairs with the reader's Acquire load in the buffer check.
        self.ctx
            .publish_buffer
            .bytes
            .fetch_add(stored_len, Ordering::Release);
        let pending = PendingSend {
            sequence_id: s.sequence_id,
            highest_sequence_id: s.highest_sequence_id,
            result,
            bytes: stored_len,
            ticket,
        };
        if p.receipts.send(pending).is_err() {
            self.inflight.count.fetch_sub(1, Ordering::Release);
            p.queued.fetch_sub(1, Ordering::Relaxed);
            self.ctx.publish_buffer.release(stored_len);
        }
        Ok(())
    }

    fn subscribe(&mut self, c: pb::CommandSubscribe) {
        if let Some(slot) = self.consumers.get(&c.consumer_id) {
            if !slot.consumer.is_closed() {
                self.error(
                    c.request_id,
                    &BrokerError::ConsumerBusy(
                        "Consumer is already present on the connection".into(),
                    ),
                );
                return;
            }
            self.consumers.remove(&c.consumer_id);
        }
        if let Err(msg) = self.authorized(&c.topic, Action::Consume) {
            self.send(&commands::error(
                c.request_id,
                Wire::AuthorizationError,
                msg,
            ));
            return;
        }
        let result = (|| -> Result<ConsumerSlot, BrokerError> {
            let name = TopicName::parse(&c.topic)?;
            let sub_type = SubType::from_wire(c.sub_type).ok_or_else(|| {
                BrokerError::NotAllowed(format!("unknown subscription type {}", c.sub_type))
            })?;
            if c.subscription.is_empty() {
                return Err(BrokerError::NotAllowed("empty subscription name".into()));
            }
            if name.partition_index().is_none() && self.service.partitions(&name, false)? > 0 {
                return Err(BrokerError::NotAllowed(format!(
                    "{name} is partitioned: subscribe to its partitions"
                )));
            }
            let topic = self.service.topic(&name, c.force_topic_creation())?;
            let sub = if c.durable() {
                let earliest =
                    c.initial_position() == pb::command_subscribe::InitialPosition::Earliest;
                topic.durable_subscription(
                    &c.subscription,
                    earliest,
                    self.service.config.allow_auto_subscription_creation,
                )?
            } else {
                let start = reader_start(&topic, c.start_message_id.as_ref());
                topic.reader_subscription(&c.subscription, start)
            };
            let consumer_name = c
                .consumer_name
                .clone()
                .unwrap_or_else(|| format!("consumer-{}", self.service.next_seq()));
            let consumer = Consumer::new(
                c.consumer_id,
                consumer_name,
                c.priority_level.unwrap_or(0),
                sub_type,
                self.peer.clone(),
                Arc::clone(&self.sink) as Arc<dyn ConsumerSink>,
            );
            if let Some(schema) = &c.schema {
                self.service.add_schema(&topic, schema_info(schema))?;
            }
            let key_shared = c.key_shared_meta.as_ref().map(key_shared_meta);
            if let Err(e) = sub.add_consumer(Arc::clone(&consumer), key_shared) {
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
        })();
        match result {
            Ok(slot) => {
                self.consumers.insert(c.consumer_id, slot);
                self.send(&commands::success(c.request_id));
            }
            Err(e) => self.error(c.request_id, &e),
        }
    }

    fn ack(&self, a: &pb::CommandAck) {
        let Some(c) = self.consumers.get(&a.consumer_id) else {
            return;
        };
        let cumulative = a.ack_type == pb::command_ack::AckType::Cumulative as i32;
        let result = if cumulative {
            if c.sub.sub_type().is_some_and(SubType::is_multi) || a.message_id.len() != 1 {
                Ok(()) // Java ignores these
            } else {
                c.sub
                    .ack_cumulative(&c.consumer, position(&a.message_id[0]))
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

    fn unsubscribe(&mut self, u: &pb::CommandUnsubscribe) {
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
        match slot.topic.remove_subscription(&slot.sub.name) {
            Ok(()) => self.send(&commands::success(u.request_id)),
            Err(e) => self.error(u.request_id, &e),
        }
    }

    fn seek(&mut self, s: &pb::CommandSeek) {
        let Some(slot) = self.consumers.get(&s.consumer_id) else {
            self.error(
                s.request_id,
                &BrokerError::NotAllowed("consumer not found".into()),
            );
            return;
        };
        let sub = Arc::clone(&slot.sub);
        // As Pulsar: every consumer of the subscription is disconnected first (they reconnect
        // and send fresh FLOW permits), then the cursor moves, then SUCCESS.
        let result = match (&s.message_id, s.message_publish_time) {
            (Some(id), _) => {
                let p = position(id);
                let target = if p.ledger_id < 0 {
                    slot.topic.ledger.first_position().next()
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
            Ok(()) => self.send(&commands::success(s.request_id)),
            Err(e) => self.error(s.request_id, &e),
        }
    }

    fn last_message_id(&self, g: &pb::CommandGetLastMessageId) {
        let Some(slot) = self.consumers.get(&g.consumer_id) else {
            self.error(
                g.request_id,
                &BrokerError::NotAllowed("consumer not found".into()),
            );
            return;
        };
        match slot.topic.last_message_id() {
            Ok((p, batch_index)) => {
                let id = pb::MessageIdData {
                    partition: Some(slot.topic.partition),
                    batch_index: Some(batch_index),
                    ..commands::message_id(p.ledger_id as u64, p.entry_id as u64)
                };
                let md = slot.sub.cursor.mark_delete_position();
                let md = commands::message_id(md.ledger_id as u64, md.entry_id as u64);
                self.send(&commands::get_last_message_id_response(
                    g.request_id,
                    id,
                    Some(md),
                ));
            }
            Err(e) => self.error(g.request_id, &e),
        }
    }

    fn consumer_stats(&self, c: &pb::CommandConsumerStats) {
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

    fn topics_of_namespace(&self, g: &pb::CommandGetTopicsOfNamespace) {
        let role = self.role.as_ref().ok().and_then(Option::as_deref);
        if let Err(msg) = self.ctx.authz.check_namespace(role, &g.namespace) {
            let code = Wire::AuthorizationError;
            self.send(&commands::error(g.request_id, code, msg));
            return;
        }
        let mut topics: Vec<String> = self
            .service
            .topics_of_namespace(&g.namespace)
            .iter()
            .map(ToString::to_string)
            .collect();
        for (t, n) in self.service.partitioned_topics(&g.namespace) {
            for i in 0..n {
                let p = t.partition(i).to_string();
                if !topics.contains(&p) {
                    topics.push(p);
                }
            }
        }
        topics.sort();
        self.send(&commands::get_topics_of_namespace_response(
            g.request_id,
            topics,
        ));
    }

    fn get_schema(&self, g: &pb::CommandGetSchema) {
        let topic = TopicName::parse(&g.topic).and_then(|t| self.service.topic(&t, false));
        let reply = match topic {
            Ok(topic) => {
                let schemas = topic.schemas();
                let wanted = match &g.schema_version {
                    Some(v) if v.len() == 8 => {
                        usize::try_from(u64::from_be_bytes(v[..8].try_into().unwrap_or([0; 8])))
                            .ok()
                    }
                    _ => schemas.len().checked_sub(1),
                };
                match wanted.and_then(|i| schemas.get(i).map(|s| (i, s))) {
                    Some((i, s)) => commands::get_schema_response(
                        g.request_id,
                        wire_schema(s),
                        version_bytes(i as u64),
                    ),
                    None => commands::get_schema_response_error(
                        g.request_id,
                        Wire::TopicNotFound,
                        "schema not found",
                    ),
                }
            }
            Err(e) => {
                commands::get_schema_response_error(g.request_id, wire_code(&e), e.to_string())
            }
        };
        self.send(&reply);
    }

    fn get_or_create_schema(&self, g: pb::CommandGetOrCreateSchema) {
        let result = TopicName::parse(&g.topic)
            .and_then(|t| self.service.topic(&t, true))
            .and_then(|topic| self.service.add_schema(&topic, schema_info(&g.schema)));
        let reply = match result {
            Ok(v) => commands::get_or_create_schema_response(g.request_id, version_bytes(v)),
            Err(e) => commands::get_or_create_schema_response_error(
                g.request_id,
                wire_code(&e),
                e.to_string(),
            ),
        };
        self.send(&reply);
    }
}

/// Detaches a consumer; a reader's subscription goes away with its last consumer.
fn detach_consumer(slot: &ConsumerSlot) {
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
fn key_shared_meta(m: &pb::KeySharedMeta) -> KeySharedMeta {
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

fn version_bytes(v: u64) -> Bytes {
    Bytes::copy_from_slice(&v.to_be_bytes())
}

fn schema_info(s: &pb::Schema) -> SchemaInfo {
    SchemaInfo {
        schema_type: s.r#type,
        name: s.name.clone(),
        data: s.schema_data.to_vec(),
        properties: s
            .properties
            .iter()
            .map(|kv| (kv.key.clone(), kv.value.clone()))
            .collect(),
    }
}

fn wire_schema(s: &SchemaInfo) -> pb::Schema {
    pb::Schema {
        name: s.name.clone(),
        schema_data: Bytes::from(s.data.clone()),
        r#type: s.schema_type,
        properties: s
            .properties
            .iter()
            .map(|(k, v)| pb::KeyValue {
                key: k.clone(),
                value: v.clone(),
            })
            .collect(),
    }
}

/// Starts the task that answers one producer's SENDs in order.
/// SEND_RECEIPT for a stored entry, or SEND_ERROR.
fn receipt_command(
    producer_id: u64,
    sequence_id: u64,
    highest_sequence_id: Option<u64>,
    outcome: Result<Position, (Wire, String)>,
) -> BaseCommand {
    match outcome {
        Ok(pos) => commands::send_receipt(
            producer_id,
            sequence_id,
            highest_sequence_id,
            pos.ledger_id as u64,
            pos.entry_id as u64,
        ),
        Err((code, msg)) => commands::send_error(producer_id, sequence_id, code, msg),
    }
}

/// Starts the task that answers one producer's SENDs in order once they are durable.
fn spawn_receipts(
    producer_id: u64,
    tx: mpsc::UnboundedSender<Outbound>,
    inflight: Arc<Inflight>,
    queued: Arc<AtomicUsize>,
    ctx: Arc<ServerContext>,
) -> mpsc::UnboundedSender<PendingSend> {
    let (rtx, mut rrx) = mpsc::unbounded_channel::<PendingSend>();
    tokio::spawn(async move {
        while let Some(p) = rrx.recv().await {
            let outcome = match p.result {
                Ok((pos, None)) => Ok(pos),
                Ok((pos, Some(done))) => match done.await {
                    Ok(Ok(())) => Ok(pos),
                    Ok(Err(e)) => Err((Wire::PersistenceError, e.to_string())),
                    Err(_) => Err((Wire::PersistenceError, "storage closed".to_owned())),
                },
                Err(e) => Err(e),
            };
            if let Some(t) = p.ticket {
                t.persisted(outcome.is_ok());
            }
            let cmd = receipt_command(producer_id, p.sequence_id, p.highest_sequence_id, outcome);
            let _ = tx.send(frame(&cmd));
            // Release (both): the receipt is queued before the counters say so; pairs with the
            // connection's Acquire loads (backpressure check, direct-receipt check).
            queued.fetch_sub(1, Ordering::Release);
            ctx.publish_buffer.release(p.bytes);
            inflight.count.fetch_sub(1, Ordering::Release);
            inflight.drained.notify_one();
        }
    });
    rtx
}

/// RFC 3339 rendering of a `SystemTime` without a date library.
mod chrono_like {
    use std::time::{SystemTime, UNIX_EPOCH};

    pub struct Rfc3339(pub String);

    impl From<SystemTime> for Rfc3339 {
        fn from(t: SystemTime) -> Self {
            let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
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
