//! [`SeamCursor`]: a durable cursor of a [`SeamManagedLedger`], kept as Pulsar's
//! [`ManagedCursorInfo`] record at `/managed-ledgers/{name}/{cursor}`: the mark-delete position and
//! the individually deleted (acknowledged) ranges beyond it, written by compare-and-set.
//!
//! Pulsar keeps a busy cursor's position in a *cursor ledger* and writes the record with
//! `cursorsLedgerId = -1` on a clean close; this cursor always writes the record (in the store,
//! never a cursor ledger). When it opens a record a Pulsar broker left with a cursor ledger, it
//! reads that ledger's last entry (a `PositionInfo`) after recovering it, as Pulsar does.
//! Pulsar's position and cursor properties read are written back as they were; batch-index
//! acknowledgements (`batchedEntryDeletionIndexInfo`) are not tracked and not written.

use std::collections::BTreeSet;
use std::sync::Arc;

use parking_lot::Mutex;
use prost::Message;
use pulsar_rs_ledger::seam::formats::{
    LongProperty, ManagedCursorInfo, MessageRange, NestedPositionInfo, PositionInfo,
};
use pulsar_rs_ledger::seam::{cursor_path, Version};
use pulsar_rs_ledger::{Entry, LedgerError, Position, Result};

use super::SeamManagedLedger;

/// A durable cursor.
pub struct SeamCursor {
    /// Its managed ledger; shared.
    ml: Arc<SeamManagedLedger>,
    /// The cursor (subscription) name; immutable.
    name: String,
    /// Its record's path; immutable.
    path: String,
    /// Positions and the record's version. Lock: bookkeeping only, never across an `.await`.
    state: Mutex<CursorState>,
    /// Serialises writes of the record (each awaits the store): an async mutex, held across the
    /// write's `.await` so the last write carries the newest state; only this cursor's flushes
    /// wait for it.
    flush: tokio::sync::Mutex<()>,
}

struct CursorState {
    /// Every entry up to here is acknowledged.
    mark_delete: Position,
    /// Acknowledged entries after `mark_delete`.
    acked: BTreeSet<Position>,
    /// The next entry to read.
    read_position: Position,
    /// The record's version (`None`: not written yet).
    version: Option<Version>,
    /// Pulsar's position properties, kept as they were read.
    properties: Vec<LongProperty>,
    /// Pulsar's cursor properties (raw `StringProperty`s), kept as they were read.
    cursor_properties: Vec<Vec<u8>>,
}

fn pos(p: NestedPositionInfo) -> Position {
    Position::new(p.ledger_id, p.entry_id)
}

fn nested(p: Position) -> NestedPositionInfo {
    NestedPositionInfo {
        ledger_id: p.ledger_id,
        entry_id: p.entry_id,
    }
}

/// Expands Pulsar's open-closed ranges `(lower, upper]` (each within one ledger) into positions.
fn expand(ranges: &[MessageRange], into: &mut BTreeSet<Position>) {
    for r in ranges {
        let (lo, hi) = (pos(r.lower_endpoint), pos(r.upper_endpoint));
        if lo.ledger_id != hi.ledger_id {
            continue; // ranges spanning ledgers are not written by this crate nor by Pulsar's cursor
        }
        for e in lo.entry_id + 1..=hi.entry_id {
            into.insert(Position::new(lo.ledger_id, e));
        }
    }
}

/// Folds positions into open-closed ranges of consecutive entries of one ledger.
fn ranges(acked: &BTreeSet<Position>) -> Vec<MessageRange> {
    let mut out: Vec<MessageRange> = Vec::new();
    for p in acked {
        if let Some(last) = out.last_mut() {
            if last.upper_endpoint.ledger_id == p.ledger_id
                && last.upper_endpoint.entry_id + 1 == p.entry_id
            {
                last.upper_endpoint.entry_id = p.entry_id;
                continue;
            }
        }
        out.push(MessageRange {
            lower_endpoint: nested(Position::new(p.ledger_id, p.entry_id - 1)),
            upper_endpoint: nested(*p),
        });
    }
    out
}

impl SeamCursor {
    pub(crate) async fn open(ml: Arc<SeamManagedLedger>, name: &str) -> Result<Arc<SeamCursor>> {
        let path = cursor_path(ml.name(), name);
        let mut acked = BTreeSet::new();
        let mut kept = (Vec::new(), Vec::new());
        let (mark_delete, version) = match ml.store.get(&path).await? {
            None => (ml.last_confirmed(), None),
            Some((raw, v)) => {
                let info = ManagedCursorInfo::decode(&raw[..]).map_err(|e| {
                    LedgerError::CorruptMetadata {
                        key: path.clone(),
                        reason: e.to_string(),
                    }
                })?;
                kept = (info.properties.clone(), info.cursor_properties.clone());
                let recorded = Position::new(
                    info.mark_delete_ledger_id.unwrap_or(-1),
                    info.mark_delete_entry_id.unwrap_or(-1),
                );
                let in_ledger = if info.cursors_ledger_id == -1 {
                    None
                } else {
                    Self::from_cursor_ledger(&ml, info.cursors_ledger_id, &path, &mut acked).await?
                };
                // An empty cursor ledger rolls back to the record's own state, as Pulsar's does.
                let md = in_ledger.unwrap_or_else(|| {
                    expand(&info.individual_deleted_messages, &mut acked);
                    recorded
                });
                (md, Some(v))
            }
        };
        let read_position = ml.next_position(mark_delete);
        Ok(Arc::new(SeamCursor {
            ml,
            name: name.to_owned(),
            path,
            state: Mutex::new(CursorState {
                mark_delete,
                acked,
                read_position,
                version,
                properties: kept.0,
                cursor_properties: kept.1,
            }),
            flush: tokio::sync::Mutex::new(()),
        }))
    }

    /// The position Pulsar left in the cursor ledger `id`: its last entry, after recovery (`None`:
    /// the ledger holds no entry).
    async fn from_cursor_ledger(
        ml: &SeamManagedLedger,
        id: i64,
        path: &str,
        acked: &mut BTreeSet<Position>,
    ) -> Result<Option<Position>> {
        let ledger = ml.storage.open_ledger(id, true).await?;
        let last = ledger.last_entry_id().unwrap_or(-1);
        if last < 0 {
            return Ok(None);
        }
        let raw = ledger.read(last, last).await?;
        let info = PositionInfo::decode(raw.first().map_or(&[][..], |b| &b[..])).map_err(|e| {
            LedgerError::CorruptMetadata {
                key: path.to_owned(),
                reason: format!("cursor ledger {id}: {e}"),
            }
        })?;
        expand(&info.individual_deleted_messages, acked);
        Ok(Some(Position::new(info.ledger_id, info.entry_id)))
    }

    /// The cursor's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Every entry up to here is acknowledged.
    #[must_use]
    pub fn mark_delete_position(&self) -> Position {
        // Lock: bookkeeping only, released before any await or I/O.
        self.state.lock().mark_delete
    }

    /// Acknowledged entries after the mark-delete position.
    #[must_use]
    pub fn individually_deleted(&self) -> Vec<Position> {
        // Lock: bookkeeping only, released before any await or I/O.
        self.state.lock().acked.iter().copied().collect()
    }

    /// The next entry [`SeamCursor::read_entries`] reads.
    #[must_use]
    pub fn read_position(&self) -> Position {
        // Lock: bookkeeping only, released before any await or I/O.
        self.state.lock().read_position
    }

    /// Reads up to `max_entries` entries from the read position on (skipping acknowledged ones)
    /// and moves the read position past them.
    ///
    /// # Errors
    /// Storage failures.
    pub async fn read_entries(&self, max_entries: usize) -> Result<Vec<Entry>> {
        let from = self.read_position();
        let mut entries = self.ml.read_entries(from, max_entries).await?;
        let Some(last) = entries.last().map(|e| e.position) else {
            return Ok(entries);
        };
        let next = self.ml.next_position(last);
        // Lock: bookkeeping only, released before any await or I/O.
        let mut st = self.state.lock();
        if st.read_position == from {
            st.read_position = next;
        }
        entries.retain(|e| e.position > st.mark_delete && !st.acked.contains(&e.position));
        Ok(entries)
    }

    /// Acknowledges one entry; the mark-delete position moves over every run of acknowledged
    /// entries that follows it. Persisted by [`SeamCursor::flush`].
    pub fn acknowledge(&self, p: Position) {
        // Lock: held while asking the managed ledger for positions, which takes its state lock:
        // the order is cursor, then managed ledger; the managed ledger never takes a cursor's.
        let mut st = self.state.lock();
        if p <= st.mark_delete {
            return;
        }
        st.acked.insert(p);
        loop {
            let next = self.ml.next_position(st.mark_delete);
            if !st.acked.remove(&next) {
                break;
            }
            st.mark_delete = next;
        }
    }

    /// Writes the cursor's state (compare-and-set on its record's version).
    ///
    /// # Errors
    /// Storage failures; [`LedgerError::Fenced`] when another owner wrote the record meanwhile.
    pub async fn flush(&self) -> Result<()> {
        // Async lock: see the field (held across the awaits below on purpose).
        let _one = self.flush.lock().await;
        let (raw, version) = {
            // Lock: bookkeeping only, released before any await or I/O.
            let st = self.state.lock();
            let info = ManagedCursorInfo {
                cursors_ledger_id: -1,
                mark_delete_ledger_id: Some(st.mark_delete.ledger_id),
                mark_delete_entry_id: Some(st.mark_delete.entry_id),
                individual_deleted_messages: ranges(&st.acked),
                properties: st.properties.clone(),
                last_active: Some(self.ml.now_ms()),
                // Batch-index acknowledgements are not tracked here: not written.
                batched_entry_deletion_index_info: Vec::new(),
                cursor_properties: st.cursor_properties.clone(),
            };
            (info.encode_to_vec(), st.version)
        };
        match self.ml.store.put(&self.path, raw, version).await {
            Ok(v) => {
                // Lock: bookkeeping only, released before any await or I/O.
                self.state.lock().version = Some(v);
                Ok(())
            }
            Err(LedgerError::BadVersion { .. }) => Err(LedgerError::Fenced {
                what: format!("cursor {} of {}", self.name, self.ml.name()),
            }),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_open_closed_runs_within_a_ledger() {
        let acked: BTreeSet<Position> = [(3, 4), (3, 5), (3, 6), (3, 9), (4, 0)]
            .iter()
            .map(|&(l, e)| Position::new(l, e))
            .collect();
        let r = ranges(&acked);
        let flat: Vec<_> = r
            .iter()
            .map(|m| (pos(m.lower_endpoint), pos(m.upper_endpoint)))
            .collect();
        assert_eq!(
            flat,
            vec![
                (Position::new(3, 3), Position::new(3, 6)),
                (Position::new(3, 8), Position::new(3, 9)),
                (Position::new(4, -1), Position::new(4, 0)),
            ]
        );
        let mut back = BTreeSet::new();
        expand(&r, &mut back);
        assert_eq!(back, acked);
    }
}
