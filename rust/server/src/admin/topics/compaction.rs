//! Topic compaction REST, Pulsar's paths: `PUT …/{topic}/compaction` starts a compaction (409
//! "Compaction already running"; a partitioned topic starts one on each partition) and
//! `GET …/{topic}/compaction` returns `LongRunningProcessStatus` (`{"status", "lastError"}`).
//! Non-persistent topics have none (405).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::put;
use axum::Json;

use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::Ctx;
use crate::admin::machinery::topic_path::ExistingTopic;
use crate::http::{blocking, fail};

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new()
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/compaction",
            Access::Tenant,
            put(trigger).get(status),
        )
        .route(
            "/admin/v2/non-persistent/{tenant}/{ns}/{topic}/compaction",
            Access::Tenant,
            put(not_persistent).get(not_persistent),
        )
}

async fn not_persistent() -> Response {
    fail(
        StatusCode::METHOD_NOT_ALLOWED,
        "Operation not allowed on non-persistent topic",
    )
}

async fn trigger(State(ctx): Ctx, ExistingTopic(name): ExistingTopic) -> Response {
    blocking(
        &ctx,
        move |c| {
            let n = c.service.partitions(&name, false)?;
            let parts: Vec<_> = if n == 0 {
                vec![name]
            } else {
                c.service.partition_targets(&name, n)
            };
            let mut all_started = true;
            for p in &parts {
                if n > 0 {
                    c.service.topic(p, true)?; // a partition nobody used yet
                }
                all_started &= c.service.trigger_compaction(p)?;
            }
            Ok(all_started)
        },
        |started| {
            if started {
                StatusCode::NO_CONTENT.into_response()
            } else {
                fail(StatusCode::CONFLICT, "Compaction already running")
            }
        },
    )
    .await
}

async fn status(State(ctx): Ctx, ExistingTopic(name): ExistingTopic) -> Response {
    // As Pulsar: the status is a topic's; a partitioned topic's base name has none.
    blocking(
        &ctx,
        move |c| Ok(c.service.topic(&name, false)?.compaction.status()),
        |s| Json(s).into_response(),
    )
    .await
}
