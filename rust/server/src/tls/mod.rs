//! TLS for `pulsar+ssl://` (`brokerServicePortTls`) and HTTPS admin (`webServicePortTls`): an
//! optional layer on a stream the one accept loop ([`crate::listen`]) took. The acceptors are
//! built from the `tls*` settings ([`acceptors`]); when `tlsTrustCertsFilePath` is set, clients
//! may present a certificate signed by one of those CAs (its CN is the role under
//! `AuthenticationProviderTls`, read by [`der`]); with `tlsRequireTrustedClientCertOnConnect`
//! they must. X.509 v1 client certificates are accepted as Pulsar accepts them
//! ([`v1_verifier`]). HTTPS admin streams reach axum through [`listener`].
//!
//! Handshakes run in the connection's own task with a timeout, so a slow or silent peer never
//! holds up the accept loop.

pub mod acceptors;
pub mod der;
pub mod keystore;
pub mod listener;
pub mod v1_verifier;

use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// Longest a TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The TLS handshake on an accepted `socket` of `listener` (named in the logs); `None` when it
/// failed, timed out or the broker shut down first.
pub async fn handshake(
    acceptor: &TlsAcceptor,
    socket: TcpStream,
    peer: &str,
    listener: &'static str,
    shutdown: &mut watch::Receiver<bool>,
) -> Option<TlsStream<TcpStream>> {
    let tls = tokio::select! {
        r = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(socket)) => r,
        _ = shutdown.changed() => return None,
    };
    match tls {
        Ok(Ok(stream)) => Some(stream),
        Ok(Err(e)) => {
            tracing::info!(%peer, listener, error = %e, "TLS handshake failed");
            None
        }
        Err(_) => {
            tracing::info!(%peer, listener, "TLS handshake timed out");
            None
        }
    }
}

/// The CN of the first certificate a TLS peer presented (its role under
/// `AuthenticationProviderTls`).
#[must_use]
pub fn peer_common_name(conn: &rustls::ServerConnection) -> Option<String> {
    conn.peer_certificates()
        .and_then(|c| c.first())
        .and_then(|c| der::common_name(c.as_ref()))
}
