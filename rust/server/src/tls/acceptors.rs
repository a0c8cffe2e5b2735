//! The TLS acceptors of a server, built with rustls (ring provider) from
//! `tlsCertificateFilePath` / `tlsKeyFilePath` (PEM) and, for client certificates,
//! `tlsTrustCertsFilePath` and `tlsRequireTrustedClientCertOnConnect`.

use std::sync::Arc;

use pulsar_rs_broker::{BrokerConfig, BrokerError};
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use super::v1_verifier::V1TolerantVerifier;

fn bad(key: &str, reason: impl Into<String>) -> BrokerError {
    BrokerError::InvalidConfig {
        key: key.to_owned(),
        reason: reason.into(),
    }
}

/// The PEM certificates in `path`, at least one; errors name the setting `key`.
///
/// # Errors
/// [`BrokerError::InvalidConfig`]: unreadable, or no certificate in it.
pub fn certs(
    key: &str,
    path: impl AsRef<std::path::Path>,
) -> Result<Vec<CertificateDer<'static>>, BrokerError> {
    let path = path.as_ref();
    let shown = path.display();
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(key, format!("reading {shown}: {e}")))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(key, format!("reading {shown}: {e}")))?;
    if certs.is_empty() {
        return Err(bad(key, format!("no PEM certificate in {shown}")));
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
        let verifier = V1TolerantVerifier::new(verifier, &trusted, algs);
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
