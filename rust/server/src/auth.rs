//! Token authentication as Pulsar's `AuthenticationProviderToken` does it.
//!
//! A client proves its identity with a JWT: on the binary protocol in CONNECT
//! (`auth_method_name = "token"`, `auth_data = <jwt>`), on the admin API as
//! `Authorization: Bearer <jwt>`. HS256/384/512 tokens are checked with `tokenSecretKey`,
//! RS/PS/ES tokens with `tokenPublicKey` (algorithm `tokenPublicAlg`). The role is the
//! `tokenAuthClaim` claim (`sub`). `exp` and `nbf` are checked when present (Pulsar's
//! `tokens create` makes tokens without `exp` by default); `tokenAudience`, when set, must be
//! in the `tokenAudienceClaim` claim.
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
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use pulsar_rs_broker::{BrokerConfig, BrokerError};
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
    /// A method other than `token`.
    #[error("unsupported authentication method {0:?} (this broker accepts \"token\")")]
    Method(String),
    /// The token is malformed, badly signed, expired or for another audience.
    #[error("invalid token: {0}")]
    InvalidToken(String),
    /// The token has no usable role claim.
    #[error("token has no string claim {0:?}")]
    NoRole(String),
}

/// Verifies Pulsar JWTs; immutable after construction.
pub struct TokenVerifier {
    /// `tokenSecretKey`, for HS256/384/512 tokens.
    secret: Option<DecodingKey>,
    /// `tokenPublicKey` and its `tokenPublicAlg`.
    public: Option<(DecodingKey, Algorithm)>,
    /// `tokenAuthClaim`.
    role_claim: String,
    /// `tokenAudienceClaim`.
    audience_claim: String,
    /// `tokenAudience`.
    audience: Option<String>,
}

impl std::fmt::Debug for TokenVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenVerifier")
            .field("secret", &self.secret.is_some())
            .field("public", &self.public.as_ref().map(|(_, a)| *a))
            .field("role_claim", &self.role_claim)
            .finish_non_exhaustive()
    }
}

fn bad_key(key: &str, reason: impl Into<String>) -> BrokerError {
    BrokerError::InvalidConfig {
        key: key.to_owned(),
        reason: reason.into(),
    }
}

/// Reads key material given as Pulsar does: `data:[<type>][;base64],<data>`, `file:///path`
/// (or `file:/path`), a plain file path, or base64 text.
///
/// # Errors
/// [`BrokerError::InvalidConfig`] naming `key` when the value cannot be read or decoded.
pub fn read_key_material(key: &str, spec: &str) -> Result<Vec<u8>, BrokerError> {
    let b64 = base64::engine::general_purpose::STANDARD;
    if let Some(rest) = spec.strip_prefix("data:") {
        let (meta, data) = rest
            .split_once(',')
            .ok_or_else(|| bad_key(key, "a data: URL needs a comma before its data"))?;
        return if meta.split(';').any(|p| p == "base64") {
            b64.decode(data.trim())
                .map_err(|e| bad_key(key, format!("bad base64 in data: URL: {e}")))
        } else {
            Ok(percent_decode(data))
        };
    }
    if let Some(rest) = spec.strip_prefix("file:") {
        let path = rest.strip_prefix("//").unwrap_or(rest);
        return std::fs::read(path).map_err(|e| bad_key(key, format!("reading {path}: {e}")));
    }
    if std::path::Path::new(spec).is_file() {
        return std::fs::read(spec).map_err(|e| bad_key(key, format!("reading {spec}: {e}")));
    }
    b64.decode(spec.trim()).map_err(|_| {
        bad_key(
            key,
            "neither a data: or file: URL, an existing file, nor base64",
        )
    })
}

fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| char::from(c).to_digit(16);
            if let (Some(hi), Some(lo)) = (hex(b[i + 1]), hex(b[i + 2])) {
                // Two hex digits are at most 0xFF: the cast cannot truncate.
                out.push((hi * 16 + lo) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// A public key from PEM or DER (X.509 SubjectPublicKeyInfo as `pulsar tokens
/// create-key-pair` writes it, or a PKCS#1 RSA key).
fn public_key(bytes: &[u8], alg: Algorithm) -> Result<DecodingKey, String> {
    let ec = matches!(alg, Algorithm::ES256 | Algorithm::ES384);
    let pem: Vec<u8> = if bytes.starts_with(b"-----BEGIN") {
        bytes.to_vec()
    } else {
        let body = base64::engine::general_purpose::STANDARD.encode(bytes);
        let mut pem = String::from("-----BEGIN PUBLIC KEY-----\n");
        for chunk in body.as_bytes().chunks(64) {
            pem.push_str(&String::from_utf8_lossy(chunk));
            pem.push('\n');
        }
        pem.push_str("-----END PUBLIC KEY-----\n");
        pem.into_bytes()
    };
    let from_pem = if ec {
        DecodingKey::from_ec_pem(&pem)
    } else {
        DecodingKey::from_rsa_pem(&pem)
    };
    match from_pem {
        Ok(k) => Ok(k),
        Err(_) if !ec && !bytes.starts_with(b"-----BEGIN") => Ok(DecodingKey::from_rsa_der(bytes)),
        Err(e) => Err(e.to_string()),
    }
}

impl TokenVerifier {
    /// Builds the verifier from the `token*` settings.
    ///
    /// # Errors
    /// [`BrokerError::InvalidConfig`] naming the key whose value is unusable.
    pub fn from_config(c: &BrokerConfig) -> Result<Self, BrokerError> {
        let secret = match &c.token_secret_key {
            Some(spec) => {
                let bytes = read_key_material("tokenSecretKey", spec)?;
                if bytes.is_empty() {
                    return Err(bad_key("tokenSecretKey", "the key is empty"));
                }
                Some(DecodingKey::from_secret(&bytes))
            }
            None => None,
        };
        let public = match &c.token_public_key {
            Some(spec) => {
                let alg: Algorithm = c
                    .token_public_alg
                    .parse()
                    .map_err(|_| bad_key("tokenPublicAlg", "unknown algorithm"))?;
                let bytes = read_key_material("tokenPublicKey", spec)?;
                let key = public_key(&bytes, alg).map_err(|e| bad_key("tokenPublicKey", e))?;
                Some((key, alg))
            }
            None => None,
        };
        Ok(TokenVerifier {
            secret,
            public,
            role_claim: c.token_auth_claim.clone(),
            audience_claim: c.token_audience_claim.clone(),
            audience: c.token_audience.clone(),
        })
    }

    /// Checks a token and returns its role.
    ///
    /// # Errors
    /// [`AuthError::InvalidToken`] or [`AuthError::NoRole`].
    pub fn verify(&self, token: &str) -> Result<String, AuthError> {
        let invalid = |e: &dyn std::fmt::Display| AuthError::InvalidToken(e.to_string());
        let head = jsonwebtoken::decode_header(token).map_err(|e| invalid(&e))?;
        let (key, algs) = match head.alg {
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => (
                self.secret.as_ref().ok_or_else(|| {
                    AuthError::InvalidToken(
                        "HMAC tokens are not accepted (no tokenSecretKey)".into(),
                    )
                })?,
                vec![Algorithm::HS256, Algorithm::HS384, Algorithm::HS512],
            ),
            alg => match &self.public {
                Some((k, a)) if *a == alg => (k, vec![alg]),
                _ => {
                    return Err(AuthError::InvalidToken(format!(
                        "{alg:?} tokens are not accepted"
                    )))
                }
            },
        };
        let mut v = Validation::new(algs[0]);
        v.algorithms = algs;
        v.required_spec_claims.clear();
        v.validate_exp = true;
        v.validate_nbf = true;
        v.leeway = 0;
        v.validate_aud = false;
        let data =
            jsonwebtoken::decode::<serde_json::Map<String, serde_json::Value>>(token, key, &v)
                .map_err(|e| invalid(&e))?;
        let claims = data.claims;
        if let Some(want) = &self.audience {
            let ok = match claims.get(&self.audience_claim) {
                Some(serde_json::Value::String(s)) => s == want,
                Some(serde_json::Value::Array(a)) => a.iter().any(|x| x.as_str() == Some(want)),
                _ => false,
            };
            if !ok {
                return Err(AuthError::InvalidToken(format!(
                    "audience {want:?} not in claim {:?}",
                    self.audience_claim
                )));
            }
        }
        match claims.get(&self.role_claim) {
            Some(serde_json::Value::String(s)) if !s.is_empty() => Ok(s.clone()),
            _ => Err(AuthError::NoRole(self.role_claim.clone())),
        }
    }
}

/// Authentication settings of a server; immutable after start.
#[derive(Debug)]
pub struct Authenticator {
    /// `authenticationEnabled`.
    pub enabled: bool,
    /// The token provider (present when authentication is enabled).
    token: Option<TokenVerifier>,
    /// `anonymousUserRole`.
    anonymous_role: Option<String>,
    /// `authenticateMetricsEndpoint`.
    metrics_need_auth: bool,
}

impl Authenticator {
    /// Builds the authenticator (reads the key files).
    ///
    /// # Errors
    /// [`BrokerError::InvalidConfig`] for unusable key settings.
    pub fn from_config(c: &BrokerConfig) -> Result<Self, BrokerError> {
        let token = if c.authentication_enabled {
            Some(TokenVerifier::from_config(c)?)
        } else {
            None
        };
        Ok(Authenticator {
            enabled: c.authentication_enabled,
            token,
            anonymous_role: c.anonymous_user_role.clone(),
            metrics_need_auth: c.authenticate_metrics_endpoint,
        })
    }

    /// Authenticates `(method, data)` credentials. `Ok(None)`: authentication is off.
    ///
    /// # Errors
    /// Why the credentials are refused.
    pub fn authenticate(&self, method: &str, data: &[u8]) -> Result<Option<String>, AuthError> {
        if !self.enabled {
            return Ok(self.anonymous_role.clone());
        }
        match method {
            "" | "none" if data.is_empty() => self
                .anonymous_role
                .clone()
                .map(Some)
                .ok_or(AuthError::Missing),
            "token" => {
                let token = std::str::from_utf8(data)
                    .map_err(|_| AuthError::InvalidToken("not UTF-8".into()))?
                    .trim();
                let token = token.strip_prefix("token:").unwrap_or(token);
                if token.is_empty() {
                    return Err(AuthError::Missing);
                }
                let verifier = self.token.as_ref().ok_or(AuthError::Missing)?;
                verifier.verify(token).map(Some)
            }
            other => Err(AuthError::Method(other.to_owned())),
        }
    }

    /// Authenticates a CONNECT.
    ///
    /// # Errors
    /// Why the connection is refused.
    pub fn authenticate_connect(
        &self,
        c: &pb::CommandConnect,
    ) -> Result<Option<String>, AuthError> {
        let method = c.auth_method_name.as_deref().unwrap_or("");
        let data = c.auth_data.as_deref().unwrap_or_default();
        self.authenticate(method, data)
    }

    /// Authenticates an admin request's `Authorization` header.
    ///
    /// # Errors
    /// Why the request is refused.
    pub fn authenticate_http(
        &self,
        authorization: Option<&str>,
    ) -> Result<Option<String>, AuthError> {
        match authorization {
            None => self.authenticate("none", b""),
            Some(h) => {
                let (scheme, rest) = h.split_once(' ').unwrap_or((h, ""));
                if scheme.eq_ignore_ascii_case("bearer") {
                    self.authenticate("token", rest.trim().as_bytes())
                } else {
                    Err(AuthError::Method(scheme.to_owned()))
                }
            }
        }
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
        match ctx.auth.authenticate_http(header) {
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
        tracing::info!(%path, role = ?role, "admin request refused: authorization");
        return crate::admin::fail(
            StatusCode::UNAUTHORIZED,
            "This operation requires super-user access",
        );
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{encode, EncodingKey, Header};
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
        let t = hs_token(secret, &json!({"sub": "alice"}));
        assert_eq!(
            a.authenticate("token", t.as_bytes()).unwrap().as_deref(),
            Some("alice")
        );
        assert_eq!(a.authenticate("none", b""), Err(AuthError::Missing));
        assert!(matches!(
            a.authenticate("basic", b"u:p"),
            Err(AuthError::Method(_))
        ));
        let h = format!("Bearer {t}");
        assert_eq!(
            a.authenticate_http(Some(&h)).unwrap().as_deref(),
            Some("alice")
        );
        assert_eq!(a.authenticate_http(None), Err(AuthError::Missing));
        let mut c = hs_config(secret);
        c.anonymous_user_role = Some("anon".into());
        let a = Authenticator::from_config(&c).unwrap();
        assert_eq!(
            a.authenticate("none", b"").unwrap().as_deref(),
            Some("anon")
        );
        let off = Authenticator::from_config(&BrokerConfig::default()).unwrap();
        assert_eq!(off.authenticate("token", b"anything").unwrap(), None);
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
