//! Transaction admin REST, Pulsar's `/admin/v3/transactions/...` paths: coordinator stats,
//! one transaction's metadata, a topic's transaction buffer stats and a subscription's pending
//! ack stats. Every path answers 503 when `transactionCoordinatorEnabled` is off, as Pulsar's.

use super::access::{Access, Routes};
use std::collections::{BTreeMap, HashMap};

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use pulsar_rs_broker::transaction::coordinator::TransactionCoordinator;
use pulsar_rs_broker::transaction::TxnId;
use serde_json::{json, Value};

use super::topic_path::{existing, DeferredTopicPath};
use super::Ctx;
use crate::http::{blocking, fail};
use crate::ServerContext;

/// The routes of this module.
pub(super) fn routes() -> Routes {
    Routes::new()
        .route(
            "/admin/v3/transactions/coordinatorStats",
            Access::Superuser,
            get(coordinator_stats),
        )
        .route(
            "/admin/v3/transactions/transactionMetadata/{most}/{least}",
            Access::Superuser,
            get(transaction_metadata),
        )
        .route(
            "/admin/v3/transactions/transactionBufferStats/{tenant}/{ns}/{topic}",
            Access::Superuser,
            get(buffer_stats),
        )
        .route(
            "/admin/v3/transactions/pendingAckStats/{tenant}/{ns}/{topic}/{sub}",
            Access::Superuser,
            get(pending_ack_stats),
        )
}

/// 503 when transactions are off.
fn disabled(ctx: &ServerContext) -> Option<Response> {
    (!ctx.service.transactions_enabled()).then(|| {
        fail(
            StatusCode::SERVICE_UNAVAILABLE,
            "This Broker is not configured with transactionCoordinatorEnabled=true.",
        )
    })
}

/// Pulsar's `TransactionCoordinatorStats`.
fn tc_stats(tc: &TransactionCoordinator) -> Value {
    json!({
        "state": "Ready",
        "leastSigBits": tc.transactions().iter().map(|m| m.id.least).max().unwrap_or(0),
        "lowWaterMark": tc.low_watermark(),
        "ongoingTxnSize": tc.active_count(),
        "recoverStartTime": 0,
        "recoverEndTime": 0,
    })
}

async fn coordinator_stats(State(ctx): Ctx, Query(q): Query<HashMap<String, String>>) -> Response {
    if let Some(r) = disabled(&ctx) {
        return r;
    }
    match q.get("coordinatorId").map(|s| s.parse::<u64>()) {
        Some(Ok(id)) => match ctx.service.coordinator(id) {
            Ok(tc) => Json(tc_stats(&tc)).into_response(),
            Err(e) => fail(StatusCode::NOT_FOUND, e.to_string()),
        },
        Some(Err(_)) => fail(StatusCode::BAD_REQUEST, "invalid coordinatorId"),
        None => {
            let all: BTreeMap<String, Value> = ctx
                .service
                .coordinators()
                .iter()
                .map(|tc| (tc.id.to_string(), tc_stats(tc)))
                .collect();
            Json(all).into_response()
        }
    }
}

async fn transaction_metadata(State(ctx): Ctx, Path((most, least)): Path<(u64, u64)>) -> Response {
    if let Some(r) = disabled(&ctx) {
        return r;
    }
    let id = TxnId::new(most, least);
    let meta = match ctx.service.coordinator(most) {
        Ok(tc) => tc.get(id),
        Err(e) => return fail(StatusCode::NOT_FOUND, e.to_string()),
    };
    let Some(meta) = meta else {
        return fail(
            StatusCode::NOT_FOUND,
            format!("The transaction {id} is not found in the transaction coordinator"),
        );
    };
    blocking(
        &ctx,
        move |c| {
            let mut produced = BTreeMap::new();
            for p in &meta.partitions {
                let tb = pulsar_rs_broker::TopicName::parse(p)
                    .ok()
                    .and_then(|n| c.service.loaded_topic(&n))
                    .and_then(|t| t.txn_buffer.clone());
                let (start, aborted) = tb.map_or((None, false), |tb| tb.txn_state(id));
                produced.insert(
                    p.clone(),
                    json!({
                        "startPosition": start.map(|s| s.to_string()),
                        "aborted": aborted,
                    }),
                );
            }
            let mut acked: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
            for (topic, sub) in &meta.subscriptions {
                acked
                    .entry(topic.clone())
                    .or_default()
                    .insert(sub.clone(), json!({ "cumulativeAckPosition": null }));
            }
            Ok(json!({
                "txnId": id.to_string(),
                "status": meta.status.name(),
                "openTimestamp": meta.start_ms,
                "timeoutAt": meta.start_ms.saturating_add(meta.timeout_ms),
                "producedPartitions": produced,
                "ackedPartitions": acked,
            }))
        },
        |v| Json(v).into_response(),
    )
    .await
}

async fn buffer_stats(State(ctx): Ctx, path: DeferredTopicPath) -> Response {
    if let Some(r) = disabled(&ctx) {
        return r;
    }
    let name = match existing(&ctx, path) {
        Ok(n) => n,
        Err(r) => return r,
    };
    blocking(
        &ctx,
        move |c| {
            let t = c.service.topic(&name, false)?;
            let ongoing = t.txn_buffer.as_ref().map_or(0, |tb| tb.ongoing_count());
            Ok(json!({
                "state": "Ready",
                "maxReadPosition": t.max_read_position().to_string(),
                "lastSnapshotTimestamps": 0,
                "ongoingTxnSize": ongoing,
                "lowWaterMarks": {},
                "snapshotType": "Single",
            }))
        },
        |v| Json(v).into_response(),
    )
    .await
}

async fn pending_ack_stats(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, sub)): Path<(String, String, String, String)>,
) -> Response {
    if let Some(r) = disabled(&ctx) {
        return r;
    }
    let name = match existing(&ctx, path) {
        Ok(n) => n,
        Err(r) => return r,
    };
    blocking(
        &ctx,
        move |c| {
            let t = c.service.topic(&name, false)?;
            let s = t
                .subscription(&sub)
                .ok_or_else(|| pulsar_rs_broker::BrokerError::SubscriptionNotFound(sub.clone()))?;
            Ok(json!({
                "state": "Ready",
                "lowWaterMarks": {},
                "ongoingTxnSize": s.pending_acks.transactions(),
            }))
        },
        |v| Json(v).into_response(),
    )
    .await
}
