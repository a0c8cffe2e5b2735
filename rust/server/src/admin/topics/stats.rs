//! Topic statistics: `stats` (one topic or partition, Pulsar's `TopicStats`) and
//! `partitioned-stats` (Pulsar's `PartitionedTopicStats`: the partitions' stats summed, with
//! `metadata.partitions` and, unless `perPartition=false`, each partition's own document).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use std::sync::atomic::{AtomicU64, Ordering};

use pulsar_rs_broker::compaction::COMPACTION_CURSOR;
use pulsar_rs_broker::{AccessMode, Topic};
use serde_json::{json, Map, Value};

use super::instant::instant_string;
use super::partitions::{self, PartitionDocument};
use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::load_topic;
use crate::admin::machinery::state::Ctx;
use crate::admin::machinery::topic_path::TopicPath;
use crate::context::ServerContext;
use crate::http::fail;

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new()
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/stats",
            Access::TopicRead,
            get(topic_stats),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/partitioned-stats",
            Access::TopicRead,
            get(partitioned_stats),
        )
}

/// The parts of a stats document a request leaves out (Pulsar's `GetStatsOptions`:
/// `excludePublishers`, `excludeConsumers`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(in crate::admin) struct StatsOptions {
    /// No `publishers` (an empty list).
    pub exclude_publishers: bool,
    /// No `consumers` in the subscriptions (empty lists).
    pub exclude_consumers: bool,
}

impl StatsOptions {
    /// From the request's query; a flag is set by `true` (any case, as Jackson's boolean).
    fn from_query(q: &HashMap<String, String>) -> Self {
        let on = |k: &str| q.get(k).is_some_and(|v| v.eq_ignore_ascii_case("true"));
        StatsOptions {
            exclude_publishers: on("excludePublishers"),
            exclude_consumers: on("excludeConsumers"),
        }
    }

    /// The flags set, as query parameters (`&k=true...`) for another broker's partitions.
    fn query(self) -> String {
        let mut q = String::new();
        if self.exclude_publishers {
            q.push_str("&excludePublishers=true");
        }
        if self.exclude_consumers {
            q.push_str("&excludeConsumers=true");
        }
        q
    }
}

async fn topic_stats(
    State(ctx): Ctx,
    TopicPath(name): TopicPath,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let opts = StatsOptions::from_query(&q);
    match load_topic(&ctx, name).await {
        Ok(t) => Json(topic_json(&ctx, &t, opts)).into_response(),
        Err(r) => r,
    }
}

/// Pulsar's `TopicStats` document of one (non-partitioned) topic or partition, field for field
/// (Pulsar 4.0). Values this broker cannot have are reported as what is true for it: no
/// transactions (the `*TxnCount` fields are 0), no offloading (`offloaded*`, `lastOffload*` 0),
/// no entry filters (`filter*`
/// 0), no broker-wide dispatch limit (`dispatchThrottled*ByBrokerLimit` 0), no Key_Shared
/// draining hashes (PIP-379's `drainingHashes*` 0, `consumersAfterMarkDeletePosition` {}).
///
/// `topicCreationTimeStamp` and `lastPublishTimeStamp` are PIP-431's (Pulsar 4.1): when the
/// managed ledger was first recorded (0 when its record does not say) and the publish time of
/// the last message written (read back from the last entry after a load).
pub(in crate::admin) fn topic_json(
    ctx: &ServerContext,
    topic: &Topic,
    opts: StatsOptions,
) -> Value {
    let (rate_in, tput_in) = topic.msg_in.rates();
    let ml = topic.ledger.stats();
    let offloaded = topic.ledger.offload_summary();
    let mut subs = serde_json::Map::new();
    let (mut rate_out, mut tput_out) = (0.0, 0.0);
    let (mut msgs_out, mut bytes_out) = (0u64, 0u64);
    let mut ranges_total = 0usize;
    let mut delayed_bytes_total = 0usize;
    for s in topic.subscriptions() {
        let (r, t) = s.out.rates();
        rate_out += r;
        tput_out += t;
        msgs_out += s.out.total();
        bytes_out += s.out.total_bytes();
        let consumers = s.consumers();
        let (mut redeliver, mut ack_rate, mut chunk_rate) = (0.0, 0.0, 0.0);
        let consumers_json: Vec<Value> = consumers
            .iter()
            .map(|c| {
                let one = consumer_json(c);
                redeliver += one["msgRateRedeliver"].as_f64().unwrap_or(0.0);
                ack_rate += one["messageAckRate"].as_f64().unwrap_or(0.0);
                chunk_rate += one["chunkedMessageRate"].as_f64().unwrap_or(0.0);
                one
            })
            .collect();
        let ranges = s.cursor.acked_ranges().len();
        ranges_total += ranges;
        let delayed = s.delayed_len();
        // The delayed-delivery index holds each position twice (by time and as a set): its
        // payload bytes, without the collections' own overhead.
        let delayed_bytes = delayed
            * (std::mem::size_of::<(i64, pulsar_rs_ledger::Position)>()
                + std::mem::size_of::<pulsar_rs_ledger::Position>());
        delayed_bytes_total += delayed_bytes;
        let st = &s.stats;
        let at = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let view = SubscriptionView {
            cursor: &s.cursor,
            rate_out: (r, t),
            out: (s.out.total(), s.out.total_bytes()),
            consumer_rates: (redeliver, ack_rate, chunk_rate),
            delayed: (delayed, delayed_bytes),
            blocked: s.is_blocked_on_unacked(),
            replicated: s.is_replicated(),
            in_replay: s.replay_len(),
            unacked: s.unacked_messages(),
            sub_type: s.sub_type().map_or("None", |t| t.as_str()),
            active_consumer: s.active_consumer().map(|c| c.name.clone()),
            expired: (
                s.expiry.rate(),
                s.expiry.total(),
                s.expiry.last_expire_timestamp(),
            ),
            timestamps: [
                at(&st.last_flow_ms),
                at(&st.last_consumed_ms),
                at(&st.last_acked_ms),
                at(&st.last_mark_delete_advanced_ms),
            ],
            // Left out on request; the sums above still count them, as Pulsar's.
            consumers: if opts.exclude_consumers {
                Vec::new()
            } else {
                consumers_json
            },
            durable: s.durable,
            ranges,
            throttled: [
                at(&st.throttled_msgs_by_subscription),
                at(&st.throttled_bytes_by_subscription),
                at(&st.throttled_msgs_by_topic),
                at(&st.throttled_bytes_by_topic),
            ],
        };
        subs.insert(s.name.clone(), subscription_json(&view));
    }
    // Pulsar lists its compaction cursor as a durable Exclusive subscription without consumers
    // (its compactor's reader subscribed as `__compaction`); here the compactor reads the
    // ledger directly, so nothing was dispatched to it.
    if let Some(cursor) = compaction_cursor(topic) {
        let view = SubscriptionView::idle(&cursor, "Exclusive");
        subs.insert(COMPACTION_CURSOR.to_owned(), subscription_json(&view));
    }
    let publishers: Vec<Value> = if opts.exclude_publishers {
        Vec::new()
    } else {
        let prefix = &ctx.service.config.replicator_prefix;
        topic
            .producers()
            .iter()
            .filter(|p| !crate::replication::is_replicator_producer(prefix, &p.name))
            .map(producer_json)
            .collect()
    };
    let policy = topic.effective_policy();
    let now_ms = ctx.service.clock().now_ms();
    let oldest_age = match topic.oldest_unacked_publish_time() {
        Ok(Some(t)) => i64::try_from(now_ms.saturating_sub(t) / 1000).unwrap_or(i64::MAX),
        _ => -1,
    };
    let system_topic = topic.name.local.starts_with("__");
    json!({
        "msgRateIn": rate_in,
        "msgThroughputIn": tput_in,
        "msgRateOut": rate_out,
        "msgThroughputOut": tput_out,
        "bytesInCounter": topic.msg_in.total_bytes(),
        "msgInCounter": topic.msg_in.total(),
        "systemTopicBytesInCounter": if system_topic { topic.msg_in.total_bytes() } else { 0 },
        "bytesOutCounter": bytes_out,
        "msgOutCounter": msgs_out,
        // Internal cursors (compaction, deduplication) read the ledger directly: nothing is
        // dispatched to them.
        "bytesOutInternalCounter": 0,
        "averageMsgSize": if rate_in > 0.0 { tput_in / rate_in } else { 0.0 },
        "msgChunkPublished": topic.chunk_published.load(Ordering::Relaxed),
        "storageSize": ml.total_size,
        "backlogSize": topic.backlog_size(),
        "backlogQuotaLimitSize": policy.backlog_size.map_or(-1, |q| q.limit_size),
        "backlogQuotaLimitTime": policy.backlog_time.map_or(-1, |q| q.limit_time),
        "oldestBacklogMessageAgeSeconds": oldest_age,
        "publishRateLimitedTimes": topic.publish_rate_limited.load(Ordering::Relaxed),
        "earliestMsgPublishTimeInBacklogs": 0,
        "offloadedStorageSize": offloaded.size,
        "lastOffloadLedgerId": offloaded.last_ledger_id,
        "lastOffloadSuccessTimeStamp": offloaded.last_success_ms,
        "lastOffloadFailureTimeStamp": offloaded.last_failure_ms,
        "ongoingTxnCount": 0,
        "abortedTxnCount": 0,
        "committedTxnCount": 0,
        "publishers": publishers,
        "waitingPublishers": topic.waiting_producers(),
        "subscriptions": subs,
        "replication": super::replication_stats::replication_json(ctx, topic),
        "deduplicationStatus": if topic.dedup.is_enabled() { "Enabled" } else { "Disabled" },
        "nonContiguousDeletedMessagesRanges": ranges_total,
        "nonContiguousDeletedMessagesRangesSerializedSize": topic
            .subscriptions()
            .iter()
            .map(|s| ranges_serialized_size(&s.cursor.acked_ranges()))
            .sum::<usize>(),
        "delayedMessageIndexSizeInBytes": delayed_bytes_total,
        "compaction": topic.compaction.last_run(),
        "ownerBroker": owner_broker(ctx),
        "topicCreationTimeStamp": topic.ledger.created_ms().unwrap_or(0),
        "lastPublishTimeStamp": topic.last_publish_time_ms(),
    })
}

/// The `__compaction` cursor of a topic that was compacted.
pub(in crate::admin) fn compaction_cursor(topic: &Topic) -> Option<Arc<pulsar_rs_ledger::Cursor>> {
    topic
        .ledger
        .cursors()
        .into_iter()
        .find(|c| c.name() == COMPACTION_CURSOR)
}

/// What one subscription's entry of the stats shows.
struct SubscriptionView<'a> {
    /// Its cursor (backlog, acknowledged ranges).
    cursor: &'a pulsar_rs_ledger::Cursor,
    /// Dispatch rates: messages and bytes per second.
    rate_out: (f64, f64),
    /// Dispatched in total: messages and bytes.
    out: (u64, u64),
    /// Its consumers' summed redelivery, ack and chunk rates.
    consumer_rates: (f64, f64, f64),
    /// Delayed messages and the delayed index's bytes.
    delayed: (usize, usize),
    /// Blocked on unacknowledged messages.
    blocked: bool,
    /// Messages waiting for redelivery.
    in_replay: usize,
    /// Unacknowledged messages.
    unacked: i64,
    /// `Exclusive`, `Shared`, ... (`None` before a consumer came).
    sub_type: &'static str,
    /// The Failover / Exclusive active consumer.
    active_consumer: Option<String>,
    /// Expiry: rate, total, last time.
    expired: (f64, u64, u64),
    /// Last flow, consume, ack and mark-delete move, in ms.
    timestamps: [u64; 4],
    /// Its consumers' entries.
    consumers: Vec<Value>,
    /// Durable (not a reader's).
    durable: bool,
    /// Acknowledged ranges beyond the mark-delete position.
    ranges: usize,
    /// Dispatch throttling events: messages and bytes by the subscription's, then the topic's limit.
    throttled: [u64; 4],
    /// A replicated subscription (Pulsar's `isReplicated`).
    replicated: bool,
}

impl<'a> SubscriptionView<'a> {
    /// A cursor nothing is dispatched to.
    fn idle(cursor: &'a pulsar_rs_ledger::Cursor, sub_type: &'static str) -> Self {
        SubscriptionView {
            cursor,
            rate_out: (0.0, 0.0),
            out: (0, 0),
            consumer_rates: (0.0, 0.0, 0.0),
            delayed: (0, 0),
            blocked: false,
            in_replay: 0,
            unacked: 0,
            sub_type,
            active_consumer: None,
            expired: (0.0, 0, 0),
            timestamps: [0; 4],
            consumers: Vec::new(),
            durable: true,
            ranges: cursor.acked_ranges().len(),
            throttled: [0; 4],
            replicated: cursor
                .properties()
                .contains_key(pulsar_rs_broker::replicated_subscriptions::REPLICATED_PROPERTY),
        }
    }
}

/// Pulsar's `SubscriptionStats` document of one subscription.
fn subscription_json(v: &SubscriptionView<'_>) -> Value {
    let backlog = v.cursor.backlog();
    let mut doc = json!({
        "msgRateOut": v.rate_out.0,
        "msgThroughputOut": v.rate_out.1,
        "bytesOutCounter": v.out.1,
        "msgOutCounter": v.out.0,
        "msgRateRedeliver": v.consumer_rates.0,
        "messageAckRate": v.consumer_rates.1,
        "chunkedMessageRate": v.consumer_rates.2,
        "msgBacklog": backlog,
        "backlogSize": v.cursor.estimated_backlog_size(),
        // Pulsar computes it only for `getEarliestTimeInBacklog=true`; not supported here.
        "earliestMsgPublishTimeInBacklog": 0,
        "msgBacklogNoDelayed": backlog.saturating_sub(v.delayed.0 as u64),
        "blockedSubscriptionOnUnackedMsgs": v.blocked,
        "msgDelayed": v.delayed.0,
        "msgInReplay": v.in_replay,
        "unackedMessages": v.unacked,
        "type": v.sub_type,
        "msgRateExpired": v.expired.0,
        "totalMsgExpired": v.expired.1,
        "lastExpireTimestamp": v.expired.2,
        "lastConsumedFlowTimestamp": v.timestamps[0],
        "lastConsumedTimestamp": v.timestamps[1],
        "lastAckedTimestamp": v.timestamps[2],
        "lastMarkDeleteAdvancedTimestamp": v.timestamps[3],
        "consumers": v.consumers,
        "isDurable": v.durable,
        "isReplicated": v.replicated,
        // Key_Shared here always keeps per-key order.
        "allowOutOfOrderDelivery": false,
        "consumersAfterMarkDeletePosition": {},
        "drainingHashesCount": 0,
        "drainingHashesClearedTotal": 0,
        "drainingHashesUnackedMessages": 0,
        "nonContiguousDeletedMessagesRanges": v.ranges,
        "nonContiguousDeletedMessagesRangesSerializedSize": ranges_serialized_size(&v.cursor.acked_ranges()),
        "delayedMessageIndexSizeInBytes": v.delayed.1,
        "subscriptionProperties": {},
        "filterProcessedMsgCount": 0,
        "filterAcceptedMsgCount": 0,
        "filterRejectedMsgCount": 0,
        "filterRescheduledMsgCount": 0,
        "dispatchThrottledMsgEventsBySubscriptionLimit": v.throttled[0],
        "dispatchThrottledBytesEventsBySubscriptionLimit": v.throttled[1],
        "dispatchThrottledMsgEventsByTopicLimit": v.throttled[2],
        "dispatchThrottledBytesEventsByTopicLimit": v.throttled[3],
        "dispatchThrottledMsgEventsByBrokerLimit": 0,
        "dispatchThrottledBytesEventsByBrokerLimit": 0,
        // Jackson writes both the field and its `isX()` getter.
        "durable": v.durable,
        "replicated": false,
    });
    // Pulsar leaves a null `activeConsumerName` out.
    if let (Some(name), Value::Object(m)) = (&v.active_consumer, &mut doc) {
        m.insert("activeConsumerName".into(), name.clone().into());
    }
    doc
}

/// The broker's web `host:port` (Pulsar's `ownerBroker`).
fn owner_broker(ctx: &ServerContext) -> String {
    let url = &ctx.admin_url;
    url.split_once("://")
        .map_or(url.as_str(), |(_, rest)| rest)
        .trim_end_matches('/')
        .to_owned()
}

/// Bytes the ack holes take in Pulsar's cursor format (`MLDataFormats.MessageRange`, what
/// Pulsar's `nonContiguousDeletedMessagesRangesSerializedSize` measures): per range, a
/// length-delimited message holding two `NestedPositionInfo`s of two varint fields each.
fn ranges_serialized_size(
    ranges: &[(pulsar_rs_ledger::Position, pulsar_rs_ledger::Position)],
) -> usize {
    let varint = |v: i64| {
        #[allow(clippy::cast_sign_loss)]
        let mut v = v as u64;
        let mut n = 1;
        while v >= 0x80 {
            v >>= 7;
            n += 1;
        }
        n
    };
    // A field: tag byte + (varint | length prefix + body).
    let nested = |ledger: i64, entry: i64| 1 + varint(ledger) + 1 + varint(entry);
    ranges
        .iter()
        .map(|(a, b)| {
            // Lower endpoint is exclusive in Pulsar's ranges: the entry before the first acked.
            let lower = nested(a.ledger_id, a.entry_id - 1);
            let upper = nested(b.ledger_id, b.entry_id);
            let body = 1 + varint(lower as i64) + lower + 1 + varint(upper as i64) + upper;
            // Each range is one repeated field of the cursor's position info.
            1 + varint(body as i64) + body
        })
        .sum()
}

/// Pulsar's `ConsumerStats` of one consumer.
fn consumer_json(c: &pulsar_rs_broker::Consumer) -> Value {
    let (rate, tput) = c.out.rates();
    let (redeliver, _) = c.redelivered.rates();
    let (ack_rate, _) = c.acks.rates();
    let (chunk_rate, _) = c.chunked.rates();
    let at = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let entries = at(&c.entries_out);
    let (acked, consumed) = (at(&c.last_acked_ms), at(&c.last_consumed_ms));
    let metadata: Map<String, Value> = c
        .metadata()
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    json!({
        "msgRateOut": rate,
        "msgThroughputOut": tput,
        "bytesOutCounter": c.out.total_bytes(),
        "msgOutCounter": c.out.total(),
        "msgRateRedeliver": redeliver,
        "messageAckRate": ack_rate,
        "chunkedMessageRate": chunk_rate,
        "consumerName": c.name,
        "availablePermits": c.permits.get(),
        "unackedMessages": c.unacked(),
        // Messages per delivered entry since it attached (Pulsar: a moving average; 0 before
        // anything was delivered, as Pulsar's `Consumer` starts it).
        "avgMessagesPerEntry": (c.out.total() + entries / 2).checked_div(entries).unwrap_or(0),
        "blockedConsumerOnUnackedMsgs": c.is_blocked(),
        "drainingHashesCount": 0,
        "drainingHashesClearedTotal": 0,
        "drainingHashesUnackedMessages": 0,
        "address": c.address,
        "connectedSince": instant_string(c.connected_since),
        "clientVersion": c.client_version(),
        "lastAckedTimestamp": acked,
        "lastConsumedTimestamp": consumed,
        "lastConsumedFlowTimestamp": at(&c.last_flow_ms),
        "metadata": metadata,
        "lastAckedTime": instant_string(pulsar_rs_clock::system_time_of_ms(acked)),
        "lastConsumedTime": instant_string(pulsar_rs_clock::system_time_of_ms(consumed)),
    })
}

/// Pulsar's `PublisherStats` of one producer.
fn producer_json(p: &pulsar_rs_broker::ProducerInfo) -> Value {
    let (rate, tput) = p.meters.msg_in.rates();
    let (chunk_rate, _) = p.meters.chunked.rates();
    let access_mode = match p.access_mode {
        AccessMode::Shared => "Shared",
        AccessMode::Exclusive => "Exclusive",
        AccessMode::WaitForExclusive => "WaitForExclusive",
        AccessMode::ExclusiveWithFencing => "ExclusiveWithFencing",
    };
    let metadata: Map<String, Value> = p
        .metadata
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    json!({
        "accessMode": access_mode,
        "msgRateIn": rate,
        "msgThroughputIn": tput,
        "averageMsgSize": if rate > 0.0 { tput / rate } else { 0.0 },
        "chunkedMessageRate": chunk_rate,
        "producerId": p.producer_id,
        // Partial producers are Pulsar's replicators': none here.
        "supportsPartialProducer": false,
        "producerName": p.name,
        "address": p.address,
        "connectedSince": instant_string(p.connected_since),
        "clientVersion": p.client_version,
        "metadata": metadata,
    })
}

/// `GET .../partitioned-stats[?perPartition=false]`: 404 when the topic is not partitioned, with
/// Apache Pulsar 4.0's message.
async fn partitioned_stats(
    State(ctx): Ctx,
    TopicPath(name): TopicPath,
    Query(q): Query<HashMap<String, String>>,
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
    let opts = StatsOptions::from_query(&q);
    let doc = PartitionDocument {
        op: "stats",
        local: std::sync::Arc::new(move |c, t| topic_json(c, t, opts)),
        query: opts.query(),
        per_partition: q.get("perPartition").is_none_or(|v| v != "false"),
    };
    let auth = headers.get(header::AUTHORIZATION).cloned();
    let total = Total {
        sum: Value::Object(Map::new()),
        partitions: n,
    };
    partitions::answer(&ctx, &name, n, doc, auth, total).await
}

/// Pulsar's `PartitionedTopicStats` besides the partitions: their stats summed.
struct Total {
    /// The partitions' stats added so far ([`merge`]).
    sum: Value,
    /// The declared partition count.
    partitions: u32,
}

impl partitions::Summary for Total {
    fn add(&mut self, doc: &Value) {
        merge(&mut self.sum, doc);
    }

    fn fields(self) -> Map<String, Value> {
        let Value::Object(mut m) = self.sum else {
            return Map::new();
        };
        // As Pulsar's `PartitionedTopicStats`: these are per partition only.
        m.remove("deduplicationStatus");
        m.remove("ownerBroker");
        m.insert(
            "metadata".into(),
            json!({ "partitions": self.partitions, "deleted": false }),
        );
        m
    }
}

/// Adds one partition's stats into the running total, as `PartitionedTopicStatsImpl.add`:
/// numbers are summed (timestamps take the latest, the backlog quota limits the partition's,
/// the oldest backlog age the largest from 0), lists are concatenated, maps (the
/// subscriptions) are merged key by key, and other values keep the first partition's.
fn merge(total: &mut Value, one: &Value) {
    match (total, one) {
        (Value::Object(t), Value::Object(o)) => {
            for (k, v) in o {
                match t.get_mut(k) {
                    // The oldest of the partitions' ages, from 0 (a new total's).
                    None if k == "oldestBacklogMessageAgeSeconds" => {
                        let age = v.as_i64().unwrap_or(0).max(0);
                        t.insert(k.clone(), json!(age));
                    }
                    None => {
                        t.insert(k.clone(), v.clone());
                    }
                    Some(cur) if k == "oldestBacklogMessageAgeSeconds" => {
                        if v.as_i64() > cur.as_i64() {
                            *cur = v.clone();
                        }
                    }
                    // A partition's quota limits, not a sum: copied, as Pulsar copies them.
                    Some(cur) if k == "backlogQuotaLimitSize" || k == "backlogQuotaLimitTime" => {
                        *cur = v.clone();
                    }
                    // The first partition made (0: unknown, left out).
                    Some(cur) if k == "topicCreationTimeStamp" => {
                        let (c, o) = (cur.as_u64().unwrap_or(0), v.as_u64().unwrap_or(0));
                        if c == 0 || (o != 0 && o < c) {
                            *cur = v.clone();
                        }
                    }
                    Some(cur) if k.ends_with("Timestamp") || k == "lastPublishTimeStamp" => {
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
        (Value::Bool(t), Value::Bool(o)) => *t |= *o,
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
        // Limits are copied, not summed; the age is the oldest, from 0 (Pulsar 4.0.8's answer
        // for three partitions without a quota: -1, -1 and 0).
        let mut total = json!({});
        for _ in 0..3 {
            let p = json!({"backlogQuotaLimitSize": -1, "backlogQuotaLimitTime": -1,
                           "oldestBacklogMessageAgeSeconds": -1});
            merge(&mut total, &p);
        }
        assert_eq!(total["backlogQuotaLimitSize"], -1);
        assert_eq!(total["backlogQuotaLimitTime"], -1);
        assert_eq!(total["oldestBacklogMessageAgeSeconds"], 0);
        merge(&mut total, &json!({"oldestBacklogMessageAgeSeconds": 7}));
        assert_eq!(total["oldestBacklogMessageAgeSeconds"], 7);
    }
}
