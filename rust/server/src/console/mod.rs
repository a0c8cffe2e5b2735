//! The web console at `/` on the admin port: plain HTML/JS/CSS built into the binary (no CDN, no
//! build step), reading the admin REST API for topic details and acting through it (skip/clear
//! backlog, reset cursor, policies), plus two JSON endpoints of its own:
//!
//! * `GET /console/api/overview`: every topic with rates, storage and backlog ([`stats`]);
//! * `GET /console/api/history[?topic=persistent://...]`: the last minutes of rates and backlog
//!   sampled by the broker ([`history`]);
//! * `GET /console/api/cluster`: the cluster's brokers, its leader and each broker's bundles
//!   ([`cluster`]);
//! * `GET /console/api/replication`: the clusters this one replicates to and each topic's
//!   backlog towards each ([`replication`]).
//!
//! The page and its assets are public (they hold no data; the login form must load); the JSON
//! endpoints go through the admin guard like every admin call (the admin router mounts both),
//! so with authentication on the page asks for a token and sends it as `Authorization: Bearer`.
//!
//! The console keeps its own state, the [`History`]: made at start, filled by its sampler
//! ([`history::sample_loop`]) and read by its route ([`api_routes`]).

pub mod cluster;
pub mod history;
pub mod replication;
pub mod stats;

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

pub use history::History;

use crate::context::ServerContext;

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const STYLE_CSS: &str = include_str!("assets/style.css");

/// The console's page and assets, public: they hold no data, and the login form must load.
pub fn page_routes() -> Router<Arc<ServerContext>> {
    Router::new()
        .route("/", get(|| asset("text/html; charset=utf-8", INDEX_HTML)))
        .route(
            "/console/app.js",
            get(|| asset("text/javascript; charset=utf-8", APP_JS)),
        )
        .route(
            "/console/style.css",
            get(|| asset("text/css; charset=utf-8", STYLE_CSS)),
        )
}

/// The console's JSON endpoints, the history's read from `history`; the admin router mounts
/// them behind its guard.
pub fn api_routes(history: Arc<History>) -> Router<Arc<ServerContext>> {
    Router::new()
        .route("/console/api/overview", get(stats::overview_handler))
        .route(
            "/console/api/history",
            get(history_handler).with_state(history),
        )
        .route("/console/api/cluster", get(cluster::cluster_handler))
        .route(
            "/console/api/replication",
            get(replication::replication_handler),
        )
}

async fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// `GET /console/api/history`: broker totals, or `?topic=` one topic (a partitioned topic: the
/// sum of its partitions).
async fn history_handler(
    State(history): State<Arc<History>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let points = match q.get("topic") {
        Some(t) => history.topic(t),
        None => history.broker(),
    };
    Json(json!({
        "intervalMs": u64::try_from(history::SAMPLE_EVERY.as_millis()).unwrap_or(u64::MAX),
        "windowMs": u64::try_from(history::WINDOW.as_millis()).unwrap_or(u64::MAX),
        "points": points,
    }))
    .into_response()
}
