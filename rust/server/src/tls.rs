//! TLS with rustls (ring provider) for `pulsar+ssl://` (`brokerServicePortTls`) and HTTPS admin
//! (`webServicePortTls`), from `tlsCertificateFilePath` / `tlsKeyFilePath` (PEM). When
//! `tlsTrustCertsFilePath` is set, clients may present a certificate signed by one of those CAs
//! (its CN is the role under `AuthenticationProviderTls`, see [`crate::auth_tls`]); with
//! `tlsRequireTrustedClientCertOnConnect` they must. X.509 v1 client certificates are accepted
//! as Pulsar accepts them ([`crate::tls_v1`]).
//!
//! Handshakes run in their own tasks with a timeout, so a slow or silent peer never holds up
//! the accept loop.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use pulsar_rs_broker::{BrokerConfig, BrokerError};
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::ServerContext;

/// Longest a TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

fn bad(key: &str, reason: impl Into<String>) -> BrokerError {
    BrokerError::InvalidConfig {
        key: key.to_owned(),
        reason: reason.into(),
    }
}

fn certs(key: &str, path: &str) -> Result<Vec<CertificateDer<'static>>, BrokerError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(key, format!("reading {path}: {e}")))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(key, format!("reading {path}: {e}")))?;
    if certs.is_empty() {
        return Err(bad(key, format!("no PEM certificate in {path}")));
    }
    Ok(certs)
}

/// The TLS acceptors of a server: one for the binary protocol, one (ALPN `http/1.1`) for the
/// admin API.
#[derive(Clone)]
pub struct Acceptors {
    /// `pulsar+ssl://`.
    pub service: TlsAcceptor,
    /// HTTPS admin.
    pub admin: TlsAcceptor,
}

/// Builds the acceptors from the `tls*` settings.
///
/// # Errors
/// [`BrokerError::InvalidConfig`] naming the key whose file is missing or unusable.
pub fn acceptors(c: &BrokerConfig) -> Result<Acceptors, BrokerError> {
    let cert_path = c
        .tls_certificate_file_path
        .as_deref()
        .ok_or_else(|| bad("tlsCertificateFilePath", "a TLS port needs a certificate"))?;
    let key_path = c
        .tls_key_file_path
        .as_deref()
        .ok_or_else(|| bad("tlsKeyFilePath", "a TLS port needs a private key"))?;
    let chain = certs("tlsCertificateFilePath", cert_path)?;
    let key = PrivateKeyDer::from_pem_file(key_path)
        .map_err(|e| bad("tlsKeyFilePath", format!("reading {key_path}: {e}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| bad("tlsCertificateFilePath", e.to_string()))?;
    let builder = if let Some(path) = c.tls_trust_certs_file_path.as_deref() {
        let mut roots = rustls::RootCertStore::empty();
        let trusted = certs("tlsTrustCertsFilePath", path)?;
        for cert in &trusted {
            roots
                .add(cert.clone())
                .map_err(|e| bad("tlsTrustCertsFilePath", e.to_string()))?;
        }
        let algs = provider.signature_verification_algorithms;
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
        // Certificates are requested; required only with tlsRequireTrustedClientCertOnConnect.
        let verifier = if c.tls_require_trusted_client_cert_on_connect {
            verifier
        } else {
            verifier.allow_unauthenticated()
        };
        let verifier = verifier
            .build()
            .map_err(|e| bad("tlsTrustCertsFilePath", e.to_string()))?;
        // X.509 v1 client certificates, which Pulsar accepts and webpki does not.
        let verifier = crate::tls_v1::V1TolerantVerifier::new(verifier, &trusted, algs);
        builder.with_client_cert_verifier(Arc::new(verifier))
    } else if c.tls_require_trusted_client_cert_on_connect {
        return Err(bad(
            "tlsTrustCertsFilePath",
            "tlsRequireTrustedClientCertOnConnect needs trusted CA certificates",
        ));
    } else {
        builder.with_no_client_auth()
    };
    let service = builder
        .with_single_cert(chain, key)
        .map_err(|e| bad("tlsKeyFilePath", format!("certificate and key: {e}")))?;
    let mut admin = service.clone();
    admin.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Acceptors {
        service: TlsAcceptor::from(Arc::new(service)),
        admin: TlsAcceptor::from(Arc::new(admin)),
    })
}

/// Accepts `pulsar+ssl://` connections until shutdown.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    ctx: Arc<ServerContext>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok((socket, peer)) => {
                    let acceptor = acceptor.clone();
                    let ctx = Arc::clone(&ctx);
                    let mut stop = shutdown.clone();
                    conns.spawn(async move {
                        let _ = socket.set_nodelay(true);
                        let tls = tokio::select! {
                            r = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(socket)) => r,
                            _ = stop.changed() => return,
                        };
                        match tls {
                            Ok(Ok(stream)) => {
                                let cn = crate::auth_tls::peer_common_name(stream.get_ref().1);
                                let (rd, wr) = tokio::io::split(stream);
                                crate::connection::serve_io(rd, wr, peer.to_string(), cn, ctx, stop)
                                    .await;
                            }
                            Ok(Err(e)) => tracing::info!(%peer, error = %e, "TLS handshake failed"),
                            Err(_) => tracing::info!(%peer, "TLS handshake timed out"),
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = shutdown.changed() => break,
        }
    }
    while conns.join_next().await.is_some() {}
}

/// An axum [`Listener`](axum::serve::Listener) yielding TLS streams whose handshake is done.
pub struct TlsListener {
    /// Handshaken streams from the accept task.
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    /// The TCP listener's address.
    local: SocketAddr,
    /// The accept task; aborted when the listener is dropped.
    task: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    /// Starts accepting and handshaking on `listener`.
    ///
    /// # Errors
    /// The listener's address cannot be read.
    pub fn new(listener: TcpListener, acceptor: TlsAcceptor) -> std::io::Result<Self> {
        let local = listener.local_addr()?;
        let (tx, ready) = mpsc::channel(64);
        let task = tokio::spawn(async move {
            loop {
                let (socket, peer) = match listener.accept().await {
                    Ok(x) => x,
                    Err(e) => {
                        tracing::warn!(error = %e, "admin accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let acceptor = acceptor.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(socket)).await {
                        Ok(Ok(stream)) => {
                            let _ = tx.send((stream, peer)).await;
                        }
                        Ok(Err(e)) => {
                            tracing::info!(%peer, error = %e, "admin TLS handshake failed");
                        }
                        Err(_) => tracing::info!(%peer, "admin TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(TlsListener { ready, local, task })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(x) => x,
            // The accept task ended (only on abort): nothing more will come.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}
