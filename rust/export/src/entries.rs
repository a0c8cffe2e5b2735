//! Reads every stored entry of a topic once, in position order, with what the tables need.

use pulsar_rs_broker::hash::key_hash;
use pulsar_rs_ledger::{ManagedLedger, Position};

use crate::ExportError;

/// What the export records about one entry.
pub(crate) struct EntryRow {
    pub position: Position,
    pub publish_time_ms: i64,
    pub size: i32,
    pub messages: i32,
    pub key: Option<String>,
    pub key_hash: Option<i32>,
}

/// Entries read per storage call.
const CHUNK: usize = 4096;

/// Calls `f` for every stored entry of `ml`, oldest first.
pub(crate) fn for_each(ml: &ManagedLedger, mut f: impl FnMut(EntryRow)) -> Result<(), ExportError> {
    let last = ml.last_confirmed();
    let mut from = ml.first_position().next();
    loop {
        let batch = ml.read_entries(from, CHUNK, u64::MAX, last)?;
        let Some(tail) = batch.last().map(|e| e.position) else {
            return Ok(());
        };
        for e in batch {
            let size = i32::try_from(e.data.len()).unwrap_or(i32::MAX);
            let row = match pulsar_rs_proto::parse_stored_entry(&e.data) {
                Ok((md, _)) => {
                    let key_bytes = md
                        .ordering_key
                        .clone()
                        .map(|b| b.to_vec())
                        .or_else(|| md.partition_key.clone().map(String::into_bytes));
                    EntryRow {
                        position: e.position,
                        publish_time_ms: i64::try_from(md.publish_time).unwrap_or(i64::MAX),
                        size,
                        messages: md.num_messages_in_batch.unwrap_or(1).max(1),
                        key_hash: key_bytes
                            .as_deref()
                            .map(|k| i32::try_from(key_hash(k)).unwrap_or(0)),
                        key: key_bytes.map(|k| String::from_utf8_lossy(&k).into_owned()),
                    }
                }
                // Not a Pulsar message (an entry written through the ledger API): one opaque
                // message without a key or publish time.
                Err(_) => EntryRow {
                    position: e.position,
                    publish_time_ms: 0,
                    size,
                    messages: 1,
                    key: None,
                    key_hash: None,
                },
            };
            f(row);
        }
        if tail >= last {
            return Ok(());
        }
        from = ml.next_valid_position(tail);
    }
}
