//! Namespace policies with their own paths in Pulsar's `Namespaces` resource, kept as fields of
//! the namespace `Policies` document by their Pulsar JSON names (`other` of the stored
//! policies): `subscriptionExpirationTime` (`subscription_expiration_time_minutes`),
//! `offloadThreshold` / `offloadThresholdInSeconds` / `offloadDeletionLagMs`
//! (`offload_threshold`, `offload_threshold_in_seconds`, `offload_deletion_lag_ms`),
//! `offloadPolicies` and `removeOffloadPolicies` (`offload_policies`, checked as Pulsar's
//! admin checks them; applied to the namespace's topics by the broker), `properties` and `property/{key}` (`properties`), `autoTopicCreation`
//! (`autoTopicCreationOverride`, applied by the broker when it creates unknown topics), and
//! `persistence/bookieAffinity` (Pulsar keeps it in the namespace's local policies; here a
//! field `bookieAffinityGroup` that the policies document does not show).
//!
//! Stored and answered, not applied: subscription expiration (the broker does not expire
//! inactive subscriptions) and the bookie affinity group (no bookie isolation).
//! `docs/admin.md` lists them.

// Helpers return the ready 4xx response as their error; the admin path is cold.
#![allow(clippy::result_large_err)]

use crate::admin::machinery::access::{Access, Routes};
use crate::policies_document::BOOKIE_AFFINITY;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use pulsar_rs_broker::policies::{AutoTopicCreationOverride, Policies};
use serde_json::{Map, Value};

use crate::admin::machinery::state::Ctx;
use crate::http::fail;

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new()
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/subscriptionExpirationTime",
            Access::Tenant,
            get(get_expiration)
                .post(set_expiration)
                .delete(remove_expiration),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/offloadThreshold",
            Access::Tenant,
            get(get_offload_threshold).put(set_offload_threshold),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/offloadThresholdInSeconds",
            Access::Tenant,
            get(get_offload_seconds).put(set_offload_seconds),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/offloadDeletionLagMs",
            Access::Tenant,
            get(get_deletion_lag)
                .put(set_deletion_lag)
                .delete(remove_deletion_lag),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/offloadPolicies",
            Access::Tenant,
            get(get_offload_policies).post(set_offload_policies),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/removeOffloadPolicies",
            Access::Tenant,
            axum::routing::delete(remove_offload_policies),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/properties",
            Access::Tenant,
            get(get_properties)
                .put(set_properties)
                .delete(clear_properties),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/property/{key}",
            Access::Tenant,
            get(get_property).delete(remove_property),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/property/{key}/{value}",
            Access::Tenant,
            axum::routing::put(set_property),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/autoTopicCreation",
            Access::Tenant,
            get(get_auto_creation)
                .post(set_auto_creation)
                .delete(remove_auto_creation),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/persistence/bookieAffinity",
            Access::Superuser,
            get(get_bookie_affinity)
                .post(set_bookie_affinity)
                .delete(remove_bookie_affinity),
        )
}

pub(super) type NsPath = Path<(String, String)>;

/// The namespace of a path, which must exist: Pulsar's 404s ("Tenant does not exist",
/// "Namespace does not exist").
pub(super) fn existing(
    ctx: &crate::context::ServerContext,
    tenant: &str,
    ns: &str,
) -> Result<String, Response> {
    if ctx.resources.tenant(tenant).is_none() {
        return Err(fail(StatusCode::NOT_FOUND, "Tenant does not exist"));
    }
    let name = format!("{tenant}/{ns}");
    match super::lifecycle::missing(ctx, &name) {
        Some(r) => Err(r),
        None => Ok(name),
    }
}

/// A stored field (`None` when unset or null).
pub(super) fn field(p: &Policies, key: &str) -> Option<Value> {
    p.other.get(key).filter(|v| !v.is_null()).cloned()
}

/// Reads a field: its value, or as Pulsar answers a null one (JAX-RS: 204, no body).
async fn read(ctx: &Ctx, (tenant, ns): (String, String), key: &str) -> Response {
    let State(ctx) = ctx;
    match existing(ctx, &tenant, &ns) {
        Ok(ns) => match field(&ctx.service.policies.namespace(&ns), key) {
            Some(v) => Json(v).into_response(),
            None => StatusCode::NO_CONTENT.into_response(),
        },
        Err(r) => r,
    }
}

/// Reads a field Pulsar keeps as a primitive `long` (answered with its default when unset).
async fn read_or(ctx: &Ctx, (tenant, ns): (String, String), key: &str, default: i64) -> Response {
    let State(ctx) = ctx;
    match existing(ctx, &tenant, &ns) {
        Ok(ns) => {
            let v = field(&ctx.service.policies.namespace(&ns), key);
            Json(v.unwrap_or_else(|| default.into())).into_response()
        }
        Err(r) => r,
    }
}

/// Sets (`Some`) or removes (`None`) a field of an existing namespace's policies.
pub(super) async fn write(
    ctx: &Ctx,
    (tenant, ns): (String, String),
    key: &'static str,
    value: Option<Value>,
) -> Response {
    let State(ctx) = ctx;
    let ns = match existing(ctx, &tenant, &ns) {
        Ok(ns) => ns,
        Err(r) => return r,
    };
    crate::cluster::sync::update_namespace(ctx, ns, move |p| match value {
        Some(v) => {
            p.other.insert(key.to_owned(), v);
        }
        None => {
            p.other.remove(key);
        }
    })
    .await
}

/// A JSON number body (Pulsar reads these bodies as `int`/`long`; 400 otherwise).
fn number(body: &str) -> Result<i64, Response> {
    body.trim()
        .parse::<i64>()
        .map_err(|_| fail(StatusCode::BAD_REQUEST, "the body must be a number"))
}

/// A JSON body of a given type (400 otherwise).
pub(super) fn parse<T: serde::de::DeserializeOwned>(body: &str) -> Result<T, Response> {
    serde_json::from_str(body).map_err(|e| fail(StatusCode::BAD_REQUEST, e.to_string()))
}

const EXPIRATION: &str = "subscription_expiration_time_minutes";

async fn get_expiration(ctx: Ctx, Path(p): NsPath) -> Response {
    read(&ctx, p, EXPIRATION).await
}

async fn set_expiration(ctx: Ctx, Path(p): NsPath, body: String) -> Response {
    match number(&body) {
        Ok(v) if v < 0 || v > i64::from(i32::MAX) => fail(
            StatusCode::PRECONDITION_FAILED,
            "Invalid value for subscription expiration time",
        ),
        Ok(v) => write(&ctx, p, EXPIRATION, Some(v.into())).await,
        Err(r) => r,
    }
}

async fn remove_expiration(ctx: Ctx, Path(p): NsPath) -> Response {
    write(&ctx, p, EXPIRATION, None).await
}

const OFFLOAD_THRESHOLD: &str = "offload_threshold";
const OFFLOAD_SECONDS: &str = "offload_threshold_in_seconds";
const DELETION_LAG: &str = "offload_deletion_lag_ms";

async fn get_offload_threshold(ctx: Ctx, Path(p): NsPath) -> Response {
    read_or(&ctx, p, OFFLOAD_THRESHOLD, -1).await
}

async fn set_offload_threshold(ctx: Ctx, Path(p): NsPath, body: String) -> Response {
    // Pulsar takes any long here (negative: off).
    match number(&body) {
        Ok(v) => write(&ctx, p, OFFLOAD_THRESHOLD, Some(v.into())).await,
        Err(r) => r,
    }
}

async fn get_offload_seconds(ctx: Ctx, Path(p): NsPath) -> Response {
    read_or(&ctx, p, OFFLOAD_SECONDS, -1).await
}

async fn set_offload_seconds(ctx: Ctx, Path(p): NsPath, body: String) -> Response {
    match number(&body) {
        Ok(v) if v < 0 => fail(
            StatusCode::PRECONDITION_FAILED,
            "Invalid value for offloadThresholdInSecond",
        ),
        Ok(v) => write(&ctx, p, OFFLOAD_SECONDS, Some(v.into())).await,
        Err(r) => r,
    }
}

async fn get_deletion_lag(ctx: Ctx, Path(p): NsPath) -> Response {
    read(&ctx, p, DELETION_LAG).await
}

async fn set_deletion_lag(ctx: Ctx, Path(p): NsPath, body: String) -> Response {
    match number(&body) {
        Ok(v) => write(&ctx, p, DELETION_LAG, Some(v.into())).await,
        Err(r) => r,
    }
}

async fn remove_deletion_lag(ctx: Ctx, Path(p): NsPath) -> Response {
    write(&ctx, p, DELETION_LAG, None).await
}

const OFFLOAD_POLICIES: &str = "offload_policies";

async fn get_offload_policies(ctx: Ctx, Path(p): NsPath) -> Response {
    read(&ctx, p, OFFLOAD_POLICIES).await
}

async fn set_offload_policies(ctx: Ctx, Path(p): NsPath, body: String) -> Response {
    let v: Value = match parse(&body) {
        Ok(v) => v,
        Err(r) => return r,
    };
    if let Err(reason) = pulsar_rs_broker::policies::offload::validate(&v) {
        return fail(StatusCode::PRECONDITION_FAILED, reason);
    }
    write(&ctx, p, OFFLOAD_POLICIES, Some(v)).await
}

async fn remove_offload_policies(ctx: Ctx, Path(p): NsPath) -> Response {
    write(&ctx, p, OFFLOAD_POLICIES, None).await
}

const PROPERTIES: &str = "properties";

/// The stored properties.
fn properties(p: &Policies) -> Map<String, Value> {
    match field(p, PROPERTIES) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

async fn get_properties(State(ctx): Ctx, Path((tenant, ns)): NsPath) -> Response {
    match existing(&ctx, &tenant, &ns) {
        Ok(ns) => Json(properties(&ctx.service.policies.namespace(&ns))).into_response(),
        Err(r) => r,
    }
}

/// Changes the properties under the policy store's lock.
async fn edit_properties(
    ctx: &Ctx,
    (tenant, ns): (String, String),
    f: impl FnOnce(&mut Map<String, Value>) + Send + 'static,
) -> Response {
    let State(ctx) = ctx;
    let ns = match existing(ctx, &tenant, &ns) {
        Ok(ns) => ns,
        Err(r) => return r,
    };
    crate::cluster::sync::update_namespace(ctx, ns, move |p| {
        let mut m = properties(p);
        f(&mut m);
        p.other.insert(PROPERTIES.to_owned(), Value::Object(m));
    })
    .await
}

/// Pulsar's `setProperties`: the given properties are added to (or replace) the stored ones.
async fn set_properties(ctx: Ctx, Path(p): NsPath, body: String) -> Response {
    let given: std::collections::BTreeMap<String, String> = match parse(&body) {
        Ok(m) => m,
        Err(r) => return r,
    };
    edit_properties(&ctx, p, move |m| {
        for (k, v) in given {
            m.insert(k, v.into());
        }
    })
    .await
}

async fn clear_properties(ctx: Ctx, Path(p): NsPath) -> Response {
    edit_properties(&ctx, p, Map::clear).await
}

async fn get_property(
    State(ctx): Ctx,
    Path((tenant, ns, key)): Path<(String, String, String)>,
) -> Response {
    match existing(&ctx, &tenant, &ns) {
        Ok(ns) => match properties(&ctx.service.policies.namespace(&ns)).get(&key) {
            Some(v) => Json(v.clone()).into_response(),
            None => StatusCode::NO_CONTENT.into_response(),
        },
        Err(r) => r,
    }
}

async fn set_property(
    ctx: Ctx,
    Path((tenant, ns, key, value)): Path<(String, String, String, String)>,
) -> Response {
    edit_properties(&ctx, (tenant, ns), move |m| {
        m.insert(key, value.into());
    })
    .await
}

async fn remove_property(
    ctx: Ctx,
    Path((tenant, ns, key)): Path<(String, String, String)>,
) -> Response {
    edit_properties(&ctx, (tenant, ns), move |m| {
        m.remove(&key);
    })
    .await
}

async fn get_auto_creation(ctx: Ctx, Path(p): NsPath) -> Response {
    read(&ctx, p, AutoTopicCreationOverride::FIELD).await
}

async fn set_auto_creation(ctx: Ctx, Path(p): NsPath, body: String) -> Response {
    let o: AutoTopicCreationOverride = match parse(&body) {
        Ok(o) => o,
        Err(r) => return r,
    };
    if let Err(detail) = o.validate() {
        return fail(
            StatusCode::PRECONDITION_FAILED,
            format!("Invalid configuration for autoTopicCreationOverride. the detail is {detail}"),
        );
    }
    let v = match serde_json::to_value(&o) {
        Ok(v) => v,
        Err(e) => return fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    write(&ctx, p, AutoTopicCreationOverride::FIELD, Some(v)).await
}

async fn remove_auto_creation(ctx: Ctx, Path(p): NsPath) -> Response {
    write(&ctx, p, AutoTopicCreationOverride::FIELD, None).await
}

/// Pulsar's `BookieAffinityGroupData`.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct BookieAffinityGroup {
    #[serde(default)]
    bookkeeper_affinity_group_primary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bookkeeper_affinity_group_secondary: Option<String>,
}

async fn get_bookie_affinity(ctx: Ctx, Path(p): NsPath) -> Response {
    read(&ctx, p, BOOKIE_AFFINITY).await
}

async fn set_bookie_affinity(ctx: Ctx, Path(p): NsPath, body: String) -> Response {
    let g: BookieAffinityGroup = match parse(&body) {
        Ok(g) => g,
        Err(r) => return r,
    };
    let v = match serde_json::to_value(&g) {
        Ok(v) => v,
        Err(e) => return fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    write(&ctx, p, BOOKIE_AFFINITY, Some(v)).await
}

async fn remove_bookie_affinity(ctx: Ctx, Path(p): NsPath) -> Response {
    write(&ctx, p, BOOKIE_AFFINITY, None).await
}
