//! Transaction admin REST, Pulsar's `/admin/v3/transactions/...` paths: coordinator stats and
//! internal stats (its log's managed ledger), one transaction's metadata, the slow transactions, a
//! topic's transaction buffer stats (and one transaction's part of it) and a subscription's pending
//! ack stats (and one transaction's part of it) and its pending-ack log's internal stats. Every
//! path answers 503 when `transactionCoordinatorEnabled` is off, as Pulsar's. Every route is a read
//! any authenticated caller may make, as on Pulsar 4.0.8 (which checks only the coordinator's or
//! topic's ownership there; scaling coordinators and aborting a transaction, which need a
//! superuser, are `super::coordinators`'). Where a message stands in a subscription's pending acks
//! is `positionStatsInPendingAck`. In a cluster a call is answered by the owner of the topic or
//! coordinator it names (`crate::admin::cluster::owner`), and the coordinator-wide
//! `coordinatorStats` and `slowTransactions` gather the other brokers' coordinators.

use std::collections::{BTreeMap, HashMap};

use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use pulsar_rs_broker::transaction::buffer::TransactionBuffer;
use pulsar_rs_broker::transaction::coordinator::{TransactionCoordinator, TxnMeta};
use pulsar_rs_broker::transaction::{TxnId, COORDINATOR_ASSIGN_TOPIC};
use pulsar_rs_broker::TopicName;
use pulsar_rs_ledger::Position;
use serde_json::{json, Value};

use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::Ctx;
use crate::admin::machinery::topic_path::{self, existing, DeferredTopicPath};
use crate::admin::topics::internal_stats::{cursor_json, managed_ledger_json};
use crate::context::ServerContext;
use crate::http::{blocking, fail};

/// The prefix of every route of this module.
const TXN_ROUTES: &str = "/admin/v3/transactions/";

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new()
        .route(
            "/admin/v3/transactions/coordinatorStats",
            Access::Authenticated,
            get(coordinator_stats),
        )
        .route(
            "/admin/v3/transactions/transactionMetadata/{most}/{least}",
            Access::Authenticated,
            get(transaction_metadata),
        )
        .route(
            "/admin/v3/transactions/slowTransactions/{timeout}",
            Access::Authenticated,
            get(slow_transactions),
        )
        .route(
            "/admin/v3/transactions/coordinatorInternalStats/{coordinatorId}",
            Access::Authenticated,
            get(coordinator_internal_stats),
        )
        .route(
            "/admin/v3/transactions/transactionInBufferStats/{tenant}/{ns}/{topic}/{most}/{least}",
            Access::Authenticated,
            get(in_buffer_stats),
        )
        .route(
            "/admin/v3/transactions/transactionInPendingAckStats/{tenant}/{ns}/{topic}/{sub}/{most}/{least}",
            Access::Authenticated,
            get(in_pending_ack_stats),
        )
        .route(
            "/admin/v3/transactions/transactionBufferStats/{tenant}/{ns}/{topic}",
            Access::Authenticated,
            get(buffer_stats),
        )
        .route(
            "/admin/v3/transactions/pendingAckStats/{tenant}/{ns}/{topic}/{sub}",
            Access::Authenticated,
            get(pending_ack_stats),
        )
        .route(
            "/admin/v3/transactions/pendingAckInternalStats/{tenant}/{ns}/{topic}/{sub}",
            Access::Authenticated,
            get(pending_ack_internal_stats),
        )
        .route(
            "/admin/v3/transactions/positionStatsInPendingAck/{tenant}/{ns}/{topic}/{sub}/{ledgerId}/{entryId}",
            Access::Authenticated,
            get(position_stats_in_pending_ack),
        )
}

/// The topic whose owner answers a transaction route in a cluster (Pulsar's
/// `validateTopicOwnership` in `TransactionsBase`): the topic a buffer or pending-ack route
/// names, or the assign partition of the coordinator a route names (`coordinatorStats` and
/// `slowTransactions` only with `coordinatorId`: without it they gather every coordinator's).
pub(in crate::admin) async fn owner_topic(
    parts: &mut axum::http::request::Parts,
    ctx: &std::sync::Arc<ServerContext>,
) -> Option<TopicName> {
    let template = parts
        .extensions
        .get::<axum::extract::MatchedPath>()?
        .as_str()
        .to_owned();
    let route = template.strip_prefix(TXN_ROUTES)?.split('/').next()?;
    let Path(params) = Path::<HashMap<String, String>>::from_request_parts(parts, ctx)
        .await
        .ok()?;
    let Query(query) = Query::<HashMap<String, String>>::from_request_parts(parts, ctx)
        .await
        .ok()?;
    let coordinator = match route {
        "transactionMetadata" | "abortTransaction" => params.get("most"),
        "coordinatorInternalStats" => params.get("coordinatorId"),
        "coordinatorStats" | "slowTransactions" => query.get("coordinatorId"),
        _ => {
            let (t, ns, topic) = (
                params.get("tenant")?,
                params.get("ns")?,
                params.get("topic")?,
            );
            return topic_path::name("persistent", t, ns, topic).ok();
        }
    };
    let id = u32::try_from(coordinator?.parse::<u64>().ok()?).ok()?;
    Some(
        TopicName::parse(COORDINATOR_ASSIGN_TOPIC)
            .ok()?
            .partition(id),
    )
}

/// 503 when transactions are off (every transaction route's first check).
pub(in crate::admin) fn disabled(ctx: &ServerContext) -> Option<Response> {
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

/// In a cluster, the answers of the coordinators other brokers host to the same call on each
/// one (`?coordinatorId=N`, sent through this broker, which redirects it to the owner), by id:
/// Pulsar's broker asks them through its admin client. A coordinator no broker has loaded yet
/// is left out.
async fn other_coordinators(
    ctx: &ServerContext,
    path: &str,
    authorization: Option<&axum::http::HeaderValue>,
) -> Vec<(u64, Value)> {
    let Some(member) = ctx.cluster.get() else {
        return Vec::new();
    };
    let n = match member.partitions(COORDINATOR_ASSIGN_TOPIC).await {
        Ok(Some(n)) => n,
        _ => return Vec::new(),
    };
    // This broker's own admin API, which redirects to each coordinator's broker: over HTTPS
    // when peers are called over TLS (the redirect then names their HTTPS URL).
    let own = match (&ctx.admin_url_tls, ctx.broker_client.tls_enabled()) {
        (Some(tls), true) => tls,
        _ => &ctx.admin_url,
    };
    let mut answers = Vec::new();
    for id in (0..u64::from(n)).filter(|id| ctx.service.coordinator(*id).is_err()) {
        let url = format!("{own}{path}?coordinatorId={id}");
        match crate::cluster::peers::admin::get_json(&ctx.broker_client, &url, authorization).await
        {
            Ok(v) => answers.push((id, v)),
            Err(e) => tracing::debug!(tc = id, error = %e, "a coordinator's admin answer"),
        }
    }
    answers
}

async fn coordinator_stats(
    State(ctx): Ctx,
    Query(q): Query<HashMap<String, String>>,
    headers: axum::http::HeaderMap,
) -> Response {
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
            let mut all: BTreeMap<String, Value> = ctx
                .service
                .coordinators()
                .iter()
                .map(|tc| (tc.id.to_string(), tc_stats(tc)))
                .collect();
            let auth = headers.get(axum::http::header::AUTHORIZATION);
            let path = "/admin/v3/transactions/coordinatorStats";
            for (id, stats) in other_coordinators(&ctx, path, auth).await {
                all.insert(id.to_string(), stats);
            }
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
        move |c| Ok(metadata_json(c, &meta)),
        |v| Json(v).into_response(),
    )
    .await
}

/// The loaded partition `topic` (a full name), if any.
fn loaded(c: &ServerContext, topic: &str) -> Option<std::sync::Arc<pulsar_rs_broker::Topic>> {
    pulsar_rs_broker::TopicName::parse(topic)
        .ok()
        .and_then(|n| c.service.loaded_topic(&n))
}

/// Pulsar's `TransactionInBufferStats` of `id` on a topic's buffer.
fn in_buffer_json(tb: Option<&TransactionBuffer>, id: TxnId) -> Value {
    let (start, aborted) = tb.map_or((None, false), |tb| tb.txn_state(id));
    json!({
        "startPosition": start.map(|s| s.to_string()),
        "aborted": aborted,
    })
}

/// Pulsar's `TransactionInPendingAckStats` of `id` on a subscription.
fn in_pending_ack_json(cumulative: Option<Position>) -> Value {
    json!({ "cumulativeAckPosition": cumulative.map(|p| p.to_string()) })
}

/// Pulsar's `TransactionMetadata` of a transaction not yet ended, with the buffer stats of the
/// partitions it produced to and the pending-ack stats of the subscriptions it acked on (of the
/// ones loaded here). Blocking: short locks only, but called off the async workers.
fn metadata_json(c: &ServerContext, meta: &TxnMeta) -> Value {
    let id = meta.id;
    let mut produced = BTreeMap::new();
    for p in &meta.partitions {
        let t = loaded(c, p);
        let tb = t.as_ref().and_then(|t| t.txn_buffer.as_deref());
        produced.insert(p.clone(), in_buffer_json(tb, id));
    }
    let mut acked: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
    for (topic, sub) in &meta.subscriptions {
        let cumulative = loaded(c, topic)
            .and_then(|t| t.subscription(sub))
            .and_then(|s| s.pending_acks.cumulative_of(id));
        acked
            .entry(topic.clone())
            .or_default()
            .insert(sub.clone(), in_pending_ack_json(cumulative));
    }
    json!({
        "txnId": id.to_string(),
        "status": meta.status.name(),
        "openTimestamp": meta.start_ms,
        // Pulsar's `timeoutAt` is the client's timeout itself, in ms (4.0.8's
        // MLTransactionMetadataStore builds TxnMetaImpl(id, now, timeOut, owner)), not a time.
        "timeoutAt": meta.timeout_ms,
        "producedPartitions": produced,
        "ackedPartitions": acked,
    })
}

/// Pulsar's 404 for a coordinator this broker does not host.
fn no_coordinator(id: u64) -> Response {
    fail(
        StatusCode::NOT_FOUND,
        format!("Transaction coordinator not found! coordinator id : {id}"),
    )
}

/// `GET slowTransactions/{timeout}[?coordinatorId=N]`: the transactions not yet ended whose
/// timeout is longer than `timeout` ms ([`TransactionCoordinator::slow_transactions`]), as
/// Pulsar's map of `txnId` to `TransactionMetadata`.
async fn slow_transactions(
    State(ctx): Ctx,
    Path(timeout_text): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: axum::http::HeaderMap,
) -> Response {
    if let Some(r) = disabled(&ctx) {
        return r;
    }
    let Ok(timeout) = timeout_text.parse::<u64>() else {
        return fail(
            StatusCode::BAD_REQUEST,
            format!("invalid timeout: {timeout_text}"),
        );
    };
    let mut others = BTreeMap::new();
    let tcs = match q.get("coordinatorId").map(|s| s.parse::<u64>()) {
        Some(Ok(id)) => match ctx.service.coordinator(id) {
            Ok(tc) => vec![tc],
            Err(_) => return no_coordinator(id),
        },
        Some(Err(_)) => return fail(StatusCode::BAD_REQUEST, "invalid coordinatorId"),
        None => {
            let auth = headers.get(axum::http::header::AUTHORIZATION);
            let path = format!("/admin/v3/transactions/slowTransactions/{timeout}");
            for (_, answer) in other_coordinators(&ctx, &path, auth).await {
                if let Value::Object(m) = answer {
                    others.extend(m);
                }
            }
            let all = ctx.service.coordinators();
            if all.is_empty() && ctx.cluster.get().is_none() {
                return fail(StatusCode::NOT_FOUND, "Transaction coordinator not found");
            }
            all
        }
    };
    blocking(
        &ctx,
        move |c| {
            let mut slow: BTreeMap<String, Value> = tcs
                .iter()
                .flat_map(|tc| tc.slow_transactions(timeout))
                .map(|m| (m.id.to_string(), metadata_json(c, &m)))
                .collect();
            slow.extend(others);
            Ok(slow)
        },
        |v| Json(v).into_response(),
    )
    .await
}

/// `GET coordinatorInternalStats/{coordinatorId}[?metadata=true]`: Pulsar's
/// `TransactionCoordinatorInternalStats`, the managed-ledger internal stats of the coordinator's
/// log (with its one cursor, `transaction.subscription`).
async fn coordinator_internal_stats(
    State(ctx): Ctx,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = disabled(&ctx) {
        return r;
    }
    let Ok(id) = id.parse::<u64>() else {
        return fail(
            StatusCode::BAD_REQUEST,
            format!("invalid coordinatorId: {id}"),
        );
    };
    let Ok(tc) = ctx.service.coordinator(id) else {
        return no_coordinator(id);
    };
    let metadata = q.get("metadata").is_some_and(|v| v == "true");
    blocking(
        &ctx,
        move |_| {
            let (ledger, cursor) = tc.log();
            Ok(json!({ "transactionLogStats": log_stats(ledger, cursor, metadata) }))
        },
        |v| Json(v).into_response(),
    )
    .await
}

/// Pulsar's `TransactionLogStats`: a transaction log's (or pending-ack log's) managed-ledger
/// internal stats with its one cursor; with `metadata`, each ledger's BookKeeper metadata.
fn log_stats(
    ledger: &pulsar_rs_ledger::ManagedLedger,
    cursor: &pulsar_rs_ledger::Cursor,
    metadata: bool,
) -> Value {
    let mut stats = managed_ledger_json(ledger);
    let entries_added = ledger.stats().entries_added;
    let mut cursors = serde_json::Map::new();
    cursors.insert(
        cursor.name().to_owned(),
        cursor_json(cursor, entries_added, false, 0),
    );
    stats.insert("cursors".into(), Value::Object(cursors));
    stats.insert("waitingCursorsCount".into(), json!(0));
    if metadata {
        if let Some(Value::Array(ls)) = stats.get_mut("ledgers") {
            for l in ls {
                let Some(lid) = l.get("ledgerId").and_then(Value::as_i64) else {
                    continue;
                };
                if let Ok(Some(m)) = ledger.ledger_metadata(lid) {
                    l["metadata"] = Value::String(m);
                }
            }
        }
    }
    json!({
        "managedLedgerName": ledger.name(),
        "managedLedgerInternalStats": stats,
    })
}

/// `GET pendingAckInternalStats/{tenant}/{ns}/{topic}/{sub}[?metadata=true]`: Pulsar's
/// `TransactionPendingAckInternalStats`, the internal stats of the subscription's pending-ack
/// log (404 while no transactional ack created it).
async fn pending_ack_internal_stats(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, sub)): Path<(String, String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = disabled(&ctx) {
        return r;
    }
    let name = match existing(&ctx, path) {
        Ok(n) => n,
        Err(r) => return r,
    };
    let metadata = q.get("metadata").is_some_and(|v| v == "true");
    blocking(
        &ctx,
        move |c| {
            let s = subscription_of(c, &name, &sub)?;
            Ok(s.pending_ack_store.get().map(|store| {
                let (ledger, cursor) = store.log();
                json!({ "pendingAckLogStats": log_stats(ledger, cursor, metadata) })
            }))
        },
        |v| match v {
            Some(v) => Json(v).into_response(),
            None => fail(
                StatusCode::NOT_FOUND,
                "The subscription has no pending ack log: no transactional ack was made on it",
            ),
        },
    )
    .await
}

/// A subscription of an existing topic (loaded here if needed; blocking).
fn subscription_of(
    c: &ServerContext,
    name: &TopicName,
    sub: &str,
) -> Result<
    std::sync::Arc<pulsar_rs_broker::subscription::Subscription>,
    pulsar_rs_broker::BrokerError,
> {
    let t = c.service.topic(name, false)?;
    t.subscription(sub)
        .ok_or_else(|| pulsar_rs_broker::BrokerError::SubscriptionNotFound {
            subscription: sub.to_owned(),
            topic: t.name.to_string(),
        })
}

/// The checks the per-transaction topic routes share, in Pulsar's order: transactions on, a
/// transaction id, a topic that exists.
fn txn_and_topic(
    ctx: &ServerContext,
    path: DeferredTopicPath,
    most: &str,
    least: &str,
) -> Result<(TxnId, pulsar_rs_broker::TopicName), Response> {
    if let Some(r) = disabled(ctx) {
        return Err(r);
    }
    let Some(id) = txn_id(most, least) else {
        return Err(fail(StatusCode::BAD_REQUEST, "invalid transaction id"));
    };
    Ok((id, existing(ctx, path)?))
}

/// `GET transactionInBufferStats/{tenant}/{ns}/{topic}/{most}/{least}`: Pulsar's
/// `TransactionInBufferStats` (`startPosition` while the transaction is ongoing on the topic,
/// `aborted`).
async fn in_buffer_stats(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, most, least)): Path<(String, String, String, String, String)>,
) -> Response {
    let (id, name) = match txn_and_topic(&ctx, path, &most, &least) {
        Ok(v) => v,
        Err(r) => return r,
    };
    blocking(
        &ctx,
        move |c| {
            let t = c.service.topic(&name, false)?;
            Ok(in_buffer_json(t.txn_buffer.as_deref(), id))
        },
        |v| Json(v).into_response(),
    )
    .await
}

/// `GET transactionInPendingAckStats/{tenant}/{ns}/{topic}/{sub}/{most}/{least}`: Pulsar's
/// `TransactionInPendingAckStats` (`cumulativeAckPosition` the transaction holds there).
async fn in_pending_ack_stats(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, sub, most, least)): Path<(String, String, String, String, String, String)>,
) -> Response {
    let (id, name) = match txn_and_topic(&ctx, path, &most, &least) {
        Ok(v) => v,
        Err(r) => return r,
    };
    blocking(
        &ctx,
        move |c| {
            let s = subscription_of(c, &name, &sub)?;
            Ok(in_pending_ack_json(s.pending_acks.cumulative_of(id)))
        },
        |v| Json(v).into_response(),
    )
    .await
}

/// A transaction id from its two path segments.
fn txn_id(most: &str, least: &str) -> Option<TxnId> {
    Some(TxnId::new(most.parse().ok()?, least.parse().ok()?))
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
            // Relaxed: a statistic.
            let last_snapshot = t.txn_buffer.as_ref().map_or(0, |tb| {
                tb.stats
                    .last_snapshot_ms
                    .load(std::sync::atomic::Ordering::Relaxed)
            });
            let low_water_marks: serde_json::Map<String, Value> = t
                .txn_buffer
                .as_ref()
                .map(|tb| tb.low_water_marks())
                .unwrap_or_default()
                .into_iter()
                .map(|(tc, lwm)| (tc.to_string(), json!(lwm)))
                .collect();
            Ok(json!({
                "state": "Ready",
                "maxReadPosition": t.max_read_position().to_string(),
                "lastSnapshotTimestamps": last_snapshot,
                "ongoingTxnSize": ongoing,
                "lowWaterMarks": low_water_marks,
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
            let s = subscription_of(c, &name, &sub)?;
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

/// `GET positionStatsInPendingAck/{tenant}/{ns}/{topic}/{sub}/{ledgerId}/{entryId}[?batchIndex=]`:
/// Pulsar's `PositionInPendingAckStats`, where a message stands in the subscription's acks
/// (`MarkDelete`, `PendingAck`, `NotInPendingAck`, `InvalidPosition` for a batch index past
/// the batch).
async fn position_stats_in_pending_ack(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, sub, ledger, entry)): Path<(String, String, String, String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = disabled(&ctx) {
        return r;
    }
    let (Ok(ledger_id), Ok(entry_id)) = (ledger.parse::<i64>(), entry.parse::<i64>()) else {
        return fail(
            StatusCode::BAD_REQUEST,
            format!("invalid position: {ledger}:{entry}"),
        );
    };
    let batch_index = match q.get("batchIndex").map(|b| b.parse::<u32>()) {
        None => None,
        Some(Ok(i)) => Some(i),
        Some(Err(_)) => return fail(StatusCode::BAD_REQUEST, "invalid batchIndex"),
    };
    let name = match existing(&ctx, path) {
        Ok(n) => n,
        Err(r) => return r,
    };
    let at = Position::new(ledger_id, entry_id);
    blocking(
        &ctx,
        move |c| {
            let state = subscription_of(c, &name, &sub)?.position_in_pending_ack(at, batch_index);
            Ok(json!({ "state": state.name() }))
        },
        |v| Json(v).into_response(),
    )
    .await
}
