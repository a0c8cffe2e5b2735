//! Who may call each admin route: every route declares its [`Access`] where it is added
//! ([`Routes::route`]), and [`authorize`] checks the caller's role against the matched route's
//! declaration. With authorization on, a route without a declaration is refused (it cannot be
//! added without one). Pulsar answers a refusal with 401, as here.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::MethodRouter;
use axum::Router;
use pulsar_rs_broker::TopicName;

use super::topic_path;
use crate::auth::authz::{Action, Authorizer};
use crate::context::ServerContext;
use crate::http::fail;

/// What a route needs from the caller's role (superusers may call every route).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Superusers only: clusters, tenants, brokers, metrics, the console's API.
    Superuser,
    /// The admins of the tenant the path names (`/admin/v2/namespaces/{tenant}/...`,
    /// `/admin/v2/{domain}/{tenant}/...`).
    Tenant,
    /// A topic read (`stats`, `internalStats`, `partitions`, `subscriptions`, the
    /// partitioned ones): as [`Access::Tenant`], and for a `GET` any role granted a lookup on
    /// the topic (produce or consume).
    TopicRead,
    /// A namespace's topic list (HTTP service URLs, pattern subscriptions): as
    /// [`Access::Tenant`], and for a `GET` any role granted something in the namespace.
    NamespaceTopics,
    /// A REST lookup (`/lookup/v2/topic/...`): superusers, and for a `GET` any role granted a
    /// lookup on the topic.
    Lookup,
    /// `/metrics`: open, unless `authenticateMetricsEndpoint`, then superusers only.
    Metrics,
    /// Any caller the broker authenticated (the anonymous role included, when one is set):
    /// Pulsar's read-only `/admin/v3/transactions` routes check no permission (4.0.8's
    /// `Transactions` and `TransactionsBase` only validate the topic's ownership), and the
    /// cluster list (4.0.8's `ClustersBase.getClusters` checks none either).
    Authenticated,
}

impl Access {
    /// Whether the route is a tenant's (its admins may call it, Pulsar's
    /// `validateTenantAdminAccess`), the tenant being the path's fourth segment.
    fn is_tenant_admin(self) -> bool {
        matches!(
            self,
            Access::Tenant | Access::TopicRead | Access::NamespaceTopics
        )
    }
}

/// The authenticated caller's role (`None`: anonymous), set by the guard for [`authorize`].
#[derive(Debug, Clone)]
pub(crate) struct Caller(pub Option<String>);

/// Admin routes, each with its declared [`Access`].
pub(crate) struct Routes {
    /// The routes.
    router: Router<Arc<ServerContext>>,
    /// Route pattern → its access, as axum's `MatchedPath` gives the pattern.
    access: HashMap<&'static str, Access>,
}

impl Routes {
    /// No routes.
    pub(crate) fn new() -> Self {
        Routes {
            router: Router::new(),
            access: HashMap::new(),
        }
    }

    /// Adds a route and declares who may call it.
    ///
    /// # Panics
    /// The same pattern declared twice with different accesses (a programming error).
    pub(crate) fn route(
        mut self,
        path: &'static str,
        access: Access,
        methods: MethodRouter<Arc<ServerContext>>,
    ) -> Self {
        let before = self.access.insert(path, access);
        assert!(
            before.is_none_or(|a| a == access),
            "admin route {path} declared with two accesses"
        );
        self.router = self.router.route(path, methods);
        self
    }

    /// These routes and `other`'s.
    pub(crate) fn merge(mut self, other: Routes) -> Self {
        for (path, access) in other.access {
            let before = self.access.insert(path, access);
            assert!(
                before.is_none_or(|a| a == access),
                "admin route {path} declared with two accesses"
            );
        }
        self.router = self.router.merge(other.router);
        self
    }

    /// The router, and the table [`authorize`] reads.
    pub(crate) fn into_parts(self) -> (Router<Arc<ServerContext>>, Arc<AccessTable>) {
        (self.router, Arc::new(AccessTable(self.access)))
    }
}

/// Route pattern → declared access; built once with the router, read by [`authorize`].
#[derive(Debug)]
pub(crate) struct AccessTable(HashMap<&'static str, Access>);

impl AccessTable {
    /// One access for every route of a router built elsewhere (the console's API).
    pub(crate) fn all(access: Access) -> Arc<AccessTable> {
        Arc::new(AccessTable(HashMap::from([("*", access)])))
    }

    fn of(&self, pattern: &str) -> Option<Access> {
        self.0.get(pattern).or_else(|| self.0.get("*")).copied()
    }
}

/// Authorizes a matched admin route (a `route_layer`, so the route's pattern is known): with
/// authentication and authorization on, the caller's role must satisfy the route's [`Access`].
pub(crate) async fn authorize(
    State((ctx, table)): State<(Arc<ServerContext>, Arc<AccessTable>)>,
    req: Request,
    next: Next,
) -> Response {
    // As Java's broker: admin authorization applies only to authenticated requests.
    if !(ctx.auth.enabled && ctx.authz.enabled) {
        return next.run(req).await;
    }
    let role = req.extensions().get::<Caller>().and_then(|c| c.0.clone());
    let pattern = req
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str);
    let access = pattern.and_then(|p| table.of(p));
    let path = req.uri().path().to_owned();
    let allowed = match access {
        Some(Access::Metrics) if !ctx.auth.metrics_need_auth() => true,
        Some(access) => allows(&ctx.authz, role.as_deref(), access, req.method(), &path),
        None => {
            tracing::error!(%path, ?pattern, "admin route without a declared access: refused");
            false
        }
    };
    if !allowed && access.is_some_and(Access::is_tenant_admin) {
        // As Pulsar's tenant-admin check, which reads the tenant first: a missing tenant is
        // 404 whoever asks.
        let tenant = path.trim_start_matches('/').split('/').nth(3);
        if tenant.is_some_and(|t| ctx.resources.tenant(t).is_none()) {
            return fail(StatusCode::NOT_FOUND, "Tenant does not exist");
        }
    }
    if !allowed {
        tracing::info!(%path, role = ?role, "admin request refused: authorization");
        return fail(
            StatusCode::UNAUTHORIZED,
            "This operation requires super-user access",
        );
    }
    next.run(req).await
}

/// Whether `role` may call a route declared `access` with `method` on `path`.
fn allows(
    authz: &Authorizer,
    role: Option<&str>,
    access: Access,
    method: &Method,
    path: &str,
) -> bool {
    if authz.is_superuser(role) {
        return true;
    }
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let tenant_admin = || {
        segs.get(3)
            .is_some_and(|tenant| authz.is_tenant_admin(role, tenant))
    };
    let get = method == Method::GET;
    match access {
        Access::Superuser | Access::Metrics => false,
        Access::Authenticated => true,
        Access::Tenant => tenant_admin(),
        Access::TopicRead => {
            tenant_admin()
                || (get
                    && topic_of(&segs, 2)
                        .is_some_and(|t| authz.check(role, &t, Action::Lookup).is_ok()))
        }
        Access::NamespaceTopics => {
            tenant_admin()
                || (get
                    && segs.get(3..5).is_some_and(|ns| {
                        authz
                            .check_namespace(role, &format!("{}/{}", ns[0], ns[1]))
                            .is_ok()
                    }))
        }
        Access::Lookup => {
            get && topic_of(&segs, 3).is_some_and(|t| authz.check(role, &t, Action::Lookup).is_ok())
        }
    }
}

/// The topic named by `segs[domain..domain + 4]` (domain, tenant, namespace, topic).
fn topic_of(segs: &[&str], domain: usize) -> Option<TopicName> {
    match segs.get(domain..domain + 4)? {
        [d, t, ns, topic] => topic_path::name(d, t, ns, topic).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::authz::tests::{acts, authz};
    use std::collections::BTreeMap;

    #[test]
    fn declared_accesses_decide() {
        let dir = tempfile::tempdir().unwrap();
        let (a, svc) = authz(dir.path(), &["admin"]);
        svc.policies
            .update_namespace("public/default", |p| {
                p.auth_policies.destination_auth.insert(
                    "persistent://public/default/orders".into(),
                    BTreeMap::from([("bob".to_owned(), acts(&["consume"]))]),
                );
                p.auth_policies
                    .namespace_auth
                    .insert("carol".to_owned(), acts(&["produce"]));
            })
            .unwrap();
        let (get, put) = (Method::GET, Method::PUT);
        let ns = "/admin/v2/namespaces/acme/ns2";
        assert!(allows(&a, Some("acme-admin"), Access::Tenant, &put, ns));
        assert!(!allows(
            &a,
            Some("acme-admin"),
            Access::Tenant,
            &put,
            "/admin/v2/namespaces/public/x"
        ));
        let tenant = "/admin/v2/tenants/acme";
        assert!(!allows(
            &a,
            Some("acme-admin"),
            Access::Superuser,
            &put,
            tenant
        ));
        assert!(allows(&a, Some("admin"), Access::Superuser, &put, tenant));
        let stats = "/admin/v2/persistent/public/default/orders/stats";
        assert!(allows(&a, Some("bob"), Access::TopicRead, &get, stats));
        assert!(
            !allows(&a, Some("bob"), Access::TopicRead, &put, stats),
            "reads only"
        );
        assert!(
            !allows(&a, Some("bob"), Access::Tenant, &get, stats),
            "a grant is not a tenant"
        );
        let other = "/admin/v2/persistent/public/default/other/stats";
        assert!(!allows(&a, Some("bob"), Access::TopicRead, &get, other));
        let lookup = "/lookup/v2/topic/persistent/public/default/orders";
        assert!(allows(&a, Some("bob"), Access::Lookup, &get, lookup));
        assert!(!allows(
            &a,
            Some("bob"),
            Access::Lookup,
            &get,
            "/lookup/v2/topic/persistent/public/default/other"
        ));
        let topics = "/admin/v2/namespaces/public/default/topics";
        let ns_topics =
            |role: &str, m: &Method| allows(&a, Some(role), Access::NamespaceTopics, m, topics);
        assert!(ns_topics("carol", &get), "a namespace grant");
        assert!(
            !ns_topics("bob", &get),
            "a topic grant is not a namespace grant"
        );
        assert!(!ns_topics("carol", &put), "reads only");
        let stats = "/admin/v3/transactions/coordinatorStats";
        assert!(
            allows(&a, Some("anyone"), Access::Authenticated, &get, stats),
            "Pulsar's transaction stats check no permission"
        );
    }

    #[test]
    #[should_panic(expected = "declared with two accesses")]
    fn a_route_declared_twice_differently_is_a_bug() {
        let h = axum::routing::get(|| async { "x" });
        let _ = Routes::new()
            .route("/x", Access::Tenant, h.clone())
            .merge(Routes::new().route("/x", Access::Superuser, h));
    }
}
