//! The admin port's guard: who a request is (`Authorization: Bearer` or `Basic`, the HTTPS
//! client certificate, or the anonymous role); Pulsar answers a failure with 401. Mounted on
//! every admin route and on the console's API; it hands the role to [`super::access`], which
//! checks it against the route's declared access.

use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use base64::Engine as _;

use super::access::Caller;
use crate::auth::{AuthError, Authenticator};
use crate::context::ServerContext;
use crate::http::fail;
use crate::tls::listener::ClientCn;

/// Admin API guard: authenticates the caller (401 on failure) and hands its role on.
pub(crate) async fn admin_guard(
    State(ctx): State<Arc<ServerContext>>,
    req: Request,
    next: Next,
) -> Response {
    let path = req.uri().path().to_owned();
    if path == "/metrics" && !ctx.auth.metrics_need_auth() {
        return next.run(req).await;
    }
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let role = if ctx.auth.enabled {
        let peer_cn = req
            .extensions()
            .get::<ConnectInfo<ClientCn>>()
            .and_then(|c| c.0 .0.clone());
        match authenticate_http(&ctx.auth, header, peer_cn.as_deref()) {
            Ok(role) => role,
            Err(e) => {
                tracing::info!(%path, error = %e, "admin request refused: authentication");
                return fail(
                    StatusCode::UNAUTHORIZED,
                    format!("Authentication required: {e}"),
                );
            }
        }
    } else {
        None
    };
    // Authorization needs the matched route's declared access: `access::authorize`, inside.
    let mut req = req;
    req.extensions_mut().insert(Caller(role));
    next.run(req).await
}

/// Authenticates an admin request: `Authorization: Bearer <jwt>` (token), `Basic
/// <base64 user:password>` (basic), or else the client certificate (tls) or the anonymous
/// role.
///
/// # Errors
/// Why the request is refused.
fn authenticate_http(
    auth: &Authenticator,
    authorization: Option<&str>,
    peer_cn: Option<&str>,
) -> Result<Option<String>, AuthError> {
    let id = match authorization {
        None if auth.wants_client_certificates() && peer_cn.is_some() => {
            auth.authenticate("tls", b"", peer_cn)
        }
        None => auth.authenticate("none", b"", None),
        Some(h) => {
            let (scheme, rest) = h.split_once(' ').unwrap_or((h, ""));
            if scheme.eq_ignore_ascii_case("bearer") {
                auth.authenticate("token", rest.trim().as_bytes(), None)
            } else if scheme.eq_ignore_ascii_case("basic") {
                let data = base64::engine::general_purpose::STANDARD
                    .decode(rest.trim())
                    .map_err(|_| AuthError::InvalidCredentials("Base64 decoding failed".into()))?;
                auth.authenticate("basic", &data, None)
            } else {
                Err(AuthError::Method(scheme.to_owned(), auth.methods()))
            }
        }
    };
    id.map(|i| i.map(|i| i.role))
}

#[cfg(test)]
mod tests {
    use super::*;

    use pulsar_rs_broker::BrokerConfig;

    #[test]
    fn authorization_header_schemes() {
        let secret = b"0123456789abcdef0123456789abcdef";
        let c = BrokerConfig {
            authentication_enabled: true,
            authentication_providers: vec![
                "org.apache.pulsar.broker.authentication.AuthenticationProviderTls".into(),
                "org.apache.pulsar.broker.authentication.AuthenticationProviderToken".into(),
                "org.apache.pulsar.broker.authentication.AuthenticationProviderBasic".into(),
            ],
            token_secret_key: Some(format!(
                "data:;base64,{}",
                base64::engine::general_purpose::STANDARD.encode(secret)
            )),
            basic_auth_conf: Some("data:,admin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.".into()),
            tls_trust_certs_file_path: Some("/ca.pem".into()),
            ..BrokerConfig::default()
        };
        let a = Authenticator::from_config(&c, Arc::new(pulsar_rs_clock::SystemClock)).unwrap();
        let t = jsonwebtoken::encode(
            &jsonwebtoken::Header::default(),
            &serde_json::json!({"sub": "alice"}),
            &jsonwebtoken::EncodingKey::from_secret(secret),
        )
        .unwrap();
        let h = format!("Bearer {t}");
        assert_eq!(
            authenticate_http(&a, Some(&h), None).unwrap().as_deref(),
            Some("alice")
        );
        assert_eq!(authenticate_http(&a, None, None), Err(AuthError::Missing));
        let basic = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("admin:123456")
        );
        assert_eq!(
            authenticate_http(&a, Some(&basic), None)
                .unwrap()
                .as_deref(),
            Some("admin")
        );
        assert_eq!(
            authenticate_http(&a, None, Some("cn1")).unwrap().as_deref(),
            Some("cn1")
        );
    }
}
