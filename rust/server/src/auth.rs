//! Authentication as Pulsar's providers do it, several at once, chosen by the client's method
//! name: `token` (`AuthenticationProviderToken`, [`crate::auth_token`]), `basic` ([`crate::auth_basic`]) and `tls`
//! ([`crate::auth_tls`]: the client certificate's CN). Token credentials expire (`exp`): long-lived
//! connections are re-checked every `authenticationRefreshCheckSeconds` and sent AUTH_CHALLENGE
//! (see [`crate::auth_refresh`]). Tokens: [`crate::auth_token`].
//!
//! **Failed authentication on the binary protocol.** Java's broker answers a bad CONNECT with
//! ERROR(AuthenticationError) and closes the socket. The C++ client (and so Python) treats
//! anything but CONNECTED as the first reply as a *retryable* disconnection
//! (`ClientConnection::handleIncomingCommand`, state `TcpConnected` → `ResultDisconnected`),
//! so `create_producer` would retry until its operation timeout and raise `Timeout`. We
//! therefore answer CONNECTED, refuse the connection's first request with AuthenticationError
//! in the reply type that request expects (LOOKUP_RESPONSE / PARTITIONED_METADATA_RESPONSE
//! `Failed`, otherwise ERROR) and then close the connection: the client raises
//! `pulsar.AuthenticationError` at once, and the unauthenticated connection serves nothing.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use base64::Engine as _;
use pulsar_rs_broker::{AuthProvider, BrokerConfig, BrokerError};
use pulsar_rs_proto::pb::{self, base_command::Type};
use pulsar_rs_proto::{commands, BaseCommand, ServerError as Wire};

use crate::ServerContext;

/// Why a client could not be authenticated.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthError {
    /// No credentials, and no `anonymousUserRole`.
    #[error("authentication required: no credentials given")]
    Missing,
    /// A method no configured provider handles.
    #[error("unsupported authentication method {0:?} (this broker accepts: {1})")]
    Method(String, String),
    /// Basic credentials refused.
    #[error("{0}")]
    InvalidCredentials(String),
    /// Method `tls` without a client certificate (or on a plain connection).
    #[error("the tls method needs a client certificate on a TLS connection")]
    NoClientCertificate,
    /// The token is malformed, badly signed, expired or for another audience.
    #[error("invalid token: {0}")]
    InvalidToken(String),
    /// The token has no usable role claim.
    #[error("token has no string claim {0:?}")]
    NoRole(String),
}

pub use crate::auth_token::{read_key_material, TokenVerifier};

/// Who a client is, once authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The role.
    pub role: String,
    /// When the credentials expire (Unix seconds; token `exp`), if they do.
    pub expires_at: Option<u64>,
}

impl Identity {
    fn forever(role: String) -> Self {
        Identity {
            role,
            expires_at: None,
        }
    }

    /// Whether the credentials have expired at `now` (Unix seconds).
    #[must_use]
    pub fn expired(&self, now: u64) -> bool {
        self.expires_at.is_some_and(|e| e <= now)
    }
}

/// Authentication settings of a server; immutable after start.
#[derive(Debug)]
pub struct Authenticator {
    /// `authenticationEnabled`.
    pub enabled: bool,
    /// The token provider, when configured.
    token: Option<TokenVerifier>,
    /// The Basic provider's users, when configured.
    basic: Option<crate::auth_basic::BasicUsers>,
    /// Whether the TLS provider is configured.
    tls: bool,
    /// `anonymousUserRole`.
    anonymous_role: Option<String>,
    /// `authenticateMetricsEndpoint`.
    metrics_need_auth: bool,
    /// `authenticationRefreshCheckSeconds`.
    pub refresh_check: std::time::Duration,
}

impl Authenticator {
    /// Builds the authenticator (reads the key and users files).
    ///
    /// # Errors
    /// [`BrokerError::InvalidConfig`] for unusable key settings.
    pub fn from_config(c: &BrokerConfig) -> Result<Self, BrokerError> {
        let token = if c.has_provider(AuthProvider::Token) {
            Some(TokenVerifier::from_config(c)?)
        } else {
            None
        };
        let basic = match (&c.basic_auth_conf, c.has_provider(AuthProvider::Basic)) {
            (Some(spec), true) => Some(crate::auth_basic::BasicUsers::load(spec)?),
            _ => None,
        };
        Ok(Authenticator {
            enabled: c.authentication_enabled,
            token,
            basic,
            tls: c.has_provider(AuthProvider::Tls),
            anonymous_role: c.anonymous_user_role.clone(),
            metrics_need_auth: c.authenticate_metrics_endpoint,
            refresh_check: std::time::Duration::from_secs(c.authentication_refresh_check_seconds),
        })
    }

    /// Whether the TLS provider wants client certificates.
    #[must_use]
    pub fn wants_client_certificates(&self) -> bool {
        self.tls
    }

    fn methods(&self) -> String {
        let mut m = Vec::new();
        if self.token.is_some() {
            m.push("token");
        }
        if self.basic.is_some() {
            m.push("basic");
        }
        if self.tls {
            m.push("tls");
        }
        m.join(", ")
    }

    /// Authenticates `(method, data)` credentials; `peer_cn` is the CN of the client certificate
    /// of a TLS connection. `Ok(None)`: authentication is off and there is no anonymous role.
    ///
    /// # Errors
    /// Why the credentials are refused.
    pub fn authenticate(
        &self,
        method: &str,
        data: &[u8],
        peer_cn: Option<&str>,
    ) -> Result<Option<Identity>, AuthError> {
        if !self.enabled {
            return Ok(self.anonymous_role.clone().map(Identity::forever));
        }
        match method {
            "token" if self.token.is_some() => {
                let token = std::str::from_utf8(data)
                    .map_err(|_| AuthError::InvalidToken("not UTF-8".into()))?
                    .trim();
                let token = token.strip_prefix("token:").unwrap_or(token);
                if token.is_empty() {
                    return Err(AuthError::Missing);
                }
                let verifier = self.token.as_ref().ok_or(AuthError::Missing)?;
                verifier.verify_identity(token).map(Some)
            }
            "basic" if self.basic.is_some() => {
                let users = self.basic.as_ref().ok_or(AuthError::Missing)?;
                users.authenticate(data).map(|r| Some(Identity::forever(r)))
            }
            "tls" if self.tls => peer_cn
                .map(|cn| Some(Identity::forever(cn.to_owned())))
                .ok_or(AuthError::NoClientCertificate),
            // No provider of that name (`none`, no method, or one not configured): Pulsar's
            // `ServerCnx.handleConnect` then gives the anonymous role when there is one, and
            // refuses the connection when there is none; the data is not looked at.
            "" | "none" => self
                .anonymous_role
                .clone()
                .map(|r| Some(Identity::forever(r)))
                .ok_or(AuthError::Missing),
            other => self
                .anonymous_role
                .clone()
                .map(|r| Some(Identity::forever(r)))
                .ok_or_else(|| AuthError::Method(other.to_owned(), self.methods())),
        }
    }

    /// Authenticates a CONNECT (or an AUTH_RESPONSE's data).
    ///
    /// # Errors
    /// Why the connection is refused.
    pub fn authenticate_connect(
        &self,
        c: &pb::CommandConnect,
        peer_cn: Option<&str>,
    ) -> Result<Option<Identity>, AuthError> {
        let method = c.auth_method_name.as_deref().unwrap_or("");
        let data = c.auth_data.as_deref().unwrap_or_default();
        self.authenticate(method, data, peer_cn)
    }

    /// Authenticates an admin request: `Authorization: Bearer <jwt>` (token), `Basic
    /// <base64 user:password>` (basic), or else the client certificate (tls) or the anonymous
    /// role.
    ///
    /// # Errors
    /// Why the request is refused.
    pub fn authenticate_http(
        &self,
        authorization: Option<&str>,
        peer_cn: Option<&str>,
    ) -> Result<Option<String>, AuthError> {
        let id = match authorization {
            None if self.tls && peer_cn.is_some() => self.authenticate("tls", b"", peer_cn),
            None => self.authenticate("none", b"", None),
            Some(h) => {
                let (scheme, rest) = h.split_once(' ').unwrap_or((h, ""));
                if scheme.eq_ignore_ascii_case("bearer") {
                    self.authenticate("token", rest.trim().as_bytes(), None)
                } else if scheme.eq_ignore_ascii_case("basic") {
                    let data = base64::engine::general_purpose::STANDARD
                        .decode(rest.trim())
                        .map_err(|_| {
                            AuthError::InvalidCredentials("Base64 decoding failed".into())
                        })?;
                    self.authenticate("basic", &data, None)
                } else {
                    Err(AuthError::Method(scheme.to_owned(), self.methods()))
                }
            }
        };
        id.map(|i| i.map(|i| i.role))
    }
}

/// The reply refusing `cmd` on a connection whose CONNECT failed authentication, in the
/// frame type the client waits on for that request; `None` for commands without a request id.
#[must_use]
pub fn refusal(ty: Type, cmd: &BaseCommand, reason: &str) -> Option<BaseCommand> {
    let code = Wire::AuthenticationError;
    let msg = format!("Failed to authenticate: {reason}");
    let rid = |id: Option<u64>| id.map(|r| commands::error(r, code, msg.clone()));
    match ty {
        Type::PartitionedMetadata => cmd
            .partition_metadata
            .as_ref()
            .map(|c| commands::partitioned_metadata_failed(c.request_id, code, msg.clone())),
        Type::Lookup => cmd
            .lookup_topic
            .as_ref()
            .map(|c| commands::lookup_failed(c.request_id, code, msg.clone())),
        Type::GetSchema => cmd
            .get_schema
            .as_ref()
            .map(|c| commands::get_schema_response_error(c.request_id, code, msg.clone())),
        Type::ConsumerStats => cmd
            .consumer_stats
            .as_ref()
            .map(|c| commands::consumer_stats_response_error(c.request_id, code, msg.clone())),
        Type::Producer => rid(cmd.producer.as_ref().map(|c| c.request_id)),
        Type::Subscribe => rid(cmd.subscribe.as_ref().map(|c| c.request_id)),
        Type::CloseProducer => rid(cmd.close_producer.as_ref().map(|c| c.request_id)),
        Type::CloseConsumer => rid(cmd.close_consumer.as_ref().map(|c| c.request_id)),
        Type::Unsubscribe => rid(cmd.unsubscribe.as_ref().map(|c| c.request_id)),
        Type::Seek => rid(cmd.seek.as_ref().map(|c| c.request_id)),
        Type::GetLastMessageId => rid(cmd.get_last_message_id.as_ref().map(|c| c.request_id)),
        Type::GetTopicsOfNamespace => {
            rid(cmd.get_topics_of_namespace.as_ref().map(|c| c.request_id))
        }
        Type::GetOrCreateSchema => rid(cmd.get_or_create_schema.as_ref().map(|c| c.request_id)),
        _ => None,
    }
}

/// Admin API guard: authenticates the Bearer token (401 on failure) and, with authorization
/// on, lets through what [`crate::authz::Authorizer::allows_admin`] allows (superusers, tenant
/// admins on their tenant, topic reads with a grant). Pulsar answers both failures with 401.
pub(crate) async fn admin_guard(
    State(ctx): State<Arc<ServerContext>>,
    req: Request,
    next: Next,
) -> Response {
    let path = req.uri().path().to_owned();
    if path == "/metrics" && !ctx.auth.metrics_need_auth {
        return next.run(req).await;
    }
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let role = if ctx.auth.enabled {
        let peer_cn = req
            .extensions()
            .get::<axum::extract::ConnectInfo<crate::auth_tls::ClientCn>>()
            .and_then(|c| c.0 .0.clone());
        match ctx.auth.authenticate_http(header, peer_cn.as_deref()) {
            Ok(role) => role,
            Err(e) => {
                tracing::info!(%path, error = %e, "admin request refused: authentication");
                return crate::admin::fail(
                    StatusCode::UNAUTHORIZED,
                    format!("Authentication required: {e}"),
                );
            }
        }
    } else {
        None
    };
    // As Java's broker: admin authorization applies only to authenticated requests.
    if ctx.auth.enabled
        && ctx.authz.enabled
        && !ctx.authz.allows_admin(role.as_deref(), req.method(), &path)
    {
        // Beyond the admin rules, the REST lookup and a namespace's topic list (HTTP service
        // URLs, pattern subscriptions) are open to roles granted lookup on the topic/namespace.
        let get = req.method() == axum::http::Method::GET;
        let allowed = get
            && (lookup_topic_path(&path).is_some_and(|t| {
                ctx.authz
                    .check(role.as_deref(), &t, crate::authz::Action::Lookup)
                    .is_ok()
            }) || namespace_topics_path(&path)
                .is_some_and(|ns| ctx.authz.check_namespace(role.as_deref(), &ns).is_ok()));
        if !allowed {
            tracing::info!(%path, role = ?role, "admin request refused: authorization");
            return crate::admin::fail(
                StatusCode::UNAUTHORIZED,
                "This operation requires super-user access",
            );
        }
    }
    next.run(req).await
}

/// The namespace of `/admin/v2/namespaces/{t}/{ns}/topics` (REST lookup of a pattern
/// subscription), which a role with a namespace grant may read.
fn namespace_topics_path(path: &str) -> Option<String> {
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segs.as_slice() {
        ["admin", "v2", "namespaces", t, ns, "topics"] => Some(format!("{t}/{ns}")),
        _ => None,
    }
}

/// The topic of a REST lookup (`/lookup/v2/topic/persistent/t/ns/topic`).
fn lookup_topic_path(path: &str) -> Option<pulsar_rs_broker::TopicName> {
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segs.as_slice() {
        ["lookup", "v2", "topic", domain, t, ns, topic] => {
            pulsar_rs_broker::TopicName::parse(&format!("{domain}://{t}/{ns}/{topic}")).ok()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
    use serde_json::json;

    fn now() -> i64 {
        i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs(),
        )
        .unwrap()
    }

    fn hs_config(secret: &[u8]) -> BrokerConfig {
        BrokerConfig {
            authentication_enabled: true,
            authentication_providers: vec!["token".into()],
            token_secret_key: Some(format!(
                "data:;base64,{}",
                base64::engine::general_purpose::STANDARD.encode(secret)
            )),
            ..BrokerConfig::default()
        }
    }

    fn hs_token(secret: &[u8], claims: &serde_json::Value) -> String {
        encode(
            &Header::default(),
            claims,
            &EncodingKey::from_secret(secret),
        )
        .unwrap()
    }

    #[test]
    fn key_material_forms() {
        assert_eq!(
            read_key_material("k", "data:;base64,c2VjcmV0").unwrap(),
            b"secret"
        );
        assert_eq!(
            read_key_material("k", "data:application/octet-stream;base64,c2VjcmV0").unwrap(),
            b"secret"
        );
        assert_eq!(read_key_material("k", "data:,a%20b").unwrap(), b"a b");
        assert_eq!(read_key_material("k", "c2VjcmV0").unwrap(), b"secret");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("key");
        std::fs::write(&p, b"raw-bytes").unwrap();
        let url = format!("file://{}", p.display());
        assert_eq!(read_key_material("k", &url).unwrap(), b"raw-bytes");
        assert_eq!(
            read_key_material("k", p.to_str().unwrap()).unwrap(),
            b"raw-bytes"
        );
        let e = read_key_material("tokenSecretKey", "file:///no/such/file")
            .unwrap_err()
            .to_string();
        assert!(e.contains("tokenSecretKey"), "{e}");
        assert!(read_key_material("k", "not base64 !!").is_err());
    }

    #[test]
    fn hs256_roles_expiry_and_signature() {
        let secret = b"0123456789abcdef0123456789abcdef";
        let v = TokenVerifier::from_config(&hs_config(secret)).unwrap();
        assert_eq!(
            v.verify(&hs_token(secret, &json!({"sub": "alice"})))
                .unwrap(),
            "alice"
        );
        let t = hs_token(secret, &json!({"sub": "bob", "exp": now() + 3600}));
        assert_eq!(v.verify(&t).unwrap(), "bob");
        let expired = hs_token(secret, &json!({"sub": "bob", "exp": now() - 10}));
        assert!(matches!(
            v.verify(&expired),
            Err(AuthError::InvalidToken(_))
        ));
        let forged = hs_token(b"another secret, long enough....", &json!({"sub": "alice"}));
        assert!(matches!(v.verify(&forged), Err(AuthError::InvalidToken(_))));
        assert!(matches!(
            v.verify(&hs_token(secret, &json!({"name": "x"}))),
            Err(AuthError::NoRole(_))
        ));
        assert!(matches!(
            v.verify("garbage"),
            Err(AuthError::InvalidToken(_))
        ));
    }

    #[test]
    fn custom_claim_and_audience() {
        let secret = b"0123456789abcdef0123456789abcdef";
        let mut c = hs_config(secret);
        c.token_auth_claim = "role".into();
        c.token_audience = Some("brokers".into());
        let v = TokenVerifier::from_config(&c).unwrap();
        let ok = hs_token(secret, &json!({"role": "r1", "aud": ["x", "brokers"]}));
        assert_eq!(v.verify(&ok).unwrap(), "r1");
        let other = hs_token(secret, &json!({"role": "r1", "aud": "x"}));
        assert!(v.verify(&other).is_err());
    }

    #[test]
    fn authenticator_methods() {
        let secret = b"0123456789abcdef0123456789abcdef";
        let a = Authenticator::from_config(&hs_config(secret)).unwrap();
        let role = |r: Result<Option<Identity>, AuthError>| r.unwrap().map(|i| i.role);
        let t = hs_token(secret, &json!({"sub": "alice"}));
        assert_eq!(
            role(a.authenticate("token", t.as_bytes(), None)).as_deref(),
            Some("alice")
        );
        assert_eq!(a.authenticate("none", b"", None), Err(AuthError::Missing));
        assert!(matches!(
            a.authenticate("basic", b"u:p", None),
            Err(AuthError::Method(..))
        ));
        assert!(matches!(
            a.authenticate("tls", b"", Some("cn")),
            Err(AuthError::Method(..))
        ));
        let h = format!("Bearer {t}");
        assert_eq!(
            a.authenticate_http(Some(&h), None).unwrap().as_deref(),
            Some("alice")
        );
        assert_eq!(a.authenticate_http(None, None), Err(AuthError::Missing));
        let exp = now() + 100;
        let t = hs_token(secret, &json!({"sub": "alice", "exp": exp}));
        let id = a
            .authenticate("token", t.as_bytes(), None)
            .unwrap()
            .unwrap();
        assert_eq!(id.expires_at, Some(u64::try_from(exp).unwrap()));
        assert!(!id.expired(u64::try_from(exp).unwrap() - 1));
        assert!(id.expired(u64::try_from(exp).unwrap()));
        let mut c = hs_config(secret);
        c.anonymous_user_role = Some("anon".into());
        let a = Authenticator::from_config(&c).unwrap();
        assert_eq!(
            role(a.authenticate("none", b"", None)).as_deref(),
            Some("anon")
        );
        // A method no provider has: the anonymous role, whatever the data (ServerCnx).
        assert_eq!(
            role(a.authenticate("unknown", b"admin:123456", None)).as_deref(),
            Some("anon")
        );
        assert_eq!(
            role(a.authenticate("basic", b"admin:123456", None)).as_deref(),
            Some("anon")
        );
        let off = Authenticator::from_config(&BrokerConfig::default()).unwrap();
        assert_eq!(off.authenticate("token", b"anything", None).unwrap(), None);
    }

    #[test]
    fn several_providers_by_method_name() {
        let secret = b"0123456789abcdef0123456789abcdef";
        let mut c = hs_config(secret);
        c.authentication_providers = vec![
            "org.apache.pulsar.broker.authentication.AuthenticationProviderTls".into(),
            "org.apache.pulsar.broker.authentication.AuthenticationProviderToken".into(),
            "org.apache.pulsar.broker.authentication.AuthenticationProviderBasic".into(),
        ];
        c.basic_auth_conf = Some("data:,admin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.".into());
        c.tls_trust_certs_file_path = Some("/ca.pem".into());
        let a = Authenticator::from_config(&c).unwrap();
        let role = |r: Result<Option<Identity>, AuthError>| r.unwrap().map(|i| i.role);
        let t = hs_token(secret, &json!({"sub": "alice"}));
        assert_eq!(
            role(a.authenticate("token", t.as_bytes(), None)).as_deref(),
            Some("alice")
        );
        assert_eq!(
            role(a.authenticate("basic", b"admin:123456", None)).as_deref(),
            Some("admin")
        );
        assert!(a.authenticate("basic", b"admin:wrong", None).is_err());
        assert_eq!(
            role(a.authenticate("tls", b"", Some("client"))).as_deref(),
            Some("client")
        );
        assert_eq!(
            a.authenticate("tls", b"", None),
            Err(AuthError::NoClientCertificate)
        );
        let basic = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("admin:123456")
        );
        assert_eq!(
            a.authenticate_http(Some(&basic), None).unwrap().as_deref(),
            Some("admin")
        );
        assert_eq!(
            a.authenticate_http(None, Some("cn1")).unwrap().as_deref(),
            Some("cn1")
        );
        assert!(a.wants_client_certificates());
    }

    /// A throwaway RSA key made for this test only.
    /// PKCS#1 DER, base64.
    const TEST_RSA_PRIVATE_DER_B64: &str = "MIIEowIBAAKCAQEAvl+aqDzipMh6l8eZWlCjYbDtrzwntcVtdfQkyZ+YkuPOw0fIviw43bpPmAiYl8VDBkoOcsYWkKLE3p5LnvSZHp4psLmVbhYKtZouSCrgL/jeh6i5OezL5RCefYk7m25CtiLtotZVW9Plf4HXlgy3N2aJWYbH5CByb697cgi7zphZKWKrsNg+Ea62jqDgGyq2TGD72m3osfDPBCOryLBiz/zDJzn8r3VNO1+bV5OXVXaTAm1i08rR2lFnkpyJs0WUpgoHs594xF8vSyMe0MFmhxtjeyiB/ZCy6ofSk73N3oyd2wO6cgZFA8Ebd3XBZjzfZOO3sm+2DuRt5szx7CgIkwIDAQABAoIBAB1dCLFPZtPs2j/j+Qrdqj2suRSQzj0yvP33EN+KftGVUrR7M4LltkW48YLtPIAYXIyxSoY4eI2JlZ0SxG45ow5+bcbE8UAAJVm6dM4L0vWDSOuawislk5N62z9Ytfl06dRHEelObu8RgXIH2HVb87yXU7Mb32QX/x6r7fn6T+F/CJ1JzdfuPuFpyKAUvmIc+tlukwraliHDS0gIHIOVrWP4cNiribKW6D0qLrwN/lsVwHuZ7wezceDth0z4x/K63eqaBZILA3jyHjGdu3joGSJgG2L/wMqtHpOQo/ZMrnUo5cmaweH3tatzwE7B83h7n4KdvrrIoVQ6+rf459CNPRECgYEA+AMPQo2z+0ruFbLy2jhuBBh7IPWTCjcSFttsLOzJ//ao1wHG35Nl8BqXMmK7TxO3LphQnDl9vX9JJChGxR9VuFokKLgza+bykZhJinOs+ZCzQf10kWEYXbz2+c4GJW/re4YI9Lrn3EjbbZf+wNcsl2giyxTRLJie2JINy07tquMCgYEAxIFLzBB2SAb/lfv/gf7dPW4sUrjZYA9t+6e5uRbgpo1bPv60e0C9rn8FHfmgI3URA4Lh8SVMmKhj+Qw/8IeOv0zF8bicrJ4SKdestrN5mU7CpjFHznZBrKwFlSsNeoWDseNOYkUnJ84FDPGNnKCPmprTweqpgzkNjXTEbINLKpECgYAtMDmGkdUaU1PABmPzWNbKzj8ZCUWqVdBo87/pC5femG25ByzaLbwkHGQyHQUt6lS1G7GMVXlQnrGP8fq7DfOLbHksJivQXDsURiAYJu18Z14SBwFHP961ral+aIh8J8FLN2fIV4nJfEjm1gvnzQzl5WZ5hCh8rK48nZf/1Di/qwKBgCyNkCztUpQUGiDcaNsFeQ3zi9MZnBd+iBY1uhMwD7FTfWuz/iGv1RHaNMPOFDPV2AyuwSGWrl4yV7BgyaJ0abYP5xVeIQ+2KzIXd05ZNOnAhLt/kuNJxqwquH1QrJap7OkJO31mZnFM8bI0lkH72XNZRUfDN7nL1rnKzro3rnQxAoGBANYnuqLBmAlcFmkWESSN8LcPhXXVX0QTcmy89bOgDgmQEHqsBuLHGhXcOnMppgBN0/pHtlPQkYrkPHaM+GjJZUvzkKX9X2QqblLmdQqdqqWiUWdba5knKuEivlqXcb34dMcmlYjkpoLIv73IKuDojtXuQPk1wwBLnGtO0wC4aBef";
    const TEST_RSA_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAvl+aqDzipMh6l8eZWlCj
YbDtrzwntcVtdfQkyZ+YkuPOw0fIviw43bpPmAiYl8VDBkoOcsYWkKLE3p5LnvSZ
Hp4psLmVbhYKtZouSCrgL/jeh6i5OezL5RCefYk7m25CtiLtotZVW9Plf4HXlgy3
N2aJWYbH5CByb697cgi7zphZKWKrsNg+Ea62jqDgGyq2TGD72m3osfDPBCOryLBi
z/zDJzn8r3VNO1+bV5OXVXaTAm1i08rR2lFnkpyJs0WUpgoHs594xF8vSyMe0MFm
hxtjeyiB/ZCy6ofSk73N3oyd2wO6cgZFA8Ebd3XBZjzfZOO3sm+2DuRt5szx7CgI
kwIDAQAB
-----END PUBLIC KEY-----";
    const TEST_RSA_PUBLIC_DER_B64: &str = "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAvl+aqDzipMh6l8eZWlCjYbDtrzwntcVtdfQkyZ+YkuPOw0fIviw43bpPmAiYl8VDBkoOcsYWkKLE3p5LnvSZHp4psLmVbhYKtZouSCrgL/jeh6i5OezL5RCefYk7m25CtiLtotZVW9Plf4HXlgy3N2aJWYbH5CByb697cgi7zphZKWKrsNg+Ea62jqDgGyq2TGD72m3osfDPBCOryLBiz/zDJzn8r3VNO1+bV5OXVXaTAm1i08rR2lFnkpyJs0WUpgoHs594xF8vSyMe0MFmhxtjeyiB/ZCy6ofSk73N3oyd2wO6cgZFA8Ebd3XBZjzfZOO3sm+2DuRt5szx7CgIkwIDAQAB";

    #[test]
    fn rs256_with_pem_and_der_public_keys() {
        let dir = tempfile::tempdir().unwrap();
        let pem_path = dir.path().join("public.pem");
        std::fs::write(&pem_path, TEST_RSA_PUBLIC).unwrap();
        let signer = EncodingKey::from_rsa_der(
            &base64::engine::general_purpose::STANDARD
                .decode(TEST_RSA_PRIVATE_DER_B64)
                .unwrap(),
        );
        let token = encode(
            &Header::new(Algorithm::RS256),
            &json!({"sub": "rsa-user", "exp": now() + 60}),
            &signer,
        )
        .unwrap();
        for spec in [
            format!("file://{}", pem_path.display()),
            format!("data:;base64,{TEST_RSA_PUBLIC_DER_B64}"),
        ] {
            let c = BrokerConfig {
                authentication_enabled: true,
                authentication_providers: vec!["token".into()],
                token_public_key: Some(spec),
                ..BrokerConfig::default()
            };
            let v = TokenVerifier::from_config(&c).unwrap();
            assert_eq!(v.verify(&token).unwrap(), "rsa-user");
            // An HMAC token is refused when only a public key is configured.
            let hs = hs_token(b"0123456789abcdef0123456789abcdef", &json!({"sub": "x"}));
            assert!(v.verify(&hs).is_err());
        }
        let expired = encode(
            &Header::new(Algorithm::RS256),
            &json!({"sub": "rsa-user", "exp": now() - 5}),
            &signer,
        )
        .unwrap();
        let c = BrokerConfig {
            token_public_key: Some(format!("data:;base64,{TEST_RSA_PUBLIC_DER_B64}")),
            ..BrokerConfig::default()
        };
        assert!(TokenVerifier::from_config(&c)
            .unwrap()
            .verify(&expired)
            .is_err());
    }

    #[test]
    fn refusals_use_the_expected_reply_types() {
        let lookup = commands::lookup("persistent://a/b/c", 7);
        let r = refusal(Type::Lookup, &lookup, "x").unwrap();
        let l = r.lookup_topic_response.unwrap();
        assert_eq!(l.request_id, 7);
        assert_eq!(l.error, Some(Wire::AuthenticationError as i32));
        let pm = commands::partitioned_metadata_request("persistent://a/b/c", 8);
        let r = refusal(Type::PartitionedMetadata, &pm, "x").unwrap();
        assert_eq!(r.partition_metadata_response.unwrap().request_id, 8);
        let flow = commands::flow(1, 10);
        assert!(refusal(Type::Flow, &flow, "x").is_none());
    }
}
