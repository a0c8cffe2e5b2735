//! The state every connection, admin call and background task of one server shares
//! ([`ServerContext`]), and the broker-wide publish buffer it holds ([`PublishBuffer`]). Built
//! once at start ([`crate::server`]); the rooms above read it.

use std::collections::HashMap;
use std::sync::atomic::AtomicI64;
use std::sync::Arc;

use parking_lot::Mutex;
use pulsar_rs_broker::BrokerService;

use crate::{auth, cluster, lookup, outbound, resources, writer};

/// The broker-wide publish buffer: connections stop reading while it is over its limit and
/// resume once it is back under half (seed 001).
pub struct PublishBuffer {
    /// Bytes held; added by connections, removed by receipt queues. Acquire/Release pairs make
    /// a paused reader see the decrement that should resume it.
    pub bytes: std::sync::atomic::AtomicUsize,
    /// Limit in bytes; 0 = off. Immutable.
    pub limit: usize,
    /// Woken when the buffer falls under half the limit.
    pub drained: tokio::sync::Notify,
    /// Times a connection paused on this limit (metric).
    pub pauses: std::sync::atomic::AtomicU64,
}

impl PublishBuffer {
    pub(crate) fn new(limit_mb: i64) -> Self {
        PublishBuffer {
            bytes: std::sync::atomic::AtomicUsize::new(0),
            limit: usize::try_from(limit_mb.max(0))
                .unwrap_or(0)
                .saturating_mul(1 << 20),
            drained: tokio::sync::Notify::new(),
            pauses: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Releases `n` bytes; wakes paused readers when under half the limit.
    pub(crate) fn release(&self, n: usize) {
        let before = self
            .bytes
            .fetch_sub(n, std::sync::atomic::Ordering::Release);
        if self.limit > 0 && before.saturating_sub(n) <= self.limit / 2 && before > self.limit / 2 {
            self.drained.notify_waiters();
        }
    }

    /// Waits while the buffer is over its limit, until it is back under half.
    pub(crate) async fn wait_for_room(&self) {
        use std::sync::atomic::Ordering;
        if self.limit == 0 || self.bytes.load(Ordering::Acquire) <= self.limit {
            return;
        }
        self.pauses.fetch_add(1, Ordering::Relaxed);
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            // Register before re-checking, so a release in between is not missed.
            drained.as_mut().enable();
            if self.bytes.load(Ordering::Acquire) <= self.limit / 2 {
                return;
            }
            drained.await;
        }
    }
}

/// State shared by every connection of one server.
pub struct ServerContext {
    /// The broker.
    pub service: Arc<BrokerService>,
    /// `pulsar://host:port` given out in LOOKUP answers; immutable.
    pub service_url: String,
    /// `pulsar+ssl://host:port` given out in LOOKUP answers when TLS is on; immutable.
    pub service_url_tls: Option<String>,
    /// `http://host:port` of the admin API (REST lookup answers); immutable.
    pub admin_url: String,
    /// `https://host:port` of the admin API when TLS is on; immutable.
    pub admin_url_tls: Option<String>,
    /// What lookups answer, by listener name (`advertisedListeners`); immutable.
    pub lookups: lookup::Lookups,
    /// Authentication (`authenticationEnabled`, token provider); immutable.
    pub auth: auth::Authenticator,
    /// Authorization (`authorizationEnabled`, superusers, granted permissions).
    pub authz: auth::authz::Authorizer,
    /// Clusters and tenants (shared with the authorizer).
    pub resources: Arc<resources::Resources>,
    /// Connections currently paused for publish backpressure (metric).
    pub throttled_connections: AtomicI64,
    /// Bytes of SENDs accepted and not yet answered, broker-wide (`maxMessagePublishBufferSizeInMB`).
    pub publish_buffer: PublishBuffer,
    /// Times a connection was paused by a publish rate limit (metric).
    pub publish_throttle_events: std::sync::atomic::AtomicU64,
    /// Broker-wide publish limit (`brokerPublisherThrottlingMax{Message,Byte}Rate`); immutable.
    pub broker_publish_limiter: Option<pulsar_rs_broker::rate::RateLimiter>,
    /// This process's CPU usage, for load reports (its own lock).
    pub cpu: cluster::balancer::CpuSampler,
    /// What the load balancer did here (metrics; atomics).
    pub load_balancer: cluster::balancer::LoadBalancerCounters,
    /// This broker as a client of its peers (`brokerClient*`: TLS, credentials, the pooled
    /// admin client); immutable.
    pub broker_client: Arc<cluster::peers::client::BrokerClient>,
    /// The memory topic lists may take at once (PIP-442; its own counters and lock inside).
    pub topic_list_limiter: crate::topic_list_limit::TopicListLimiter,
    /// The topic tables' committer (`icebergCatalogUri` set; its own thread, queue and locks
    /// inside); immutable.
    pub tables: Option<Arc<pulsar_rs_table::TableCommitter>>,
    /// The geo-replicators running here (their own lock inside).
    pub replicators: crate::replication::registry::Replicators,
    /// This broker as a member of a cluster (`metadataStoreUrl` on ZooKeeper); set once at
    /// start, before the listeners run.
    pub cluster: std::sync::OnceLock<Arc<pulsar_rs_cluster::ClusterMember>>,
    /// Producer handle → (its connection's queue, its client-side id), to fence producers. Set at
    /// start (empty); used only through the methods below.
    pub(crate) producers: Mutex<HashMap<u64, (outbound::OutboundTx, u64)>>,
}

impl ServerContext {
    /// Pulsar's broker id, `advertisedAddress:webServicePort` (the admin URL without its
    /// scheme): this broker's name in a cluster's registry, and on its own.
    #[must_use]
    pub fn broker_id(&self) -> String {
        self.admin_url.trim_start_matches("http://").to_owned()
    }

    pub(crate) fn register_producer(
        &self,
        handle: u64,
        tx: outbound::OutboundTx,
        producer_id: u64,
    ) {
        self.producers.lock().insert(handle, (tx, producer_id));
    }

    pub(crate) fn is_registered(&self, handle: u64) -> bool {
        self.producers.lock().contains_key(&handle)
    }

    pub(crate) fn unregister_producer(&self, handle: u64) {
        self.producers.lock().remove(&handle);
    }

    /// Tells a fenced producer's client that it was closed by the broker.
    pub(crate) fn fence_producer(&self, handle: u64) {
        if let Some((tx, id)) = self.producers.lock().remove(&handle) {
            let mut out = bytes::BytesMut::new();
            pulsar_rs_proto::encode_simple(
                &pulsar_rs_proto::commands::close_producer(id),
                &mut out,
            );
            let _ = tx.send(writer::Outbound::Frame(out.freeze()));
        }
    }
}
