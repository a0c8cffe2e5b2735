//! One client connection: reads frames, runs commands against the broker, and queues replies
//! and messages for the writer task.
//!
//! Publish backpressure (seed 001): with `maxPendingPublishRequestsPerConnection` SENDs in
//! flight, the connection stops reading its socket and resumes at half. Receipts go out in order
//! per producer because one task per producer awaits the durable completions in append order.
//!
//! Commands are handled by one module per family: [`handshake`] (CONNECT, and the refusal of
//! an unauthenticated connection's requests), [`refresh`] (credential refresh), [`lookup`]
//! (LOOKUP, PARTITIONED_METADATA, GET_TOPICS_OF_NAMESPACE) with [`cluster`] (their answers in a
//! cluster, and the ownership check), [`producer`] (PRODUCER, SEND,
//! CLOSE_PRODUCER), [`consumer`] (SUBSCRIBE and everything on a consumer) and [`schema`].

mod cluster;
mod consumer;
mod delivery_delay;
mod handshake;
mod lookup;
mod non_persistent;
mod offload;
mod producer;
mod read_buffer;
mod receipts;
mod refresh;
mod replicated_send;
mod schema;
mod topic_list;
mod transaction;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use pulsar_rs_broker::{BrokerError, BrokerService};
use pulsar_rs_proto::pb::base_command::Type;
use pulsar_rs_proto::{commands, BaseCommand, Frame};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio_rustls::TlsAcceptor;

use self::consumer::{detach_consumer, ConsumerSlot, Sink};
use self::producer::Producer;
use crate::auth::authz::Action;
use crate::context::ServerContext;
use crate::error::{wire_code, ServerError};
use crate::writer::{self, Outbound};

/// Encodes a simple command into a frame.
fn frame(cmd: &BaseCommand) -> Outbound {
    let mut out = BytesMut::with_capacity(64);
    pulsar_rs_proto::encode_simple(cmd, &mut out);
    Outbound::Frame(out.freeze())
}

/// Largest frame accepted before CONNECT (a CONNECT with its authentication data).
const PRE_CONNECT_MAX_FRAME: usize = 64 * 1024;

/// Shared between the reader and the receipt queues: SENDs accepted and not yet answered.
struct Inflight {
    count: AtomicUsize,
    drained: Notify,
}

struct Connection {
    ctx: Arc<ServerContext>,
    service: Arc<BrokerService>,
    peer: String,
    tx: crate::outbound::OutboundTx,
    /// Where offloaded storage work sends its results back (see [`offload`]).
    completions: offload::Completions,
    sink: Arc<Sink>,
    producers: HashMap<u64, Producer>,
    /// Producers and consumers of non-persistent topics.
    np: non_persistent::NpState,
    consumers: HashMap<u64, ConsumerSlot>,
    inflight: Arc<Inflight>,
    connected: bool,
    /// CONNECT's `client_version`, for the admin stats of this connection's producers and
    /// consumers.
    client_version: String,
    /// Set by a SEND that exhausted a publish rate limit: stop reading until then.
    throttled_until: Option<Instant>,
    /// Producers closed on this connection, with when (late SENDs for them are dropped).
    /// Pruned on the keepalive tick once older than the keepalive interval.
    closed_producers: HashMap<u64, Instant>,
    /// Producer ids whose creation runs on the blocking pool; `true` once a CLOSE_PRODUCER
    /// asked for it to be undone when it completes.
    creating_producers: HashMap<u64, bool>,
    /// Consumer ids whose SUBSCRIBE runs on the blocking pool; `true` once cancelled by a
    /// CLOSE_CONSUMER.
    creating_consumers: HashMap<u64, bool>,
    last_seen: Instant,
    ping_outstanding: bool,
    /// The authenticated role (`None`: authentication off and no anonymous role), or why
    /// CONNECT failed authentication: then the first request is refused (see `auth`).
    role: Result<Option<String>, String>,
    /// Credentials and their refresh (AUTH_CHALLENGE), see [`refresh`].
    auth: refresh::AuthState,
    /// Protocol version agreed at CONNECT.
    protocol_version: i32,
    /// CONNECT advertised `supports_repl_dedup_by_lid_and_eid`: a replicator producer on this
    /// connection is deduplicated by source position ([`replicated_send`]).
    repl_dedup_by_source_position: bool,
    /// Topic-list watchers by id, each a task of its own (see [`topic_list`]); aborted on
    /// WATCH_TOPIC_LIST_CLOSE and when the connection ends.
    watchers: HashMap<u64, tokio::task::AbortHandle>,
}

/// Serves one accepted socket until it closes or the broker shuts down; with `tls` (a
/// `pulsar+ssl://` listener) after the TLS handshake, the client certificate's CN then being the
/// connection's `tls` credential.
pub async fn serve(
    socket: TcpStream,
    peer: SocketAddr,
    tls: Option<TlsAcceptor>,
    ctx: Arc<ServerContext>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let _ = socket.set_nodelay(true);
    let peer = peer.to_string();
    match tls {
        None => {
            let (rd, wr) = socket.into_split();
            serve_io(rd, wr, peer, None, ctx, shutdown).await;
        }
        Some(acceptor) => {
            let handshaken =
                crate::tls::handshake(&acceptor, socket, &peer, "pulsar+ssl", &mut shutdown);
            let Some(stream) = handshaken.await else {
                return;
            };
            let cn = crate::tls::peer_common_name(stream.get_ref().1);
            let (rd, wr) = tokio::io::split(stream);
            serve_io(rd, wr, peer, cn, ctx, shutdown).await;
        }
    }
}

/// Serves one connection given as its read and write halves (plain TCP or TLS).
async fn serve_io<R, W>(
    mut rd: R,
    wr: W,
    peer: String,
    peer_cn: Option<String>,
    ctx: Arc<ServerContext>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let queue = Arc::new(crate::queue::Queue::new());
    let backlog = Arc::new(crate::writer::ControlBacklog::default());
    let tx = crate::outbound::OutboundTx::new(Arc::clone(&queue), Arc::clone(&backlog));
    // However this task ends (a panic included), the writer is told to finish.
    let _finish_writer = FinishWriter(Arc::clone(&queue));
    let writability = Arc::new(writer::Writability::default());
    // Receipts reach the writer from the journal flusher's completion pass: one wake-up per
    // pass (see `wake_batch`).
    let writer = tokio::spawn(pulsar_rs_ledger::wake_batch::Batched::new(writer::run(
        queue,
        wr,
        Arc::clone(&writability),
        Arc::clone(&backlog),
    )));
    let completions: offload::Completions = Arc::default();
    // Finished work taken from `completions`, applied one by one.
    let mut finished = std::collections::VecDeque::new();
    let mut conn = Connection {
        completions: Arc::clone(&completions),
        service: Arc::clone(&ctx.service),
        ctx,
        peer,
        sink: Arc::new(Sink {
            tx: tx.clone(),
            writability,
            held: parking_lot::Mutex::new(HashMap::new()),
        }),
        tx,
        producers: HashMap::new(),
        np: non_persistent::NpState::default(),
        consumers: HashMap::new(),
        inflight: Arc::new(Inflight {
            count: AtomicUsize::new(0),
            drained: Notify::new(),
        }),
        connected: false,
        client_version: String::new(),
        throttled_until: None,
        closed_producers: HashMap::new(),
        creating_producers: HashMap::new(),
        creating_consumers: HashMap::new(),
        last_seen: pulsar_rs_clock::monotonic(),
        ping_outstanding: false,
        role: Ok(None),
        auth: refresh::AuthState::new(peer_cn),
        protocol_version: 0,
        repl_dedup_by_source_position: false,
        watchers: HashMap::new(),
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
    let auth_on = conn.ctx.auth.enabled;
    let mut refresh = tokio::time::interval(conn.ctx.auth.refresh_check);
    refresh.tick().await;
    let mut rb = read_buffer::ReadBuffer::new();
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
        // Acquire: pairs with the receipt queue's Release decrement, so its writes are visible.
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
        // Backpressure on what the client does not read: a connection whose receipts and
        // responses pile up unread is not read either (see `crate::outbound`).
        if backlog.queued() > crate::writer::CONTROL_HIGH_MARK {
            conn.ctx
                .throttled_connections
                .fetch_add(1, Ordering::Relaxed);
            tokio::select! {
                () = backlog.wait_drained() => {}
                _ = shutdown.changed() => break,
            }
            conn.ctx
                .throttled_connections
                .fetch_sub(1, Ordering::Relaxed);
        }
        rb.reserve();
        tokio::select! {
            r = rd.read_buf(&mut rb.buf) => match r {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    rb.read(n);
                    conn.last_seen = pulsar_rs_clock::monotonic();
                    conn.ping_outstanding = false;
                }
            },
            true = completions.take_all(&mut finished) => {
                while let Some(done) = finished.pop_front() {
                    done.apply(&mut conn);
                }
                continue;
            }
            _ = ticker.tick() => {
                rb.idle();
                conn.closed_producers.retain(|_, at| at.elapsed() < keepalive);
                if conn.ping_outstanding && conn.last_seen.elapsed() > keepalive * 2 {
                    tracing::info!(peer = %conn.peer, "closing connection: keepalive timed out");
                    break;
                }
                if conn.connected {
                    conn.ping_outstanding = true;
                    conn.send(&commands::ping());
                }
                // After the ping: the writer releases its buffers once it has written it.
                let _ = conn.tx.send(Outbound::Trim);
                continue;
            }
            _ = refresh.tick(), if auth_on => {
                if let Err(reason) = conn.refresh_check() {
                    tracing::info!(peer = %conn.peer, %reason, "closing connection: credentials");
                    break;
                }
                continue;
            }
            _ = shutdown.changed() => break,
        }
        loop {
            // Publish rate limiting: a throttled connection is not read (nor its buffered
            // frames handled) until the limiter's debt is paid; SENDs are never refused.
            if let Some(until) = conn.throttled_until.take() {
                let wait = until.saturating_duration_since(pulsar_rs_clock::monotonic());
                if !wait.is_zero() {
                    conn.ctx
                        .throttled_connections
                        .fetch_add(1, Ordering::Relaxed);
                    conn.ctx
                        .publish_throttle_events
                        .fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(wait).await;
                    conn.ctx
                        .throttled_connections
                        .fetch_sub(1, Ordering::Relaxed);
                }
            }
            // Before CONNECT only a small frame is accepted: a peer that is not (yet) a client
            // must not make the broker reserve a maximum-size frame buffer.
            let limit = if conn.connected {
                max_frame
            } else {
                PRE_CONNECT_MAX_FRAME
            };
            match pulsar_rs_proto::decode_frame(&mut rb.buf, limit) {
                Ok(None) => break,
                Ok(Some(f)) => {
                    if let Err(e) = conn.handle(f) {
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
    // Work finished meanwhile is applied (and then cleaned up with the rest); work still
    // running finds the queue closed and undoes itself.
    for done in completions.close() {
        done.apply(&mut conn);
    }
    conn.cleanup();
    let _ = conn.tx.send(Outbound::Close);
    drop(conn);
    let _ = writer.await;
}

/// Queues `Outbound::Close` when dropped: the writer ends after what was queued before it.
struct FinishWriter(Arc<crate::queue::Queue<Outbound>>);

impl Drop for FinishWriter {
    fn drop(&mut self) {
        // Refused once the writer is gone: nothing left to tell.
        let _ = self.0.push(Outbound::Close);
    }
}

impl Connection {
    fn send(&self, cmd: &BaseCommand) {
        let _ = self.tx.send(frame(cmd));
    }

    fn cleanup(&mut self) {
        for (_, w) in self.watchers.drain() {
            w.abort();
        }
        self.np.cleanup(&self.ctx);
        for (_, p) in self.producers.drain() {
            p.topic.remove_producer(&p.name, p.handle);
            self.ctx.unregister_producer(p.handle);
        }
        for (_, c) in self.consumers.drain() {
            detach_consumer(&c);
        }
    }

    fn handle(&mut self, f: Frame) -> Result<(), ServerError> {
        let (cmd, payload) = f.into_parts();
        let ty = Type::try_from(cmd.r#type)
            .map_err(|_| ServerError::BadRequest(format!("unknown command type {}", cmd.r#type)))?;
        if !self.connected && ty != Type::Connect {
            return Err(ServerError::BadRequest(format!("{ty:?} before CONNECT")));
        }
        if let Err(reason) = &self.role {
            if !matches!(ty, Type::Connect | Type::Ping | Type::Pong) {
                if let Some(reply) = handshake::refusal(ty, &cmd, reason) {
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
        if let Some(r) = self.non_persistent(ty, &cmd, payload.as_ref()) {
            return r;
        }
        match ty {
            Type::Connect => self.connect(&*body!(connect)),
            Type::Ping => {
                self.send(&commands::pong());
                Ok(())
            }
            Type::Pong => Ok(()),
            Type::AuthResponse => {
                let r = body!(auth_response);
                self.auth
                    .respond(&self.ctx.auth, &r)
                    .map_err(ServerError::Authentication)
            }
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
                self.close_producer(&*body!(close_producer));
                Ok(())
            }
            Type::Subscribe => {
                self.subscribe(*body!(subscribe));
                Ok(())
            }
            Type::Flow => {
                self.flow(&body!(flow));
                Ok(())
            }
            Type::Ack => {
                self.ack(&body!(ack));
                Ok(())
            }
            Type::RedeliverUnacknowledgedMessages => {
                self.redeliver(&*body!(redeliver_unacknowledged_messages));
                Ok(())
            }
            Type::CloseConsumer => {
                self.close_consumer(&*body!(close_consumer));
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
            Type::WatchTopicList => {
                self.watch_topic_list(&*body!(watch_topic_list));
                Ok(())
            }
            Type::WatchTopicListClose => {
                self.close_topic_list_watcher(&*body!(watch_topic_list_close));
                Ok(())
            }
            Type::TcClientConnectRequest => {
                self.tc_client_connect(&*body!(tc_client_connect_request));
                Ok(())
            }
            Type::NewTxn => {
                self.new_txn(&*body!(new_txn));
                Ok(())
            }
            Type::AddPartitionToTxn => {
                self.add_partition_to_txn(&*body!(add_partition_to_txn));
                Ok(())
            }
            Type::AddSubscriptionToTxn => {
                self.add_subscription_to_txn(&*body!(add_subscription_to_txn));
                Ok(())
            }
            Type::EndTxn => {
                self.end_txn(&*body!(end_txn));
                Ok(())
            }
            Type::EndTxnOnPartition => {
                self.end_txn_on_partition(&*body!(end_txn_on_partition));
                Ok(())
            }
            Type::EndTxnOnSubscription => {
                self.end_txn_on_subscription(&*body!(end_txn_on_subscription));
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

    /// `Some(namespace)` when `topic` parses and its namespace does not exist: Pulsar refuses
    /// such topics (the name's own errors are left to the command).
    fn missing_namespace(&self, topic: &str) -> Option<String> {
        let ns = pulsar_rs_broker::TopicName::parse(topic)
            .ok()?
            .namespace_name();
        (!self.service.policies.namespace_exists(&ns)).then_some(ns)
    }

    /// The namespace of `topic` when its tenant does not exist.
    fn missing_tenant(&self, topic: &str) -> Option<String> {
        let t = pulsar_rs_broker::TopicName::parse(topic).ok()?;
        self.ctx
            .resources
            .tenant(&t.tenant)
            .is_none()
            .then(|| t.namespace_name())
    }

    /// Refuses a PRODUCER or SUBSCRIBE in a namespace that does not exist (TopicNotFound, as
    /// Pulsar); `true` when refused.
    fn refuse_missing_namespace(&self, request_id: u64, topic: &str) -> bool {
        let Some(ns) = self.missing_namespace(topic) else {
            return false;
        };
        self.send(&commands::error(
            request_id,
            pulsar_rs_proto::ServerError::TopicNotFound,
            format!("Namespace {ns} does not exist"),
        ));
        true
    }

    /// Authorization of `action` on `topic` for this connection's role.
    fn authorized(&self, topic: &str, action: Action) -> Result<(), String> {
        let role = self.role.as_ref().ok().and_then(Option::as_deref);
        self.ctx.authz.check_name(role, topic, action)
    }

    /// Whether this connection's role may subscribe to `subscription` on `topic`: the consume
    /// permission plus the namespace's subscription roles and `subscription_auth_mode`.
    fn authorized_subscribe(&self, topic: &str, subscription: &str) -> Result<(), String> {
        let role = self.role.as_ref().ok().and_then(Option::as_deref);
        self.ctx
            .authz
            .check_subscribe_name(role, topic, subscription)
    }

    /// Replies to a request with the wire error for a broker error.
    fn error(&self, request_id: u64, e: &BrokerError) {
        self.send(&commands::error(request_id, wire_code(e), e.to_string()));
    }
}
