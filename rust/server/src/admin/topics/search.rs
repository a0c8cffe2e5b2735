//! Message search (announced by Apache Pulsar 4.0, not shipped there):
//! `GET .../searchMessages?key=K&properties=k1=v1,k2=v2&fromPublishTime=MS&toPublishTime=MS
//! &fromMessageId=L:E&limit=N&maxEntries=M` finds the messages of one topic (or partition) by key
//! (partition key or ordering key), by properties (all must match) and by publish-time range,
//! each message of a batch on its own (a compressed batch is decompressed), markers and aborted
//! transactions' messages never.
//!
//! The work is bounded and the answer streamed: the scan starts at the first entry appended at
//! `fromPublishTime` (or `fromMessageId`, or the first entry), stops after `maxEntries` entries
//! (100 000 unless set, at most [`MAX_ENTRIES`]), after `limit` matches (100, at most
//! [`MAX_LIMIT`]), or past the entries appended a minute after `toPublishTime`, and reads
//! [`CHUNK_ENTRIES`] entries at a time on the blocking pool, each chunk's matches sent before the
//! next is read ([`crate::admin::machinery::streamed`]). The answer is
//! `{"messages": [...], "entriesScanned": N, "lastScanned": "L:E", "complete": bool}`:
//! `complete` is false when `maxEntries` stopped the scan before the end of the range (continue
//! with `fromMessageId` after `lastScanned`).

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use pulsar_rs_broker::{entry_info, Topic};
use pulsar_rs_ledger::Position;
use pulsar_rs_proto::pb;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::{load_non_partitioned, Ctx};
use crate::admin::machinery::streamed::{json_response, write_fields};
use crate::admin::machinery::topic_path::DeferredTopicPath;
use crate::http::fail;

/// Entries read per step.
pub(crate) const CHUNK_ENTRIES: usize = 1000;
/// Bytes read per step, at most.
const CHUNK_BYTES: u64 = 8 << 20;
/// The most entries one search scans.
pub(crate) const MAX_ENTRIES: u64 = 10_000_000;
/// The most messages one search answers.
pub(crate) const MAX_LIMIT: usize = 10_000;
/// How far past `toPublishTime` (by append time) the scan goes: publish times are the
/// clients', a little before the broker's append.
const TO_SLACK_MS: u64 = 60_000;

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new().route(
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/searchMessages",
        Access::Tenant,
        get(search),
    )
}

/// The query of a search.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SearchQuery {
    key: Option<String>,
    properties: Option<String>,
    from_publish_time: Option<u64>,
    to_publish_time: Option<u64>,
    from_message_id: Option<String>,
    limit: Option<usize>,
    max_entries: Option<u64>,
}

/// What a message must have to match.
#[derive(Debug, Default)]
struct Filter {
    key: Option<String>,
    properties: Vec<(String, String)>,
    from: u64,
    to: u64,
}

impl Filter {
    fn matches(&self, m: &Found) -> bool {
        m.publish_time >= self.from
            && m.publish_time <= self.to
            && self
                .key
                .as_ref()
                .is_none_or(|k| m.key.as_ref() == Some(k) || m.ordering_key.as_ref() == Some(k))
            && self
                .properties
                .iter()
                .all(|(k, v)| m.properties.iter().any(|(mk, mv)| mk == k && mv == v))
    }
}

/// One message of an entry.
struct Found {
    position: Position,
    batch_index: i32,
    key: Option<String>,
    ordering_key: Option<String>,
    properties: Vec<(String, String)>,
    publish_time: u64,
    event_time: Option<u64>,
    producer_name: String,
    sequence_id: u64,
    payload_size: usize,
}

impl Found {
    fn to_json(&self) -> Value {
        let properties: Map<String, Value> = self
            .properties
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        json!({
            "messageId": self.position.to_string(),
            "batchIndex": self.batch_index,
            "key": self.key,
            "orderingKey": self.ordering_key,
            "properties": properties,
            "publishTime": self.publish_time,
            "eventTime": self.event_time,
            "producerName": self.producer_name,
            "sequenceId": self.sequence_id,
            "payloadSize": self.payload_size,
        })
    }
}

/// `GET .../searchMessages`.
async fn search(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Query(q): Query<SearchQuery>,
) -> Response {
    let filter = match filter_of(&q) {
        Ok(f) => f,
        Err(why) => return fail(StatusCode::BAD_REQUEST, why),
    };
    let start_id = match q.from_message_id.as_deref().map(Position::parse) {
        None => None,
        Some(Some(p)) => Some(p),
        Some(None) => {
            return fail(
                StatusCode::BAD_REQUEST,
                "fromMessageId must be LEDGER:ENTRY",
            )
        }
    };
    let limit = q.limit.unwrap_or(100).clamp(1, MAX_LIMIT);
    let max_entries = q.max_entries.unwrap_or(100_000).clamp(1, MAX_ENTRIES);
    let refusal = "Search messages on a partitioned topic is not allowed: search each partition";
    let t = match load_non_partitioned(&ctx, path, refusal).await {
        Ok(t) => t,
        Err(r) => return r,
    };
    let bounds = {
        let t = Arc::clone(&t);
        let (from, to) = (filter.from, q.to_publish_time);
        tokio::task::spawn_blocking(move || scan_bounds(&t, start_id, from, to)).await
    };
    let Ok(Ok((start, end))) = bounds else {
        return fail(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the scan's bounds could not be read",
        );
    };
    let (response, tx) = json_response(b"{\"messages\":[".to_vec());
    tokio::spawn(async move {
        let mut scan = Scan {
            next: start,
            end,
            scanned: 0,
            last: None,
            found: 0,
        };
        let filter = Arc::new(filter);
        let mut complete = true;
        while scan.next <= scan.end && scan.found < limit {
            if scan.scanned >= max_entries {
                complete = false;
                break;
            }
            let want = usize::try_from(max_entries - scan.scanned)
                .unwrap_or(usize::MAX)
                .min(CHUNK_ENTRIES);
            let (t2, f2, at, end) = (Arc::clone(&t), Arc::clone(&filter), scan.next, scan.end);
            let left = limit - scan.found;
            let step =
                tokio::task::spawn_blocking(move || step(&t2, &f2, at, end, want, left)).await;
            let Ok(Ok(step)) = step else {
                tx.fail("reading the topic failed".into()).await;
                return;
            };
            let Some(last) = step.last else { break };
            scan.scanned += step.entries;
            scan.last = Some(last);
            scan.next = t.ledger.next_valid_position(last);
            let mut out = Vec::new();
            for m in &step.found {
                if scan.found > 0 {
                    out.push(b',');
                }
                scan.found += 1;
                // A JSON value serializes into a Vec without failing.
                let _ = serde_json::to_writer(&mut out, &m.to_json());
            }
            if out.is_empty() {
                // Whitespace between tokens: a client that left is noticed at every step.
                out.push(b' ');
            }
            if tx.send(out).await.is_err() {
                return;
            }
        }
        let mut out = b"]".to_vec();
        write_fields(
            &mut out,
            [
                ("entriesScanned".to_owned(), json!(scan.scanned)),
                (
                    "lastScanned".to_owned(),
                    json!(scan.last.map(|p| p.to_string())),
                ),
                ("complete".to_owned(), json!(complete)),
            ],
        );
        out.push(b'}');
        let _ = tx.send(out).await;
    });
    response.into_response()
}

/// Where a search stands.
struct Scan {
    next: Position,
    end: Position,
    scanned: u64,
    last: Option<Position>,
    found: usize,
}

/// What one step read and found.
struct Step {
    entries: u64,
    last: Option<Position>,
    found: Vec<Found>,
}

/// The query as a filter, or why it is refused.
fn filter_of(q: &SearchQuery) -> Result<Filter, String> {
    let mut properties = Vec::new();
    for pair in q
        .properties
        .iter()
        .flat_map(|p| p.split(','))
        .filter(|p| !p.is_empty())
    {
        let Some((k, v)) = pair.split_once('=') else {
            return Err(format!("properties must be k1=v1,k2=v2 (got {pair:?})"));
        };
        properties.push((k.to_owned(), v.to_owned()));
    }
    let (from, to) = (
        q.from_publish_time.unwrap_or(0),
        q.to_publish_time.unwrap_or(u64::MAX),
    );
    if from > to {
        return Err("fromPublishTime is after toPublishTime".into());
    }
    Ok(Filter {
        key: q.key.clone(),
        properties,
        from,
        to,
    })
}

/// The first and last entries to scan (blocking: the time index is read from storage).
fn scan_bounds(
    t: &Topic,
    start_id: Option<Position>,
    from: u64,
    to: Option<u64>,
) -> Result<(Position, Position), pulsar_rs_ledger::LedgerError> {
    let ml = &t.ledger;
    let lac = ml.last_confirmed();
    let first = ml.next_valid_position(ml.first_position());
    let mut start = start_id.map_or(first, |p| p.max(first));
    if from > 0 {
        start = start.max(ml.find_position_by_time(from)?);
    }
    let end = match to {
        Some(to) => {
            let after = ml.find_position_by_time(to.saturating_add(TO_SLACK_MS))?;
            if after > lac {
                lac
            } else {
                ml.previous_position(after).min(lac)
            }
        }
        None => lac,
    };
    Ok((start, end))
}

/// Reads up to `want` entries from `at` (not past `end`) and keeps at most `left` matches.
fn step(
    t: &Topic,
    filter: &Filter,
    at: Position,
    end: Position,
    want: usize,
    left: usize,
) -> Result<Step, pulsar_rs_broker::BrokerError> {
    let entries = t.ledger.read_entries(at, want, CHUNK_BYTES, end)?;
    let mut out = Step {
        entries: 0,
        last: None,
        found: Vec::new(),
    };
    for e in entries {
        // Stop before an entry that would not be searched: `lastScanned` is where a next call
        // goes on from.
        if out.found.len() >= left {
            break;
        }
        out.entries += 1;
        out.last = Some(e.position);
        let info = entry_info(&e.data);
        if info.marker.is_some() || t.txn_buffer.as_ref().is_some_and(|tb| tb.hides(&info)) {
            continue;
        }
        for m in messages_of(e.position, &e.data) {
            if out.found.len() < left && filter.matches(&m) {
                out.found.push(m);
            }
        }
    }
    Ok(out)
}

/// Properties as (key, value) pairs.
fn pairs(properties: &[pb::KeyValue]) -> Vec<(String, String)> {
    properties
        .iter()
        .map(|kv| (kv.key.clone(), kv.value.clone()))
        .collect()
}

/// The messages of a stored entry: itself, or each message of its batch.
fn messages_of(position: Position, data: &Bytes) -> Vec<Found> {
    let Ok((md, payload)) = pulsar_rs_proto::parse_stored_entry(data) else {
        return Vec::new();
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let payload_len = payload.len();
    let base = |batch_index: i32| Found {
        position,
        batch_index,
        key: md.partition_key.clone(),
        ordering_key: md.ordering_key.as_deref().map(text),
        properties: pairs(&md.properties),
        publish_time: md.publish_time,
        event_time: md.event_time.filter(|&t| t > 0),
        producer_name: md.producer_name.clone(),
        sequence_id: md.sequence_id,
        payload_size: payload_len,
    };
    let Some(count) = md.num_messages_in_batch else {
        return vec![base(-1)];
    };
    let raw = match md.compression.unwrap_or(0) {
        c if c == pb::CompressionType::None as i32 => payload,
        codec => {
            let size = md.uncompressed_size.map_or(0, |s| s as usize);
            match pulsar_rs_proto::compression::decompress(codec, &payload, size) {
                Ok(raw) => raw,
                Err(_) => return vec![base(-1)],
            }
        }
    };
    let Ok(members) = pulsar_rs_proto::batch::split_batch(raw, count) else {
        return vec![base(-1)];
    };
    members
        .into_iter()
        .zip(0..)
        .map(|(m, i)| {
            let s = &m.metadata;
            Found {
                key: s.partition_key.clone(),
                ordering_key: s.ordering_key.as_deref().map(text),
                properties: pairs(&s.properties),
                event_time: s.event_time.filter(|&t| t > 0),
                sequence_id: s
                    .sequence_id
                    .unwrap_or(md.sequence_id + u64::from(i as u32)),
                payload_size: m.body.len(),
                ..base(i)
            }
        })
        .collect()
}
