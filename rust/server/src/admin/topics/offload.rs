//! Offloading a topic's ledgers to tiered storage, Pulsar's paths: `PUT …/{topic}/offload` with a
//! message id (`{"ledgerId","entryId","partitionIndex"}`) starts offloading every ledger before
//! it (204; 409 "Offload already in progress"; 400 without a body or for an invalid position)
//! and `GET …/{topic}/offload` returns Pulsar's `OffloadProcessStatus`
//! (`{"status","lastError","firstUnoffloadedMessage"}`). Non-persistent topics have none (405).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::put;
use axum::Json;
use pulsar_rs_ledger::{LedgerError, OffloadStart, OffloadStatus, Position};
use serde_json::{json, Value};

use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::Ctx;
use crate::admin::machinery::topic_path::ExistingTopic;
use crate::http::{blocking, fail};

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new()
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/offload",
            Access::Tenant,
            put(trigger).get(status),
        )
        .route(
            "/admin/v2/non-persistent/{tenant}/{ns}/{topic}/offload",
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

/// The body's message id as a position.
#[allow(clippy::result_large_err)] // the ready 400 response; the admin path is cold
fn position(body: &str) -> Result<Position, Response> {
    let v: Value = serde_json::from_str(body.trim()).map_err(|_| {
        fail(
            StatusCode::BAD_REQUEST,
            "a message id is required: {\"ledgerId\":L,\"entryId\":E}",
        )
    })?;
    match (v["ledgerId"].as_i64(), v["entryId"].as_i64()) {
        (Some(l), Some(e)) => Ok(Position::new(l, e)),
        _ => Err(fail(
            StatusCode::BAD_REQUEST,
            "a message id is required: {\"ledgerId\":L,\"entryId\":E}",
        )),
    }
}

async fn trigger(State(ctx): Ctx, ExistingTopic(name): ExistingTopic, body: String) -> Response {
    let upto = match position(&body) {
        Ok(p) => p,
        Err(r) => return r,
    };
    blocking(
        &ctx,
        move |c| {
            let topic = c.service.topic(&name, false)?;
            match topic.ledger.trigger_offload(upto) {
                Ok(started) => Ok(Ok(started)),
                Err(e @ LedgerError::InvalidPosition { .. }) => Ok(Err(e.to_string())),
                Err(e) => Err(e.into()),
            }
        },
        |outcome| match outcome {
            Ok(OffloadStart::Started) => StatusCode::NO_CONTENT.into_response(),
            Ok(OffloadStart::AlreadyRunning) => {
                fail(StatusCode::CONFLICT, "Offload already in progress")
            }
            Err(why) => fail(
                StatusCode::BAD_REQUEST,
                format!("Invalid position for offload: {why}"),
            ),
        },
    )
    .await
}

async fn status(State(ctx): Ctx, ExistingTopic(name): ExistingTopic) -> Response {
    blocking(
        &ctx,
        move |c| {
            let t = c.service.topic(&name, false)?;
            Ok((t.ledger.offload_status(), t.partition))
        },
        |(s, partition)| Json(status_json(&s, partition)).into_response(),
    )
    .await
}

/// Pulsar's `OffloadProcessStatusImpl`: the earliest id (-1, -1) unless the last run succeeded.
fn status_json(s: &OffloadStatus, partition: i32) -> Value {
    let (status, error, first) = match s {
        OffloadStatus::NotRun => ("NOT_RUN", String::new(), Position::new(-1, -1)),
        OffloadStatus::Running => ("RUNNING", String::new(), Position::new(-1, -1)),
        OffloadStatus::Success { first_unoffloaded } => {
            ("SUCCESS", String::new(), *first_unoffloaded)
        }
        OffloadStatus::Error { message } => ("ERROR", message.clone(), Position::new(-1, -1)),
    };
    json!({
        "status": status,
        "lastError": error,
        "firstUnoffloadedMessage": {
            "ledgerId": first.ledger_id,
            "entryId": first.entry_id,
            "partitionIndex": partition,
            "batchIndex": -1,
            "batchSize": 0,
        },
    })
}
