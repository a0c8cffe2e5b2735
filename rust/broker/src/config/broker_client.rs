//! The credentials a broker presents to the other brokers of its cluster on the connections it
//! opens to them (Pulsar's `brokerClientAuthenticationPlugin` and
//! `brokerClientAuthenticationParameters`): a token or a Basic user, as Pulsar's
//! `AuthenticationToken` and `AuthenticationBasic` read their parameters.

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

/// The credentials of the broker's own client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrokerClientAuth {
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

const PLUGIN: &str = "brokerClientAuthenticationPlugin";
const PARAMS: &str = "brokerClientAuthenticationParameters";

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
    /// [`BrokerError::InvalidConfig`]: a plugin pulsar-rs's peer connections cannot use (TLS
    /// client certificates: they are plain TCP) or parameters it does not take.
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
            "AuthenticationTls" | "AuthenticationKeyStoreTls" | "tls" => Err(bad(
                PLUGIN,
                "TLS client certificates are not supported: the connections between brokers are plain TCP (use AuthenticationToken or AuthenticationBasic)",
            )),
            _ => Err(bad(
                PLUGIN,
                "must be org.apache.pulsar.client.impl.auth.AuthenticationToken or AuthenticationBasic",
            )),
        }
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
}
