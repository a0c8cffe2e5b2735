//! `internalStats` (Pulsar's `PersistentTopicInternalStats`: a topic's managed ledger and cursors)
//! and `partitioned-internalStats` (Pulsar's `PartitionedTopicInternalStats`: the partition
//! metadata and each partition's internal stats). As Pulsar, which leaves out the partitions whose
//! stats it cannot get, the partitioned form covers the partitions that exist
//! ([`crate::admin::machinery::state::targets`]), never a declared count one by one.
//! `?metadata=true` adds each ledger's metadata as its storage describes it (on BookKeeper:
//! quorums, state, ensembles), as Pulsar's `LedgerInfo.metadata`.

use std::sync::Arc;

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use pulsar_rs_broker::Topic;
use serde_json::{json, Map, Value};

use super::partitions::{self, PartitionDocument};
use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::load_topic;
use crate::admin::machinery::state::Ctx;
use crate::admin::machinery::topic_path::{ExistingTopic, TopicPath};
use crate::http::fail;

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new()
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/internalStats",
            Access::TopicRead,
            get(internal_stats),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/partitioned-internalStats",
            Access::TopicRead,
            get(partitioned_internal_stats),
        )
}

async fn internal_stats(
    State(ctx): Ctx,
    ExistingTopic(name): ExistingTopic,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let t = match load_topic(&ctx, name).await {
        Ok(t) => t,
        Err(r) => return r,
    };
    let metadata = q.get("metadata").is_some_and(|v| v == "true");
    match tokio::task::spawn_blocking(move || {
        let mut doc = internal_stats_json(&t);
        if metadata {
            add_ledger_metadata(&t, &mut doc);
        }
        doc
    })
    .await
    {
        Ok(v) => Json(v).into_response(),
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// `GET .../partitioned-internalStats`: 404 when the topic is not partitioned, with Apache
/// Pulsar 4.0's message (`getPartitionedTopicNotFoundErrorMessage`).
async fn partitioned_internal_stats(
    State(ctx): Ctx,
    TopicPath(name): TopicPath,
    headers: HeaderMap,
) -> Response {
    let n = match partitions::count(&ctx, &name).await {
        Ok(n) => n,
        Err(r) => return r,
    };
    if n == 0 {
        return fail(
            StatusCode::NOT_FOUND,
            format!("Partitioned Topic {name} not found"),
        );
    }
    let doc = PartitionDocument {
        op: "internalStats",
        local: std::sync::Arc::new(|_, t| internal_stats_json(t)),
        query: String::new(),
        per_partition: true,
    };
    let auth = headers.get(header::AUTHORIZATION).cloned();
    partitions::answer(&ctx, &name, n, doc, auth, Metadata(n)).await
}

/// Pulsar's `PartitionedTopicInternalStats` besides the partitions: the partition metadata.
struct Metadata(u32);

impl partitions::Summary for Metadata {
    fn add(&mut self, _doc: &Value) {}

    fn fields(self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(
            "metadata".into(),
            json!({ "partitions": self.0, "deleted": false }),
        );
        m
    }
}

/// Sets `metadata` on each ledger of `doc` whose storage describes it (Pulsar leaves it out of a
/// ledger whose metadata it cannot read). Blocking: a metadata-store read per ledger.
fn add_ledger_metadata(t: &Topic, doc: &mut Value) {
    let Some(ledgers) = doc.get_mut("ledgers").and_then(Value::as_array_mut) else {
        return;
    };
    for l in ledgers {
        let Some(id) = l.get("ledgerId").and_then(Value::as_i64) else {
            continue;
        };
        match t.ledger.ledger_metadata(id) {
            Ok(Some(m)) => {
                l["metadata"] = Value::String(m);
            }
            Ok(None) => {}
            Err(e) => {
                tracing::debug!(ledger_id = id, error = %e, "no ledger metadata for internalStats")
            }
        }
    }
}

/// Pulsar's `PersistentTopicInternalStats` of one topic or partition: its managed ledger, the
/// cursors of its subscriptions, its replication cursors (`pulsar.repl.<cluster>`) and the
/// `__compaction` cursor.
fn internal_stats_json(t: &Topic) -> Value {
    let st = t.ledger.stats();
    let mut waiting = 0;
    let subs = t.subscriptions();
    // The subscriptions' cursors, the replication cursors (Pulsar lists its replicators'), and
    // the `__compaction` cursor (the compaction horizon).
    let compaction_cursor = t
        .ledger
        .cursors()
        .into_iter()
        .filter(|c| {
            c.name() == pulsar_rs_broker::compaction::COMPACTION_CURSOR
                || c.name() == pulsar_rs_broker::topic::table_cursor::TABLE_CURSOR
                || t.is_replication_cursor(c.name())
        })
        .map(|c| (c, None));
    let mut cursors = Map::new();
    for (c, sub) in subs
        .iter()
        .map(|s| (Arc::clone(&s.cursor), Some(s)))
        .chain(compaction_cursor)
    {
        // A subscription's dispatcher waits for new entries when it has consumers and has read
        // everything written (Pulsar's waiting read op).
        let waiting_read =
            sub.is_some_and(|s| !s.consumers().is_empty()) && c.read_position() > st.last_confirmed;
        waiting += usize::from(waiting_read);
        let opened = sub.map_or(t.loaded_ms, |s| {
            s.stats.opened_ms.load(std::sync::atomic::Ordering::Relaxed)
        });
        cursors.insert(
            c.name().to_owned(),
            cursor_json(&c, st.entries_added, waiting_read, opened),
        );
    }
    let mut doc = managed_ledger_json(&t.ledger);
    doc.insert("waitingCursorsCount".into(), json!(waiting));
    doc.insert("cursors".into(), Value::Object(cursors));
    // Schemas are kept in the metadata store, not in ledgers.
    doc.insert("schemaLedgers".into(), json!([]));
    doc.insert("compactedLedger".into(), compacted_ledger(t));
    Value::Object(doc)
}

/// `p` as Pulsar prints a position in internal stats.
fn pos(p: pulsar_rs_ledger::Position) -> String {
    format!("{}:{}", p.ledger_id, p.entry_id)
}

/// The managed-ledger part of Pulsar's `ManagedLedgerInternalStats` (no cursors, no
/// `waitingCursorsCount`), for a topic's ledger and a transaction coordinator's log.
pub(in crate::admin) fn managed_ledger_json(
    ledger: &pulsar_rs_ledger::ManagedLedger,
) -> Map<String, Value> {
    let st = ledger.stats();
    let all_ledgers = ledger.ledgers();
    // `entries` and `size` of the current ledger are what it holds so far (Pulsar shows 0 until
    // it is closed; `currentLedgerEntries` carries the same number there).
    let ledgers: Vec<Value> = all_ledgers
        .iter()
        .map(|l| {
            // `offloaded` is the offload's `complete`, as Pulsar's.
            let offloaded = l.offload.as_ref().is_some_and(|c| c.complete);
            json!({"ledgerId": l.ledger_id, "entries": l.entries, "size": l.size,
                   "offloaded": offloaded, "underReplicated": false})
        })
        .collect();
    let last_created = all_ledgers.last().map_or(0, |l| l.created_ms);
    let doc = json!({
        "entriesAddedCounter": st.entries_added,
        "numberOfEntries": st.number_of_entries,
        "totalSize": st.total_size,
        "currentLedgerEntries": st.current_ledger_entries,
        "currentLedgerSize": st.current_ledger_size,
        "lastLedgerCreatedTimestamp": super::messages::iso_time(last_created),
        // Adds are confirmed in the journal's completion pass; none is held by the ledger.
        "pendingAddEntriesCount": 0,
        "lastConfirmedEntry": pos(st.last_confirmed),
        "state": if ledger.is_terminated() { "Terminated" } else { "LedgerOpened" },
        "ledgers": ledgers,
        // Not in Pulsar (which has no such recovery): entries recovery found damaged.
        "corruptEntries": ledger.corrupt_entries().iter().map(|p| pos(*p)).collect::<Vec<_>>(),
    });
    match doc {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Pulsar's `CursorStats` of one cursor; `entries_added` is its ledger's counter, `opened_ms`
/// when this process opened it.
pub(in crate::admin) fn cursor_json(
    c: &pulsar_rs_ledger::Cursor,
    entries_added: u64,
    waiting_read: bool,
    opened_ms: u64,
) -> Value {
    let ranges: Vec<String> = c
        .acked_ranges()
        .iter()
        .map(|(a, b)| format!("({}:{}..{}]", a.ledger_id, a.entry_id - 1, pos(*b)))
        .collect();
    let backlog = c.backlog();
    json!({
        "markDeletePosition": pos(c.mark_delete_position()),
        "readPosition": pos(c.read_position()),
        "waitingReadOp": waiting_read,
        // Reads are synchronous within a dispatcher pass: none is ever outstanding.
        "pendingReadOps": 0,
        // As Pulsar's invariant: entries added since load minus the entries backlog.
        "messagesConsumedCounter": i64::try_from(entries_added).unwrap_or(i64::MAX)
            - i64::try_from(backlog).unwrap_or(i64::MAX),
        // Cursors are stored in the metadata store, not in a ledger.
        "cursorLedger": -1,
        "cursorLedgerLastEntry": -1,
        "individuallyDeletedMessages": format!("[{}]", ranges.join(", ")),
        // When this process opened the cursor (there is no cursor ledger to switch).
        "lastLedgerSwitchTimestamp": super::messages::iso_time(opened_ms),
        "state": "Open",
        "active": c.is_active(),
        "numberOfEntriesSinceFirstNotAckedMessage": backlog + c.acked_count(),
        "totalNonContiguousDeletedMessagesRange": ranges.len(),
        "subscriptionHavePendingRead": waiting_read,
        "subscriptionHavePendingReplayRead": false,
        "properties": c.properties(),
    })
}

/// Pulsar's `compactedLedger` of `internalStats` (ledger −1 when never compacted). The horizon
/// is the `__compaction` cursor's mark-delete position, the last run's time is in `stats`'
/// `compaction` block.
fn compacted_ledger(t: &Topic) -> Value {
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
