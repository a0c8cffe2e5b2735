//! Serving the compacted view to `readCompacted` consumers (Pulsar's
//! `CompactedTopicImpl.asyncReadEntriesOrWait`): while the cursor's read position is at or before
//! the horizon, entries come from the compacted ledger (found by binary search, original message
//! ids) and the cursor then moves past the last one served; once past the horizon the dispatcher
//! reads the topic as usual.

use std::sync::Arc;

use pulsar_rs_ledger::{Entry, Position};

use super::Subscription;
use crate::compaction::ledger::CompactedLedger;
use crate::consumer::SubType;
use crate::error::BrokerError;

/// Refuses `readCompacted` where Pulsar does (`PersistentTopic.subscribe`).
///
/// # Errors
/// [`BrokerError::NotAllowed`] for Shared and Key_Shared subscriptions.
pub fn check_subscribe(sub_type: SubType, read_compacted: bool) -> Result<(), BrokerError> {
    if read_compacted && sub_type.is_multi() {
        return Err(BrokerError::NotAllowed(
            "readCompacted only allowed on failover or exclusive subscriptions".into(),
        ));
    }
    Ok(())
}

/// Where a compacted read starts, if the subscription reads the compacted view now.
fn start(sub: &Subscription) -> Option<(Arc<CompactedLedger>, Position)> {
    let view = sub.compaction()?.view()?;
    let active = sub.active_consumer()?;
    if !active.reads_compacted() {
        return None;
    }
    let read = sub.cursor.read_position();
    if read > view.horizon {
        return None;
    }
    let ml = sub.cursor.ledger();
    // The topic's entries before its first one may be gone (retention after compaction): a
    // cursor at the first live entry still has the compacted entries after its mark-delete to
    // read (Pulsar reads from EARLIEST on the first read).
    let first_entry = ml.next_valid_position(ml.first_position());
    let from = if read <= first_entry {
        let md = sub.cursor.mark_delete_position();
        Position::new(md.ledger_id, md.entry_id + 1)
    } else {
        read
    };
    Some((view, from))
}

/// Moves the cursor past what was served (or past the horizon when nothing was left).
fn advance(sub: &Subscription, view: &CompactedLedger, entries: &[Entry]) {
    let ml = sub.cursor.ledger();
    match entries.last() {
        Some(last) => sub.cursor.seek_read_position(Position::new(
            last.position.ledger_id,
            last.position.entry_id + 1,
        )),
        None => sub
            .cursor
            .seek_read_position(ml.next_valid_position(view.horizon)),
    }
}

/// Reads up to `n` entries of the compacted view for the subscription's active consumer, or
/// `None` when it reads the topic itself (not `readCompacted`, no view, or past the horizon).
/// The file read runs on a blocking thread.
pub(super) async fn read(sub: &Subscription, n: usize) -> Option<Result<Vec<Entry>, BrokerError>> {
    let (view, from) = start(sub)?;
    let v = Arc::clone(&view);
    let read = tokio::task::spawn_blocking(move || v.read_from(from, n)).await;
    let entries = match read {
        Ok(Ok(entries)) => entries,
        Ok(Err(e)) => return Some(Err(e)),
        Err(e) => return Some(Err(BrokerError::NotAllowed(format!("compacted read: {e}")))),
    };
    advance(sub, &view, &entries);
    Some(Ok(entries))
}

/// [`read`] on the calling thread (for [`Subscription::dispatch_once`]).
pub(super) fn read_blocking(
    sub: &Subscription,
    n: usize,
) -> Option<Result<Vec<Entry>, BrokerError>> {
    let (view, from) = start(sub)?;
    let entries = match view.read_from(from, n) {
        Ok(e) => e,
        Err(e) => return Some(Err(e)),
    };
    advance(sub, &view, &entries);
    Some(Ok(entries))
}

#[cfg(test)]
mod tests {
    use super::check_subscribe;
    use crate::consumer::SubType;

    #[test]
    fn read_compacted_only_on_exclusive_and_failover() {
        assert!(check_subscribe(SubType::Exclusive, true).is_ok());
        assert!(check_subscribe(SubType::Failover, true).is_ok());
        assert!(check_subscribe(SubType::Shared, false).is_ok());
        for t in [SubType::Shared, SubType::KeyShared] {
            let e = check_subscribe(t, true).unwrap_err();
            assert!(e.to_string().contains("readCompacted only allowed"), "{e}");
        }
    }
}
