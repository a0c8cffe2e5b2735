//! Authentication as Pulsar's providers do it, several at once, chosen by the client's method
//! name: `token` (`AuthenticationProviderToken`, [`token`]), `basic` ([`basic`]) and `tls` (the
//! CN of the client certificate, which the TLS layer reads: see [`crate::tls`]). Token
//! credentials expire (`exp`): long-lived connections are re-checked every
//! `authenticationRefreshCheckSeconds` (see `connection::refresh`). Who may do what once
//! authenticated: [`authz`].
//!
//! This folder knows credentials and roles only: no HTTP and no wire types. The admin API reads
//! its `Authorization` header in `admin::guard`; the binary protocol reads CONNECT and refuses
//! unauthenticated requests in `connection::handshake`.

pub mod authz;
pub mod basic;
pub mod token;

use std::sync::Arc;

use pulsar_rs_broker::{AuthProvider, BrokerConfig, BrokerError};
use pulsar_rs_clock::Clock;

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

pub use token::{read_key_material, TokenVerifier};

/// Who a client is, once authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The role.
    pub role: String,
    /// When the credentials expire (Unix seconds; token `exp`), if they do.
    pub expires_at: Option<u64>,
}

impl Identity {
    pub(crate) fn forever(role: String) -> Self {
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
    basic: Option<basic::BasicUsers>,
    /// Whether the TLS provider is configured.
    tls: bool,
    /// `anonymousUserRole`.
    anonymous_role: Option<String>,
    /// `authenticateMetricsEndpoint`.
    metrics_need_auth: bool,
    /// `authenticationRefreshCheckSeconds`.
    pub refresh_check: std::time::Duration,
    /// The broker's clock, which token expiry is checked on; immutable.
    clock: Arc<dyn Clock>,
}

impl Authenticator {
    /// Builds the authenticator (reads the key and users files).
    ///
    /// # Errors
    /// [`BrokerError::InvalidConfig`] for unusable key settings.
    pub fn from_config(c: &BrokerConfig, clock: Arc<dyn Clock>) -> Result<Self, BrokerError> {
        let token = if c.has_provider(AuthProvider::Token) {
            Some(TokenVerifier::from_config(c)?)
        } else {
            None
        };
        let basic = match (&c.basic_auth_conf, c.has_provider(AuthProvider::Basic)) {
            (Some(spec), true) => Some(basic::BasicUsers::load(spec)?),
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
            clock,
        })
    }

    /// The broker's time in Unix seconds, which credentials expire on.
    #[must_use]
    pub fn now_secs(&self) -> u64 {
        self.clock.now_ms() / 1000
    }

    /// Whether `/metrics` needs credentials (`authenticateMetricsEndpoint`).
    #[must_use]
    pub fn metrics_need_auth(&self) -> bool {
        self.metrics_need_auth
    }

    /// Whether the TLS provider wants client certificates.
    #[must_use]
    pub fn wants_client_certificates(&self) -> bool {
        self.tls
    }

    /// The configured methods, for error messages.
    pub(crate) fn methods(&self) -> String {
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
                verifier.verify_identity(token, self.now_secs()).map(Some)
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
    use serde_json::json;

    fn now_u() -> u64 {
        u64::try_from(now()).unwrap()
    }

    fn now() -> i64 {
        pulsar_rs_clock::SystemClock.now_ms_i64() / 1000
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
            v.verify(&hs_token(secret, &json!({"sub": "alice"})), now_u())
                .unwrap(),
            "alice"
        );
        let t = hs_token(secret, &json!({"sub": "bob", "exp": now() + 3600}));
        assert_eq!(v.verify(&t, now_u()).unwrap(), "bob");
        let expired = hs_token(secret, &json!({"sub": "bob", "exp": now() - 10}));
        assert!(matches!(
            v.verify(&expired, now_u()),
            Err(AuthError::InvalidToken(_))
        ));
        let forged = hs_token(b"another secret, long enough....", &json!({"sub": "alice"}));
        assert!(matches!(
            v.verify(&forged, now_u()),
            Err(AuthError::InvalidToken(_))
        ));
        assert!(matches!(
            v.verify(&hs_token(secret, &json!({"name": "x"})), now_u()),
            Err(AuthError::NoRole(_))
        ));
        assert!(matches!(
            v.verify("garbage", now_u()),
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
        assert_eq!(v.verify(&ok, now_u()).unwrap(), "r1");
        let other = hs_token(secret, &json!({"role": "r1", "aud": "x"}));
        assert!(v.verify(&other, now_u()).is_err());
    }

    #[test]
    fn authenticator_methods() {
        let secret = b"0123456789abcdef0123456789abcdef";
        let a =
            Authenticator::from_config(&hs_config(secret), Arc::new(pulsar_rs_clock::SystemClock))
                .unwrap();
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
        let a = Authenticator::from_config(&c, Arc::new(pulsar_rs_clock::SystemClock)).unwrap();
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
        let off = Authenticator::from_config(
            &BrokerConfig::default(),
            Arc::new(pulsar_rs_clock::SystemClock),
        )
        .unwrap();
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
        let a = Authenticator::from_config(&c, Arc::new(pulsar_rs_clock::SystemClock)).unwrap();
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
            assert_eq!(v.verify(&token, now_u()).unwrap(), "rsa-user");
            // An HMAC token is refused when only a public key is configured.
            let hs = hs_token(b"0123456789abcdef0123456789abcdef", &json!({"sub": "x"}));
            assert!(v.verify(&hs, now_u()).is_err());
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
            .verify(&expired, now_u())
            .is_err());
    }

    #[test]
    fn tokens_expire_on_the_brokers_clock() {
        let secret = b"0123456789abcdef0123456789abcdef";
        let clock = Arc::new(pulsar_rs_clock::ManualClock::following_system());
        let a = Authenticator::from_config(&hs_config(secret), Arc::clone(&clock) as _).unwrap();
        let t = hs_token(secret, &json!({"sub": "bob", "exp": now() + 60}));
        let id = a
            .authenticate("token", t.as_bytes(), None)
            .unwrap()
            .unwrap();
        assert!(!id.expired(a.now_secs()));
        clock.advance_ms(61_000);
        assert!(id.expired(a.now_secs()));
        assert!(matches!(
            a.authenticate("token", t.as_bytes(), None),
            Err(AuthError::InvalidToken(why)) if why.contains("ExpiredSignature")
        ));
        let later = hs_token(secret, &json!({"sub": "bob", "nbf": now() + 3600}));
        assert!(a.authenticate("token", later.as_bytes(), None).is_err());
        clock.advance_ms(3_600_000);
        assert!(a.authenticate("token", later.as_bytes(), None).is_ok());
        let malformed = hs_token(secret, &json!({"sub": "bob", "exp": "soon"}));
        assert!(a.authenticate("token", malformed.as_bytes(), None).is_err());
    }
}
