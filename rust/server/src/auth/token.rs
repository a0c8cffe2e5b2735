//! `AuthenticationProviderToken`: Pulsar JWTs. A client proves its identity with a JWT: on the
//! binary protocol in CONNECT (`auth_method_name = "token"`, `auth_data = <jwt>`), on the admin
//! API as `Authorization: Bearer <jwt>`. HS256/384/512 tokens are checked with `tokenSecretKey`,
//! RS/PS/ES tokens with `tokenPublicKey` (algorithm `tokenPublicAlg`). The role is the
//! `tokenAuthClaim` claim (`sub`). `exp` and `nbf` are checked when present (Pulsar's
//! `tokens create` makes tokens without `exp` by default); `tokenAudience`, when set, must be
//! in the `tokenAudienceClaim` claim. Key material is read as Pulsar reads it
//! ([`read_key_material`], also used for `basicAuthConf`).

use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use pulsar_rs_broker::{BrokerConfig, BrokerError};

use super::{AuthError, Identity};

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

    /// Checks a token at `now` (Unix seconds) and returns its role.
    ///
    /// # Errors
    /// [`AuthError::InvalidToken`] or [`AuthError::NoRole`].
    pub fn verify(&self, token: &str, now: u64) -> Result<String, AuthError> {
        self.verify_identity(token, now).map(|i| i.role)
    }

    /// Checks a token at `now` (Unix seconds on the broker's clock) and returns its role and
    /// expiry (`exp`).
    ///
    /// # Errors
    /// [`AuthError::InvalidToken`] or [`AuthError::NoRole`].
    pub fn verify_identity(&self, token: &str, now: u64) -> Result<Identity, AuthError> {
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
        // `exp` and `nbf` are checked below on the broker's clock, not the library's reading of
        // the system time.
        v.validate_exp = false;
        v.validate_nbf = false;
        v.leeway = 0;
        v.validate_aud = false;
        let data =
            jsonwebtoken::decode::<serde_json::Map<String, serde_json::Value>>(token, key, &v)
                .map_err(|e| invalid(&e))?;
        let claims = data.claims;
        check_times(&claims, now)
            .map_err(|kind| invalid(&jsonwebtoken::errors::Error::from(kind)))?;
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
            Some(serde_json::Value::String(s)) if !s.is_empty() => Ok(Identity {
                role: s.clone(),
                expires_at: claims.get("exp").and_then(serde_json::Value::as_u64),
            }),
            _ => Err(AuthError::NoRole(self.role_claim.clone())),
        }
    }
}

/// `exp` and `nbf` at `now` (Unix seconds), as the JWT library checks them with no leeway: a
/// token is expired once `now` is past `exp`, and not yet valid while `nbf` is after `now`; a
/// claim that is not a number is malformed.
fn check_times(
    claims: &serde_json::Map<String, serde_json::Value>,
    now: u64,
) -> Result<(), jsonwebtoken::errors::ErrorKind> {
    use jsonwebtoken::errors::ErrorKind;
    let time = |name: &str| match claims.get(name) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| ErrorKind::InvalidClaimFormat(name.to_owned())),
    };
    if time("exp")?.is_some_and(|exp| exp < now) {
        return Err(ErrorKind::ExpiredSignature);
    }
    if time("nbf")?.is_some_and(|nbf| nbf > now) {
        return Err(ErrorKind::ImmatureSignature);
    }
    Ok(())
}
