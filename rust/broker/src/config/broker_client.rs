//! The broker as a client of the other brokers of its cluster: the credentials it presents on
//! the connections it opens to them (Pulsar's `brokerClientAuthenticationPlugin` and
//! `brokerClientAuthenticationParameters`: a token, a Basic user or a TLS client certificate,
//! as Pulsar's `AuthenticationToken`, `AuthenticationBasic`, `AuthenticationTls` and
//! `AuthenticationKeyStoreTls` read their parameters), and whether those connections use TLS
//! (`brokerClientTlsEnabled` and the settings around it, [`BrokerClientTls`]).

use std::path::PathBuf;

use super::{bad, BrokerConfig};
use crate::error::BrokerError;

/// Where a token comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// The token itself (`token:<jwt>`, `{"token":"<jwt>"}` or the bare token).
    Literal(String),
    /// A file holding it (`file:///path`), read on every connection (a rotated token is used).
    File(PathBuf),
}

/// A TLS client identity: a certificate chain and its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsIdentity {
    /// PEM files (`tlsCertFile` / `tlsKeyFile`, `brokerClientCertificateFilePath` /
    /// `brokerClientKeyFilePath`).
    Pem {
        /// The certificate chain, leaf first.
        cert: PathBuf,
        /// The private key.
        key: PathBuf,
    },
    /// A Java key store (`keyStorePath`, `brokerClientTlsKeyStore`).
    KeyStore(StoreFile),
}

/// A Java key or trust store file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreFile {
    /// `JKS` or `PKCS12`.
    pub store_type: String,
    /// The file.
    pub path: PathBuf,
    /// Its password.
    pub password: String,
}

/// The credentials of the broker's own client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrokerClientAuth {
    /// `AuthenticationTls` / `AuthenticationKeyStoreTls`: the `tls` method, the certificate
    /// presented on the TLS handshake (nothing on plain TCP, where the peer refuses it).
    Tls(TlsIdentity),
    /// `AuthenticationToken`: the `token` method.
    Token(TokenSource),
    /// `AuthenticationBasic`: the `basic` method, `user:password`.
    Basic {
        /// `userId`.
        user: String,
        /// `password`.
        password: String,
    },
}

/// Where the certificates that a peer's certificate must chain to come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustSource {
    /// PEM CA certificates (`brokerClientTrustCertsFilePath`, else `tlsTrustCertsFilePath`).
    Pem(PathBuf),
    /// A trust store (`brokerClientTlsTrustStore`).
    Store(StoreFile),
    /// None configured: every connection is refused unless `tlsAllowInsecureConnection`.
    None,
}

/// How the broker's connections to its peers use TLS (`brokerClientTlsEnabled`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerClientTls {
    /// The peers' CAs.
    pub trust: TrustSource,
    /// The client certificate from the TLS settings (`brokerClientCertificateFilePath`, or the
    /// key store); the authentication plugin's, when it has one, is presented instead.
    pub identity: Option<TlsIdentity>,
    /// `tlsAllowInsecureConnection`: no check of the peer's certificate.
    pub allow_insecure: bool,
    /// `tlsHostnameVerificationEnabled`: the peer's certificate must name its host.
    pub hostname_verification: bool,
}

const PLUGIN: &str = "brokerClientAuthenticationPlugin";
const PARAMS: &str = "brokerClientAuthenticationParameters";

/// Pulsar's two spellings of a plugin's parameters: a JSON object of strings, or
/// `key1:value1,key2:value2` (a value may hold `:`, as a path or URL does).
fn param_map(params: &str) -> Result<std::collections::HashMap<String, String>, BrokerError> {
    let p = params.trim();
    if p.starts_with('{') {
        let v: std::collections::HashMap<String, serde_json::Value> =
            serde_json::from_str(p).map_err(|e| bad(PARAMS, &format!("not a JSON object: {e}")))?;
        return Ok(v
            .into_iter()
            .map(|(k, v)| {
                let text = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                (k, text)
            })
            .collect());
    }
    Ok(p.split(',')
        .filter_map(|kv| kv.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect())
}

/// A path parameter, `file:` URLs read as paths.
fn path_param(v: &str) -> PathBuf {
    PathBuf::from(v.strip_prefix("file://").unwrap_or(v))
}

fn tls_identity(params: &str, key_store: bool) -> Result<TlsIdentity, BrokerError> {
    let m = param_map(params)?;
    let need = |k: &str| {
        m.get(k)
            .filter(|v| !v.is_empty())
            .cloned()
            .ok_or_else(|| bad(PARAMS, &format!("needs \"{k}\"")))
    };
    if key_store {
        return Ok(TlsIdentity::KeyStore(StoreFile {
            store_type: m
                .get("keyStoreType")
                .cloned()
                .unwrap_or_else(|| "JKS".into()),
            path: path_param(&need("keyStorePath")?),
            password: m.get("keyStorePassword").cloned().unwrap_or_default(),
        }));
    }
    Ok(TlsIdentity::Pem {
        cert: path_param(&need("tlsCertFile")?),
        key: path_param(&need("tlsKeyFile")?),
    })
}

fn token_source(params: &str) -> Result<TokenSource, BrokerError> {
    let p = params.trim();
    if let Some(t) = p.strip_prefix("token:") {
        return Ok(TokenSource::Literal(t.trim().to_owned()));
    }
    if let Some(rest) = p.strip_prefix("file:") {
        // `file:///path` and `file:/path` name the same absolute path.
        let path = rest.trim_start_matches("//");
        if path.is_empty() {
            return Err(bad(PARAMS, "file: names no file"));
        }
        return Ok(TokenSource::File(PathBuf::from(path)));
    }
    if p.starts_with('{') {
        let v: serde_json::Value =
            serde_json::from_str(p).map_err(|e| bad(PARAMS, &format!("not a JSON object: {e}")))?;
        return v
            .get("token")
            .and_then(serde_json::Value::as_str)
            .map(|t| TokenSource::Literal(t.to_owned()))
            .ok_or_else(|| bad(PARAMS, "the JSON object has no \"token\""));
    }
    if p.is_empty() {
        return Err(bad(PARAMS, "AuthenticationToken needs a token"));
    }
    Ok(TokenSource::Literal(p.to_owned()))
}

fn basic(params: &str) -> Result<BrokerClientAuth, BrokerError> {
    let v: serde_json::Value = serde_json::from_str(params.trim()).map_err(|e| {
        bad(
            PARAMS,
            &format!("AuthenticationBasic takes {{\"userId\":...,\"password\":...}}: {e}"),
        )
    })?;
    let field = |k: &str| {
        v.get(k)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| bad(PARAMS, &format!("AuthenticationBasic needs \"{k}\"")))
    };
    Ok(BrokerClientAuth::Basic {
        user: field("userId")?,
        password: field("password")?,
    })
}

impl BrokerConfig {
    /// The credentials this broker presents to its peers (None: it connects without).
    ///
    /// # Errors
    /// [`BrokerError::InvalidConfig`]: a plugin pulsar-rs's peer connections cannot use (a
    /// class of the user's own) or parameters it does not take.
    pub fn broker_client_auth(&self) -> Result<Option<BrokerClientAuth>, BrokerError> {
        let plugin = self
            .broker_client_authentication_plugin
            .as_deref()
            .map(str::trim)
            .unwrap_or_default();
        let params = self
            .broker_client_authentication_parameters
            .as_deref()
            .unwrap_or_default();
        let short = plugin.rsplit('.').next().unwrap_or_default();
        match short {
            "" | "AuthenticationDisabled" => Ok(None),
            "AuthenticationToken" | "token" => {
                Ok(Some(BrokerClientAuth::Token(token_source(params)?)))
            }
            "AuthenticationBasic" | "basic" => basic(params).map(Some),
            "AuthenticationTls" | "tls" => {
                Ok(Some(BrokerClientAuth::Tls(tls_identity(params, false)?)))
            }
            "AuthenticationKeyStoreTls" => {
                Ok(Some(BrokerClientAuth::Tls(tls_identity(params, true)?)))
            }
            _ => Err(bad(
                PLUGIN,
                "must be one of org.apache.pulsar.client.impl.auth.AuthenticationToken, AuthenticationBasic, AuthenticationTls or AuthenticationKeyStoreTls",
            )),
        }
    }
}

/// A setting's value unless it is missing or blank (Pulsar's `isNotBlank`).
fn nonblank(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

impl BrokerConfig {
    /// How this broker's connections to its peers use TLS (None: plain TCP and HTTP), as
    /// Pulsar's broker builds its own client: PEM files, or with
    /// `brokerClientTlsEnabledWithKeyStore` the key and trust stores.
    ///
    /// # Errors
    /// [`BrokerError::InvalidConfig`]: a key store named without its file.
    pub fn broker_client_tls(&self) -> Result<Option<BrokerClientTls>, BrokerError> {
        if !self.broker_client_tls_enabled {
            return Ok(None);
        }
        let (trust, identity) = if self.broker_client_tls_enabled_with_key_store {
            let trust = match nonblank(&self.broker_client_tls_trust_store) {
                Some(path) => TrustSource::Store(StoreFile {
                    store_type: self.broker_client_tls_trust_store_type.clone(),
                    path: path.into(),
                    password: self
                        .broker_client_tls_trust_store_password
                        .clone()
                        .unwrap_or_default(),
                }),
                None => TrustSource::None,
            };
            let identity = nonblank(&self.broker_client_tls_key_store).map(|path| {
                TlsIdentity::KeyStore(StoreFile {
                    store_type: self.broker_client_tls_key_store_type.clone(),
                    path: path.into(),
                    password: self
                        .broker_client_tls_key_store_password
                        .clone()
                        .unwrap_or_default(),
                })
            });
            (trust, identity)
        } else {
            let trust = nonblank(&self.broker_client_trust_certs_file_path)
                .or_else(|| nonblank(&self.tls_trust_certs_file_path))
                .map_or(TrustSource::None, |p| TrustSource::Pem(p.into()));
            let identity = match (
                nonblank(&self.broker_client_certificate_file_path),
                nonblank(&self.broker_client_key_file_path),
            ) {
                (Some(cert), Some(key)) => Some(TlsIdentity::Pem {
                    cert: cert.into(),
                    key: key.into(),
                }),
                (None, None) => None,
                (Some(_), None) => {
                    return Err(bad(
                        "brokerClientKeyFilePath",
                        "brokerClientCertificateFilePath needs its key",
                    ))
                }
                (None, Some(_)) => {
                    return Err(bad(
                        "brokerClientCertificateFilePath",
                        "brokerClientKeyFilePath needs its certificate",
                    ))
                }
            };
            (trust, identity)
        };
        Ok(Some(BrokerClientTls {
            trust,
            identity,
            allow_insecure: self.tls_allow_insecure_connection,
            hostname_verification: self.tls_hostname_verification_enabled,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(plugin: &str, params: &str) -> Result<Option<BrokerClientAuth>, BrokerError> {
        BrokerConfig {
            broker_client_authentication_plugin: Some(plugin.into()),
            broker_client_authentication_parameters: Some(params.into()),
            ..BrokerConfig::default()
        }
        .broker_client_auth()
    }

    #[test]
    fn pulsar_spellings_of_the_broker_clients_credentials() {
        let token = "org.apache.pulsar.client.impl.auth.AuthenticationToken";
        let lit = |t: &str| Some(BrokerClientAuth::Token(TokenSource::Literal(t.into())));
        assert_eq!(auth(token, "token:abc").unwrap(), lit("abc"));
        assert_eq!(auth(token, "{\"token\":\"abc\"}").unwrap(), lit("abc"));
        assert_eq!(auth(token, "abc").unwrap(), lit("abc"));
        assert_eq!(
            auth(token, "file:///etc/pulsar/t.jwt").unwrap(),
            Some(BrokerClientAuth::Token(TokenSource::File(
                "/etc/pulsar/t.jwt".into()
            )))
        );
        assert_eq!(
            auth(
                "org.apache.pulsar.client.impl.auth.AuthenticationBasic",
                "{\"userId\":\"broker\",\"password\":\"pw\"}"
            )
            .unwrap(),
            Some(BrokerClientAuth::Basic {
                user: "broker".into(),
                password: "pw".into()
            })
        );
        assert_eq!(BrokerConfig::default().broker_client_auth().unwrap(), None);
        for (plugin, params) in [
            (token, ""),
            (
                "org.apache.pulsar.client.impl.auth.AuthenticationBasic",
                "broker:pw",
            ),
            ("org.apache.pulsar.client.impl.auth.AuthenticationTls", ""),
            ("com.example.Custom", ""),
        ] {
            let e = auth(plugin, params).unwrap_err().to_string();
            assert!(e.contains("brokerClientAuthentication"), "{e}");
        }
    }

    #[test]
    fn tls_client_certificates_as_pulsar_spells_them() {
        let pem = |c: &str, k: &str| {
            Some(BrokerClientAuth::Tls(TlsIdentity::Pem {
                cert: c.into(),
                key: k.into(),
            }))
        };
        let tls = "org.apache.pulsar.client.impl.auth.AuthenticationTls";
        // The Go client's CI configuration, verbatim.
        assert_eq!(
            auth(
                tls,
                r#"{"tlsCertFile":"/pulsar/certs/client-cert.pem","tlsKeyFile":"/pulsar/certs/client-key.pem"}"#
            )
            .unwrap(),
            pem("/pulsar/certs/client-cert.pem", "/pulsar/certs/client-key.pem")
        );
        assert_eq!(
            auth(tls, "tlsCertFile:/c.pem,tlsKeyFile:file:///k.pem").unwrap(),
            pem("/c.pem", "/k.pem")
        );
        assert_eq!(
            auth(
                "org.apache.pulsar.client.impl.auth.AuthenticationKeyStoreTls",
                "keyStoreType:PKCS12,keyStorePath:/b.p12,keyStorePassword:pw"
            )
            .unwrap(),
            Some(BrokerClientAuth::Tls(TlsIdentity::KeyStore(StoreFile {
                store_type: "PKCS12".into(),
                path: "/b.p12".into(),
                password: "pw".into()
            })))
        );
        let e = auth(tls, r#"{"tlsCertFile":"/c.pem"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("tlsKeyFile"), "{e}");
    }

    #[test]
    fn broker_client_tls_settings() {
        assert_eq!(BrokerConfig::default().broker_client_tls().unwrap(), None);
        let c = BrokerConfig {
            broker_client_tls_enabled: true,
            tls_trust_certs_file_path: Some("/server-ca.pem".into()),
            ..BrokerConfig::default()
        };
        let t = c.broker_client_tls().unwrap().unwrap();
        // Pulsar's fallback: the server's trust certificates.
        assert_eq!(t.trust, TrustSource::Pem("/server-ca.pem".into()));
        assert_eq!(t.identity, None);
        assert!(!t.hostname_verification && !t.allow_insecure);
        let c = BrokerConfig {
            broker_client_trust_certs_file_path: Some("/ca.pem".into()),
            broker_client_certificate_file_path: Some("/c.pem".into()),
            broker_client_key_file_path: Some("/k.pem".into()),
            tls_hostname_verification_enabled: true,
            ..c
        };
        let t = c.broker_client_tls().unwrap().unwrap();
        assert_eq!(t.trust, TrustSource::Pem("/ca.pem".into()));
        assert_eq!(
            t.identity,
            Some(TlsIdentity::Pem {
                cert: "/c.pem".into(),
                key: "/k.pem".into()
            })
        );
        assert!(t.hostname_verification);
        let stores = BrokerConfig {
            broker_client_tls_enabled_with_key_store: true,
            broker_client_tls_trust_store: Some("/trust.jks".into()),
            broker_client_tls_trust_store_password: Some("tpw".into()),
            broker_client_tls_key_store_type: "PKCS12".into(),
            broker_client_tls_key_store: Some("/key.p12".into()),
            ..c.clone()
        };
        let t = stores.broker_client_tls().unwrap().unwrap();
        assert_eq!(
            t.trust,
            TrustSource::Store(StoreFile {
                store_type: "JKS".into(),
                path: "/trust.jks".into(),
                password: "tpw".into()
            })
        );
        assert!(
            matches!(t.identity, Some(TlsIdentity::KeyStore(ref s)) if s.store_type == "PKCS12")
        );
        let half = BrokerConfig {
            broker_client_key_file_path: None,
            ..c
        };
        let e = half.broker_client_tls().unwrap_err().to_string();
        assert!(e.contains("brokerClientKeyFilePath"), "{e}");
    }
}
