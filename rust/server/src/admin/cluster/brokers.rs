//! `/admin/v2/brokers/...`: the health check and the broker's configuration as Pulsar's admin
//! shows it (`pulsar-admin brokers get-runtime-config`; `pulsar-admin clusters list` reads
//! `clusterName` from it to mark the current cluster). The dynamic configuration is
//! [`super::dynamic_config`]'s.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use serde_json::{Map, Value};

use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::Ctx;

/// Settings never shown: key material (a path or URL to it stays visible elsewhere).
const SECRET_KEYS: [&str; 2] = ["tokenSecretKey", "basicAuthConf"];

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new()
        .route(
            "/admin/v2/brokers/health",
            Access::Superuser,
            get(|| async { "ok" }),
        )
        .route(
            "/admin/v2/brokers/configuration/runtime",
            Access::Superuser,
            get(runtime),
        )
}

/// Every setting by its Pulsar name, each value as a string (Pulsar's `Map<String, String>`).
async fn runtime(State(ctx): Ctx) -> Response {
    let Ok(Value::Object(settings)) = serde_json::to_value(&*ctx.service.config) else {
        return Json(Map::new()).into_response();
    };
    let shown: Map<String, Value> = settings
        .into_iter()
        .filter(|(k, _)| !SECRET_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k, Value::String(as_text(&v))))
        .collect();
    Json(shown).into_response()
}

/// A setting as Java's `String.valueOf` writes it (lists comma-separated).
fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "null".into(),
        Value::Array(items) => items.iter().map(as_text).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}
