//! The network side of pulsar_rs: a Tokio server speaking Pulsar's binary protocol, plus the
//! admin REST API and Prometheus metrics on a second port.
//!
//! [`Server::start`] is the one entry point used by the binary, the Python bindings and tests:
//! it binds both ports (0 = ephemeral), spawns the accept loops on the current runtime and
//! returns a handle with the bound addresses and a clean shutdown.
//!
//! Security (all off by default): authentication and permissions ([`auth`]), the admin guard
//! (`admin::guard`) and TLS ([`tls`]) on listeners beside the plain ones, all served by one
//! accept loop ([`listen`]), enabled by Pulsar's `broker.conf` keys.
#![recursion_limit = "256"] // serde_json::json! of the admin stats documents

pub mod admin;
pub mod auth;
pub mod bookkeeper;
pub mod broker_load;
pub mod bundle_split;
pub mod cluster;
pub mod cluster_setup;
pub mod cluster_sync;
pub mod connection;
pub mod console;
pub mod error;
pub mod http;
pub mod listen;
pub mod load_shedding;
pub mod lookup;
pub mod metrics;
pub mod namespace_bundles;
pub mod outbound;
pub mod peers;
pub mod policies_document;
pub mod resources;
pub mod standalone_defaults;
pub mod tls;
pub mod writer;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicI64;
use std::sync::Arc;

use parking_lot::Mutex;
use pulsar_rs_broker::{BrokerConfig, BrokerService};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

pub use error::ServerError;

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
    fn new(limit_mb: i64) -> Self {
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
    /// Rates and backlog of the last minutes for the web console; filled by its sampler task.
    pub console_history: console::History,
    /// This process's CPU usage, for load reports (its own lock).
    pub cpu: broker_load::CpuSampler,
    /// What the load balancer did here (metrics; atomics).
    pub load_balancer: load_shedding::LoadBalancerCounters,
    /// This broker as a client of its peers (`brokerClient*`: TLS, credentials, the pooled
    /// admin client); immutable.
    pub broker_client: Arc<peers::client::BrokerClient>,
    /// This broker as a member of a cluster (`metadataStoreUrl` on ZooKeeper); set once at
    /// start, before the listeners run.
    pub cluster: std::sync::OnceLock<Arc<pulsar_rs_cluster::ClusterMember>>,
    /// Producer handle → (its connection's queue, its client-side id), to fence producers.
    producers: Mutex<HashMap<u64, (outbound::OutboundTx, u64)>>,
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

/// A running server.
pub struct Server {
    /// Shared state.
    pub ctx: Arc<ServerContext>,
    /// Where the binary protocol listens.
    pub service_addr: SocketAddr,
    /// Where the admin REST API listens.
    pub admin_addr: SocketAddr,
    /// Where `pulsar+ssl://` listens (`brokerServicePortTls`).
    pub service_tls_addr: Option<SocketAddr>,
    /// Where HTTPS admin listens (`webServicePortTls`).
    pub admin_tls_addr: Option<SocketAddr>,
    /// `https://host:port` of the admin API when TLS is on.
    admin_url_tls: Option<String>,
    /// The data directory.
    pub data_dir: PathBuf,
    shutdown: watch::Sender<bool>,
    tasks: JoinSet<()>,
}

/// The runtime a broker serves its connections on: `numIOThreads` workers
/// ([`BrokerConfig::io_threads`]), named as Pulsar's Netty IO threads. The binary and each
/// in-process Python broker build theirs here.
///
/// # Errors
/// The threads could not be started.
pub fn io_runtime(config: &BrokerConfig) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.io_threads())
        .thread_name("pulsar-io")
        .enable_all()
        .build()
}

/// What a server runs on besides its settings and data directory: the seams tests inject.
/// `Seams::default()` is the real file system and the system clock.
#[derive(Default)]
pub struct Seams {
    /// The file system under the data directory (`None`: the real one).
    pub fs: Option<Arc<dyn pulsar_rs_ledger::vfs::Vfs>>,
    /// The broker's clock (`None`: the system clock).
    pub clock: Option<Arc<dyn pulsar_rs_clock::Clock>>,
}

impl Server {
    /// Opens the data directory, binds the ports and starts serving on the current runtime.
    ///
    /// # Errors
    /// Invalid settings, storage failures, or ports that cannot be bound.
    pub async fn start(config: BrokerConfig, data_dir: PathBuf) -> Result<Server, ServerError> {
        Self::start_with(config, data_dir, Seams::default()).await
    }

    /// [`Server::start`] on given seams: the file system (tests inject slow or failing I/O)
    /// and the broker's clock (tests advance it instead of sleeping).
    ///
    /// # Errors
    /// As [`Server::start`].
    pub async fn start_with(
        config: BrokerConfig,
        data_dir: PathBuf,
        seams: Seams,
    ) -> Result<Server, ServerError> {
        config.validate()?;
        let broker_client = peers::client::BrokerClient::for_broker(&config).await?;
        let Seams { fs, clock } = seams;
        let clock = clock.unwrap_or_else(|| Arc::new(pulsar_rs_clock::SystemClock));
        let bind = config.bind_address.clone();
        let service_listener = TcpListener::bind((bind.as_str(), config.broker_service_port))
            .await
            .map_err(|e| {
                ServerError::io(format!("binding {bind}:{}", config.broker_service_port), e)
            })?;
        let admin_listener = TcpListener::bind((bind.as_str(), config.web_service_port))
            .await
            .map_err(|e| {
                ServerError::io(format!("binding {bind}:{}", config.web_service_port), e)
            })?;
        let service_addr = service_listener
            .local_addr()
            .map_err(|e| ServerError::io("reading bound address", e))?;
        let admin_addr = admin_listener
            .local_addr()
            .map_err(|e| ServerError::io("reading bound address", e))?;
        let host = config
            .advertised_address
            .clone()
            .unwrap_or_else(|| bind.clone());
        let service_url = format!("pulsar://{host}:{}", service_addr.port());
        let auth = auth::Authenticator::from_config(&config, Arc::clone(&clock))?;

        let acceptors =
            if config.broker_service_port_tls.is_some() || config.web_service_port_tls.is_some() {
                Some(tls::acceptors::acceptors(&config)?)
            } else {
                None
            };
        let bind_tls = |port: Option<u16>| {
            let bind = bind.clone();
            async move {
                match port {
                    Some(p) => TcpListener::bind((bind.as_str(), p))
                        .await
                        .map(Some)
                        .map_err(|e| ServerError::io(format!("binding {bind}:{p}"), e)),
                    None => Ok(None),
                }
            }
        };
        let service_tls_listener = bind_tls(config.broker_service_port_tls).await?;
        let admin_tls_listener = bind_tls(config.web_service_port_tls).await?;
        let addr_of = |l: &Option<TcpListener>| {
            l.as_ref()
                .map(TcpListener::local_addr)
                .transpose()
                .map_err(|e| ServerError::io("reading bound address", e))
        };
        let service_tls_addr = addr_of(&service_tls_listener)?;
        let admin_tls_addr = addr_of(&admin_tls_listener)?;
        let service_url_tls = service_tls_addr.map(|a| format!("pulsar+ssl://{host}:{}", a.port()));
        let admin_url_tls = admin_tls_addr.map(|a| format!("https://{host}:{}", a.port()));
        let dir = data_dir.clone();
        let service = tokio::task::spawn_blocking(move || match fs {
            Some(fs) => BrokerService::open_on(config, &dir, fs, clock),
            None => match bookkeeper::backing(&config)? {
                Some(backing) => BrokerService::open_on_backing(config, &dir, backing, clock),
                None => BrokerService::open_with_clock(config, &dir, clock),
            },
        })
        .await
        .map_err(|e| ServerError::BadRequest(format!("startup task failed: {e}")))??;
        #[allow(clippy::cast_precision_loss)]
        let broker_publish_limiter = pulsar_rs_broker::rate::RateLimiter::new(
            service
                .config
                .broker_publisher_throttling_max_message_rate
                .max(0) as f64,
            service
                .config
                .broker_publisher_throttling_max_byte_rate
                .max(0) as f64,
        );
        let urls = resources::BrokerUrls {
            web: format!("http://{host}:{}", admin_addr.port()),
            web_tls: admin_url_tls.clone(),
            service: service_url.clone(),
            service_tls: service_url_tls.clone(),
        };
        let svc = Arc::clone(&service);
        let opened = tokio::task::spawn_blocking(move || {
            let res = resources::Resources::open(svc.storage.meta())?;
            resources::bootstrap(&res, &svc, &urls)?;
            svc.open_coordinators()?;
            auth::authz::migrate_legacy_grants(&svc)?;
            Ok::<_, pulsar_rs_broker::BrokerError>(Arc::new(res))
        })
        .await
        .map_err(|e| ServerError::BadRequest(format!("startup task failed: {e}")))?;
        let resources = match opened {
            Ok(r) => r,
            Err(e) => {
                let _ = service.close();
                return Err(e.into());
            }
        };
        service.resume_transactions();
        let authz = auth::authz::Authorizer::new(
            &service.config,
            Arc::clone(&service),
            Arc::clone(&resources),
        );
        let publish_buffer =
            PublishBuffer::new(service.config.max_message_publish_buffer_size_in_mb);
        let listeners = service.config.listeners()?;
        let internal = service
            .config
            .internal_listener_name
            .as_deref()
            .and_then(|n| listeners.iter().position(|l| l.name == n))
            .unwrap_or(0);
        let lookups = lookup::Lookups {
            service_url: service_url.clone(),
            service_url_tls: service_url_tls.clone(),
            listeners,
            internal,
        };
        let ctx = Arc::new(ServerContext {
            broker_client,
            service,
            service_url,
            service_url_tls,
            admin_url: format!("http://{host}:{}", admin_addr.port()),
            admin_url_tls: admin_url_tls.clone(),
            lookups,
            auth,
            authz,
            resources,
            throttled_connections: AtomicI64::new(0),
            publish_buffer,
            publish_throttle_events: std::sync::atomic::AtomicU64::new(0),
            broker_publish_limiter,
            console_history: console::History::default(),
            cpu: broker_load::CpuSampler::default(),
            load_balancer: load_shedding::LoadBalancerCounters::default(),
            cluster: std::sync::OnceLock::new(),
            producers: Mutex::new(HashMap::new()),
        });
        let member_urls = pulsar_rs_cluster::BrokerUrls {
            service: ctx.service_url.clone(),
            service_tls: ctx.service_url_tls.clone(),
            web: ctx.admin_url.clone(),
            web_tls: admin_url_tls.clone(),
        };
        let config = Arc::clone(&ctx.service.config);
        let joined = match cluster::join(&ctx, &config, ctx.broker_id(), member_urls).await {
            Ok(Some(member)) => {
                let owner = Arc::clone(&member);
                ctx.service
                    .set_ownership_check(Box::new(move |t| owner.owns(&t.to_string())));
                let peers = peers::Peers::new(
                    Arc::clone(&member),
                    &ctx.service,
                    Arc::clone(&ctx.broker_client),
                );
                let _ = ctx.cluster.set(member);
                ctx.service.set_buffer_client(peers);
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        match joined {
            Ok(()) => {}
            Err(e) => {
                let service = Arc::clone(&ctx.service);
                let _ = tokio::task::spawn_blocking(move || service.close()).await;
                return Err(e);
            }
        }
        let (shutdown, rx) = watch::channel(false);
        let mut tasks = JoinSet::new();
        tasks.spawn(binary_listener(service_listener, None, &ctx, &rx));
        if let (Some(l), Some(a)) = (service_tls_listener, &acceptors) {
            let acceptor = Some(a.service.clone());
            tasks.spawn(binary_listener(l, acceptor, &ctx, &rx));
        }
        tasks.spawn(admin::serve(admin_listener, Arc::clone(&ctx), rx.clone()));
        if let (Some(l), Some(a)) = (admin_tls_listener, &acceptors) {
            let listener = tls::listener::TlsListener::new(l, a.admin.clone(), rx.clone())
                .map_err(|e| ServerError::io("reading bound address", e))?;
            tasks.spawn(admin::serve_tls(listener, Arc::clone(&ctx), rx.clone()));
        }
        tasks.spawn(console::history::sample_loop(Arc::clone(&ctx), rx.clone()));
        if ctx.cluster.get().is_some() {
            tasks.spawn(cluster_sync::follow(Arc::clone(&ctx), rx.clone()));
            tasks.spawn(bundle_split::split_loop(Arc::clone(&ctx), rx.clone()));
            tasks.spawn(load_shedding::shedding_loop(Arc::clone(&ctx), rx.clone()));
        }
        tasks.spawn(deduplication_loop(Arc::clone(&ctx), rx.clone()));
        tasks.spawn(message_expiry_loop(Arc::clone(&ctx), rx.clone()));
        tasks.spawn(inactive_topic_loop(Arc::clone(&ctx), rx.clone()));
        tasks.spawn(compaction_loop(Arc::clone(&ctx), rx.clone()));
        if ctx.service.config.cluster_metadata_store().is_some() {
            tasks.spawn(fenced_topics_loop(Arc::clone(&ctx), rx.clone()));
        }
        tasks.spawn(backlog_quota_loop(Arc::clone(&ctx), rx));
        tracing::info!(%service_addr, %admin_addr, ?service_tls_addr, ?admin_tls_addr, data_dir = %data_dir.display(), "pulsar_rs broker listening");
        Ok(Server {
            ctx,
            service_addr,
            admin_addr,
            service_tls_addr,
            admin_tls_addr,
            admin_url_tls,
            data_dir,
            shutdown,
            tasks,
        })
    }

    /// `pulsar://host:port`.
    #[must_use]
    pub fn service_url(&self) -> &str {
        &self.ctx.service_url
    }

    /// `http://host:port`.
    #[must_use]
    pub fn admin_url(&self) -> String {
        format!("http://{}", self.admin_addr)
    }

    /// `pulsar+ssl://host:port` when `brokerServicePortTls` is set.
    #[must_use]
    pub fn service_url_tls(&self) -> Option<&str> {
        self.ctx.service_url_tls.as_deref()
    }

    /// `https://host:port` when `webServicePortTls` is set.
    #[must_use]
    pub fn admin_url_tls(&self) -> Option<&str> {
        self.admin_url_tls.as_deref()
    }

    /// Stops accepting, closes connections, persists cursor state and closes storage.
    ///
    /// # Errors
    /// Storage failures while persisting state.
    pub async fn shutdown(mut self) -> Result<(), ServerError> {
        let _ = self.shutdown.send(true);
        while self.tasks.join_next().await.is_some() {}
        if let Some(member) = self.ctx.cluster.get() {
            // Bundles released in order (topics closed, locks deleted): others take them now.
            member.shutdown().await;
        }
        let service = Arc::clone(&self.ctx.service);
        tokio::task::spawn_blocking(move || service.close())
            .await
            .map_err(|e| ServerError::BadRequest(format!("shutdown task failed: {e}")))??;
        tracing::info!("pulsar_rs broker stopped");
        Ok(())
    }
}

/// The accept loop of a binary-protocol port: plain, or `pulsar+ssl://` with `tls`.
fn binary_listener(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    ctx: &Arc<ServerContext>,
    shutdown: &watch::Receiver<bool>,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    let name = if tls.is_some() {
        "pulsar+ssl"
    } else {
        "pulsar"
    };
    let ctx = Arc::clone(ctx);
    listen::accept_loop(
        name,
        listener,
        shutdown.clone(),
        move |socket, peer, stop| {
            connection::serve(socket, peer, tls.clone(), Arc::clone(&ctx), stop)
        },
    )
}

/// Deduplication snapshots and inactive-producer purge, every
/// `brokerDeduplicationSnapshotFrequencyInSeconds`.
async fn deduplication_loop(ctx: Arc<ServerContext>, mut shutdown: watch::Receiver<bool>) {
    let period = ctx
        .service
        .config
        .broker_deduplication_snapshot_frequency_in_seconds
        .max(1);
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(period));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        let service = Arc::clone(&ctx.service);
        let now = service.clock().now_ms();
        let _ = tokio::task::spawn_blocking(move || service.deduplication_tick(now)).await;
    }
}

/// Runs `f` on the blocking pool every `period`, the first time one period after start (as
/// Pulsar's `scheduleAtFixedRate(task, interval, interval)`), until shutdown.
async fn every(
    period: std::time::Duration,
    ctx: &Arc<ServerContext>,
    mut shutdown: watch::Receiver<bool>,
    f: impl Fn(&BrokerService) + Send + Sync + Clone + 'static,
) {
    let mut tick = tokio::time::interval(period);
    // The first tick completes at once: skip it, so the first run comes one period after start.
    tick.tick().await;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        let service = Arc::clone(&ctx.service);
        let f = f.clone();
        let _ = tokio::task::spawn_blocking(move || f(&service)).await;
    }
}

/// Message TTL, every `messageExpiryCheckIntervalInMinutes` (Pulsar's
/// `startMessageExpiryMonitor`).
async fn message_expiry_loop(ctx: Arc<ServerContext>, shutdown: watch::Receiver<bool>) {
    let minutes = u64::from(
        ctx.service
            .config
            .message_expiry_check_interval_in_minutes
            .max(1),
    );
    let period = std::time::Duration::from_secs(minutes * 60);
    every(period, &ctx, shutdown, |svc| {
        svc.check_message_expiry(svc.clock().now_ms());
    })
    .await;
}

/// The compaction monitor: every `brokerServiceCompactionMonitorIntervalInSeconds`, compacts
/// the topics whose backlog exceeds their `compactionThreshold`.
async fn compaction_loop(ctx: Arc<ServerContext>, shutdown: watch::Receiver<bool>) {
    let secs = ctx
        .service
        .config
        .broker_service_compaction_monitor_interval_in_seconds
        .max(1);
    every(
        std::time::Duration::from_secs(secs),
        &ctx,
        shutdown,
        |svc| {
            svc.compaction_tick();
        },
    )
    .await;
}

/// Inactive-topic deletion, every `brokerDeleteInactiveTopicsFrequencySeconds` when
/// `brokerDeleteInactiveTopicsEnabled` (Pulsar's `startInactivityMonitor`).
async fn inactive_topic_loop(ctx: Arc<ServerContext>, shutdown: watch::Receiver<bool>) {
    let cfg = Arc::clone(&ctx.service.config);
    if !cfg.broker_delete_inactive_topics_enabled {
        return;
    }
    let period = std::time::Duration::from_secs(u64::from(
        cfg.broker_delete_inactive_topics_frequency_seconds.max(1),
    ));
    every(period, &ctx, shutdown, |svc| {
        svc.check_gc();
    })
    .await;
}

/// Periodic backlog quota check (`backlogQuotaCheckIntervalInSeconds`): producer-blocking
/// policies disconnect the topic's producers; eviction moves the slowest cursors.
/// On BookKeeper, every second: topics another owner fenced are unloaded and their producers
/// told CloseProducer, so clients reconnect (Pulsar closes such a topic at the failed add).
async fn fenced_topics_loop(ctx: Arc<ServerContext>, mut shutdown: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        let service = Arc::clone(&ctx.service);
        let handles = tokio::task::spawn_blocking(move || service.unload_fenced_topics()).await;
        for handle in handles.unwrap_or_default() {
            ctx.fence_producer(handle);
        }
    }
}

async fn backlog_quota_loop(ctx: Arc<ServerContext>, mut shutdown: watch::Receiver<bool>) {
    let cfg = Arc::clone(&ctx.service.config);
    if !cfg.backlog_quota_check_enabled {
        return;
    }
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(
        cfg.backlog_quota_check_interval_in_seconds.max(1),
    ));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        let service = Arc::clone(&ctx.service);
        let now = service.clock().now_ms();
        let outcome = tokio::task::spawn_blocking(move || {
            let mut blocked = Vec::new();
            for t in service.loaded_topics() {
                match service.check_backlog_quota(&t, now) {
                    Ok(pulsar_rs_broker::QuotaVerdict::Blocked(_)) => {
                        blocked.extend(t.take_producers())
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(topic = %t.name, error = %e, "backlog quota check failed")
                    }
                }
            }
            blocked
        })
        .await;
        for handle in outcome.unwrap_or_default() {
            ctx.fence_producer(handle);
        }
    }
}
