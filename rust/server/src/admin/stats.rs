//! Topic statistics: `stats` (one topic or partition, Pulsar's `TopicStats`) and
//! `partitioned-stats` (Pulsar's `PartitionedTopicStats`: the partitions' stats summed, with
//! `metadata.partitions` and, unless `perPartition=false`, each partition's own document).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use pulsar_rs_broker::Topic;
use serde_json::{json, Map, Value};

use super::{blocking, fail, load_topic, topic_name, Ctx};
use crate::ServerContext;

/// The routes of this module.
pub(super) fn routes() -> Router<Arc<ServerContext>> {
    Router::new()
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/stats",
            get(topic_stats),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/partitioned-stats",
            get(partitioned_stats),
        )
}

async fn topic_stats(
    State(ctx): Ctx,
    Path((tenant, ns, topic)): Path<(String, String, String)>,
) -> Response {
    let name = match topic_name(&tenant, &ns, &topic) {
        Ok(n) => n,
        Err(r) => return *r,
    };
    match load_topic(&ctx, name).await {
        Ok(t) => Json(topic_json(&t)).into_response(),
        Err(r) => r,
    }
}

/// Pulsar's `TopicStats` document of one (non-partitioned) topic or partition.
fn topic_json(topic: &Topic) -> Value {
    let (rate_in, tput_in) = topic.msg_in.rates();
    let ml = topic.ledger.stats();
    let mut subs = serde_json::Map::new();
    let (mut rate_out, mut tput_out) = (0.0, 0.0);
    for s in topic.subscriptions() {
        let (r, t) = s.out.rates();
        rate_out += r;
        tput_out += t;
        let consumers: Vec<serde_json::Value> = s
            .consumers()
            .iter()
            .map(|c| {
                let (cr, ct) = c.out.rates();
                json!({
                    "consumerName": c.name,
                    "msgRateOut": cr,
                    "msgThroughputOut": ct,
                    "availablePermits": c.permits.get(),
                    "unackedMessages": c.unacked(),
                    "blockedConsumerOnUnackedMsgs": c.is_blocked(),
                    "address": c.address,
                })
            })
            .collect();
        subs.insert(
            s.name.clone(),
            json!({
                "msgRateOut": r,
                "msgThroughputOut": t,
                "msgBacklog": s.cursor.backlog(),
                "backlogSize": s.cursor.estimated_backlog_size(),
                "unackedMessages": s.unacked_messages(),
                "blockedSubscriptionOnUnackedMsgs": s.is_blocked_on_unacked(),
                "msgDelayed": s.delayed_len(),
                "msgRateExpired": s.expiry.rate(),
                "totalMsgExpired": s.expiry.total(),
                "lastExpireTimestamp": s.expiry.last_expire_timestamp(),
                "activeConsumerName": s.active_consumer().map(|c| c.name.clone()),
                "type": s.sub_type().map_or("None", |t| t.as_str()),
                "isDurable": s.durable,
                "consumers": consumers,
            }),
        );
    }
    let publishers: Vec<serde_json::Value> = topic
        .producers()
        .iter()
        .map(|p| json!({ "producerName": p.name, "address": p.address }))
        .collect();
    json!({
        "msgRateIn": rate_in,
        "msgThroughputIn": tput_in,
        "msgRateOut": rate_out,
        "msgThroughputOut": tput_out,
        "msgInCounter": topic.msg_in.total(),
        "bytesInCounter": topic.msg_in.total_bytes(),
        "storageSize": ml.total_size,
        "backlogSize": topic.backlog_size(),
        "publishers": publishers,
        "subscriptions": subs,
        "compaction": topic.compaction.last_run(),
    })
}

/// `GET .../partitioned-stats[?perPartition=false]`: 404 when the topic is not partitioned (as
/// Pulsar's "Partitioned Topic not found").
async fn partitioned_stats(
    State(ctx): Ctx,
    Path((tenant, ns, topic)): Path<(String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let name = match topic_name(&tenant, &ns, &topic) {
        Ok(n) => n,
        Err(r) => return *r,
    };
    let n = ctx.service.partitions(&name, false).unwrap_or(0);
    if n == 0 {
        return fail(
            StatusCode::NOT_FOUND,
            format!("Partitioned Topic not found: {name} has zero partitions"),
        );
    }
    let per_partition = q.get("perPartition").is_none_or(|v| v != "false");
    blocking(
        &ctx,
        move |c| super::targets(c, &name),
        move |topics| {
            let mut total = Value::Object(Map::new());
            let mut partitions = Map::new();
            for t in &topics {
                let one = topic_json(t);
                merge(&mut total, &one);
                if per_partition {
                    partitions.insert(t.name.to_string(), one);
                }
            }
            if let Value::Object(m) = &mut total {
                m.insert("metadata".into(), json!({ "partitions": n }));
                m.insert("partitions".into(), Value::Object(partitions));
            }
            Json(total).into_response()
        },
    )
    .await
}

/// Adds one partition's stats into the running total, as `PartitionedTopicStatsImpl.add`:
/// numbers are summed (timestamps take the latest), lists are concatenated, maps (the
/// subscriptions) are merged key by key, and other values keep the first partition's.
fn merge(total: &mut Value, one: &Value) {
    match (total, one) {
        (Value::Object(t), Value::Object(o)) => {
            for (k, v) in o {
                match t.get_mut(k) {
                    None => {
                        t.insert(k.clone(), v.clone());
                    }
                    Some(cur) if k.ends_with("Timestamp") => {
                        if v.as_f64() > cur.as_f64() {
                            *cur = v.clone();
                        }
                    }
                    Some(cur) => merge(cur, v),
                }
            }
        }
        (Value::Array(t), Value::Array(o)) => t.extend(o.iter().cloned()),
        (t @ Value::Number(_), Value::Number(o)) => {
            *t = match (t.as_i64(), o.as_i64()) {
                (Some(a), Some(b)) => json!(a.saturating_add(b)),
                _ => json!(t.as_f64().unwrap_or(0.0) + o.as_f64().unwrap_or(0.0)),
            };
        }
        (t @ Value::Null, o) => *t = o.clone(),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_sums_numbers_and_merges_subscriptions() {
        let mut total = json!({});
        merge(
            &mut total,
            &json!({"msgInCounter": 2, "msgRateIn": 0.5, "lastExpireTimestamp": 5,
                    "publishers": [{"p": 1}], "subscriptions": {"s": {"msgBacklog": 3, "type": "Shared"}}}),
        );
        merge(
            &mut total,
            &json!({"msgInCounter": 3, "msgRateIn": 1.0, "lastExpireTimestamp": 4,
                    "publishers": [{"p": 2}], "subscriptions": {"s": {"msgBacklog": 4, "type": "Shared"},
                                                             "t": {"msgBacklog": 1}}}),
        );
        assert_eq!(total["msgInCounter"], 5);
        assert_eq!(total["msgRateIn"], 1.5);
        assert_eq!(total["lastExpireTimestamp"], 5);
        assert_eq!(total["publishers"].as_array().map(Vec::len), Some(2));
        assert_eq!(total["subscriptions"]["s"]["msgBacklog"], 7);
        assert_eq!(total["subscriptions"]["s"]["type"], "Shared");
        assert_eq!(total["subscriptions"]["t"]["msgBacklog"], 1);
    }
}
