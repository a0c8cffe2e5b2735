//! The network side of pulsar_rs: a Tokio server speaking Pulsar's binary protocol, plus the
//! admin REST API and Prometheus metrics on a second port.
//!
//! [`Server::start`] is the one entry point used by the binary, the Python bindings and tests:
//! it binds both ports (0 = ephemeral), spawns the accept loops on the current runtime and
//! returns a handle with the bound addresses and a clean shutdown.

pub mod admin;
pub mod connection;
pub mod error;
pub mod writer;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicI64;
use std::sync::Arc;

use parking_lot::Mutex;
use pulsar_rs_broker::{BrokerConfig, BrokerService};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

pub use error::ServerError;

/// State shared by every connection of one server.
pub struct ServerContext {
    /// The broker.
    pub service: Arc<BrokerService>,
    /// `pulsar://host:port` given out in LOOKUP answers; immutable.
    pub service_url: String,
    /// Connections currently paused for publish backpressure (metric).
    pub throttled_connections: AtomicI64,
    /// Producer handle → (its connection's queue, its client-side id), to fence producers.
    producers: Mutex<HashMap<u64, (mpsc::UnboundedSender<writer::Outbound>, u64)>>,
}

impl ServerContext {
    pub(crate) fn register_producer(
        &self,
        handle: u64,
        tx: mpsc::UnboundedSender<writer::Outbound>,
        producer_id: u64,
    ) {
        self.producers.lock().insert(handle, (tx, producer_id));
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
    /// The data directory.
    pub data_dir: PathBuf,
    shutdown: watch::Sender<bool>,
    tasks: JoinSet<()>,
}

impl Server {
    /// Opens the data directory, binds the ports and starts serving on the current runtime.
    ///
    /// # Errors
    /// Invalid settings, storage failures, or ports that cannot be bound.
    pub async fn start(config: BrokerConfig, data_dir: PathBuf) -> Result<Server, ServerError> {
        config.validate()?;
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
        let dir = data_dir.clone();
        let service = tokio::task::spawn_blocking(move || BrokerService::open(config, &dir))
            .await
            .map_err(|e| ServerError::BadRequest(format!("startup task failed: {e}")))??;
        let ctx = Arc::new(ServerContext {
            service,
            service_url,
            throttled_connections: AtomicI64::new(0),
            producers: Mutex::new(HashMap::new()),
        });
        let (shutdown, rx) = watch::channel(false);
        let mut tasks = JoinSet::new();
        tasks.spawn(accept_loop(service_listener, Arc::clone(&ctx), rx.clone()));
        tasks.spawn(admin::serve(admin_listener, Arc::clone(&ctx), rx));
        tracing::info!(%service_addr, %admin_addr, data_dir = %data_dir.display(), "pulsar_rs broker listening");
        Ok(Server {
            ctx,
            service_addr,
            admin_addr,
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

    /// Stops accepting, closes connections, persists cursor state and closes storage.
    ///
    /// # Errors
    /// Storage failures while persisting state.
    pub async fn shutdown(mut self) -> Result<(), ServerError> {
        let _ = self.shutdown.send(true);
        while self.tasks.join_next().await.is_some() {}
        let service = Arc::clone(&self.ctx.service);
        tokio::task::spawn_blocking(move || service.close())
            .await
            .map_err(|e| ServerError::BadRequest(format!("shutdown task failed: {e}")))??;
        tracing::info!("pulsar_rs broker stopped");
        Ok(())
    }
}

async fn accept_loop(
    listener: TcpListener,
    ctx: Arc<ServerContext>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok((socket, _)) => {
                    conns.spawn(connection::serve(socket, Arc::clone(&ctx), shutdown.clone()));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = shutdown.changed() => break,
        }
    }
    while conns.join_next().await.is_some() {}
}
