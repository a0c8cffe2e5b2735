//! TLS on the connections this broker opens to its peers (`brokerClientTlsEnabled`), as Pulsar's
//! broker builds its own client: the peers' CAs from `brokerClientTrustCertsFilePath` (else
//! `tlsTrustCertsFilePath`) or a trust store; the client certificate of the authentication
//! plugin (`AuthenticationTls`, `AuthenticationKeyStoreTls`) or of the TLS settings; the host
//! name checked only with `tlsHostnameVerificationEnabled` (Pulsar's default: the chain is
//! checked, the name is not); no check at all with `tlsAllowInsecureConnection`.

use std::sync::Arc;

use pulsar_rs_broker::config::broker_client::{
    BrokerClientTls, StoreFile, TlsIdentity, TrustSource,
};
use pulsar_rs_broker::BrokerError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::{CertificateError, DigitallySignedStruct, Error, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

use crate::tls::acceptors::certs as pem_certs;
use crate::tls::keystore;

fn bad(key: &str, reason: impl Into<String>) -> BrokerError {
    BrokerError::InvalidConfig {
        key: key.to_owned(),
        reason: reason.into(),
    }
}

fn store(key: &str, s: &StoreFile) -> Result<keystore::KeyStore, BrokerError> {
    keystore::read(&s.path, &s.store_type, &s.password).map_err(|e| bad(key, e))
}

/// A client certificate chain and its key. `key` names the setting in errors.
fn identity(
    key: &str,
    id: &TlsIdentity,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), BrokerError> {
    match id {
        TlsIdentity::Pem { cert, key: k } => {
            let chain = pem_certs(key, cert)?;
            let pk = PrivateKeyDer::from_pem_file(k)
                .map_err(|e| bad(key, format!("reading the key {}: {e}", k.display())))?;
            Ok((chain, pk))
        }
        TlsIdentity::KeyStore(s) => {
            let ks = store(key, s)?;
            match ks.key {
                Some(pk) if !ks.chain.is_empty() => Ok((ks.chain, pk)),
                _ => Err(bad(
                    key,
                    format!("{} holds no private key entry", s.path.display()),
                )),
            }
        }
    }
}

/// The peers' CAs.
fn roots(trust: &TrustSource) -> Result<rustls::RootCertStore, BrokerError> {
    let (key, certs) = match trust {
        TrustSource::Pem(p) => ("brokerClientTrustCertsFilePath", pem_certs("brokerClientTrustCertsFilePath", p)?),
        TrustSource::Store(s) => ("brokerClientTlsTrustStore", store("brokerClientTlsTrustStore", s)?.trusted),
        TrustSource::None => {
            return Err(bad(
                "brokerClientTrustCertsFilePath",
                "brokerClientTlsEnabled needs the peers' CA certificates (brokerClientTrustCertsFilePath, tlsTrustCertsFilePath or brokerClientTlsTrustStore), or tlsAllowInsecureConnection=true",
            ))
        }
    };
    if certs.is_empty() {
        return Err(bad(key, "no trusted certificate in it"));
    }
    let mut roots = rustls::RootCertStore::empty();
    for c in certs {
        roots.add(c).map_err(|e| bad(key, e.to_string()))?;
    }
    Ok(roots)
}

/// The rustls client configuration of the peer connections. `plugin` is the authentication
/// plugin's certificate (`AuthenticationTls`), presented instead of the settings' one.
/// Reads files: call it off the async workers.
///
/// # Errors
/// [`BrokerError::InvalidConfig`] naming the setting whose file is missing or unusable.
pub fn client_config(
    tls: &BrokerClientTls,
    plugin: Option<&TlsIdentity>,
) -> Result<Arc<rustls::ClientConfig>, BrokerError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = if tls.allow_insecure {
        Arc::new(AnyCertificate(Arc::clone(&provider)))
    } else {
        let webpki = WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots(&tls.trust)?),
            Arc::clone(&provider),
        )
        .build()
        .map_err(|e| bad("brokerClientTrustCertsFilePath", e.to_string()))?;
        Arc::new(PeerVerifier {
            webpki,
            hostname_verification: tls.hostname_verification,
        })
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad("brokerClientTlsProtocols", e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let chosen = match (plugin, &tls.identity) {
        (Some(id), _) => Some(("brokerClientAuthenticationParameters", id)),
        (None, Some(id @ TlsIdentity::Pem { .. })) => Some(("brokerClientCertificateFilePath", id)),
        (None, Some(id)) => Some(("brokerClientTlsKeyStore", id)),
        (None, None) => None,
    };
    let config = match chosen {
        Some((key, id)) => {
            let (chain, pk) = identity(key, id)?;
            builder
                .with_client_auth_cert(chain, pk)
                .map_err(|e| bad(key, format!("certificate and key: {e}")))?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// The configuration of a broker whose peer connections are plain: used only for an `https://`
/// URL nobody configured (every such handshake fails: it trusts nothing).
#[must_use]
pub fn trusting_nothing() -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map(|b| {
            b.with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth()
        });
    match config {
        Ok(c) => Arc::new(c),
        // The ring provider supports the default versions; this is unreachable in practice.
        Err(_) => Arc::new(
            rustls::ClientConfig::builder()
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth(),
        ),
    }
}

/// The chain checked against the peers' CAs; the name only with `tlsHostnameVerificationEnabled`.
#[derive(Debug)]
struct PeerVerifier {
    /// rustls's own verifier over the configured CAs.
    webpki: Arc<WebPkiServerVerifier>,
    /// Whether a certificate that does not name the host is refused.
    hostname_verification: bool,
}

impl ServerCertVerifier for PeerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            // rustls checks the name last, after the chain: a name error means the chain held.
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.hostname_verification => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// `tlsAllowInsecureConnection`: any certificate; the handshake's signatures still checked.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
