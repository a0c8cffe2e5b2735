//! This broker's client of the other brokers of its cluster (Pulsar's broker-side
//! `PulsarClient` and `PulsarAdmin`): one per broker, built at start from the
//! `brokerClient*` settings. It says which of a peer's URLs to use (its TLS ones with
//! `brokerClientTlsEnabled`), opens binary-protocol streams (TCP, or TLS presenting the client
//! certificate), carries the credentials, and holds the pooled HTTP(S) client of the admin
//! calls one broker makes to another.

use std::pin::Pin;
use std::sync::Arc;

use axum::body::Bytes;
use axum::http::HeaderValue;
use http_body_util::Full;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use pulsar_rs_broker::config::broker_client::BrokerClientAuth;
use pulsar_rs_broker::{BrokerConfig, BrokerError};
use pulsar_rs_cluster::BrokerUrls;
use pulsar_rs_proto::pb;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::credentials::Credentials;
use super::tls;

/// The HTTP(S) client of the admin calls to peers.
pub type HttpClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A byte stream to a peer: TCP or TLS over TCP.
pub trait PeerIo: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> PeerIo for T {}

/// An open stream to a peer.
pub type PeerStream = Pin<Box<dyn PeerIo>>;

/// This broker as a client of its peers. Immutable once built; shared by every caller.
pub struct BrokerClient {
    /// TLS for binary-protocol connections (`brokerClientTlsEnabled`); None: plain TCP.
    tls: Option<TlsConnector>,
    /// What this broker presents on CONNECT and in admin calls made in its own name.
    credentials: Option<Credentials>,
    /// Pooled admin calls (connections to the same peer are reused).
    http: HttpClient,
}

fn http_client(config: Arc<rustls::ClientConfig>) -> HttpClient {
    let mut plain = HttpConnector::new();
    // The connector hands https:// to rustls; http:// stays plain.
    plain.enforce_http(false);
    let connector = HttpsConnectorBuilder::new()
        .with_tls_config((*config).clone())
        .https_or_http()
        .enable_http1()
        .wrap_connector(plain);
    Client::builder(TokioExecutor::new()).build(connector)
}

impl BrokerClient {
    /// The client the settings describe. Reads certificate and key files: call it off the
    /// async workers.
    ///
    /// # Errors
    /// [`BrokerError::InvalidConfig`] naming the setting that cannot be used.
    pub fn from_config(config: &BrokerConfig) -> Result<Self, BrokerError> {
        let auth = config.broker_client_auth()?;
        let plugin_identity = match &auth {
            Some(BrokerClientAuth::Tls(id)) => Some(id),
            _ => None,
        };
        let rustls_config = match config.broker_client_tls()? {
            Some(t) => Some(tls::client_config(&t, plugin_identity)?),
            None => None,
        };
        let http = http_client(rustls_config.clone().unwrap_or_else(tls::trusting_nothing));
        Ok(BrokerClient {
            tls: rustls_config.map(TlsConnector::from),
            credentials: auth.map(Credentials),
            http,
        })
    }

    /// The client of a broker with `config`, read off the async workers. A broker of a
    /// cluster refuses to start without a usable one; a standalone, which opens no connection
    /// to a peer, starts with any `brokerClient*` settings (as Pulsar's) and warns.
    ///
    /// # Errors
    /// [`BrokerError::InvalidConfig`] in a cluster, naming the setting that cannot be used.
    pub async fn for_broker(config: &BrokerConfig) -> Result<Arc<Self>, crate::error::ServerError> {
        let c = config.clone();
        let built = tokio::task::spawn_blocking(move || BrokerClient::from_config(&c))
            .await
            .map_err(|e| {
                crate::error::ServerError::BadRequest(format!("startup task failed: {e}"))
            })?;
        match built {
            Ok(client) => Ok(Arc::new(client)),
            Err(e) if config.cluster_metadata_store().is_some() => Err(e.into()),
            Err(e) => {
                tracing::warn!(
                    error = %e,
                    "the broker client's settings cannot be used; a standalone has no peers, and its replicators connect to other clusters without them"
                );
                Ok(Arc::new(BrokerClient::plain()))
            }
        }
    }

    /// A client without credentials or TLS: a standalone's, whose broker-client settings
    /// cannot be used (it has no peers; its replicators connect without them).
    #[must_use]
    pub fn plain() -> Self {
        BrokerClient {
            tls: None,
            credentials: None,
            http: http_client(tls::trusting_nothing()),
        }
    }

    /// Whether connections to peers use TLS.
    #[must_use]
    pub fn tls_enabled(&self) -> bool {
        self.tls.is_some()
    }

    /// The credentials presented to peers.
    #[must_use]
    pub fn credentials(&self) -> Option<&Credentials> {
        self.credentials.as_ref()
    }

    /// The pooled admin client.
    #[must_use]
    pub fn http(&self) -> &HttpClient {
        &self.http
    }

    /// The binary-protocol URL of a peer to connect to.
    ///
    /// # Errors
    /// TLS is on and the peer advertises no `pulsar+ssl://` URL.
    pub fn service_url(&self, urls: &BrokerUrls) -> Result<String, String> {
        self.pick(
            &urls.service,
            urls.service_tls.as_deref(),
            "brokerServiceUrlTls",
        )
    }

    /// The broker URL a LOOKUP answer names: its `pulsar+ssl://` one with `brokerClientTlsEnabled`.
    ///
    /// # Errors
    /// TLS is on and the answer names no TLS URL.
    pub fn lookup_url(&self, r: &pb::CommandLookupTopicResponse) -> Result<String, String> {
        let plain = r.broker_service_url.as_deref().unwrap_or_default();
        self.pick(
            plain,
            r.broker_service_url_tls.as_deref(),
            "brokerServiceUrlTls",
        )
    }

    /// The admin URL of a peer to call.
    ///
    /// # Errors
    /// TLS is on and the peer advertises no `https://` URL.
    pub fn web_url(&self, urls: &BrokerUrls) -> Result<String, String> {
        self.pick(&urls.web, urls.web_tls.as_deref(), "webServiceUrlTls")
    }

    fn pick(&self, plain: &str, tls: Option<&str>, what: &str) -> Result<String, String> {
        if !self.tls_enabled() {
            return Ok(plain.to_owned());
        }
        tls.filter(|u| !u.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| {
                format!("brokerClientTlsEnabled: the broker at {plain} advertises no {what} (no TLS port)")
            })
    }

    /// The `Authorization` header of an admin call made in this broker's own name: its token
    /// or Basic user; None without credentials or with a TLS certificate (presented on the
    /// handshake instead).
    ///
    /// # Errors
    /// Credentials configured but unreadable.
    pub async fn authorization(&self) -> Result<Option<HeaderValue>, String> {
        match &self.credentials {
            Some(c) => c.http_authorization().await,
            None => Ok(None),
        }
    }

    /// A stream to the broker at `service_url`: `pulsar://host:port` over TCP, or
    /// `pulsar+ssl://host:port` over TLS.
    ///
    /// # Errors
    /// The URL, the socket or the TLS handshake, as text.
    pub async fn connect(&self, service_url: &str) -> Result<PeerStream, String> {
        let (addr, secure) = if let Some(a) = service_url.strip_prefix("pulsar+ssl://") {
            (a, true)
        } else if let Some(a) = service_url.strip_prefix("pulsar://") {
            (a, false)
        } else {
            return Err(format!(
                "not a pulsar:// or pulsar+ssl:// URL: {service_url}"
            ));
        };
        let addr = addr.trim_end_matches('/');
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connecting to {addr}: {e}"))?;
        let _ = stream.set_nodelay(true);
        if !secure {
            return Ok(Box::pin(stream));
        }
        let Some(connector) = &self.tls else {
            return Err(format!(
                "{service_url}: a TLS URL, and brokerClientTlsEnabled is false"
            ));
        };
        let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_owned())
            .map_err(|e| format!("{service_url}: not a host name: {e}"))?;
        let tls = connector
            .connect(name, stream)
            .await
            .map_err(|e| format!("TLS handshake with {addr}: {e}"))?;
        Ok(Box::pin(tls))
    }
}
