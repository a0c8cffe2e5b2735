//! A running server ([`Server`]): started by [`Server::start`] (the phases are in `start`),
//! with its bound addresses, its URLs and a clean shutdown; and the runtime a broker serves its
//! connections on ([`io_runtime`]).

mod start;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use pulsar_rs_broker::BrokerConfig;
use tokio::sync::watch;
use tokio::task::JoinSet;

pub use start::Seams;

use crate::context::ServerContext;
use crate::error::ServerError;

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
        let started = start::start(config, &data_dir, seams).await?;
        Ok(Server {
            admin_url_tls: started.ctx.admin_url_tls.clone(),
            ctx: started.ctx,
            service_addr: started.service_addr,
            admin_addr: started.admin_addr,
            service_tls_addr: started.service_tls_addr,
            admin_tls_addr: started.admin_tls_addr,
            data_dir,
            shutdown: started.shutdown,
            tasks: started.tasks,
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
