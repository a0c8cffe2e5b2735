//! Reading messages through the admin API, as Pulsar's `PersistentTopicsBase` serves them:
//! `GET .../subscription/{sub}/position/{n}` (peek the `n`th unacknowledged entry of a
//! subscription), `GET .../examinemessage?initialPosition=earliest|latest&messagePosition=n`
//! (the `n`th entry from either end) and `GET .../ledger/{l}/entry/{e}` (one entry by id);
//! `GET .../lastMessageId` answers the id of the last message as JSON (Pulsar's `MessageIdImpl`,
//! with `batchIndex` when it ends a batch; -1:-1 for an empty topic).
//!
//! The answer is the entry's payload, decompressed (a batch stays one batch frame, which the
//! client splits), with the metadata in `X-Pulsar-*` headers: `X-Pulsar-Message-ID`,
//! `X-Pulsar-PROPERTY-{key}` per property and `X-Pulsar-PROPERTY` (all of them as JSON),
//! `X-Pulsar-publish-time` / `X-Pulsar-event-time` (ISO-8601, UTC),
//! `X-Pulsar-num-batch-message` and `X-Pulsar-batch-size` for a batch, `X-Pulsar-producer-name`,
//! `X-Pulsar-sequence-id`, `X-Pulsar-partition-key` when set. Entries are read on the blocking
//! pool through the ledger's read path (cache first, then the journal).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use pulsar_rs_broker::{BrokerError, Topic};
use pulsar_rs_ledger::{ManagedLedger, Position};

use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::Ctx;
use crate::admin::machinery::state::{load_non_partitioned, load_topic};
use crate::admin::machinery::topic_path::{DeferredTopicPath, ExistingTopic};
use crate::context::ServerContext;
use crate::http::fail;

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new()
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/position/{n}",
            Access::Tenant,
            get(peek),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/examinemessage",
            Access::Tenant,
            get(examine),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/ledger/{ledger}/entry/{entry}",
            Access::Tenant,
            get(by_id),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/lastMessageId",
            Access::Tenant,
            get(last_message_id),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/messageid/{timestamp}",
            Access::Tenant,
            get(message_id_by_timestamp),
        )
}

/// Which entry a request names, resolved on the blocking pool against the loaded topic.
enum Target {
    /// The `n`th unacknowledged entry of a subscription.
    Peek { sub: String, n: u64 },
    /// The `n`th entry from the first (`earliest`) or the last (`latest`) one.
    Examine { earliest: bool, n: u64 },
    /// An entry by id.
    Id(Position),
}

/// Why no entry was served: the ready error response's status and reason.
type Refusal = (StatusCode, String);

/// The `n`th entry from one end of the ledger (1 = the first / the last).
fn nth_from_end(ml: &ManagedLedger, earliest: bool, n: u64) -> Result<Position, Refusal> {
    let lac = ml.last_confirmed();
    let first = ml.next_valid_position(ml.first_position());
    if lac.entry_id < 0 || first > lac {
        return Err((
            StatusCode::PRECONDITION_FAILED,
            "Could not examine messages due to the total message is zero".into(),
        ));
    }
    let mut p = if earliest { first } else { lac };
    for _ in 1..n {
        p = if earliest {
            ml.next_valid_position(p)
        } else {
            ml.previous_position(p)
        };
        if p > lac || p < first {
            return Err((StatusCode::NOT_FOUND, "Message not found".into()));
        }
    }
    Ok(p)
}

/// Resolves `target` on `topic` and reads that entry (blocking).
fn read(topic: &Topic, target: &Target) -> Result<Result<(Position, Bytes), Refusal>, BrokerError> {
    let pos = match target {
        Target::Peek { sub, n } => {
            // Pulsar's `getSubscriptionReference` creates a missing subscription (durable, at
            // the earliest entry) and peeks on it.
            let s = match topic.subscription(sub) {
                Some(s) => s,
                None => topic.durable_subscription(sub, true, true)?,
            };
            match s.cursor.nth_unacked_position(*n) {
                Some(p) => p,
                None => return Ok(Err((StatusCode::NOT_FOUND, "Message not found".into()))),
            }
        }
        Target::Examine { earliest, n } => match nth_from_end(&topic.ledger, *earliest, *n) {
            Ok(p) => p,
            Err(r) => return Ok(Err(r)),
        },
        Target::Id(p) => {
            if !topic.ledger.is_valid_position(*p) {
                return Ok(Err((
                    StatusCode::NOT_FOUND,
                    format!(
                        "Message ID {}:{} not found in {}",
                        p.ledger_id, p.entry_id, topic.name
                    ),
                )));
            }
            *p
        }
    };
    Ok(match topic.ledger.read_entry(pos)? {
        Some(e) => Ok((pos, e.data)),
        None => Err((StatusCode::NOT_FOUND, "Message not found".into())),
    })
}

/// Milliseconds since the epoch as Pulsar's `DateFormatter` prints them (ISO-8601, UTC).
pub(in crate::admin) fn iso_time(ms: u64) -> String {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// The entry as Pulsar answers it: the decompressed payload, the metadata in headers.
fn render(pos: Position, data: &Bytes) -> Response {
    let (md, payload) = match pulsar_rs_proto::parse_stored_entry(data) {
        Ok(v) => v,
        Err(e) => {
            return fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("unreadable entry {}:{}: {e}", pos.ledger_id, pos.entry_id),
            )
        }
    };
    let codec = md.compression.unwrap_or(0);
    let body = if codec == 0 {
        payload
    } else {
        let size = md.uncompressed_size.unwrap_or(0) as usize;
        match pulsar_rs_proto::compression::decompress(codec, &payload, size) {
            Ok(b) => b,
            Err(e) => return fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        }
    };
    let mut headers: Vec<(String, String)> = vec![(
        "X-Pulsar-Message-ID".into(),
        format!("{}:{}", pos.ledger_id, pos.entry_id),
    )];
    let mut props = BTreeMap::new();
    for kv in &md.properties {
        headers.push((format!("X-Pulsar-PROPERTY-{}", kv.key), kv.value.clone()));
        props.insert(kv.key.clone(), kv.value.clone());
    }
    if !props.is_empty() {
        headers.push((
            "X-Pulsar-PROPERTY".into(),
            serde_json::to_string(&props).unwrap_or_default(),
        ));
    }
    headers.push(("X-Pulsar-publish-time".into(), iso_time(md.publish_time)));
    if let Some(t) = md.event_time.filter(|t| *t > 0) {
        headers.push(("X-Pulsar-event-time".into(), iso_time(t)));
    }
    if let Some(n) = md.num_messages_in_batch {
        headers.push(("X-Pulsar-num-batch-message".into(), n.to_string()));
        headers.push(("X-Pulsar-batch-size".into(), body.len().to_string()));
    }
    headers.push(("X-Pulsar-producer-name".into(), md.producer_name.clone()));
    headers.push(("X-Pulsar-sequence-id".into(), md.sequence_id.to_string()));
    if let Some(k) = &md.partition_key {
        headers.push(("X-Pulsar-partition-key".into(), k.clone()));
    }
    if md.null_value == Some(true) {
        headers.push(("X-Pulsar-null-value".into(), "true".into()));
    }
    let mut resp = (
        StatusCode::OK,
        [(axum::http::header::CONTENT_TYPE, "application/octet-stream")],
        body,
    )
        .into_response();
    for (k, v) in headers {
        // A property key or value that cannot be a header is left to the JSON header.
        if let (Ok(k), Ok(v)) = (HeaderName::try_from(k), HeaderValue::try_from(v)) {
            resp.headers_mut().append(k, v);
        }
    }
    resp
}

/// Serves `target` on the topic of the path (405 on a partitioned topic, as Pulsar).
async fn serve(ctx: Arc<ServerContext>, path: DeferredTopicPath, target: Target) -> Response {
    let refusal = "Peek messages on a partitioned topic is not allowed";
    let t = match load_non_partitioned(&ctx, path, refusal).await {
        Ok(t) => t,
        Err(r) => return r,
    };
    match tokio::task::spawn_blocking(move || read(&t, &target)).await {
        Ok(Ok(Ok((pos, data)))) => render(pos, &data),
        Ok(Ok(Err((status, reason)))) => fail(status, reason),
        Ok(Err(e)) => crate::http::broker_fail(&e),
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn last_message_id(State(ctx): Ctx, ExistingTopic(name): ExistingTopic) -> Response {
    if ctx.service.partitions(&name, false).unwrap_or(0) > 0 {
        return fail(
            StatusCode::METHOD_NOT_ALLOWED,
            "Get the last message id on a partitioned topic is not allowed",
        );
    }
    let t = match load_topic(&ctx, name).await {
        Ok(t) => t,
        Err(r) => return r,
    };
    crate::http::blocking(
        &ctx,
        move |_| t.last_message_id(),
        |(pos, batch)| {
            let mut id = serde_json::json!({
                "ledgerId": pos.ledger_id,
                "entryId": pos.entry_id,
                "partitionIndex": -1,
            });
            if batch >= 0 {
                id["batchIndex"] = batch.into();
            }
            axum::Json(id).into_response()
        },
    )
    .await
}

/// `GET .../messageid/{timestamp}` (Pulsar's `getMessageIdByTimestamp`): the id of the first
/// entry not published before `timestamp` (ms), as `MessageIdImpl` JSON; the position after the
/// last entry when every entry is older (Pulsar's `asyncFindPosition` answers the next valid
/// position). 405 on a partitioned topic, 404 when the topic has no position to give.
async fn message_id_by_timestamp(
    State(ctx): Ctx,
    ExistingTopic(name): ExistingTopic,
    Path((_, _, _, ts)): Path<(String, String, String, String)>,
) -> Response {
    let Ok(ts) = ts.parse::<i64>() else {
        return fail(StatusCode::BAD_REQUEST, "timestamp must be an integer");
    };
    if ctx.service.partitions(&name, false).unwrap_or(0) > 0 {
        return fail(
            StatusCode::METHOD_NOT_ALLOWED,
            "Get message ID by timestamp on a partitioned topic is not allowed, please try do it on specific topic partition",
        );
    }
    let partition = name.partition_index().map_or(-1, i64::from);
    let t = match load_topic(&ctx, name).await {
        Ok(t) => t,
        Err(r) => return r,
    };
    crate::http::blocking(
        &ctx,
        move |_| {
            t.ledger
                .find_position_by_time(u64::try_from(ts).unwrap_or(0))
                .map_err(BrokerError::from)
        },
        move |pos| {
            if pos.entry_id < 0 {
                return fail(StatusCode::NOT_FOUND, "Message ID not found");
            }
            axum::Json(serde_json::json!({
                "ledgerId": pos.ledger_id,
                "entryId": pos.entry_id,
                "partitionIndex": partition,
            }))
            .into_response()
        },
    )
    .await
}

/// A positive count from a path or query (Pulsar's positions start at 1).
fn position(n: &str) -> Result<u64, Response> {
    n.parse::<u64>().ok().filter(|n| *n >= 1).ok_or_else(|| {
        fail(
            StatusCode::PRECONDITION_FAILED,
            "The message position must be a positive integer",
        )
    })
}

async fn peek(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, sub, n)): Path<(String, String, String, String, String)>,
) -> Response {
    match position(&n) {
        Ok(n) => serve(ctx, path, Target::Peek { sub, n }).await,
        Err(r) => r,
    }
}

async fn examine(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let earliest = match q.get("initialPosition").map_or("latest", String::as_str) {
        "earliest" => true,
        "latest" => false,
        other => {
            return fail(
                StatusCode::PRECONDITION_FAILED,
                format!("initialPosition must be earliest or latest, got {other:?}"),
            )
        }
    };
    match position(q.get("messagePosition").map_or("1", String::as_str)) {
        Ok(n) => serve(ctx, path, Target::Examine { earliest, n }).await,
        Err(r) => r,
    }
}

async fn by_id(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, ledger, entry)): Path<(String, String, String, String, String)>,
) -> Response {
    let (Ok(l), Ok(e)) = (ledger.parse::<i64>(), entry.parse::<i64>()) else {
        return fail(
            StatusCode::PRECONDITION_FAILED,
            "ledgerId and entryId must be integers",
        );
    };
    serve(ctx, path, Target::Id(Position::new(l, e))).await
}

#[cfg(test)]
mod tests {
    use super::iso_time;

    #[test]
    fn iso_times_are_utc_with_milliseconds() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00.000Z");
        // 2024-02-29T12:34:56.789Z (a leap day).
        assert_eq!(iso_time(1_709_210_096_789), "2024-02-29T12:34:56.789Z");
        assert_eq!(iso_time(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
