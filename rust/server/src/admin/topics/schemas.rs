//! Schemas (`/admin/v2/schemas/{tenant}/{ns}/{topic}/...`, Pulsar's `SchemasResource`): get the
//! latest version, one version or all, upload (`POST .../schema`), delete, look a definition's
//! version up (`POST .../version`) and test compatibility (`POST .../compatibility`), with
//! Pulsar's JSON bodies and status codes (409 for an incompatible upload).

// Helpers return the ready 4xx response as their error; the admin path is cold.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Json;
use pulsar_rs_broker::schema::compat::{type_name, type_number, validate_data};
use pulsar_rs_broker::{BrokerError, SchemaInfo, TopicName};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::Ctx;
use crate::admin::machinery::topic_path::{DeferredTopicPath, TopicPath};
use crate::http::{blocking, broker_fail, fail};

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    // Pulsar's `SchemasResource` lets the tenant's admins in (`validateAdminAccessForTenant`).
    Routes::new()
        .route(
            "/admin/v2/schemas/{tenant}/{ns}/{topic}/schema",
            Access::Tenant,
            get(latest).post(upload).delete(delete),
        )
        .route(
            "/admin/v2/schemas/{tenant}/{ns}/{topic}/schema/{version}",
            Access::Tenant,
            get(one),
        )
        .route(
            "/admin/v2/schemas/{tenant}/{ns}/{topic}/schemas",
            Access::Tenant,
            get(all),
        )
        .route(
            "/admin/v2/schemas/{tenant}/{ns}/{topic}/version",
            Access::Tenant,
            post(version_of),
        )
        .route(
            "/admin/v2/schemas/{tenant}/{ns}/{topic}/compatibility",
            Access::Tenant,
            post(compatibility),
        )
}

/// Pulsar's `PostSchemaPayload`.
#[derive(Deserialize)]
struct Payload {
    /// Schema type name (`AVRO`, `JSON`, `STRING`, ...).
    #[serde(rename = "type")]
    schema_type: String,
    /// The definition; Jackson reads a JSON `null` as none.
    #[serde(default)]
    schema: Option<String>,
    /// Properties; Jackson reads a JSON `null` as none (the Go admin client sends `null` for an
    /// unset map).
    #[serde(default)]
    properties: Option<BTreeMap<String, String>>,
}

fn parse_payload(body: &str) -> Result<SchemaInfo, Response> {
    let p: Payload = serde_json::from_str(body).map_err(|e| {
        fail(
            StatusCode::BAD_REQUEST,
            format!("invalid schema payload: {e}"),
        )
    })?;
    let schema_type = type_number(&p.schema_type).ok_or_else(|| {
        fail(
            StatusCode::BAD_REQUEST,
            format!("unknown schema type {:?}", p.schema_type),
        )
    })?;
    Ok(SchemaInfo {
        schema_type,
        name: String::new(),
        data: p.schema.unwrap_or_default().into_bytes(),
        properties: p.properties.unwrap_or_default().into_iter().collect(),
        deleted: false,
        timestamp: 0,
    })
}

/// Pulsar's `GetSchemaResponse`.
fn schema_json(version: u64, s: &SchemaInfo) -> Value {
    let props: BTreeMap<&str, &str> = s
        .properties
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    json!({
        "version": version,
        "type": type_name(s.schema_type),
        "timestamp": s.timestamp,
        "data": String::from_utf8_lossy(&s.data),
        "properties": props,
    })
}

fn not_found() -> Response {
    fail(StatusCode::NOT_FOUND, "Schema not found")
}

async fn latest(State(ctx): Ctx, TopicPath(name): TopicPath) -> Response {
    // Schemas are kept per base topic.
    let name = name.base();
    blocking(
        &ctx,
        move |c| c.service.schemas.latest(&name.to_string()),
        |found| match found {
            Some((v, s)) => Json(schema_json(v, &s)).into_response(),
            None => not_found(),
        },
    )
    .await
}

async fn one(
    State(ctx): Ctx,
    TopicPath(name): TopicPath,
    Path((_, _, _, version)): Path<(String, String, String, String)>,
) -> Response {
    let name = name.base();
    let Ok(version) = version.parse::<u64>() else {
        return fail(StatusCode::BAD_REQUEST, "the version must be a number");
    };
    blocking(
        &ctx,
        move |c| Ok(c.service.schemas.versions(&name.to_string())?),
        move |all| {
            let found = usize::try_from(version)
                .ok()
                .and_then(|i| all.get(i))
                .filter(|s| !s.deleted);
            match found {
                Some(s) => Json(schema_json(version, s)).into_response(),
                None => not_found(),
            }
        },
    )
    .await
}

async fn all(State(ctx): Ctx, TopicPath(name): TopicPath) -> Response {
    // Schemas are kept per base topic.
    let name = name.base();
    blocking(
        &ctx,
        move |c| c.service.schemas.active(&name.to_string()),
        |versions| {
            let list: Vec<Value> = versions.iter().map(|(v, s)| schema_json(*v, s)).collect();
            Json(json!({ "getSchemaResponses": list })).into_response()
        },
    )
    .await
}

async fn delete(State(ctx): Ctx, TopicPath(name): TopicPath) -> Response {
    // Schemas are kept per base topic.
    let name = name.base();
    blocking(
        &ctx,
        move |c| c.service.schemas.delete(&name.to_string()),
        |v| match v {
            Some(v) => Json(json!({ "version": v })).into_response(),
            None => not_found(),
        },
    )
    .await
}

/// Maps an incompatible upload to 409, as Pulsar.
fn upload_fail(e: &BrokerError) -> Response {
    match e {
        BrokerError::IncompatibleSchema(m) => fail(StatusCode::CONFLICT, m.clone()),
        other => broker_fail(other),
    }
}

/// The base topic and the schema of an upload, version or compatibility request: the body was
/// read first (an undecodable body is refused before an invalid name), then the name, then the
/// payload is checked.
#[allow(clippy::result_large_err)] // cold path; the error is the ready response
fn schema_request(
    path: DeferredTopicPath,
    body: &str,
) -> Result<(TopicName, SchemaInfo), Response> {
    let TopicPath(name) = path?;
    Ok((name.base(), parse_payload(body)?))
}

async fn upload(State(ctx): Ctx, path: DeferredTopicPath, body: String) -> Response {
    let (name, schema) = match schema_request(path, &body) {
        Ok(r) => r,
        Err(r) => return r,
    };
    // Pulsar validates the definition first: 422 for one it cannot read.
    if let Err(why) = validate_data(&schema) {
        return fail(StatusCode::UNPROCESSABLE_ENTITY, why);
    }
    let c = Arc::clone(&ctx);
    let r = tokio::task::spawn_blocking(move || {
        // Pulsar's upload stores under the strategy; auto update does not apply to admins.
        let strategy = c
            .service
            .policies
            .effective(&name)
            .schema_compatibility_strategy;
        c.service
            .schemas
            .put_if_absent(&name.to_string(), schema, strategy, true)
    })
    .await;
    match r {
        Ok(Ok(v)) => Json(json!({ "version": { "version": v } })).into_response(),
        Ok(Err(e)) => upload_fail(&e),
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn version_of(State(ctx): Ctx, path: DeferredTopicPath, body: String) -> Response {
    let (name, schema) = match schema_request(path, &body) {
        Ok(r) => r,
        Err(r) => return r,
    };
    blocking(
        &ctx,
        move |c| c.service.schemas.find(&name.to_string(), &schema),
        |v| match v {
            Some(v) => Json(json!({ "version": v })).into_response(),
            None => not_found(),
        },
    )
    .await
}

/// `POST .../compatibility` (Pulsar's `testCompatibility`): 202 with `{"compatibility": true,
/// "schemaCompatibilityStrategy"}` when the schema could be added; else a refusal with why, so
/// that `pulsar-admin schemas compatibility` fails (exit status 1) on it, as on Pulsar: 409 for an
/// incompatible schema and 422 for an unreadable definition, as an upload answers them. (Pulsar
/// answers both with its unexpected-error 500 and a stack trace; the fault is the request's.)
async fn compatibility(State(ctx): Ctx, path: DeferredTopicPath, body: String) -> Response {
    let (name, schema) = match schema_request(path, &body) {
        Ok(r) => r,
        Err(r) => return r,
    };
    if let Err(why) = validate_data(&schema) {
        return fail(StatusCode::UNPROCESSABLE_ENTITY, why);
    }
    blocking(
        &ctx,
        move |c| {
            let strategy = c
                .service
                .policies
                .effective(&name)
                .schema_compatibility_strategy;
            match c
                .service
                .schemas
                .check(&name.to_string(), &schema, strategy)
            {
                Ok(()) => Ok(Ok(strategy)),
                Err(BrokerError::IncompatibleSchema(m)) => Ok(Err(m)),
                Err(e) => Err(e),
            }
        },
        |checked| match checked {
            Ok(strategy) => (
                StatusCode::ACCEPTED,
                Json(json!({
                    "compatibility": true,
                    "schemaCompatibilityStrategy": strategy.as_str(),
                })),
            )
                .into_response(),
            Err(why) => fail(StatusCode::CONFLICT, why),
        },
    )
    .await
}
