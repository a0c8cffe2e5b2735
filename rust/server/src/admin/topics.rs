//! Topics: list, create and delete (non-partitioned and partitioned), partition metadata and
//! its update, `internalStats` (`stats` and `partitioned-stats` live in [`super::stats`]).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use pulsar_rs_broker::service::topic_quota::EAGER_PARTITIONS;
use serde_json::{json, Value};

use super::topic_path::{DeferredTopicPath, ExistingTopic, TopicPath};
use super::{load_topic, Ctx};
use crate::http::{broker_fail, fail, no_content};
use crate::ServerContext;

/// The routes of this module.
pub(super) fn routes() -> Router<Arc<ServerContext>> {
    Router::new()
        .route("/admin/v2/persistent/{tenant}/{ns}", get(list_topics))
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/partitioned",
            get(list_partitioned),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/partitions",
            get(get_partitions)
                .put(create_partitions)
                .post(update_partitions)
                .delete(delete_partitioned),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}",
            axum::routing::put(create_topic).delete(delete_topic),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/internalStats",
            get(internal_stats),
        )
}

async fn list_topics(State(ctx): Ctx, Path((tenant, ns)): Path<(String, String)>) -> Response {
    if let Some(r) = super::namespaces::missing(&ctx, &format!("{tenant}/{ns}")) {
        return r;
    }
    let names: Vec<String> = ctx
        .service
        .topics_of_namespace(&format!("{tenant}/{ns}"))
        .iter()
        .map(ToString::to_string)
        .collect();
    Json(names).into_response()
}

async fn list_partitioned(State(ctx): Ctx, Path((tenant, ns)): Path<(String, String)>) -> Response {
    if let Some(r) = super::namespaces::missing(&ctx, &format!("{tenant}/{ns}")) {
        return r;
    }
    Json(partitioned_names(&ctx, &format!("{tenant}/{ns}"), true)).into_response()
}

/// The partitioned topics of one domain in `namespace`.
pub(super) fn partitioned_names(
    ctx: &ServerContext,
    namespace: &str,
    persistent: bool,
) -> Vec<String> {
    ctx.service
        .partitioned_topics(namespace)
        .iter()
        .filter(|(t, _)| t.is_persistent() == persistent)
        .map(|(t, _)| t.to_string())
        .collect()
}

async fn get_partitions(
    State(ctx): Ctx,
    TopicPath(name): TopicPath,
    axum::extract::Query(q): axum::extract::Query<std::collections::HashMap<String, String>>,
) -> Response {
    // `checkAllowAutoCreation=true` (HTTP lookups): auto-create as PARTITIONED_METADATA does.
    let auto_create = q.get("checkAllowAutoCreation").is_some_and(|v| v == "true");
    if let Some(member) = ctx.cluster.get() {
        // In a cluster the store's record answers (a topic another broker created).
        match member.partitions(&name.to_string()).await {
            Ok(Some(n)) if n > 0 && name.partition_index().is_none() => {
                let (svc, base) = (Arc::clone(&ctx.service), name.clone());
                return match tokio::task::spawn_blocking(move || svc.adopt_partitioned(&base, n))
                    .await
                {
                    Ok(Ok(())) => {
                        Json(json!({ "partitions": n, "deleted": false })).into_response()
                    }
                    Ok(Err(e)) => broker_fail(&e),
                    Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
                };
            }
            Ok(_) => {}
            Err(e) => return fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        }
    }
    match ctx.service.partitions(&name, auto_create) {
        // As Pulsar: without auto-creation, a topic that is neither partitioned nor stored (nor a
        // partition within its topic's count) is 404.
        Ok(0) if !auto_create && !topic_exists(&ctx, &name) => {
            fail(StatusCode::NOT_FOUND, format!("Topic {name} not found"))
        }
        Ok(n) => Json(json!({ "partitions": n, "deleted": false })).into_response(),
        Err(e) => broker_fail(&e),
    }
}

/// Whether `name` is a stored or loaded topic, or a partition within its partitioned topic's count.
fn topic_exists(ctx: &ServerContext, name: &pulsar_rs_broker::TopicName) -> bool {
    if let Some(i) = name.partition_index() {
        let n = ctx.service.partitions(&name.base(), false).unwrap_or(0);
        if i < n {
            return true;
        }
    }
    ctx.service.loaded_topic(name).is_some()
        || ctx
            .service
            .topics_of_namespace(&name.namespace_name())
            .contains(name)
}

async fn create_partitions(State(ctx): Ctx, path: DeferredTopicPath, body: String) -> Response {
    // The body is read before the name is checked (an undecodable body is refused first).
    let TopicPath(name) = match path {
        Ok(p) => p,
        Err(r) => return r,
    };
    if let Some(r) = super::namespaces::missing(&ctx, &name.namespace_name()) {
        return r;
    }
    let n = match create_count(&body) {
        Ok(n) => n,
        Err(r) => return *r,
    };
    let max = ctx.service.max_partitions();
    if max > 0 && n > max {
        return fail(
            StatusCode::NOT_ACCEPTABLE,
            format!("Number of partitions should be less than or equal to {max}"),
        );
    }
    if ctx.service.partitions(&name, false).unwrap_or(0) == 0 {
        if let Err(e) = ctx.service.admit_new_topics(&name.namespace_name(), n) {
            return fail(StatusCode::PRECONDITION_FAILED, e.to_string());
        }
    }
    if let Some(member) = ctx.cluster.get() {
        // In a cluster the store's record is the one every broker answers from; the partitions
        // are created on first use by their owners (loading them here would take them over).
        match member.partitions(&name.to_string()).await {
            Ok(Some(_)) => {
                return fail(
                    StatusCode::CONFLICT,
                    format!("This topic already exists: {name}"),
                )
            }
            Ok(None) => {}
            Err(e) => return fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        }
        if let Err(e) = member.record_partitions(&name.to_string(), n).await {
            return fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string());
        }
        return no_content(&ctx, move |svc| svc.create_partitioned(&name, n)).await;
    }
    // As Pulsar (`tryCreatePartitionsAsync`): the partitions are created with the partitioned
    // topic, so they are listed (and collected as inactive topics) before anyone uses them; past
    // EAGER_PARTITIONS they are created on first use, so the work of one request is bounded
    // whatever count it declares (they are listed all the same).
    no_content(&ctx, move |svc| {
        svc.create_partitioned(&name, n)?;
        create_partitions_from(svc, &name, 0, n.min(EAGER_PARTITIONS))
    })
    .await
}

/// Creates (loads, storing them) the persistent partitions `from..to` of `name`.
pub(super) fn create_partitions_from(
    svc: &pulsar_rs_broker::BrokerService,
    name: &pulsar_rs_broker::TopicName,
    from: u32,
    to: u32,
) -> Result<(), pulsar_rs_broker::BrokerError> {
    if name.is_persistent() {
        for i in from..to {
            svc.topic(&name.partition(i), true)?;
        }
    }
    Ok(())
}

/// The count of a partitioned-topic create body, or the refusal Pulsar answers: 406 for a count
/// under 1, 400 for a body that is not a count.
pub(super) fn create_count(body: &str) -> Result<u32, Box<Response>> {
    match partition_count(body) {
        Some(n) if n <= 0 => Err(Box::new(fail(
            StatusCode::NOT_ACCEPTABLE,
            "Number of partitions should be more than 0",
        ))),
        Some(n) => Ok(u32::try_from(n).unwrap_or(u32::MAX)),
        None => Err(Box::new(fail(
            StatusCode::BAD_REQUEST,
            "body must be the number of partitions",
        ))),
    }
}

/// The partition count of a create body: the number itself, or (Pulsar's
/// `application/vnd.partitioned-topic-metadata+json`, which `pulsaradmin` and the Java admin client
/// send) a `PartitionedTopicMetadata` document `{"partitions": n, ...}`.
pub(super) fn partition_count(body: &str) -> Option<i64> {
    let body = body.trim();
    if body.starts_with('{') {
        let doc: Value = serde_json::from_str(body).ok()?;
        return doc.get("partitions")?.as_i64();
    }
    body.parse::<i64>().ok()
}

/// `POST .../partitions` (Pulsar's `updatePartitionedTopic`): the body is the new count. As Pulsar
/// answers: 409 for a topic that is not partitioned, 422 for a count below the current one (0 and
/// negative counts included), 204 and nothing changed for the current count.
async fn update_partitions(State(ctx): Ctx, path: DeferredTopicPath, body: String) -> Response {
    // The body is read before the name is checked (an undecodable body is refused first).
    let TopicPath(name) = match path {
        Ok(p) => p,
        Err(r) => return r,
    };
    let Ok(n) = body.trim().parse::<i64>() else {
        return fail(
            StatusCode::BAD_REQUEST,
            "body must be the number of partitions",
        );
    };
    let current = ctx.service.partitions(&name, false).unwrap_or(0);
    if current == 0 {
        return fail(
            StatusCode::CONFLICT,
            format!("Topic {name} is not the partitioned topic."),
        );
    }
    if n < i64::from(current) {
        return fail(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("Desired partitions {n} can't be less than the current partitions {current}."),
        );
    }
    if n == i64::from(current) {
        return StatusCode::NO_CONTENT.into_response();
    }
    let max = ctx.service.max_partitions();
    if max > 0 && n > i64::from(max) {
        return fail(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("Desired partitions {n} can't be greater than the maximum partitions per topic {max}."),
        );
    }
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    let svc = Arc::clone(&ctx.service);
    let grow = move || {
        svc.update_partitioned(&name, n)?;
        // Pulsar's `tryCreateExtendedPartitionsAsync`: the new partitions exist at once (up to
        // EAGER_PARTITIONS; the others on first use).
        create_partitions_from(
            &svc,
            &name,
            current.min(EAGER_PARTITIONS),
            n.min(EAGER_PARTITIONS),
        )
    };
    match tokio::task::spawn_blocking(grow).await {
        Ok(Ok(())) => StatusCode::NO_CONTENT.into_response(),
        Ok(Err(pulsar_rs_broker::BrokerError::NotAllowed(why))) => fail(StatusCode::CONFLICT, why),
        Ok(Err(e)) => broker_fail(&e),
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn delete_partitioned(State(ctx): Ctx, TopicPath(name): TopicPath) -> Response {
    no_content(&ctx, move |svc| svc.delete_partitioned(&name)).await
}

async fn create_topic(State(ctx): Ctx, TopicPath(name): TopicPath) -> Response {
    if let Some(r) = super::namespaces::missing(&ctx, &name.namespace_name()) {
        return r;
    }
    if ctx.service.loaded_topic(&name).is_some()
        || ctx
            .service
            .topics_of_namespace(&name.namespace_name())
            .contains(&name)
    {
        return fail(StatusCode::CONFLICT, "This topic already exists");
    }
    // Pulsar answers a full namespace with 409 here (412 for a partitioned topic).
    if let Err(e) = ctx.service.admit_new_topics(&name.namespace_name(), 1) {
        return fail(StatusCode::CONFLICT, e.to_string());
    }
    no_content(&ctx, move |svc| svc.topic(&name, true).map(drop)).await
}

async fn delete_topic(State(ctx): Ctx, TopicPath(name): TopicPath) -> Response {
    no_content(&ctx, move |svc| svc.delete_topic(&name)).await
}

async fn internal_stats(State(ctx): Ctx, ExistingTopic(name): ExistingTopic) -> Response {
    let t = match load_topic(&ctx, name).await {
        Ok(t) => t,
        Err(r) => return r,
    };
    let st = t.ledger.stats();
    let pos = |p: pulsar_rs_ledger::Position| format!("{}:{}", p.ledger_id, p.entry_id);
    let all_ledgers = t.ledger.ledgers();
    // `entries` and `size` of the current ledger are what it holds so far (Pulsar shows 0 until
    // it is closed; `currentLedgerEntries` carries the same number there).
    let ledgers: Vec<Value> = all_ledgers
        .iter()
        .map(|l| {
            json!({"ledgerId": l.ledger_id, "entries": l.entries, "size": l.size,
                   "offloaded": false, "underReplicated": false})
        })
        .collect();
    let last_created = all_ledgers.last().map_or(0, |l| l.created_ms);
    let mut cursors = serde_json::Map::new();
    let mut waiting = 0;
    let subs = t.subscriptions();
    // The subscriptions' cursors, and the `__compaction` cursor (the compaction horizon).
    let compaction_cursor = t
        .ledger
        .cursors()
        .into_iter()
        .filter(|c| c.name() == pulsar_rs_broker::compaction::COMPACTION_CURSOR)
        .map(|c| (c, None));
    for (c, sub) in subs
        .iter()
        .map(|s| (Arc::clone(&s.cursor), Some(s)))
        .chain(compaction_cursor)
    {
        let ranges: Vec<String> = c
            .acked_ranges()
            .iter()
            .map(|(a, b)| format!("({}:{}..{}]", a.ledger_id, a.entry_id - 1, pos(*b)))
            .collect();
        // A subscription's dispatcher waits for new entries when it has consumers and has read
        // everything written (Pulsar's waiting read op).
        let read = c.read_position();
        let waiting_read =
            sub.is_some_and(|s| !s.consumers().is_empty()) && read > st.last_confirmed;
        waiting += usize::from(waiting_read);
        let backlog = c.backlog();
        let opened = sub.map_or(t.loaded_ms, |s| {
            s.stats.opened_ms.load(std::sync::atomic::Ordering::Relaxed)
        });
        cursors.insert(
            c.name().to_owned(),
            json!({
                "markDeletePosition": pos(c.mark_delete_position()),
                "readPosition": pos(read),
                "waitingReadOp": waiting_read,
                // Reads are synchronous within a dispatcher pass: none is ever outstanding.
                "pendingReadOps": 0,
                // As Pulsar's invariant: entries added since load minus the entries backlog.
                "messagesConsumedCounter": i64::try_from(st.entries_added).unwrap_or(i64::MAX)
                    - i64::try_from(backlog).unwrap_or(i64::MAX),
                // Cursors are stored in the metadata store, not in a ledger.
                "cursorLedger": -1,
                "cursorLedgerLastEntry": -1,
                "individuallyDeletedMessages": format!("[{}]", ranges.join(", ")),
                // When this process opened the cursor (there is no cursor ledger to switch).
                "lastLedgerSwitchTimestamp": super::messages::iso_time(opened),
                "state": "Open",
                "active": c.is_active(),
                "numberOfEntriesSinceFirstNotAckedMessage": backlog + c.acked_count(),
                "totalNonContiguousDeletedMessagesRange": ranges.len(),
                "subscriptionHavePendingRead": waiting_read,
                "subscriptionHavePendingReplayRead": false,
                "properties": c.properties(),
            }),
        );
    }
    Json(json!({
        "entriesAddedCounter": st.entries_added,
        "numberOfEntries": st.number_of_entries,
        "totalSize": st.total_size,
        "currentLedgerEntries": st.current_ledger_entries,
        "currentLedgerSize": st.current_ledger_size,
        "lastLedgerCreatedTimestamp": super::messages::iso_time(last_created),
        "waitingCursorsCount": waiting,
        // Adds are confirmed in the journal's completion pass; none is held by the ledger.
        "pendingAddEntriesCount": 0,
        "lastConfirmedEntry": pos(st.last_confirmed),
        "state": "LedgerOpened",
        "ledgers": ledgers,
        "cursors": cursors,
        // Schemas are kept in the metadata store, not in ledgers.
        "schemaLedgers": [],
        "compactedLedger": compacted_ledger(&t),
        // Not in Pulsar (which has no such recovery): entries recovery found damaged.
        "corruptEntries": t.ledger.corrupt_entries().iter().map(|p| pos(*p)).collect::<Vec<_>>(),
    }))
    .into_response()
}

/// Pulsar's `compactedLedger` of `internalStats` (ledger −1 when never compacted). The horizon
/// is the `__compaction` cursor's mark-delete position, the last run's time is in `stats`'
/// `compaction` block.
fn compacted_ledger(t: &pulsar_rs_broker::Topic) -> Value {
    let info = t.compaction.info();
    let compacted = info.ledger_id.is_some();
    json!({
        "ledgerId": info.ledger_id.unwrap_or(-1),
        "entries": if compacted { i64::try_from(info.entries).unwrap_or(i64::MAX) } else { -1 },
        "size": if compacted { i64::try_from(info.size).unwrap_or(i64::MAX) } else { -1 },
        "offloaded": false,
        "underReplicated": false,
    })
}
