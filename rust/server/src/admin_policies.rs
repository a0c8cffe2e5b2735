//! Admin REST for policies and subscriptions, with Pulsar's paths and JSON field names:
//! `publishRate`, `dispatchRate`, `subscriptionDispatchRate`, `backlogQuota` / `backlogQuotaMap`,
//! `retention` at namespace and topic level; `subscriptions`, `skip/{n}`, `skip_all`,
//! `resetcursor/{timestamp}`, `expireMessages/{seconds}`, `internalStats` on topics.

// Helpers return the ready 4xx response as their error; the admin path is cold, so the size of
// `Response` in a `Result` does not matter here.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use pulsar_rs_broker::policies::{BacklogQuota, DispatchRate, Policies, PublishRate, Retention};
use pulsar_rs_broker::{BrokerError, BrokerService, Topic, TopicName};
use serde_json::{json, Value};

use crate::admin::{broker_fail, fail, topic_name};
use crate::ServerContext;

type Ctx = State<Arc<ServerContext>>;

/// A change to a policy document, applied under the policy store's lock.
type Change = Box<dyn FnOnce(&mut Policies) + Send>;

/// The routes of this module.
pub fn routes() -> Router<Arc<ServerContext>> {
    Router::new()
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/{policy}",
            get(get_namespace_policy)
                .post(set_namespace_policy)
                .put(set_namespace_policy)
                .delete(delete_namespace_policy),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/{policy}",
            get(get_topic_policy)
                .post(set_topic_policy)
                .put(set_topic_policy)
                .delete(delete_topic_policy),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscriptions",
            get(list_subscriptions),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}",
            axum::routing::put(create_subscription).delete(delete_subscription),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/skip_all",
            post(skip_all),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/skip/{n}",
            post(skip),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/resetcursor/{ts}",
            post(reset_cursor),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/expireMessages/{secs}",
            post(expire_messages),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/internalStats",
            get(internal_stats),
        )
}

/// Which policy a path names.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    PublishRate,
    DispatchRate,
    SubscriptionDispatchRate,
    BacklogQuota,
    BacklogQuotaMap,
    Retention,
    Deduplication,
    CompactionThreshold,
}

fn kind(name: &str) -> Result<Kind, Response> {
    Ok(match name {
        "publishRate" => Kind::PublishRate,
        "dispatchRate" => Kind::DispatchRate,
        "subscriptionDispatchRate" => Kind::SubscriptionDispatchRate,
        "backlogQuota" => Kind::BacklogQuota,
        "backlogQuotaMap" => Kind::BacklogQuotaMap,
        "retention" => Kind::Retention,
        // Namespace path `deduplication`, topic path `deduplicationEnabled` (as Pulsar's).
        "deduplication" | "deduplicationEnabled" => Kind::Deduplication,
        "compactionThreshold" => Kind::CompactionThreshold,
        other => {
            return Err(fail(
                StatusCode::NOT_FOUND,
                format!("unknown policy or path {other:?}"),
            ))
        }
    })
}

fn quota_type(q: &HashMap<String, String>) -> Result<String, Response> {
    let t = q
        .get("backlogQuotaType")
        .map_or("destination_storage", String::as_str);
    if t == "destination_storage" || t == "message_age" {
        Ok(t.to_owned())
    } else {
        Err(fail(
            StatusCode::BAD_REQUEST,
            "backlogQuotaType must be destination_storage or message_age",
        ))
    }
}

fn view(p: &Policies, k: Kind) -> Value {
    let v = match k {
        Kind::PublishRate => serde_json::to_value(p.publish_rate),
        Kind::DispatchRate => serde_json::to_value(p.dispatch_rate),
        Kind::SubscriptionDispatchRate => serde_json::to_value(p.subscription_dispatch_rate),
        Kind::BacklogQuota | Kind::BacklogQuotaMap => serde_json::to_value(&p.backlog_quota_map),
        Kind::Retention => serde_json::to_value(p.retention),
        Kind::Deduplication => serde_json::to_value(p.deduplication_enabled),
        Kind::CompactionThreshold => serde_json::to_value(p.compaction_threshold),
    };
    v.unwrap_or(Value::Null)
}

/// Parses `body` for `k` and returns the change to apply, or the 4xx response.
fn change(k: Kind, body: &str, q: &HashMap<String, String>) -> Result<Change, Response> {
    fn parse<T: serde::de::DeserializeOwned>(body: &str) -> Result<T, Response> {
        serde_json::from_str(body)
            .map_err(|e| fail(StatusCode::BAD_REQUEST, format!("invalid JSON body: {e}")))
    }
    Ok(match k {
        Kind::PublishRate => {
            let v: PublishRate = parse(body)?;
            Box::new(move |p| p.publish_rate = Some(v))
        }
        Kind::DispatchRate => {
            let v: DispatchRate = parse(body)?;
            Box::new(move |p| p.dispatch_rate = Some(v))
        }
        Kind::SubscriptionDispatchRate => {
            let v: DispatchRate = parse(body)?;
            Box::new(move |p| p.subscription_dispatch_rate = Some(v))
        }
        Kind::BacklogQuota => {
            let v: BacklogQuota = parse(body)?;
            let t = quota_type(q)?;
            Box::new(move |p| {
                p.backlog_quota_map.insert(t, v);
            })
        }
        Kind::Retention => {
            let v: Retention = parse(body)?;
            Box::new(move |p| p.retention = Some(v))
        }
        Kind::Deduplication => {
            let v: bool = parse(body)?;
            Box::new(move |p| p.deduplication_enabled = Some(v))
        }
        Kind::CompactionThreshold => {
            let v: i64 = parse(body)?;
            Box::new(move |p| p.compaction_threshold = Some(v))
        }
        Kind::BacklogQuotaMap => {
            return Err(fail(
                StatusCode::METHOD_NOT_ALLOWED,
                "backlogQuotaMap is read-only",
            ))
        }
    })
}

fn removal(k: Kind, q: &HashMap<String, String>) -> Result<Change, Response> {
    Ok(match k {
        Kind::PublishRate => Box::new(|p| p.publish_rate = None),
        Kind::DispatchRate => Box::new(|p| p.dispatch_rate = None),
        Kind::SubscriptionDispatchRate => Box::new(|p| p.subscription_dispatch_rate = None),
        Kind::BacklogQuota => {
            let t = quota_type(q)?;
            Box::new(move |p| {
                p.backlog_quota_map.remove(&t);
            })
        }
        Kind::Retention => Box::new(|p| p.retention = None),
        Kind::Deduplication => Box::new(|p| p.deduplication_enabled = None),
        Kind::CompactionThreshold => Box::new(|p| p.compaction_threshold = None),
        Kind::BacklogQuotaMap => {
            return Err(fail(
                StatusCode::METHOD_NOT_ALLOWED,
                "backlogQuotaMap is read-only",
            ))
        }
    })
}

fn valid_namespace(tenant: &str, ns: &str) -> Result<String, Response> {
    TopicName::parse(&format!("persistent://{tenant}/{ns}/x"))
        .map(|t| t.namespace_name())
        .map_err(|e| broker_fail(&e))
}

/// Runs a blocking policy update and re-applies policies to loaded topics.
async fn update(
    ctx: &Arc<ServerContext>,
    f: impl FnOnce(&BrokerService) -> Result<(), BrokerError> + Send + 'static,
) -> Response {
    crate::admin::no_content(ctx, move |svc| f(svc).map(|()| svc.refresh_policies())).await
}

async fn get_namespace_policy(
    State(ctx): Ctx,
    Path((tenant, ns, policy)): Path<(String, String, String)>,
) -> Response {
    let (k, ns) = match (kind(&policy), valid_namespace(&tenant, &ns)) {
        (Ok(k), Ok(ns)) => (k, ns),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    Json(view(&ctx.service.policies.namespace(&ns), k)).into_response()
}

async fn set_namespace_policy(
    State(ctx): Ctx,
    Path((tenant, ns, policy)): Path<(String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
    body: String,
) -> Response {
    let (f, ns) = match (
        kind(&policy).and_then(|k| change(k, &body, &q)),
        valid_namespace(&tenant, &ns),
    ) {
        (Ok(f), Ok(ns)) => (f, ns),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    update(&ctx, move |svc| svc.policies.update_namespace(&ns, f)).await
}

async fn delete_namespace_policy(
    State(ctx): Ctx,
    Path((tenant, ns, policy)): Path<(String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let (f, ns) = match (
        kind(&policy).and_then(|k| removal(k, &q)),
        valid_namespace(&tenant, &ns),
    ) {
        (Ok(f), Ok(ns)) => (f, ns),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    update(&ctx, move |svc| svc.policies.update_namespace(&ns, f)).await
}

/// The topic of a path, which must exist (partitioned or not).
fn existing_topic(
    ctx: &ServerContext,
    tenant: &str,
    ns: &str,
    topic: &str,
) -> Result<TopicName, Response> {
    let name = topic_name(tenant, ns, topic).map_err(|r| *r)?;
    let partitioned = ctx.service.partitions(&name, false).unwrap_or(0) > 0;
    let exists = partitioned
        || ctx.service.loaded_topic(&name).is_some()
        || ctx
            .service
            .topics_of_namespace(&name.namespace_name())
            .contains(&name);
    if exists {
        Ok(name)
    } else {
        Err(fail(
            StatusCode::NOT_FOUND,
            format!("Topic {name} not found"),
        ))
    }
}

/// The loaded topics a path addresses: the topic, or every partition of a partitioned topic.
fn targets(ctx: &ServerContext, name: &TopicName) -> Result<Vec<Arc<Topic>>, BrokerError> {
    let n = ctx.service.partitions(name, false)?;
    if n == 0 {
        return Ok(vec![ctx.service.topic(name, false)?]);
    }
    (0..n)
        .map(|i| ctx.service.topic(&name.partition(i), true))
        .collect()
}

async fn get_topic_policy(
    State(ctx): Ctx,
    Path((tenant, ns, topic, policy)): Path<(String, String, String, String)>,
) -> Response {
    let (k, name) = match (kind(&policy), existing_topic(&ctx, &tenant, &ns, &topic)) {
        (Ok(k), Ok(n)) => (k, n),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    Json(view(&ctx.service.policies.topic(&name), k)).into_response()
}

async fn set_topic_policy(
    State(ctx): Ctx,
    Path((tenant, ns, topic, policy)): Path<(String, String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
    body: String,
) -> Response {
    let (f, name) = match (
        kind(&policy).and_then(|k| change(k, &body, &q)),
        existing_topic(&ctx, &tenant, &ns, &topic),
    ) {
        (Ok(f), Ok(n)) => (f, n),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    update(&ctx, move |svc| svc.policies.update_topic(&name, f)).await
}

async fn delete_topic_policy(
    State(ctx): Ctx,
    Path((tenant, ns, topic, policy)): Path<(String, String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let (f, name) = match (
        kind(&policy).and_then(|k| removal(k, &q)),
        existing_topic(&ctx, &tenant, &ns, &topic),
    ) {
        (Ok(f), Ok(n)) => (f, n),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    update(&ctx, move |svc| svc.policies.update_topic(&name, f)).await
}

/// Runs `f` on the subscription `sub` of every target topic (blocking pool).
async fn on_subscription(
    ctx: Arc<ServerContext>,
    (tenant, ns, topic, sub): (String, String, String, String),
    f: impl Fn(&Topic, &pulsar_rs_broker::Subscription) -> Result<(), BrokerError> + Send + 'static,
) -> Response {
    let name = match existing_topic(&ctx, &tenant, &ns, &topic) {
        Ok(n) => n,
        Err(r) => return r,
    };
    let c = Arc::clone(&ctx);
    let r = tokio::task::spawn_blocking(move || {
        let mut found = false;
        for t in targets(&c, &name)? {
            if let Some(s) = t.subscription(&sub) {
                found = true;
                f(&t, &s)?;
            }
        }
        if found {
            Ok(())
        } else {
            Err(BrokerError::SubscriptionNotFound(sub))
        }
    })
    .await;
    match r {
        Ok(Ok(())) => StatusCode::NO_CONTENT.into_response(),
        Ok(Err(e)) => broker_fail(&e),
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn skip_all(State(ctx): Ctx, Path(p): Path<(String, String, String, String)>) -> Response {
    on_subscription(ctx, p, |_, s| {
        s.cursor.skip_all();
        Ok(())
    })
    .await
}

async fn skip(
    State(ctx): Ctx,
    Path((tenant, ns, topic, sub, n)): Path<(String, String, String, String, String)>,
) -> Response {
    let Ok(n) = n.parse::<u64>() else {
        return fail(
            StatusCode::BAD_REQUEST,
            "the number of messages to skip must be a non-negative integer",
        );
    };
    on_subscription(ctx, (tenant, ns, topic, sub), move |_, s| {
        s.cursor.skip_entries(n);
        Ok(())
    })
    .await
}

async fn reset_cursor(
    State(ctx): Ctx,
    Path((tenant, ns, topic, sub, ts)): Path<(String, String, String, String, String)>,
) -> Response {
    let Ok(ts) = ts.parse::<u64>() else {
        return fail(
            StatusCode::BAD_REQUEST,
            "the timestamp must be milliseconds since the epoch",
        );
    };
    on_subscription(ctx, (tenant, ns, topic, sub), move |_, s| {
        s.seek_by_time(ts)
    })
    .await
}

async fn expire_messages(
    State(ctx): Ctx,
    Path((tenant, ns, topic, sub, secs)): Path<(String, String, String, String, String)>,
) -> Response {
    let Ok(secs) = secs.parse::<u64>() else {
        return fail(
            StatusCode::BAD_REQUEST,
            "expireTimeInSeconds must be a non-negative integer",
        );
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let cutoff = u64::try_from(now)
        .unwrap_or(u64::MAX)
        .saturating_sub(secs.saturating_mul(1000));
    on_subscription(ctx, (tenant, ns, topic, sub), move |t, s| {
        let first_kept = t.ledger.find_position_by_time(cutoff)?;
        let upto = t.ledger.previous_position(first_kept);
        if upto.entry_id >= 0 && upto > s.cursor.mark_delete_position() {
            s.cursor.mark_delete(upto)?;
        }
        Ok(())
    })
    .await
}

async fn list_subscriptions(
    State(ctx): Ctx,
    Path((tenant, ns, topic)): Path<(String, String, String)>,
) -> Response {
    let name = match existing_topic(&ctx, &tenant, &ns, &topic) {
        Ok(n) => n,
        Err(r) => return r,
    };
    match targets(&ctx, &name) {
        Ok(ts) => {
            let mut subs: Vec<String> = ts
                .iter()
                .flat_map(|t| t.subscriptions())
                .filter(|s| s.durable)
                .map(|s| s.name.clone())
                .collect();
            subs.sort();
            subs.dedup();
            Json(subs).into_response()
        }
        Err(e) => broker_fail(&e),
    }
}

async fn create_subscription(
    State(ctx): Ctx,
    Path((tenant, ns, topic, sub)): Path<(String, String, String, String)>,
) -> Response {
    let name = match existing_topic(&ctx, &tenant, &ns, &topic) {
        Ok(n) => n,
        Err(r) => return r,
    };
    let c = Arc::clone(&ctx);
    let r = tokio::task::spawn_blocking(move || -> Result<bool, BrokerError> {
        let mut created = false;
        for t in targets(&c, &name)? {
            if t.subscription(&sub).is_none() {
                // Pulsar's admin default position is latest.
                t.durable_subscription(&sub, false, true)?;
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

async fn delete_subscription(
    State(ctx): Ctx,
    Path((tenant, ns, topic, sub)): Path<(String, String, String, String)>,
) -> Response {
    on_subscription(ctx, (tenant, ns, topic, sub.clone()), move |t, s| {
        if !s.consumers().is_empty() {
            return Err(BrokerError::NotAllowed(
                "Subscription has active connected consumers".into(),
            ));
        }
        t.remove_subscription(&s.name)
    })
    .await
}

async fn internal_stats(
    State(ctx): Ctx,
    Path((tenant, ns, topic)): Path<(String, String, String)>,
) -> Response {
    let name = match existing_topic(&ctx, &tenant, &ns, &topic) {
        Ok(n) => n,
        Err(r) => return r,
    };
    let t = match ctx.service.topic(&name, false) {
        Ok(t) => t,
        Err(e) => return broker_fail(&e),
    };
    let st = t.ledger.stats();
    let pos = |p: pulsar_rs_ledger::Position| format!("{}:{}", p.ledger_id, p.entry_id);
    let ledgers: Vec<Value> = t
        .ledger
        .ledgers()
        .iter()
        .map(|l| json!({"ledgerId": l.ledger_id, "entries": l.entries, "size": l.size, "offloaded": false}))
        .collect();
    let mut cursors = serde_json::Map::new();
    for s in t.subscriptions() {
        let c = &s.cursor;
        let ranges: Vec<String> = c
            .acked_ranges()
            .iter()
            .map(|(a, b)| format!("({}:{}..{}]", a.ledger_id, a.entry_id - 1, pos(*b)))
            .collect();
        cursors.insert(
            s.name.clone(),
            json!({
                "markDeletePosition": pos(c.mark_delete_position()),
                "readPosition": pos(c.read_position()),
                "individuallyDeletedMessages": format!("[{}]", ranges.join(", ")),
                "totalNonContiguousDeletedMessagesRange": ranges.len(),
                "numberOfEntriesSinceFirstNotAckedMessage": c.backlog() + c.acked_count(),
                "active": c.is_active(),
                "state": "Open",
                "cursorLedger": -1,
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
        "lastConfirmedEntry": pos(st.last_confirmed),
        "state": "LedgerOpened",
        "ledgers": ledgers,
        "cursors": cursors,
    }))
    .into_response()
}
