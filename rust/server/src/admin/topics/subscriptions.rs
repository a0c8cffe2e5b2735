//! Subscriptions of a topic (or of every partition of a partitioned topic): list, create (at
//! latest, earliest or a message id), delete (412 while consumers are connected;
//! `?force=true` disconnects them first), `skip/{n}`, `skip_all`, `resetcursor/{timestamp}`,
//! `resetcursor` to a message id, `expireMessages/{seconds}` (one subscription or
//! `all_subscription`), `expireMessages` to a message id, `replicatedSubscriptionStatus` (get
//! and set whether a subscription is replicated), `diagnosis` (what holds its delivery back now:
//! [`pulsar_rs_broker::subscription::diagnosis`], with the entries it names read for their
//! publish time and key).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Json;
use pulsar_rs_broker::compaction::COMPACTION_CURSOR;
use pulsar_rs_broker::{BrokerError, Topic};
use pulsar_rs_ledger::Position;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::targets;
use crate::admin::machinery::state::Ctx;
use crate::admin::machinery::topic_path::{
    existing, must_exist, DeferredTopicPath, ExistingTopic, TopicPath,
};
use crate::context::ServerContext;
use crate::http::{broker_fail, fail};

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new()
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscriptions",
            Access::TopicRead,
            get(list_subscriptions),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}",
            Access::Tenant,
            axum::routing::put(create_subscription).delete(delete_subscription),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/skip_all",
            Access::Tenant,
            post(skip_all),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/skip/{n}",
            Access::Tenant,
            post(skip),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/resetcursor/{ts}",
            Access::Tenant,
            post(reset_cursor),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/resetcursor",
            Access::Tenant,
            post(reset_cursor_to_id),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/expireMessages/{secs}",
            Access::Tenant,
            post(expire_messages),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/expireMessages",
            Access::Tenant,
            post(expire_messages_to_id),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/all_subscription/expireMessages/{secs}",
            Access::Tenant,
            post(expire_messages_all),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/replicatedSubscriptionStatus",
            Access::Tenant,
            post(set_replicated).get(get_replicated),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/diagnosis",
            Access::TopicRead,
            get(diagnosis),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/unackedMessages",
            Access::TopicRead,
            get(unacked_messages),
        )
}

/// The most entries `unackedMessages` lists per consumer (and of the replay set).
const MAX_UNACKED_LISTED: usize = 10_000;

/// `GET .../subscription/{sub}/unackedMessages?limit=N` (100 unless set, at most
/// [`MAX_UNACKED_LISTED`]): `{"<topic or partition>": {"consumers": [{"consumerName",
/// "entries": [{"messageId", "messages", "redeliveryCount"}]}], "waitingForRedelivery": [...],
/// "truncated"}}`.
async fn unacked_messages(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, sub)): Path<(String, String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let limit = match q.get("limit").map(|l| l.parse::<usize>()) {
        None => 100,
        Some(Ok(n)) if n > 0 => n.min(MAX_UNACKED_LISTED),
        Some(_) => return fail(StatusCode::BAD_REQUEST, "limit must be a positive integer"),
    };
    let found = each_subscription(ctx, path, sub, move |_, s| {
        Ok(serde_json::to_value(s.unacked(limit)).unwrap_or(Value::Null))
    })
    .await;
    match found {
        Ok(found) => {
            let found: Map<String, Value> = found.into_iter().collect();
            Json(Value::Object(found)).into_response()
        }
        Err(r) => r,
    }
}

/// `GET .../subscription/{sub}/diagnosis`: `{"<topic or partition>": <diagnosis>}`, one entry
/// per partition that has the subscription; 404 when none has it.
async fn diagnosis(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, sub)): Path<(String, String, String, String)>,
) -> Response {
    let now_ms = ctx.service.clock().now_ms();
    match each_subscription(ctx, path, sub, move |t, s| Ok(diagnose(t, s, now_ms))).await {
        Ok(found) => {
            let found: Map<String, Value> = found.into_iter().collect();
            Json(Value::Object(found)).into_response()
        }
        Err(r) => r,
    }
}

/// One subscription's diagnosis, with the oldest unacknowledged message (its publish time and
/// age at `now_ms`) and the key of each waiting hash named, read from their entries (blocking).
fn diagnose(t: &Topic, s: &pulsar_rs_broker::Subscription, now_ms: u64) -> Value {
    let d = s.diagnose();
    let read = |id: &str| -> Option<pulsar_rs_proto::pb::MessageMetadata> {
        let e = t.ledger.read_entry(Position::parse(id)?).ok()??;
        pulsar_rs_proto::parse_stored_metadata(&e.data).ok()
    };
    let oldest = d.oldest_unacked.map(|p| {
        let id = p.to_string();
        let publish = read(&id).map(|md| md.publish_time);
        serde_json::json!({
            "messageId": id,
            "publishTime": publish,
            "ageMs": publish.map(|ms| now_ms.saturating_sub(ms)),
        })
    });
    let mut v = serde_json::to_value(&d).unwrap_or(Value::Null);
    if let Some(blockers) = v.get_mut("blockers").and_then(Value::as_array_mut) {
        for b in blockers {
            let id = match b.get("hash").and(b.get("messageId")) {
                Some(Value::String(id)) => id.clone(),
                _ => continue,
            };
            if let Some(md) = read(&id) {
                let key = md.ordering_key.map_or(md.partition_key, |k| {
                    Some(String::from_utf8_lossy(&k).into_owned())
                });
                b["key"] = key.map_or(Value::Null, Value::String);
            }
        }
    }
    v["oldestUnackedMessage"] = oldest.unwrap_or(Value::Null);
    v
}

/// `POST .../replicatedSubscriptionStatus` with `true` or `false`: makes the subscription (on
/// every partition) replicated or not, as Pulsar's; 404 without it, 500 as Pulsar's when the
/// broker has `enableReplicatedSubscriptions` off.
async fn set_replicated(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, sub)): Path<(String, String, String, String)>,
    body: String,
) -> Response {
    let Ok(on) = serde_json::from_str::<bool>(body.trim()) else {
        return fail(StatusCode::BAD_REQUEST, "the body must be true or false");
    };
    match each_subscription(ctx, path, sub, move |_, s| Ok(s.set_replicated(on))).await {
        Ok(changed) if changed.iter().all(|(_, c)| *c) => StatusCode::NO_CONTENT.into_response(),
        Ok(_) => fail(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Failed to update cursor properties",
        ),
        Err(r) => r,
    }
}

/// `GET .../replicatedSubscriptionStatus`: `{"<topic or partition>": <replicated>}`, one entry
/// per partition, as Pulsar's.
async fn get_replicated(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, sub)): Path<(String, String, String, String)>,
) -> Response {
    match each_subscription(ctx, path, sub, |_, s| Ok(s.is_replicated())).await {
        Ok(status) => {
            let status: Map<String, Value> = status
                .into_iter()
                .map(|(topic, on)| (topic, Value::Bool(on)))
                .collect();
            Json(Value::Object(status)).into_response()
        }
        Err(r) => r,
    }
}

/// Runs `f` on the subscription `sub` of every target topic (blocking pool).
async fn on_subscription(
    ctx: Arc<ServerContext>,
    path: DeferredTopicPath,
    sub: String,
    f: impl Fn(&Topic, &pulsar_rs_broker::Subscription) -> Result<(), BrokerError> + Send + 'static,
) -> Response {
    match each_subscription(ctx, path, sub, f).await {
        Ok(_) => StatusCode::NO_CONTENT.into_response(),
        Err(r) => r,
    }
}

/// Runs `f` on the subscription `sub` of every target topic (blocking pool): each topic's
/// name and answer, or the response to give instead (404 when no topic has the subscription,
/// the first error `f` returned).
async fn each_subscription<T: Send + 'static>(
    ctx: Arc<ServerContext>,
    path: DeferredTopicPath,
    sub: String,
    f: impl Fn(&Topic, &pulsar_rs_broker::Subscription) -> Result<T, BrokerError> + Send + 'static,
) -> Result<Vec<(String, T)>, Response> {
    let name = existing(&ctx, path)?;
    let c = Arc::clone(&ctx);
    let r = tokio::task::spawn_blocking(move || {
        let mut answers = Vec::new();
        for t in targets(&c, &name)? {
            if let Some(s) = t.subscription(&sub) {
                answers.push((t.name.to_string(), f(&t, &s)?));
            }
        }
        if answers.is_empty() {
            return Err(BrokerError::SubscriptionNotFound {
                subscription: sub,
                topic: name.to_string(),
            });
        }
        Ok(answers)
    })
    .await;
    match r {
        Ok(Ok(answers)) => Ok(answers),
        Ok(Err(e)) => Err(broker_fail(&e)),
        Err(e) => Err(fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
    }
}

/// Runs `f` on the cursor of the subscription `sub` of every target topic, or on its
/// replication cursor of that name (`pulsar.repl.<cluster>`: Pulsar routes these calls to the
/// topic's replicator).
async fn on_cursor(
    ctx: Arc<ServerContext>,
    path: DeferredTopicPath,
    sub: String,
    f: impl Fn(&pulsar_rs_ledger::Cursor) + Send + 'static,
) -> Response {
    let name = sub.clone();
    on_targets(ctx, path, sub, move |t| {
        if let Some(s) = t.subscription(&name) {
            f(&s.cursor);
            return Ok(true);
        }
        let replication = t
            .replication_cursors()
            .into_iter()
            .find(|(_, c)| c.name() == name);
        Ok(replication.map(|(_, c)| f(&c)).is_some())
    })
    .await
}

/// Runs `g` on every target topic (blocking pool); `g` says whether it found `sub` there
/// (404 when no topic had it).
async fn on_targets(
    ctx: Arc<ServerContext>,
    path: DeferredTopicPath,
    sub: String,
    g: impl Fn(&Topic) -> Result<bool, BrokerError> + Send + 'static,
) -> Response {
    let name = match existing(&ctx, path) {
        Ok(n) => n,
        Err(r) => return r,
    };
    let c = Arc::clone(&ctx);
    let r = tokio::task::spawn_blocking(move || {
        let mut found = false;
        for t in targets(&c, &name)? {
            found |= g(&t)?;
        }
        if found {
            Ok(())
        } else {
            Err(BrokerError::SubscriptionNotFound {
                subscription: sub,
                topic: name.to_string(),
            })
        }
    })
    .await;
    match r {
        Ok(Ok(())) => StatusCode::NO_CONTENT.into_response(),
        Ok(Err(e)) => broker_fail(&e),
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn skip_all(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, sub)): Path<(String, String, String, String)>,
) -> Response {
    on_cursor(ctx, path, sub, pulsar_rs_ledger::Cursor::skip_all).await
}

async fn skip(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, sub, n)): Path<(String, String, String, String, String)>,
) -> Response {
    let Ok(n) = n.parse::<u64>() else {
        return fail(
            StatusCode::BAD_REQUEST,
            "the number of messages to skip must be a non-negative integer",
        );
    };
    on_cursor(ctx, path, sub, move |c| c.skip_entries(n)).await
}

async fn reset_cursor(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, sub, ts)): Path<(String, String, String, String, String)>,
) -> Response {
    let Ok(ts) = ts.parse::<u64>() else {
        return fail(
            StatusCode::BAD_REQUEST,
            "the timestamp must be milliseconds since the epoch",
        );
    };
    on_subscription(ctx, path, sub, move |_, s| s.seek_by_time(ts)).await
}

/// A message id in a request body: Pulsar's `ResetCursorData` / `MessageIdImpl` JSON (the
/// other fields of `ResetCursorData`, such as `properties`, are ignored; `batchIndex` is used
/// by `expireMessages`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageIdBody {
    ledger_id: i64,
    entry_id: i64,
    #[serde(default = "minus_one")]
    partition_index: i32,
    #[serde(default = "minus_one")]
    batch_index: i32,
    /// `isExcluded`, as `MessageIdImpl` bodies spell it.
    #[serde(default)]
    is_excluded: bool,
    /// `excluded`: how `ResetCursorData` is written by pulsar-admin (`-e`).
    #[serde(default)]
    excluded: bool,
}

fn minus_one() -> i32 {
    -1
}

impl MessageIdBody {
    /// The body of a request, which must be a message id (400 otherwise).
    fn parse(body: &str) -> Result<Self, Response> {
        serde_json::from_str(body).map_err(|e| {
            fail(
                StatusCode::BAD_REQUEST,
                format!("the body must be a message id {{\"ledgerId\":L,\"entryId\":E}}: {e}"),
            )
        })
    }

    /// Whether the id is Pulsar's `MessageId.earliest` (-1:-1).
    fn is_earliest(&self) -> bool {
        self.ledger_id < 0 && self.entry_id < 0
    }

    /// Whether the id is Pulsar's `MessageId.latest` (Long.MAX_VALUE:Long.MAX_VALUE).
    fn is_latest(&self) -> bool {
        self.ledger_id == i64::MAX && self.entry_id == i64::MAX
    }

    /// Whether it addresses `topic` (the partition index picks one partition of a partitioned
    /// topic; -1 addresses them all).
    fn addresses(&self, topic: &Topic) -> bool {
        self.partition_index < 0
            || topic
                .name
                .partition_index()
                .is_none_or(|i| i64::from(i) == i64::from(self.partition_index))
    }

    /// Whether the message itself is excluded (`isExcluded` or `excluded`).
    fn excluded(&self) -> bool {
        self.is_excluded || self.excluded
    }

    /// The position the cursor is reset to: the message itself, or the one after it when
    /// excluded.
    fn position(&self) -> Position {
        let entry_id = if self.excluded() {
            self.entry_id.saturating_add(1)
        } else {
            self.entry_id
        };
        Position {
            ledger_id: self.ledger_id,
            entry_id,
        }
    }
}

/// `POST .../subscription/{sub}/resetcursor` with a message id body (Pulsar's
/// `resetCursorOnPosition`): the consumers are disconnected and the next message delivered is
/// the one with that id (or the one after it with `isExcluded`).
async fn reset_cursor_to_id(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, sub)): Path<(String, String, String, String)>,
    body: String,
) -> Response {
    let id = match MessageIdBody::parse(&body) {
        Ok(id) => id,
        Err(r) => return r,
    };
    on_subscription(ctx, path, sub, move |t, s| {
        if id.addresses(t) {
            s.seek(id.position());
        }
        Ok(())
    })
    .await
}

fn expire_seconds(secs: &str) -> Result<u64, Response> {
    secs.parse::<u64>().map_err(|_| {
        fail(
            StatusCode::BAD_REQUEST,
            "expireTimeInSeconds must be a non-negative integer",
        )
    })
}

/// Pulsar's `expireMessages(seconds)` on one subscription (`Some`) or all of them, on every
/// target topic: 204; 404 for a missing subscription; 409 naming the first subscription whose
/// check was not issued (no backlog, almost caught up, or a check running; the others ran).
async fn expire(
    ctx: Arc<ServerContext>,
    path: DeferredTopicPath,
    sub: Option<String>,
    secs: &str,
) -> Response {
    let secs = match expire_seconds(secs) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let name = match existing(&ctx, path) {
        Ok(n) => n,
        Err(r) => return r,
    };
    let now = ctx.service.clock().now_ms();
    let c = Arc::clone(&ctx);
    let r = tokio::task::spawn_blocking(move || -> Result<Option<String>, BrokerError> {
        let mut refused = None;
        let mut found = false;
        let not_issued = |topic: &dyn std::fmt::Display, sub: &str| {
            format!(
                "Expire message by timestamp not issued on topic {topic} for subscription \
                 {sub} due to ongoing message expiration not finished or subscription \
                 almost catch up. If it's performed on a partitioned topic operation \
                 might succeeded on other partitions, please check stats of \
                 individual partition."
            )
        };
        for t in targets(&c, &name)? {
            for s in t.subscriptions() {
                if sub.as_ref().is_some_and(|n| *n != s.name) {
                    continue;
                }
                found = true;
                if !pulsar_rs_broker::subscription::expiry::expire_messages(&s, secs, now)? {
                    refused.get_or_insert_with(|| not_issued(&t.name, &s.name));
                }
            }
            // The replication cursors too (`pulsar.repl.<cluster>`): Pulsar routes the call to
            // the topic's replicator, and `all_subscription` includes its replicators.
            for (remote, cursor) in t.replication_cursors() {
                if sub.as_ref().is_some_and(|n| n != cursor.name()) {
                    continue;
                }
                found = true;
                if !t.expire_replication(&remote, secs, now)? {
                    refused.get_or_insert_with(|| not_issued(&t.name, cursor.name()));
                }
            }
        }
        match sub {
            Some(s) if !found => Err(BrokerError::SubscriptionNotFound {
                subscription: s,
                topic: name.to_string(),
            }),
            _ => Ok(refused),
        }
    })
    .await;
    match r {
        Ok(Ok(None)) => StatusCode::NO_CONTENT.into_response(),
        Ok(Ok(Some(why))) => fail(StatusCode::CONFLICT, why),
        Ok(Err(e)) => broker_fail(&e),
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn expire_messages(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, sub, secs)): Path<(String, String, String, String, String)>,
) -> Response {
    expire(ctx, path, Some(sub), &secs).await
}

/// `POST .../all_subscription/expireMessages/{secs}`.
async fn expire_messages_all(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, secs)): Path<(String, String, String, String)>,
) -> Response {
    expire(ctx, path, None, &secs).await
}

/// `POST .../subscription/{sub}/expireMessages` with a message id body (Pulsar's
/// `internalExpireMessagesByPosition`): 204 when issued; 405 on a partitioned topic (name one
/// partition); 404 for a missing subscription; 409 when not issued (a position past the last
/// entry, or a check running).
async fn expire_messages_to_id(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, sub)): Path<(String, String, String, String)>,
    body: String,
) -> Response {
    let id = match MessageIdBody::parse(&body) {
        Ok(id) => id,
        Err(r) => return r,
    };
    let name = match existing(&ctx, path) {
        Ok(n) => n,
        Err(r) => return r,
    };
    let c = Arc::clone(&ctx);
    let r = tokio::task::spawn_blocking(move || -> Result<Result<(), Response>, BrokerError> {
        let ts = targets(&c, &name)?;
        let [t] = ts.as_slice() else {
            return Ok(Err(fail(
                StatusCode::METHOD_NOT_ALLOWED,
                "Expire message at position is not supported for partitioned-topic",
            )));
        };
        let Some(s) = t.subscription(&sub) else {
            return Err(BrokerError::SubscriptionNotFound {
                subscription: sub,
                topic: t.name.to_string(),
            });
        };
        let at = Position::new(id.ledger_id, id.entry_id);
        pulsar_rs_broker::subscription::expiry::expire_to_message_id(
            &s,
            at,
            id.batch_index,
            id.excluded(),
        )
        .map(|issued| {
            if issued {
                Ok(())
            } else {
                Err(fail(
                    StatusCode::CONFLICT,
                    format!(
                        "Expire message by position not issued on topic {} for subscription \
                             {} due to ongoing message expiration not finished or invalid \
                             message position provided.",
                        t.name, s.name
                    ),
                ))
            }
        })
    })
    .await;
    match r {
        Ok(Ok(Ok(()))) => StatusCode::NO_CONTENT.into_response(),
        Ok(Ok(Err(resp))) => resp,
        Ok(Err(e)) => broker_fail(&e),
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn list_subscriptions(State(ctx): Ctx, ExistingTopic(name): ExistingTopic) -> Response {
    match targets(&ctx, &name) {
        Ok(ts) => {
            let mut subs: Vec<String> = ts
                .iter()
                // Readers' (non-durable) subscriptions too, while they exist, as Pulsar's.
                .flat_map(|t| t.subscriptions())
                .map(|s| s.name.clone())
                .collect();
            // Pulsar lists the compaction cursor of a compacted topic as a subscription.
            if ts
                .iter()
                .any(|t| super::stats::compaction_cursor(t).is_some())
            {
                subs.push(COMPACTION_CURSOR.to_owned());
            }
            subs.sort();
            subs.dedup();
            Json(subs).into_response()
        }
        Err(e) => broker_fail(&e),
    }
}

/// `PUT .../subscription/{sub}` (Pulsar's `createSubscription`): at latest without a body,
/// else at the body's message id (earliest, latest or a position); 409 when it exists.
async fn create_subscription(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, sub)): Path<(String, String, String, String)>,
    body: String,
) -> Response {
    let start = if body.trim().is_empty() {
        None
    } else {
        match MessageIdBody::parse(&body) {
            Ok(id) if id.is_latest() => None,
            Ok(id) => Some(id),
            Err(r) => return r,
        }
    };
    let name = match path {
        Ok(TopicPath(n)) => n,
        Err(r) => return r,
    };
    // Pulsar creates a missing topic first where topics are auto-created (`getTopic(name,
    // isAllowAutoTopicCreation)`), partitioned or not as the policy says.
    let auto_create = match must_exist(&ctx, &name) {
        Ok(()) => false,
        Err(_) if ctx.service.auto_creation(&name.namespace_name()).allow => true,
        Err(not_found) => return not_found,
    };
    let c = Arc::clone(&ctx);
    let r = tokio::task::spawn_blocking(move || -> Result<bool, BrokerError> {
        if auto_create && c.service.partitions(&name, true)? == 0 {
            c.service.topic(&name, true)?;
        }
        let mut created = false;
        for t in targets(&c, &name)? {
            if t.subscription(&sub).is_none() {
                // Pulsar's admin default position is latest.
                let earliest = start.as_ref().is_some_and(MessageIdBody::is_earliest);
                let s = t.durable_subscription(&sub, earliest, true)?;
                if let Some(id) = start.as_ref().filter(|id| !id.is_earliest()) {
                    if id.addresses(&t) {
                        s.seek(id.position());
                    }
                }
                created = true;
            }
        }
        Ok(created)
    })
    .await;
    match r {
        Ok(Ok(true)) => StatusCode::NO_CONTENT.into_response(),
        Ok(Ok(false)) => fail(
            StatusCode::CONFLICT,
            "Subscription already exists for topic",
        ),
        Ok(Err(e)) => broker_fail(&e),
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// `DELETE .../subscription/{sub}[?force=true]` (Pulsar's `deleteSubscription`): 412 while
/// consumers are connected; with `force`, they are disconnected first (Pulsar's
/// `deleteForcefully`), then the subscription is deleted.
async fn delete_subscription(
    State(ctx): Ctx,
    ExistingTopic(name): ExistingTopic,
    Path((_, _, _, sub)): Path<(String, String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if sub == COMPACTION_CURSOR {
        // Pulsar deletes the cursor, and with it the compaction horizon, while readCompacted
        // readers are still served the compacted view: refused here instead.
        return fail(
            StatusCode::PRECONDITION_FAILED,
            format!("{COMPACTION_CURSOR} is the topic's compaction cursor: it holds the compacted view and cannot be deleted"),
        );
    }
    let force = crate::admin::machinery::closing::forced(&q);
    if !force {
        // Pulsar's SubscriptionBusyException → 412, before anything is deleted (the check
        // may load the topic: blocking pool).
        let (c, n, s) = (Arc::clone(&ctx), name.clone(), sub.clone());
        let busy = tokio::task::spawn_blocking(move || {
            targets(&c, &n).is_ok_and(|ts| {
                ts.iter()
                    .filter_map(|t| t.subscription(&s))
                    .any(|s| !s.consumers().is_empty())
            })
        })
        .await
        .unwrap_or(false);
        if busy {
            return fail(
                StatusCode::PRECONDITION_FAILED,
                "Subscription has active connected consumers",
            );
        }
    }
    on_subscription(ctx, Ok(TopicPath(name)), sub, move |t, s| {
        if force {
            s.disconnect_all();
        } else if !s.consumers().is_empty() {
            return Err(BrokerError::NotAllowed(
                "Subscription has active connected consumers".into(),
            ));
        }
        t.remove_subscription(&s.name)
    })
    .await
}
