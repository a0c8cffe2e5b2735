//! Subscriptions of a topic (or of every partition of a partitioned topic): list, create,
//! delete, `skip/{n}`, `skip_all`, `resetcursor/{timestamp}`, `expireMessages/{seconds}`.

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
