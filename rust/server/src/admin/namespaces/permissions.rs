//! The permission REST endpoints (Pulsar's `PersistentTopics`/`Namespaces` permission paths):
//! namespace and topic grants, the roles allowed on a subscription and the namespace's
//! `subscriptionAuthMode`. All of them read and write the namespace's Policies document
//! (`auth_policies`); [`crate::auth::authz::Authorizer`] decides with what they store.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::Json;
use pulsar_rs_broker::policies::AuthPolicies;
use pulsar_rs_broker::TopicName;

use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::topic_path::TopicPath;
use crate::auth::authz::{
    subscription_auth_mode, AuthAction, Grants, SubscriptionAuthMode, SUBSCRIPTION_AUTH_MODE,
};
use crate::context::ServerContext;
use crate::http::fail;

type Ctx = State<Arc<ServerContext>>;

/// The permission routes (guarded by [`crate::auth::admin_guard`] with
/// [`Authorizer::allows_admin`]).
pub fn routes() -> Routes {
    Routes::new()
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/permissions",
            Access::Tenant,
            get(get_namespace),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/permissions/{role}",
            Access::Tenant,
            post(grant_namespace).delete(revoke_namespace),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/permissions/subscription",
            Access::Tenant,
            get(get_subscription_roles),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/permissions/subscription/{sub}",
            Access::Tenant,
            // A DELETE here is Pulsar's `permissions/{subscription}/{role}` of the subscription
            // named `subscription` (Jersey picks the template that has the request's method).
            post(grant_subscription).delete(revoke_on_subscription_named_subscription),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/permissions/{sub}/{role}",
            Access::Tenant,
            delete(revoke_subscription),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/subscriptionAuthMode",
            Access::Tenant,
            get(get_auth_mode).post(set_auth_mode),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/permissions",
            Access::Tenant,
            get(get_topic),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/permissions/{role}",
            Access::Tenant,
            post(grant_topic).delete(revoke_topic),
        )
}

/// The actions of a grant body; the error is the ready 400 response (boxed: it is large).
fn actions(body: &[u8]) -> Result<BTreeSet<String>, Box<Response>> {
    serde_json::from_slice::<BTreeSet<AuthAction>>(body)
        .map(|a| a.into_iter().map(|a| a.as_str().to_owned()).collect())
        .map_err(|e| {
            Box::new(fail(
                StatusCode::BAD_REQUEST,
                format!("body must be a JSON list of actions (produce, consume, ...): {e}"),
            ))
        })
}

/// Sets (replaces) a role's actions in `g`; an empty set revokes.
fn set(g: &mut Grants, role: &str, actions: BTreeSet<String>) {
    if actions.is_empty() {
        g.remove(role);
    } else {
        g.insert(role.to_owned(), actions);
    }
}

/// Changes the auth policies of an existing namespace (404 when missing) on the blocking pool.
async fn change(
    ctx: &Arc<ServerContext>,
    ns: String,
    f: impl FnOnce(&mut AuthPolicies) + Send + 'static,
) -> Response {
    if let Some(r) = super::lifecycle::missing(ctx, &ns) {
        return r;
    }
    crate::cluster::sync::update_namespace(ctx, ns, |p| f(&mut p.auth_policies)).await
}

async fn get_namespace(State(ctx): Ctx, Path((tenant, ns)): Path<(String, String)>) -> Response {
    let ns = format!("{tenant}/{ns}");
    if let Some(r) = super::lifecycle::missing(&ctx, &ns) {
        return r;
    }
    Json(ctx.authz.namespace_grants(&ns)).into_response()
}

async fn grant_namespace(
    State(ctx): Ctx,
    Path((tenant, ns, role)): Path<(String, String, String)>,
    body: axum::body::Bytes,
) -> Response {
    let acts = match actions(&body) {
        Ok(a) => a,
        Err(r) => return *r,
    };
    change(&ctx, format!("{tenant}/{ns}"), move |a| {
        set(&mut a.namespace_auth, &role, acts);
    })
    .await
}

async fn revoke_namespace(
    State(ctx): Ctx,
    Path((tenant, ns, role)): Path<(String, String, String)>,
) -> Response {
    change(&ctx, format!("{tenant}/{ns}"), move |a| {
        set(&mut a.namespace_auth, &role, BTreeSet::new());
    })
    .await
}

/// Subscription → roles allowed on it (Pulsar's `getPermissionOnSubscription`).
async fn get_subscription_roles(
    State(ctx): Ctx,
    Path((tenant, ns)): Path<(String, String)>,
) -> Response {
    let ns = format!("{tenant}/{ns}");
    if let Some(r) = super::lifecycle::missing(&ctx, &ns) {
        return r;
    }
    let p = ctx.service.policies.namespace(&ns);
    Json(p.auth_policies.subscription_auth_roles).into_response()
}

/// Sets the roles allowed on a subscription (a JSON list; replaces the previous list).
async fn grant_subscription(
    State(ctx): Ctx,
    Path((tenant, ns, sub)): Path<(String, String, String)>,
    body: axum::body::Bytes,
) -> Response {
    let roles: BTreeSet<String> = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return fail(
                StatusCode::BAD_REQUEST,
                format!("body must be a JSON list of roles: {e}"),
            )
        }
    };
    change(&ctx, format!("{tenant}/{ns}"), move |a| {
        if roles.is_empty() {
            a.subscription_auth_roles.remove(&sub);
        } else {
            a.subscription_auth_roles.insert(sub, roles);
        }
    })
    .await
}

/// Removes one role from a subscription's list.
async fn revoke_subscription(
    State(ctx): Ctx,
    Path((tenant, ns, sub, role)): Path<(String, String, String, String)>,
) -> Response {
    change(&ctx, format!("{tenant}/{ns}"), move |a| {
        if let Some(roles) = a.subscription_auth_roles.get_mut(&sub) {
            roles.remove(&role);
            if roles.is_empty() {
                a.subscription_auth_roles.remove(&sub);
            }
        }
    })
    .await
}

/// `DELETE .../permissions/subscription/{role}`: the path of the literal route above, which
/// Pulsar routes to `revokePermissionOnSubscription` of the subscription `subscription`.
async fn revoke_on_subscription_named_subscription(
    ctx: Ctx,
    Path((tenant, ns, role)): Path<(String, String, String)>,
) -> Response {
    revoke_subscription(ctx, Path((tenant, ns, "subscription".to_owned(), role))).await
}

async fn get_auth_mode(State(ctx): Ctx, Path((tenant, ns)): Path<(String, String)>) -> Response {
    let ns = format!("{tenant}/{ns}");
    if let Some(r) = super::lifecycle::missing(&ctx, &ns) {
        return r;
    }
    Json(subscription_auth_mode(&ctx.service.policies.namespace(&ns))).into_response()
}

/// Sets `subscription_auth_mode` (body `"None"` or `"Prefix"`).
async fn set_auth_mode(
    State(ctx): Ctx,
    Path((tenant, ns)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Response {
    let mode: SubscriptionAuthMode = match serde_json::from_slice(&body) {
        Ok(m) => m,
        Err(e) => {
            return fail(
                StatusCode::BAD_REQUEST,
                format!("body must be \"None\" or \"Prefix\": {e}"),
            )
        }
    };
    let ns = format!("{tenant}/{ns}");
    if let Some(r) = super::lifecycle::missing(&ctx, &ns) {
        return r;
    }
    crate::cluster::sync::update_namespace(&ctx, ns, move |p| {
        p.other.insert(
            SUBSCRIPTION_AUTH_MODE.to_owned(),
            serde_json::to_value(mode).unwrap_or_default(),
        );
    })
    .await
}

/// A topic's permissions: its namespace's grants merged with its own (as Pulsar answers).
async fn get_topic(State(ctx): Ctx, TopicPath(t): TopicPath) -> Response {
    let mut all = ctx.authz.namespace_grants(&t.namespace_name());
    for (role, acts) in ctx.authz.topic_grants(&t) {
        all.entry(role).or_default().extend(acts);
    }
    Json(all).into_response()
}

/// Sets a role's actions on one topic (grant, or revoke with an empty set).
async fn set_topic(
    ctx: &Arc<ServerContext>,
    t: TopicName,
    role: String,
    acts: BTreeSet<String>,
) -> Response {
    let base = t.base().to_string();
    change(ctx, t.namespace_name(), move |a| {
        let g = a.destination_auth.entry(base.clone()).or_default();
        set(g, &role, acts);
        if g.is_empty() {
            a.destination_auth.remove(&base);
        }
    })
    .await
}

async fn grant_topic(
    State(ctx): Ctx,
    TopicPath(t): TopicPath,
    Path((_, _, _, role)): Path<(String, String, String, String)>,
    body: axum::body::Bytes,
) -> Response {
    let acts = match actions(&body) {
        Ok(a) => a,
        Err(r) => return *r,
    };
    set_topic(&ctx, t, role, acts).await
}

async fn revoke_topic(
    State(ctx): Ctx,
    TopicPath(t): TopicPath,
    Path((_, _, _, role)): Path<(String, String, String, String)>,
) -> Response {
    set_topic(&ctx, t, role, BTreeSet::new()).await
}
