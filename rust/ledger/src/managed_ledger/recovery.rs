//! Rebuilding a ledger's entry index at open from what the journal scan found.

use super::{LedgerInfo, Slot};
use crate::journal::Loc;
use crate::shared::Shared;

/// Rebuilds one ledger's entry index from what the journal scan found. Entries the journal
/// lost (damaged records) become locations that fail on read, so nothing is skipped silently.
pub(super) fn recover_slot(name: &str, info: LedgerInfo, shared: &Shared) -> Slot {
    let mut found = shared.take_recovered(info.ledger_id);
    if info
        .offload
        .as_ref()
        .is_some_and(|c| c.complete && c.bookkeeper_deleted)
    {
        // Only in the tier: what the journal may still hold of it is not read.
        return Slot {
            locs: super::on_seam::remote_locs(info.entries, info.size),
            appended_size: info.size,
            confirmed: info.entries,
            confirmed_size: info.size,
            failed_at: None,
            writer: None,
            info,
        };
    }
    found.sort_by_key(|(e, _)| *e);
    found.dedup_by_key(|(e, _)| *e);
    let limit = if info.closed_ms.is_some() {
        info.entries
    } else {
        u64::MAX
    };
    let mut locs: Vec<Loc> = Vec::with_capacity(found.len());
    let missing = |locs: &mut Vec<Loc>, why: &str| {
        tracing::error!(ledger = %name, ledger_id = info.ledger_id, entry = locs.len(), "{why}; reading it fails");
        locs.push(Loc::corrupt(u32::MAX, 0));
    };
    for (entry, loc) in found {
        if entry < 0 || entry as u64 >= limit {
            continue;
        }
        while (locs.len() as i64) < entry {
            // A hole in the middle (a damaged record): refuse to serve it rather than skip it.
            missing(&mut locs, "entry damaged or missing from the journal");
        }
        locs.push(loc);
    }
    if info.closed_ms.is_some() && (locs.len() as u64) < info.entries {
        if shared.journal.damaged_regions() > 0 {
            // The journal has damage in the middle of a segment: the missing tail may be in it.
            while (locs.len() as u64) < info.entries {
                missing(
                    &mut locs,
                    "entry at the end of a closed ledger damaged or missing",
                );
            }
        } else {
            // No damage anywhere: these were appends still in flight when the ledger was closed
            // and the process stopped; they were never acknowledged.
            tracing::warn!(ledger = %name, ledger_id = info.ledger_id, expected = info.entries, found = locs.len(), "closed ledger ends before its recorded length (unacknowledged appends)");
        }
    }
    let size = locs
        .iter()
        .filter(|l| !l.is_corrupt())
        .map(|l| u64::from(l.len))
        .sum();
    let n = locs.len() as u64;
    Slot {
        info: LedgerInfo {
            entries: n,
            size,
            ..info
        },
        locs,
        appended_size: size,
        confirmed: n,
        confirmed_size: size,
        failed_at: None,
        writer: None,
    }
}
