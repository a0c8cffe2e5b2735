//! Start-up wiring: how [`Server::start_with`](super::Server::start_with) brings a broker up, one
//! function per phase, in this order (a failing phase ends the start with its error; from the
//! resources on, a failure closes the opened service first):
//!
//! 1. [`bind_plain`]: the binary protocol's and the admin API's ports;
//! 2. authentication, then [`bind_tls`]: the TLS acceptors and the TLS ports;
//! 3. [`open_service`]: the broker on its storage (the data directory, or BookKeeper);
//! 4. [`open_resources`]: clusters and tenants, the bootstrap records, the transaction
//!    coordinators;
//! 5. [`context`]: the [`ServerContext`] every connection shares;
//! 6. [`join_cluster`]: the cluster `metadataStoreUrl` names, if any;
//! 7. [`spawn_tasks`]: the listeners' accept loops, the console's sampler, the cluster's loops and
//!    the housekeeping.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicI64;
use std::sync::Arc;

use parking_lot::Mutex;
use pulsar_rs_broker::{BrokerConfig, BrokerService};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::cluster::peers::client::BrokerClient;
use crate::context::{PublishBuffer, ServerContext};
use crate::error::ServerError;
use crate::{
    admin, auth, bookkeeper, cluster, connection, console, housekeeping, listen, lookup, resources,
    tls,
};

/// What a server runs on besides its settings and data directory: the seams tests inject.
/// `Seams::default()` is the real file system and the system clock.
#[derive(Default)]
pub struct Seams {
    /// The file system under the data directory (`None`: the real one).
    pub fs: Option<Arc<dyn pulsar_rs_ledger::vfs::Vfs>>,
    /// The broker's clock (`None`: the system clock).
    pub clock: Option<Arc<dyn pulsar_rs_clock::Clock>>,
}

/// A started server's parts, which [`super::Server`] holds.
pub(super) struct Started {
    pub ctx: Arc<ServerContext>,
    pub service_addr: SocketAddr,
    pub admin_addr: SocketAddr,
    pub service_tls_addr: Option<SocketAddr>,
    pub admin_tls_addr: Option<SocketAddr>,
    pub shutdown: watch::Sender<bool>,
    pub tasks: JoinSet<()>,
}

/// Opens the data directory, binds the ports and starts serving on the current runtime.
pub(super) async fn start(
    config: BrokerConfig,
    data_dir: &Path,
    seams: Seams,
) -> Result<Started, ServerError> {
    config.validate()?;
    let broker_client = BrokerClient::for_broker(&config).await?;
    let Seams { fs, clock } = seams;
    let clock = clock.unwrap_or_else(|| Arc::new(pulsar_rs_clock::SystemClock));
    let plain = bind_plain(&config).await?;
    let host = config
        .advertised_address
        .clone()
        .unwrap_or_else(|| config.bind_address.clone());
    let auth = auth::Authenticator::from_config(&config, Arc::clone(&clock))?;
    let tls = bind_tls(&config).await?;
    let urls = Urls {
        service: format!("pulsar://{host}:{}", plain.service_addr.port()),
        service_tls: tls
            .service_addr
            .map(|a| format!("pulsar+ssl://{host}:{}", a.port())),
        admin: format!("http://{host}:{}", plain.admin_addr.port()),
        admin_tls: tls
            .admin_addr
            .map(|a| format!("https://{host}:{}", a.port())),
    };
    let service = open_service(config, data_dir.to_owned(), fs, clock).await?;
    let resources = open_resources(&service, &urls).await?;
    service.resume_transactions();
    let ctx = context(service, broker_client, auth, resources, urls)?;
    join_cluster(&ctx).await?;
    let (service_addr, admin_addr) = (plain.service_addr, plain.admin_addr);
    let (service_tls_addr, admin_tls_addr) = (tls.service_addr, tls.admin_addr);
    let (shutdown, tasks) = spawn_tasks(&ctx, plain, tls)?;
    tracing::info!(%service_addr, %admin_addr, ?service_tls_addr, ?admin_tls_addr, data_dir = %data_dir.display(), "pulsar_rs broker listening");
    Ok(Started {
        ctx,
        service_addr,
        admin_addr,
        service_tls_addr,
        admin_tls_addr,
        shutdown,
        tasks,
    })
}

/// The URLs this broker gives out (lookups, its cluster registration).
struct Urls {
    /// `pulsar://host:port`.
    service: String,
    /// `pulsar+ssl://host:port` when `brokerServicePortTls` is set.
    service_tls: Option<String>,
    /// `http://host:port` of the admin API.
    admin: String,
    /// `https://host:port` of the admin API when `webServicePortTls` is set.
    admin_tls: Option<String>,
}

/// The plain ports, bound.
struct PlainPorts {
    service: TcpListener,
    admin: TcpListener,
    service_addr: SocketAddr,
    admin_addr: SocketAddr,
}

/// Binds `brokerServicePort` and `webServicePort` (0 = ephemeral).
async fn bind_plain(config: &BrokerConfig) -> Result<PlainPorts, ServerError> {
    let bind = &config.bind_address;
    let service = TcpListener::bind((bind.as_str(), config.broker_service_port))
        .await
        .map_err(|e| {
            ServerError::io(format!("binding {bind}:{}", config.broker_service_port), e)
        })?;
    let admin = TcpListener::bind((bind.as_str(), config.web_service_port))
        .await
        .map_err(|e| ServerError::io(format!("binding {bind}:{}", config.web_service_port), e))?;
    let service_addr = service
        .local_addr()
        .map_err(|e| ServerError::io("reading bound address", e))?;
    let admin_addr = admin
        .local_addr()
        .map_err(|e| ServerError::io("reading bound address", e))?;
    Ok(PlainPorts {
        service,
        admin,
        service_addr,
        admin_addr,
    })
}

/// The TLS ports, bound when set, with their acceptors.
struct TlsPorts {
    acceptors: Option<tls::acceptors::Acceptors>,
    service: Option<TcpListener>,
    admin: Option<TcpListener>,
    service_addr: Option<SocketAddr>,
    admin_addr: Option<SocketAddr>,
}

/// Reads the TLS keys when a TLS port is set, then binds `brokerServicePortTls` and
/// `webServicePortTls`.
async fn bind_tls(config: &BrokerConfig) -> Result<TlsPorts, ServerError> {
    let acceptors =
        if config.broker_service_port_tls.is_some() || config.web_service_port_tls.is_some() {
            Some(tls::acceptors::acceptors(config)?)
        } else {
            None
        };
    let bind = config.bind_address.as_str();
    let service = bind_port(bind, config.broker_service_port_tls).await?;
    let admin = bind_port(bind, config.web_service_port_tls).await?;
    Ok(TlsPorts {
        acceptors,
        service_addr: addr_of(service.as_ref())?,
        admin_addr: addr_of(admin.as_ref())?,
        service,
        admin,
    })
}

/// `port` on `bind`, if set.
async fn bind_port(bind: &str, port: Option<u16>) -> Result<Option<TcpListener>, ServerError> {
    match port {
        Some(p) => TcpListener::bind((bind, p))
            .await
            .map(Some)
            .map_err(|e| ServerError::io(format!("binding {bind}:{p}"), e)),
        None => Ok(None),
    }
}

/// Where a listener, if any, is bound.
fn addr_of(l: Option<&TcpListener>) -> Result<Option<SocketAddr>, ServerError> {
    l.map(TcpListener::local_addr)
        .transpose()
        .map_err(|e| ServerError::io("reading bound address", e))
}

/// Opens the broker on the blocking pool: on the injected file system, on BookKeeper when
/// configured, else on the data directory.
async fn open_service(
    config: BrokerConfig,
    dir: PathBuf,
    fs: Option<Arc<dyn pulsar_rs_ledger::vfs::Vfs>>,
    clock: Arc<dyn pulsar_rs_clock::Clock>,
) -> Result<Arc<BrokerService>, ServerError> {
    crate::offloaders::check(&config)?;
    crate::iceberg_tables::check(&config)?;
    let service = tokio::task::spawn_blocking(move || match fs {
        Some(fs) => BrokerService::open_on(config, &dir, fs, clock),
        None => match bookkeeper::backing(&config)? {
            Some(backing) => BrokerService::open_on_backing(config, &dir, backing, clock),
            None => BrokerService::open_with_clock(config, &dir, clock),
        },
    })
    .await
    .map_err(|e| ServerError::BadRequest(format!("startup task failed: {e}")))??;
    // Before any topic loads: their offload settings find their offloader here.
    let cluster = service.config.cluster_name.clone();
    service.set_offloader_factory(crate::offloaders::factory(&cluster));
    Ok(service)
}

/// Clusters and tenants, the records a new broker starts with, the transaction coordinators and
/// the grants of older versions, on the blocking pool; on failure the service is closed.
async fn open_resources(
    service: &Arc<BrokerService>,
    urls: &Urls,
) -> Result<Arc<resources::Resources>, ServerError> {
    let urls = resources::BrokerUrls {
        web: urls.admin.clone(),
        web_tls: urls.admin_tls.clone(),
        service: urls.service.clone(),
        service_tls: urls.service_tls.clone(),
    };
    let svc = Arc::clone(service);
    let opened = tokio::task::spawn_blocking(move || {
        let res = resources::Resources::open(svc.storage.meta())?;
        resources::bootstrap(&res, &svc, &urls)?;
        svc.open_coordinators()?;
        auth::authz::migrate_legacy_grants(&svc)?;
        Ok::<_, pulsar_rs_broker::BrokerError>(Arc::new(res))
    })
    .await
    .map_err(|e| ServerError::BadRequest(format!("startup task failed: {e}")))?;
    match opened {
        Ok(r) => Ok(r),
        Err(e) => {
            let _ = service.close();
            Err(e.into())
        }
    }
}

/// The shared context, from the opened service and the start's other parts.
fn context(
    service: Arc<BrokerService>,
    broker_client: Arc<BrokerClient>,
    auth: auth::Authenticator,
    resources: Arc<resources::Resources>,
    urls: Urls,
) -> Result<Arc<ServerContext>, ServerError> {
    let broker_publish_limiter = publish_limiter(&service.config);
    let authz = auth::authz::Authorizer::new(
        &service.config,
        Arc::clone(&service),
        Arc::clone(&resources),
    );
    let publish_buffer = PublishBuffer::new(service.config.max_message_publish_buffer_size_in_mb);
    let lookups = lookups(&service.config, &urls)?;
    let tables = crate::iceberg_tables::start(&service)?;
    Ok(Arc::new(ServerContext {
        tables,
        broker_client,
        replicators: crate::replication::registry::Replicators::default(),
        topic_list_limiter: crate::topic_list_limit::TopicListLimiter::new(&service.config),
        service,
        service_url: urls.service,
        service_url_tls: urls.service_tls,
        admin_url: urls.admin,
        admin_url_tls: urls.admin_tls,
        lookups,
        auth,
        authz,
        resources,
        throttled_connections: AtomicI64::new(0),
        publish_buffer,
        publish_throttle_events: std::sync::atomic::AtomicU64::new(0),
        broker_publish_limiter,
        cpu: cluster::balancer::CpuSampler::default(),
        load_balancer: cluster::balancer::LoadBalancerCounters::default(),
        cluster: std::sync::OnceLock::new(),
        producers: Mutex::default(),
    }))
}

/// The broker-wide publish limit (`brokerPublisherThrottlingMax{Message,Byte}Rate`).
#[allow(clippy::cast_precision_loss)]
fn publish_limiter(config: &BrokerConfig) -> Option<pulsar_rs_broker::rate::RateLimiter> {
    pulsar_rs_broker::rate::RateLimiter::new(
        config.broker_publisher_throttling_max_message_rate.max(0) as f64,
        config.broker_publisher_throttling_max_byte_rate.max(0) as f64,
    )
}

/// What lookups answer, by listener name (`advertisedListeners`, `internalListenerName`).
fn lookups(config: &BrokerConfig, urls: &Urls) -> Result<lookup::Lookups, ServerError> {
    let listeners = config.listeners()?;
    let internal = config
        .internal_listener_name
        .as_deref()
        .and_then(|n| listeners.iter().position(|l| l.name == n))
        .unwrap_or(0);
    Ok(lookup::Lookups {
        service_url: urls.service.clone(),
        service_url_tls: urls.service_tls.clone(),
        listeners,
        internal,
    })
}

/// Joins the cluster the configuration names, if any: topics' ownership and the transaction
/// buffer's calls go through it from now on. On failure the service is closed.
async fn join_cluster(ctx: &Arc<ServerContext>) -> Result<(), ServerError> {
    let member_urls = pulsar_rs_cluster::BrokerUrls {
        service: ctx.service_url.clone(),
        service_tls: ctx.service_url_tls.clone(),
        web: ctx.admin_url.clone(),
        web_tls: ctx.admin_url_tls.clone(),
    };
    let config = Arc::clone(&ctx.service.config);
    let joined = match cluster::member::join(ctx, &config, ctx.broker_id(), member_urls).await {
        Ok(Some(member)) => {
            let owner = Arc::clone(&member);
            ctx.service
                .set_ownership_check(Box::new(move |t| owner.owns(&t.to_string())));
            let peers = cluster::peers::Peers::new(
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
        Ok(()) => Ok(()),
        Err(e) => {
            let service = Arc::clone(&ctx.service);
            let _ = tokio::task::spawn_blocking(move || service.close()).await;
            Err(e)
        }
    }
}

/// Spawns the accept loops of every bound port, the console's sampler, in a cluster its loops,
/// and the housekeeping; the sender stops them all.
fn spawn_tasks(
    ctx: &Arc<ServerContext>,
    plain: PlainPorts,
    tls: TlsPorts,
) -> Result<(watch::Sender<bool>, JoinSet<()>), ServerError> {
    let (shutdown, rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    let history = Arc::new(console::History::default());
    tasks.spawn(binary_listener(plain.service, None, ctx, &rx));
    if let (Some(l), Some(a)) = (tls.service, &tls.acceptors) {
        let acceptor = Some(a.service.clone());
        tasks.spawn(binary_listener(l, acceptor, ctx, &rx));
    }
    tasks.spawn(admin::serve(
        plain.admin,
        Arc::clone(ctx),
        Arc::clone(&history),
        rx.clone(),
    ));
    if let (Some(l), Some(a)) = (tls.admin, &tls.acceptors) {
        let listener = tls::listener::TlsListener::new(l, a.admin.clone(), rx.clone())
            .map_err(|e| ServerError::io("reading bound address", e))?;
        tasks.spawn(admin::serve_tls(
            listener,
            Arc::clone(ctx),
            Arc::clone(&history),
            rx.clone(),
        ));
    }
    tasks.spawn(console::history::sample_loop(
        Arc::clone(ctx),
        history,
        rx.clone(),
    ));
    if ctx.cluster.get().is_some() {
        tasks.spawn(cluster::sync::follow(Arc::clone(ctx), rx.clone()));
        tasks.spawn(cluster::registry::follow(Arc::clone(ctx), rx.clone()));
        tasks.spawn(cluster::split::split_loop(Arc::clone(ctx), rx.clone()));
        tasks.spawn(cluster::shedding::shedding_loop(
            Arc::clone(ctx),
            rx.clone(),
        ));
    }
    housekeeping::spawn(&mut tasks, ctx, &rx);
    crate::replication::spawn(&mut tasks, ctx, &rx);
    Ok((shutdown, tasks))
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
