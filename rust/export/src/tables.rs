//! Column builders for the seven tables: six built from topics ([`build`]), and the
//! transaction coordinators' ([`coordinators_table`]).

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int32Builder, Int64Builder, StringBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use pulsar_rs_broker::{BrokerService, Topic};
use pulsar_rs_ledger::Position;

use crate::entries::{for_each, EntryRow};
use crate::{ExportError, Table};

/// Version of the exported schema (`spark/SCHEMA.md`).
pub const SCHEMA_VERSION: u32 = 1;

/// Rows per entries batch.
const ENTRY_BATCH: usize = 65_536;

fn schema(fields: &[(&str, DataType, bool)]) -> SchemaRef {
    Arc::new(Schema::new(
        fields
            .iter()
            .map(|(n, t, null)| Field::new(*n, t.clone(), *null))
            .collect::<Vec<_>>(),
    ))
}

fn batch(
    table: &'static str,
    schema: &SchemaRef,
    cols: Vec<ArrayRef>,
) -> Result<RecordBatch, ExportError> {
    RecordBatch::try_new(Arc::clone(schema), cols)
        .map_err(|source| ExportError::Arrow { table, source })
}

use DataType::{Boolean as B, Float64 as F, Int32 as I32, Int64 as I64, Utf8 as S};

pub(crate) fn build(topics: &[Arc<Topic>]) -> Result<Vec<Table>, ExportError> {
    Ok(vec![
        topics_table(topics)?,
        ledgers_table(topics)?,
        entries_table(topics)?,
        subscriptions_table(topics)?,
        ack_ranges_table(topics)?,
        consumers_table(topics)?,
    ])
}

fn topics_table(topics: &[Arc<Topic>]) -> Result<Table, ExportError> {
    let schema = schema(&[
        ("topic", S, false),
        ("partition", I32, false),
        ("entries", I64, false),
        ("size_bytes", I64, false),
        ("ledgers", I32, false),
        ("last_confirmed_ledger", I64, false),
        ("last_confirmed_entry", I64, false),
        ("subscriptions", I32, false),
        ("producers", I32, false),
        ("msg_rate_in", F, false),
        ("backlog_quota_limit_bytes", I64, false),
        ("backlog_quota_limit_seconds", I64, false),
        ("compacted_ledger_id", I64, true),
        ("compaction_horizon_ledger", I64, true),
        ("compaction_horizon_entry", I64, true),
        ("compacted_entries", I64, false),
        ("txn_ongoing", I64, true),
        ("txn_max_read_ledger", I64, true),
        ("txn_max_read_entry", I64, true),
    ]);
    let (mut cid, mut chl, mut che, mut cen) = (
        Int64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
    );
    let (mut name, mut part, mut entries, mut size, mut ledgers) = (
        StringBuilder::new(),
        Int32Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
        Int32Builder::new(),
    );
    let (mut lcl, mut lce, mut subs, mut prods, mut rate, mut qb, mut qs) = (
        Int64Builder::new(),
        Int64Builder::new(),
        Int32Builder::new(),
        Int32Builder::new(),
        Float64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
    );
    let (mut txn_ongoing, mut txn_mrl, mut txn_mre) = (
        Int64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
    );
    for t in topics {
        let st = t.ledger.stats();
        // The transaction buffer, on a broker with transactions (null columns without).
        if let Some(tb) = &t.txn_buffer {
            txn_ongoing.append_value(i64::try_from(tb.ongoing_count()).unwrap_or(i64::MAX));
            let mrp = t.max_read_position();
            txn_mrl.append_value(mrp.ledger_id);
            txn_mre.append_value(mrp.entry_id);
        } else {
            txn_ongoing.append_null();
            txn_mrl.append_null();
            txn_mre.append_null();
        }
        name.append_value(t.name.to_string());
        part.append_value(t.partition);
        entries.append_value(i64::try_from(st.number_of_entries).unwrap_or(i64::MAX));
        size.append_value(i64::try_from(st.total_size).unwrap_or(i64::MAX));
        ledgers.append_value(i32::try_from(st.ledger_count).unwrap_or(i32::MAX));
        lcl.append_value(st.last_confirmed.ledger_id);
        lce.append_value(st.last_confirmed.entry_id);
        subs.append_value(
            i32::try_from(t.subscriptions().iter().filter(|s| s.durable).count())
                .unwrap_or(i32::MAX),
        );
        prods.append_value(i32::try_from(t.producers().len()).unwrap_or(i32::MAX));
        rate.append_value(t.msg_in.rates().0);
        // Backlog quotas are not configurable yet: no limit.
        qb.append_value(-1);
        qs.append_value(-1);
        let c = t.compaction.info();
        cid.append_option(c.ledger_id);
        chl.append_option(c.horizon.map(|p| p.ledger_id));
        che.append_option(c.horizon.map(|p| p.entry_id));
        cen.append_value(i64::try_from(c.entries).unwrap_or(i64::MAX));
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(name.finish()),
        Arc::new(part.finish()),
        Arc::new(entries.finish()),
        Arc::new(size.finish()),
        Arc::new(ledgers.finish()),
        Arc::new(lcl.finish()),
        Arc::new(lce.finish()),
        Arc::new(subs.finish()),
        Arc::new(prods.finish()),
        Arc::new(rate.finish()),
        Arc::new(qb.finish()),
        Arc::new(qs.finish()),
        Arc::new(cid.finish()),
        Arc::new(chl.finish()),
        Arc::new(che.finish()),
        Arc::new(cen.finish()),
        Arc::new(txn_ongoing.finish()),
        Arc::new(txn_mrl.finish()),
        Arc::new(txn_mre.finish()),
    ];
    Ok(Table {
        name: "topics",
        batches: vec![batch("topics", &schema, cols)?],
        schema,
    })
}

fn ledgers_table(topics: &[Arc<Topic>]) -> Result<Table, ExportError> {
    let schema = schema(&[
        ("topic", S, false),
        ("ledger_id", I64, false),
        ("entries", I64, false),
        ("size_bytes", I64, false),
        ("created_ms", I64, false),
        ("closed_ms", I64, true),
    ]);
    let (mut name, mut id, mut entries, mut size, mut created, mut closed) = (
        StringBuilder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
    );
    for t in topics {
        let topic = t.name.to_string();
        for l in t.ledger.ledgers() {
            name.append_value(&topic);
            id.append_value(l.ledger_id);
            entries.append_value(i64::try_from(l.entries).unwrap_or(i64::MAX));
            size.append_value(i64::try_from(l.size).unwrap_or(i64::MAX));
            created.append_value(i64::try_from(l.created_ms).unwrap_or(i64::MAX));
            closed.append_option(l.closed_ms.and_then(|c| i64::try_from(c).ok()));
        }
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(name.finish()),
        Arc::new(id.finish()),
        Arc::new(entries.finish()),
        Arc::new(size.finish()),
        Arc::new(created.finish()),
        Arc::new(closed.finish()),
    ];
    Ok(Table {
        name: "ledgers",
        batches: vec![batch("ledgers", &schema, cols)?],
        schema,
    })
}

struct EntryColumns {
    topic: StringBuilder,
    ledger: Int64Builder,
    entry: Int64Builder,
    publish: Int64Builder,
    size: Int32Builder,
    messages: Int32Builder,
    key: StringBuilder,
    hash: Int32Builder,
    rows: usize,
}

impl EntryColumns {
    fn new() -> Self {
        EntryColumns {
            topic: StringBuilder::new(),
            ledger: Int64Builder::new(),
            entry: Int64Builder::new(),
            publish: Int64Builder::new(),
            size: Int32Builder::new(),
            messages: Int32Builder::new(),
            key: StringBuilder::new(),
            hash: Int32Builder::new(),
            rows: 0,
        }
    }

    fn push(&mut self, topic: &str, r: EntryRow) {
        self.topic.append_value(topic);
        self.ledger.append_value(r.position.ledger_id);
        self.entry.append_value(r.position.entry_id);
        self.publish.append_value(r.publish_time_ms);
        self.size.append_value(r.size);
        self.messages.append_value(r.messages);
        self.key.append_option(r.key);
        self.hash.append_option(r.key_hash);
        self.rows += 1;
    }

    fn finish(&mut self, schema: &SchemaRef) -> Result<RecordBatch, ExportError> {
        self.rows = 0;
        let cols: Vec<ArrayRef> = vec![
            Arc::new(self.topic.finish()),
            Arc::new(self.ledger.finish()),
            Arc::new(self.entry.finish()),
            Arc::new(self.publish.finish()),
            Arc::new(self.size.finish()),
            Arc::new(self.messages.finish()),
            Arc::new(self.key.finish()),
            Arc::new(self.hash.finish()),
        ];
        batch("entries", schema, cols)
    }
}

fn entries_table(topics: &[Arc<Topic>]) -> Result<Table, ExportError> {
    let schema = schema(&[
        ("topic", S, false),
        ("ledger_id", I64, false),
        ("entry_id", I64, false),
        ("publish_time_ms", I64, false),
        ("size_bytes", I32, false),
        ("messages", I32, false),
        ("key", S, true),
        ("key_hash", I32, true),
    ]);
    let mut cols = EntryColumns::new();
    let mut batches = Vec::new();
    for t in topics {
        let topic = t.name.to_string();
        let mut full: Vec<RecordBatch> = Vec::new();
        let mut err = None;
        for_each(&t.ledger, |row| {
            cols.push(&topic, row);
            if cols.rows >= ENTRY_BATCH {
                match cols.finish(&schema) {
                    Ok(b) => full.push(b),
                    Err(e) => err = Some(e),
                }
            }
        })?;
        if let Some(e) = err {
            return Err(e);
        }
        batches.extend(full);
    }
    if cols.rows > 0 || batches.is_empty() {
        batches.push(cols.finish(&schema)?);
    }
    Ok(Table {
        name: "entries",
        batches,
        schema,
    })
}

/// The first unacknowledged entry after mark-delete, if any.
fn first_unacked(t: &Topic, cursor: &pulsar_rs_ledger::Cursor) -> Option<Position> {
    let ml = &t.ledger;
    let last = ml.last_confirmed();
    let mut p = ml.next_valid_position(cursor.mark_delete_position());
    while p <= last {
        if !cursor.is_acked(p) {
            return Some(p);
        }
        p = ml.next_valid_position(p);
    }
    None
}

fn subscriptions_table(topics: &[Arc<Topic>]) -> Result<Table, ExportError> {
    let schema = schema(&[
        ("topic", S, false),
        ("subscription", S, false),
        ("durable", B, false),
        ("type", S, true),
        ("mark_delete_ledger", I64, false),
        ("mark_delete_entry", I64, false),
        ("read_ledger", I64, false),
        ("read_entry", I64, false),
        ("backlog_entries", I64, false),
        ("backlog_size_bytes", I64, false),
        ("acked_entries", I64, false),
        ("ack_ranges", I64, false),
        ("oldest_unacked_publish_ms", I64, true),
        ("consumers", I32, false),
        ("unacked_messages", I64, false),
        ("txn_pending_ack_ongoing", I64, true),
    ]);
    let mut b_topic = StringBuilder::new();
    let mut b_sub = StringBuilder::new();
    let mut b_durable = BooleanBuilder::new();
    let mut b_type = StringBuilder::new();
    let mut ints: Vec<Int64Builder> = (0..8).map(|_| Int64Builder::new()).collect();
    let mut b_oldest = Int64Builder::new();
    let mut b_consumers = Int32Builder::new();
    let mut b_unacked = Int64Builder::new();
    let mut b_txn_pending = Int64Builder::new();
    for t in topics {
        let topic = t.name.to_string();
        let mut subs = t.subscriptions();
        subs.sort_by(|a, b| a.name.cmp(&b.name));
        for s in subs {
            let c = &s.cursor;
            let (md, rp) = (c.mark_delete_position(), c.read_position());
            b_topic.append_value(&topic);
            b_sub.append_value(&s.name);
            b_durable.append_value(s.durable);
            b_type.append_option(s.sub_type().map(|x| x.as_str()));
            let values = [
                md.ledger_id,
                md.entry_id,
                rp.ledger_id,
                rp.entry_id,
                i64::try_from(c.backlog()).unwrap_or(i64::MAX),
                i64::try_from(c.estimated_backlog_size()).unwrap_or(i64::MAX),
                i64::try_from(c.acked_count()).unwrap_or(i64::MAX),
                i64::try_from(c.acked_ranges().len()).unwrap_or(i64::MAX),
            ];
            for (b, v) in ints.iter_mut().zip(values) {
                b.append_value(v);
            }
            let oldest = first_unacked(t, c).and_then(|p| {
                let e = t.ledger.read_entry(p).ok()??;
                let (md, _) = pulsar_rs_proto::parse_stored_entry(&e.data).ok()?;
                i64::try_from(md.publish_time).ok()
            });
            b_oldest.append_option(oldest);
            b_consumers.append_value(i32::try_from(s.consumers().len()).unwrap_or(i32::MAX));
            b_unacked.append_value(s.unacked_messages());
            // Transactions holding acks here, on a broker with transactions (else null).
            b_txn_pending.append_option(
                t.txn_buffer
                    .as_ref()
                    .map(|_| i64::try_from(s.pending_acks.transactions()).unwrap_or(i64::MAX)),
            );
        }
    }
    let mut cols: Vec<ArrayRef> = vec![
        Arc::new(b_topic.finish()),
        Arc::new(b_sub.finish()),
        Arc::new(b_durable.finish()),
        Arc::new(b_type.finish()),
    ];
    cols.extend(ints.iter_mut().map(|b| Arc::new(b.finish()) as ArrayRef));
    cols.push(Arc::new(b_oldest.finish()));
    cols.push(Arc::new(b_consumers.finish()));
    cols.push(Arc::new(b_unacked.finish()));
    cols.push(Arc::new(b_txn_pending.finish()));
    Ok(Table {
        name: "subscriptions",
        batches: vec![batch("subscriptions", &schema, cols)?],
        schema,
    })
}

fn ack_ranges_table(topics: &[Arc<Topic>]) -> Result<Table, ExportError> {
    let schema = schema(&[
        ("topic", S, false),
        ("subscription", S, false),
        ("start_ledger", I64, false),
        ("start_entry", I64, false),
        ("end_ledger", I64, false),
        ("end_entry", I64, false),
        ("entries", I64, false),
    ]);
    let (mut b_topic, mut b_sub) = (StringBuilder::new(), StringBuilder::new());
    let mut ints: Vec<Int64Builder> = (0..5).map(|_| Int64Builder::new()).collect();
    for t in topics {
        let topic = t.name.to_string();
        for s in t.subscriptions() {
            for (a, b) in s.cursor.acked_ranges() {
                b_topic.append_value(&topic);
                b_sub.append_value(&s.name);
                let values = [
                    a.ledger_id,
                    a.entry_id,
                    b.ledger_id,
                    b.entry_id,
                    b.entry_id - a.entry_id + 1,
                ];
                for (builder, v) in ints.iter_mut().zip(values) {
                    builder.append_value(v);
                }
            }
        }
    }
    let mut cols: Vec<ArrayRef> = vec![Arc::new(b_topic.finish()), Arc::new(b_sub.finish())];
    cols.extend(ints.iter_mut().map(|b| Arc::new(b.finish()) as ArrayRef));
    Ok(Table {
        name: "ack_ranges",
        batches: vec![batch("ack_ranges", &schema, cols)?],
        schema,
    })
}

fn consumers_table(topics: &[Arc<Topic>]) -> Result<Table, ExportError> {
    let schema = schema(&[
        ("topic", S, false),
        ("subscription", S, false),
        ("consumer_name", S, false),
        ("consumer_id", I64, false),
        ("address", S, false),
        ("available_permits", I64, false),
        ("unacked_messages", I64, false),
        ("blocked", B, false),
        ("msg_rate_out", F, false),
        ("connected_since_ms", I64, false),
    ]);
    let (mut b_topic, mut b_sub, mut b_name, mut b_addr) = (
        StringBuilder::new(),
        StringBuilder::new(),
        StringBuilder::new(),
        StringBuilder::new(),
    );
    let (mut b_id, mut b_permits, mut b_unacked, mut b_since) = (
        Int64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
    );
    let (mut b_blocked, mut b_rate) = (BooleanBuilder::new(), Float64Builder::new());
    for t in topics {
        let topic = t.name.to_string();
        for s in t.subscriptions() {
            for c in s.consumers() {
                b_topic.append_value(&topic);
                b_sub.append_value(&s.name);
                b_name.append_value(&c.name);
                b_id.append_value(i64::try_from(c.id).unwrap_or(i64::MAX));
                b_addr.append_value(&c.address);
                b_permits.append_value(c.permits.get());
                b_unacked.append_value(c.unacked());
                b_blocked.append_value(c.is_blocked());
                b_rate.append_value(c.out.rates().0);
                let since = pulsar_rs_clock::system_time_ms(c.connected_since);
                b_since.append_value(i64::try_from(since).unwrap_or(i64::MAX));
            }
        }
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(b_topic.finish()),
        Arc::new(b_sub.finish()),
        Arc::new(b_name.finish()),
        Arc::new(b_id.finish()),
        Arc::new(b_addr.finish()),
        Arc::new(b_permits.finish()),
        Arc::new(b_unacked.finish()),
        Arc::new(b_blocked.finish()),
        Arc::new(b_rate.finish()),
        Arc::new(b_since.finish()),
    ];
    Ok(Table {
        name: "consumers",
        batches: vec![batch("consumers", &schema, cols)?],
        schema,
    })
}

/// One row per transaction coordinator the broker hosts (none without transactions): the
/// transactions not yet ended and the counters behind the `pulsar_txn_*` metrics, since the
/// coordinator was opened.
pub(crate) fn coordinators_table(service: &BrokerService) -> Result<Table, ExportError> {
    use std::sync::atomic::Ordering::Relaxed;
    let schema = schema(&[
        ("coordinator_id", I64, false),
        ("ongoing", I64, false),
        ("created", I64, false),
        ("committed", I64, false),
        ("aborted", I64, false),
        ("timed_out", I64, false),
        ("append_log", I64, false),
    ]);
    let mut cols: Vec<Int64Builder> = (0..7).map(|_| Int64Builder::new()).collect();
    for tc in service.coordinators() {
        // Relaxed: statistics.
        let st = &tc.stats;
        let values = [
            tc.id,
            u64::try_from(tc.active_count()).unwrap_or(u64::MAX),
            st.created.load(Relaxed),
            st.committed.load(Relaxed),
            st.aborted.load(Relaxed),
            st.timed_out.load(Relaxed),
            st.append_log.load(Relaxed),
        ];
        for (b, v) in cols.iter_mut().zip(values) {
            b.append_value(i64::try_from(v).unwrap_or(i64::MAX));
        }
    }
    let cols: Vec<ArrayRef> = cols
        .iter_mut()
        .map(|b| Arc::new(b.finish()) as ArrayRef)
        .collect();
    Ok(Table {
        name: "transaction_coordinators",
        batches: vec![batch("transaction_coordinators", &schema, cols)?],
        schema,
    })
}
