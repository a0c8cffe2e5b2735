//! Subscriptions of a topic (or of every partition of a partitioned topic): list, create,
//! delete, `skip/{n}`, `skip_all`, `resetcursor/{timestamp}`, `expireMessages/{seconds}` (one
//! subscription or `all_subscription`).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use pulsar_rs_broker::{BrokerError, Topic};

use super::{broker_fail, existing_topic, fail, targets, Ctx};
use crate::ServerContext;

/// The routes of this module.
pub(super) fn routes() -> Router<Arc<ServerContext>> {
    Router::new()
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
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/all_subscription/expireMessages/{secs}",
            post(expire_messages_all),
        )
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
    (tenant, ns, topic): (String, String, String),
    sub: Option<String>,
    secs: &str,
) -> Response {
    let secs = match expire_seconds(secs) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let name = match existing_topic(&ctx, &tenant, &ns, &topic) {
        Ok(n) => n,
        Err(r) => return r,
    };
    let now = pulsar_rs_broker::expiry::now_ms();
    let c = Arc::clone(&ctx);
    let r = tokio::task::spawn_blocking(move || -> Result<Option<String>, BrokerError> {
        let mut refused = None;
        let mut found = false;
        for t in targets(&c, &name)? {
            for s in t.subscriptions() {
                if sub.as_ref().is_some_and(|n| *n != s.name) {
                    continue;
                }
                found = true;
                if !pulsar_rs_broker::expiry::expire_messages(&t, &s, secs, now)? {
                    refused.get_or_insert_with(|| {
                        format!(
                            "Expire message by timestamp not issued on topic {} for subscription \
                             {} due to ongoing message expiration not finished or subscription \
                             almost catch up. If it's performed on a partitioned topic operation \
                             might succeeded on other partitions, please check stats of \
                             individual partition.",
                            t.name, s.name
                        )
                    });
                }
            }
        }
        match sub {
            Some(s) if !found => Err(BrokerError::SubscriptionNotFound(s)),
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
    Path((tenant, ns, topic, sub, secs)): Path<(String, String, String, String, String)>,
) -> Response {
    expire(ctx, (tenant, ns, topic), Some(sub), &secs).await
}

/// `POST .../all_subscription/expireMessages/{secs}`.
async fn expire_messages_all(
    State(ctx): Ctx,
    Path((tenant, ns, topic, secs)): Path<(String, String, String, String)>,
) -> Response {
    expire(ctx, (tenant, ns, topic), None, &secs).await
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
