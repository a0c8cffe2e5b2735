//! A managed ledger kept on a [`SeamBacking`] (BookKeeper and ZooKeeper) rather than the local
//! journal, as Pulsar's `ManagedLedgerImpl` keeps one:
//!
//! * **open** reads the ledger list (Pulsar's `ManagedLedgerInfo` at `/managed-ledgers/{name}`),
//!   opens every ledger the list still has open with *recovery* (which fences its previous writer
//!   on the bookies and closes it at the last entry an ack quorum holds), then creates a new ledger
//!   and compare-and-sets the list at the version it read: a second owner opening the topic fences
//!   the first, whose next append fails and whose next metadata write finds a newer version;
//! * **appends** go to the current ledger's writer; each entry is confirmed once it and every
//!   earlier one reached their ack quorum, reported from the backing's runtime;
//! * **reads** the entry cache misses come from the bookies (blocking the calling thread, which
//!   is never one of the backing's);
//! * **every metadata write** is a compare-and-set; a version conflict fences this managed ledger
//!   for good ([`LedgerError::Fenced`]), as Pulsar's `ManagedLedgerFencedException`;
//! * trimmed ledgers are deleted from the bookies after the list without them is written.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;

use super::{ManagedLedger, Slot};
use crate::journal::Loc;
use crate::seam::{
    cursor_path, ledger_name, managed_ledger_path as ledger_path, records, SeamBacking, Version,
    WriteLedger,
};
use crate::{CursorSnapshot, LedgerError, LedgerInfo, Result};

/// A ledger's entries without their journal locations: only the length counts (read budgets,
/// sizes). An average where the ledger list gave only a total.
pub(super) fn remote_locs(entries: u64, size: u64) -> Vec<Loc> {
    let loc = remote_loc(size.checked_div(entries).unwrap_or(0));
    (0..entries).map(|_| loc).collect()
}

/// The location of an entry of `len` bytes kept on the backing, not in the journal: only its
/// length is used.
pub(super) fn remote_loc(len: u64) -> Loc {
    Loc {
        segment: u32::MAX - 1,
        len: u32::try_from(len).unwrap_or(u32::MAX - 1).min(u32::MAX - 1),
        offset: 0,
    }
}

/// What a managed ledger's open read from the backing.
pub(super) struct Loaded {
    /// Every ledger, recovered, oldest first.
    pub slots: Vec<Slot>,
    /// The managed ledger's properties.
    pub properties: BTreeMap<String, String>,
    /// The list's version (`None`: no list yet).
    pub version: Option<Version>,
    /// Where the managed ledger was terminated, if it was.
    pub terminated: Option<crate::Position>,
}

/// Reads the ledger list and recovers the ledgers it has open (fencing their writer).
pub(super) fn load(name: &str, b: &SeamBacking, now: u64, read_only: bool) -> Result<Loaded> {
    let path = ledger_path(name);
    let store = Arc::clone(&b.store);
    let p = path.clone();
    let Some((raw, version)) = b.block(async move { store.get(&p).await })? else {
        return Ok(Loaded {
            slots: Vec::new(),
            properties: BTreeMap::new(),
            version: None,
            terminated: None,
        });
    };
    let list = records::decode_ledger_list(&path, &raw, now)?;
    let mut slots = Vec::with_capacity(list.ledgers.len());
    for mut info in list.ledgers {
        if info.closed_ms.is_none() {
            // Open in the list: its writer may be alive. Recovery fences it and closes the
            // ledger at its last durable entry (a read-only open only looks).
            let ledgers = Arc::clone(&b.ledgers);
            let id = info.ledger_id;
            let recover = !read_only;
            let (last, len) = b.block(async move {
                let r = ledgers.open_ledger(id, recover).await?;
                let last = match r.last_entry_id() {
                    Some(l) => l,
                    None => r.read_last_add_confirmed().await?,
                };
                Ok((last, r.length()))
            })?;
            #[allow(clippy::cast_sign_loss)]
            {
                info.entries = (last + 1).max(0) as u64;
            }
            info.size = len;
            info.closed_ms = Some(now);
            tracing::info!(ledger = %name, ledger_id = id, entries = info.entries, "recovered the open ledger");
        }
        let locs = remote_locs(info.entries, info.size);
        slots.push(Slot {
            appended_size: info.size,
            confirmed: info.entries,
            confirmed_size: info.size,
            failed_at: None,
            writer: None,
            locs,
            info,
        });
    }
    Ok(Loaded {
        slots,
        properties: list.properties,
        version: Some(version),
        terminated: list.terminated,
    })
}

impl ManagedLedger {
    /// Finishes an open on the backing: unless read-only, creates the ledger appends go to and
    /// compare-and-sets the list at the version read (which fences any other writer of it).
    pub(super) fn open_on_seam(&self, now: u64, nothing_confirmed: bool) -> Result<()> {
        let Some(b) = self.shared.backing.clone() else {
            return Ok(());
        };
        if self.shared.read_only {
            let mut st = self.state.lock();
            st.current = st.ledgers.keys().next_back().copied().unwrap_or(-1);
            if nothing_confirmed {
                st.last_confirmed = crate::Position::new(st.current, -1);
            }
            return Ok(());
        }
        let writer = self.seam_new_writer(&b)?;
        let id = writer.id();
        {
            let mut st = self.state.lock();
            let mut slot = Slot::new(id, now);
            slot.writer = Some(writer);
            st.ledgers.insert(id, slot);
            st.current = id;
            if nothing_confirmed {
                st.last_confirmed = crate::Position::new(id, -1);
            }
        }
        if let Err(e) = self.persist() {
            self.seam_delete_ledgers(&b, &[id]); // never recorded: nobody reads it
            return Err(e);
        }
        Ok(())
    }

    /// Creates the next ledger on the backing and returns its writer.
    pub(super) fn seam_new_writer(&self, b: &SeamBacking) -> Result<Arc<dyn WriteLedger>> {
        let ledgers = Arc::clone(&b.ledgers);
        let name = self.name.clone();
        let quorums = b.quorums_for(&name);
        b.block(async move { ledgers.create_ledger(&name, quorums).await })
    }

    /// Closes a writer the managed ledger no longer appends to (after its pending appends).
    pub(super) fn seam_close_writer(b: &SeamBacking, w: Arc<dyn WriteLedger>) {
        b.spawn(async move {
            if let Err(e) = w.close().await {
                tracing::warn!(ledger_id = w.id(), error = %e, "closing a rolled-over ledger failed; the next owner recovers it");
            }
        });
    }

    /// Compare-and-sets the ledger list; a newer version fences this managed ledger.
    pub(super) fn seam_write_list(
        &self,
        b: &SeamBacking,
        ledgers: &[LedgerInfo],
        properties: &BTreeMap<String, String>,
        terminated: Option<crate::Position>,
        version: Option<Version>,
    ) -> Result<()> {
        let raw = records::encode_ledger_list(ledgers, properties, terminated);
        let store = Arc::clone(&b.store);
        let path = ledger_path(&self.name);
        match b.block(async move { store.put(&path, raw, version).await }) {
            Ok(v) => {
                self.state.lock().meta_version = Some(v);
                Ok(())
            }
            Err(LedgerError::BadVersion { .. }) => {
                self.state.lock().fenced = true;
                tracing::warn!(ledger = %self.name, "ledger list changed by another owner: fenced");
                Err(self.fenced_error())
            }
            Err(e) => Err(e),
        }
    }

    /// The error of every operation after another owner took over.
    pub(super) fn fenced_error(&self) -> LedgerError {
        LedgerError::Fenced {
            what: format!("managed ledger {}", self.name),
        }
    }

    /// Sends an append to the current ledger's writer; its outcome confirms (or fails) every
    /// append up to `mark`, reported from the backing's runtime.
    pub(super) fn seam_append(
        self: &Arc<Self>,
        b: &SeamBacking,
        writer: &Arc<dyn WriteLedger>,
        data: Bytes,
        mark: u64,
    ) {
        // The client spawns its sends on the runtime current here: the backing's.
        let _on = b.handle().enter();
        let added = writer.append(data);
        let me = Arc::clone(self);
        b.spawn(async move {
            let r = added.await.map(|_| ());
            crate::journal::DurableThrough::durable_through(me.as_ref(), mark, r);
        });
    }

    /// Reads `count` entries of ledger `ledger_id` from `first` on from the bookies. The read
    /// handle is kept per ledger; one that fails (say, an open ledger whose ensemble changed
    /// after the handle was made) is replaced by a fresh one and the read retried once.
    pub(super) fn seam_read(
        &self,
        b: &SeamBacking,
        ledger_id: i64,
        first: i64,
        count: usize,
    ) -> Result<Vec<Bytes>> {
        let last = first + count as i64 - 1;
        let cached = self.readers.lock().get(&ledger_id).cloned();
        let ledgers = Arc::clone(&b.ledgers);
        let (reader, entries) = b.block(async move {
            if let Some(r) = cached {
                if let Ok(entries) = r.read(first, last).await {
                    return Ok((r, entries));
                }
            }
            let r = ledgers.open_ledger(ledger_id, false).await?;
            let entries = r.read(first, last).await?;
            Ok((r, entries))
        })?;
        self.readers.lock().insert(ledger_id, reader);
        Ok(entries)
    }

    /// Deletes trimmed ledgers from the bookies (after the list without them was written), at
    /// most `managedLedgerDeleteMaxConcurrentRequests` at once across the broker.
    pub(super) fn seam_delete_ledgers(&self, b: &SeamBacking, ids: &[i64]) {
        let mut readers = self.readers.lock();
        for id in ids {
            readers.remove(id);
            // Under the backing's deletion limit (PIP-444).
            b.delete_ledger_later(*id);
        }
    }
}

/// A durable cursor's record and its version; `None` if it has none. A `read_only` load never
/// fences: a cursor ledger still open (its broker alive) is read up to its last entry written.
pub(crate) fn load_cursor(
    b: &SeamBacking,
    ml_name: &str,
    cursor: &str,
    read_only: bool,
) -> Result<Option<(CursorSnapshot, Version)>> {
    let path = cursor_path(ml_name, cursor);
    let store = Arc::clone(&b.store);
    let p = path.clone();
    let Some((raw, version)) = b.block(async move { store.get(&p).await })? else {
        return Ok(None);
    };
    let (recorded, cursor_ledger) = records::decode_cursor(&path, &raw)?;
    let Some(cursor_ledger) = cursor_ledger else {
        return Ok(Some((recorded, version)));
    };
    // Pulsar keeps a live cursor's state in a ledger of its own: its last entry.
    let ledgers = Arc::clone(&b.ledgers);
    let raw = b.block(async move {
        let l = ledgers.open_ledger(cursor_ledger, !read_only).await?;
        let last = match l.last_entry_id() {
            Some(last) => last,
            None => last_written(l.as_ref()).await?,
        };
        if last < 0 {
            return Ok(None);
        }
        Ok(l.read(last, last).await?.into_iter().next())
    })?;
    let snapshot = match raw {
        Some(raw) => records::decode_position_info(&path, &raw)?,
        None => {
            // As Pulsar's cursor recovery: an empty cursor ledger rolls back to the record's own
            // position (the broker that made the ledger died before writing to it).
            tracing::warn!(cursor = %path, cursor_ledger, "cursor ledger holds no entry: the record's position is used");
            recorded
        }
    };
    Ok(Some((snapshot, version)))
}

/// The last entry of a ledger still open that a reader sees without fencing it: its last add
/// confirmed, then each entry after it that a bookie already holds (BookKeeper's unconfirmed
/// read): a writer's last add is confirmed only by its next one, and a cursor ledger's last
/// entry is the cursor's newest state.
async fn last_written(l: &dyn crate::seam::ReadLedger) -> Result<i64> {
    let mut last = l.read_last_add_confirmed().await?;
    while l.read(last + 1, last + 1).await.is_ok() {
        last += 1;
    }
    Ok(last)
}

/// Compare-and-sets a durable cursor's record; a newer version means another owner: fenced.
pub(crate) fn store_cursor(
    b: &SeamBacking,
    ml_name: &str,
    cursor: &str,
    snapshot: &CursorSnapshot,
    version: Option<Version>,
    now: u64,
) -> Result<Version> {
    let raw = records::encode_cursor(snapshot, now);
    let store = Arc::clone(&b.store);
    let path = cursor_path(ml_name, cursor);
    match b.block(async move { store.put(&path, raw, version).await }) {
        Err(LedgerError::BadVersion { .. }) => Err(LedgerError::Fenced {
            what: format!("cursor {cursor} of {ml_name}"),
        }),
        r => r,
    }
}

/// Deletes a record (a cursor's or a managed ledger's); a missing one is not an error.
pub(crate) fn delete_record(b: &SeamBacking, path: String) -> Result<()> {
    let store = Arc::clone(&b.store);
    b.block(async move { store.delete(&path, None).await })
}

/// The durable cursors recorded for a managed ledger.
pub(crate) fn cursor_names(b: &SeamBacking, ml_name: &str) -> Result<Vec<String>> {
    let store = Arc::clone(&b.store);
    let path = ledger_path(ml_name);
    let names = b.block(async move { store.children(&path).await })?;
    Ok(names
        .iter()
        .map(|n| crate::seam::paths::url_decode(n))
        .collect())
}

/// Whether the managed ledger `name` is recorded (Pulsar's `ManagedLedgerFactory.asyncExists`).
pub(crate) fn ledger_exists(b: &SeamBacking, name: &str) -> Result<bool> {
    let store = Arc::clone(&b.store);
    let p = crate::seam::paths::managed_ledger_path(name);
    b.block(async move { store.get(&p).await })
        .map(|found| found.is_some())
}

/// Every managed ledger recorded under `/managed-ledgers` (`tenant/ns/domain/topic`).
pub(crate) fn ledger_names(b: &SeamBacking) -> Result<Vec<String>> {
    let store = Arc::clone(&b.store);
    b.block(async move {
        let mut out = Vec::new();
        for t in store.children("/managed-ledgers").await? {
            for n in store.children(&format!("/managed-ledgers/{t}")).await? {
                for d in store.children(&format!("/managed-ledgers/{t}/{n}")).await? {
                    for l in store
                        .children(&format!("/managed-ledgers/{t}/{n}/{d}"))
                        .await?
                    {
                        out.push(ledger_name(&t, &n, &d, &l));
                    }
                }
            }
        }
        Ok(out)
    })
}

/// The publish time in a stored Pulsar entry (`[0x0e01 crc32c]? size metadata payload`,
/// `MessageMetadata.publish_time` is field 3): on the bookies an entry carries no append time of
/// its own, so seeks by time use this, as Pulsar's do.
#[must_use]
pub fn publish_time(entry: &[u8]) -> Option<u64> {
    let mut b = entry;
    if b.len() >= 6 && b[0] == 0x0e && b[1] == 0x01 {
        b = &b[6..];
    }
    let size = u32::from_be_bytes(b.get(..4)?.try_into().ok()?) as usize;
    let mut md = b.get(4..4 + size)?;
    let varint = |md: &mut &[u8]| -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&x, rest) = md.split_first()?;
            *md = rest;
            v |= u64::from(x & 0x7f) << shift;
            if x & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    };
    while !md.is_empty() {
        let key = varint(&mut md)?;
        let (field, wire) = (key >> 3, key & 7);
        match wire {
            0 => {
                let v = varint(&mut md)?;
                if field == 3 {
                    return Some(v);
                }
            }
            1 => md = md.get(8..)?,
            2 => {
                let n = usize::try_from(varint(&mut md)?).ok()?;
                md = md.get(n..)?;
            }
            5 => md = md.get(4..)?,
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_time_is_read_from_the_stored_metadata() {
        // producer_name "p" (field 1), sequence_id 7 (field 2), publish_time 300 (field 3).
        let md = [0x0a, 0x01, b'p', 0x10, 0x07, 0x18, 0xac, 0x02];
        let mut e = vec![0x0e, 0x01, 0, 0, 0, 0];
        e.extend_from_slice(&(md.len() as u32).to_be_bytes());
        e.extend_from_slice(&md);
        e.extend_from_slice(b"payload");
        assert_eq!(publish_time(&e), Some(300));
        assert_eq!(publish_time(&e[6..]), Some(300));
        assert_eq!(publish_time(b"\x00\x00"), None);
    }
}
