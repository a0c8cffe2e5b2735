//! The admin port's guard and its URL rules: who a request is (`Authorization: Bearer` or
//! `Basic`, the HTTPS client certificate, or the anonymous role) and, with authorization on,
//! whether that role may call the path (superusers, tenant admins on their tenant, topic reads
//! and REST lookups with a grant). Pulsar answers both failures with 401. Mounted on every admin
//! route and on the console's API.

use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use base64::Engine as _;
use pulsar_rs_broker::TopicName;

use super::topic_path;
use crate::auth::authz::{Action, Authorizer};
use crate::auth::{AuthError, Authenticator};
use crate::http::fail;
use crate::tls::listener::ClientCn;
use crate::ServerContext;

/// Admin API guard: authenticates the Bearer token (401 on failure) and, with authorization
/// on, lets through what [`allows_admin`] allows (superusers, tenant
/// admins on their tenant, topic reads with a grant). Pulsar answers both failures with 401.
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
    // As Java's broker: admin authorization applies only to authenticated requests.
    if ctx.auth.enabled
        && ctx.authz.enabled
        && !allows_admin(&ctx.authz, role.as_deref(), req.method(), &path)
    {
        // Beyond the admin rules, the REST lookup and a namespace's topic list (HTTP service
        // URLs, pattern subscriptions) are open to roles granted lookup on the topic/namespace.
        let get = req.method() == Method::GET;
        let allowed = get
            && (lookup_topic_path(&path)
                .is_some_and(|t| ctx.authz.check(role.as_deref(), &t, Action::Lookup).is_ok())
                || namespace_topics_path(&path)
                    .is_some_and(|ns| ctx.authz.check_namespace(role.as_deref(), &ns).is_ok()));
        if !allowed {
            tracing::info!(%path, role = ?role, "admin request refused: authorization");
            return fail(
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
fn lookup_topic_path(path: &str) -> Option<TopicName> {
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segs.as_slice() {
        ["lookup", "v2", "topic", domain, t, ns, topic] => {
            topic_path::name(domain, t, ns, topic).ok()
        }
        _ => None,
    }
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

/// Whether `role` may make an admin request (`method`, `path`): superusers always; a
/// tenant's admins on `/admin/v2/namespaces/{tenant}/...` and the tenant's topic paths;
/// roles with produce or consume permission on topic reads (stats, partitions,
/// subscriptions).
#[must_use]
fn allows_admin(authz: &Authorizer, role: Option<&str>, method: &Method, path: &str) -> bool {
    if authz.is_superuser(role) {
        return true;
    }
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segs.as_slice() {
        ["admin", "v2", "namespaces", tenant, _, ..]
        | ["admin", "v2", "persistent" | "non-persistent", tenant, ..]
            if authz.is_tenant_admin(role, tenant) =>
        {
            return true;
        }
        ["admin", "v2", "namespaces", tenant] if method == Method::GET => {
            return authz.is_tenant_admin(role, tenant);
        }
        _ => {}
    }
    if method != Method::GET {
        return false;
    }
    topic_read_path(&segs).is_some_and(|t| authz.check(role, &t, Action::Lookup).is_ok())
}

/// The topic of a topic-read admin path (`/admin/v2/persistent/t/ns/topic/stats` ...).
fn topic_read_path(segs: &[&str]) -> Option<TopicName> {
    match segs {
        ["admin", "v2", "persistent", t, ns, topic, what]
            if matches!(
                *what,
                "stats"
                    | "internalStats"
                    | "partitions"
                    | "subscriptions"
                    | "partitioned-stats"
                    | "partitioned-internalStats"
            ) =>
        {
            topic_path::name("persistent", t, ns, topic).ok()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::authz::tests::{acts, authz};
    use pulsar_rs_broker::BrokerConfig;
    use std::collections::BTreeMap;

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

    #[test]
    fn admin_rules() {
        let dir = tempfile::tempdir().unwrap();
        let (a, svc) = authz(dir.path(), &["admin"]);
        svc.policies
            .update_namespace("public/default", |p| {
                p.auth_policies.destination_auth.insert(
                    "persistent://public/default/orders".into(),
                    BTreeMap::from([("bob".to_owned(), acts(&["consume"]))]),
                );
            })
            .unwrap();
        let get = Method::GET;
        let put = Method::PUT;
        assert!(allows_admin(
            &a,
            Some("acme-admin"),
            &put,
            "/admin/v2/namespaces/acme/ns2"
        ));
        assert!(!allows_admin(
            &a,
            Some("acme-admin"),
            &put,
            "/admin/v2/namespaces/public/x"
        ));
        assert!(!allows_admin(
            &a,
            Some("acme-admin"),
            &put,
            "/admin/v2/tenants/acme"
        ));
        assert!(allows_admin(
            &a,
            Some("admin"),
            &put,
            "/admin/v2/tenants/acme"
        ));
        assert!(allows_admin(
            &a,
            Some("bob"),
            &get,
            "/admin/v2/persistent/public/default/orders/stats"
        ));
        assert!(!allows_admin(
            &a,
            Some("bob"),
            &get,
            "/admin/v2/persistent/public/default/other/stats"
        ));
    }

    #[test]
    fn topic_read_paths() {
        let segs = |p: &'static str| p.trim_start_matches('/').split('/').collect::<Vec<_>>();
        assert!(topic_read_path(&segs("/admin/v2/persistent/t/ns/topic/stats")).is_some());
        assert!(topic_read_path(&segs("/admin/v2/persistent/t/ns/topic/publishRate")).is_none());
        assert!(topic_read_path(&segs("/admin/v2/namespaces/t/ns/permissions")).is_none());
    }
}
