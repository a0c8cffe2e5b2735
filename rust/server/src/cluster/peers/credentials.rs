//! The credentials this broker presents on its connections to its peers
//! (`brokerClientAuthenticationPlugin` / `brokerClientAuthenticationParameters`): on CONNECT,
//! and again when a peer's AUTH_CHALLENGE asks for them (its token check found ours expired).
//! A TLS client certificate is presented on the handshake ([`super::tls`]); CONNECT then names
//! the `tls` method with no data, as Pulsar's `AuthenticationTls` does.

use axum::http::HeaderValue;
use base64::Engine as _;
use pulsar_rs_broker::config::broker_client::{BrokerClientAuth, TokenSource};

/// This broker's client credentials.
#[derive(Debug, Clone)]
pub struct Credentials(pub BrokerClientAuth);

impl Credentials {
    /// The method name and data to send now. A token file is read each time (off the async
    /// workers), so a rotated token is the one sent.
    ///
    /// # Errors
    /// A token file that cannot be read, as text.
    pub async fn current(&self) -> Result<(&'static str, Vec<u8>), String> {
        match &self.0 {
            BrokerClientAuth::Token(TokenSource::Literal(t)) => {
                Ok(("token", t.clone().into_bytes()))
            }
            BrokerClientAuth::Token(TokenSource::File(path)) => {
                let text = tokio::fs::read_to_string(path).await.map_err(|e| {
                    format!("reading the broker client's token {}: {e}", path.display())
                })?;
                Ok(("token", text.trim().as_bytes().to_vec()))
            }
            BrokerClientAuth::Basic { user, password } => {
                Ok(("basic", format!("{user}:{password}").into_bytes()))
            }
            BrokerClientAuth::Tls(_) => Ok(("tls", Vec::new())),
        }
    }

    /// The same credentials as an HTTP `Authorization` value, for calls to a peer's admin API
    /// (`Bearer` token, or `Basic`); None for a TLS certificate (no header: the handshake
    /// carries it).
    ///
    /// # Errors
    /// As [`Credentials::current`], or a value no header can carry.
    pub async fn http_authorization(&self) -> Result<Option<HeaderValue>, String> {
        let (method, data) = self.current().await?;
        let text = match method {
            "tls" => return Ok(None),
            "basic" => format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(&data)
            ),
            _ => format!("Bearer {}", String::from_utf8_lossy(&data)),
        };
        HeaderValue::from_str(&text)
            .map(Some)
            .map_err(|e| format!("the broker client's credentials as a header: {e}"))
    }
}
