//! Message TTL, as Pulsar's `PersistentMessageExpiryMonitor` and
//! `PersistentSubscription.expireMessages`: a subscription's mark-delete is moved past every
//! entry whose publish time is older than the TTL. It is entry-granular (a batch expires as a
//! whole, by the batch's publish time) and counts expired entries (`msgRateExpired`,
//! `totalMsgExpired`, `lastExpireTimestamp` in the subscription stats).
//!
//! Two searches, as Pulsar's: first every ledger whose *close* time is older than the TTL
//! (so a producer's clock running ahead cannot keep a closed ledger alive), then the newest
//! entry whose publish time is older than the TTL (binary search by time). The broker runs it
//! every `messageExpiryCheckIntervalInMinutes` on every loaded persistent topic with a TTL
//! (topic policy, else namespace `message_ttl_in_seconds`, else `ttlDurationDefaultInSeconds`),
//! after every policy change, and on the admin `expireMessages` calls. Non-persistent topics
//! have nothing to expire (Pulsar: a no-op).

use std::sync::atomic::Ordering;

use pulsar_rs_ledger::{Cursor, ManagedLedger, Position};

use super::expiry_monitor::{ExpiryMonitor, Running};
use super::Subscription;
use crate::error::BrokerError;

/// Pulsar's `MINIMUM_BACKLOG_FOR_EXPIRY_CHECK`: a subscription with connected consumers and a
/// smaller backlog is only checked when its oldest entry has expired.
const MINIMUM_BACKLOG_FOR_EXPIRY_CHECK: u64 = 1000;

fn is_expired(ttl_ms: u64, timestamp_ms: u64, now_ms: u64) -> bool {
    // Pulsar's `MessageImpl.isEntryExpired`: now > timestamp + ttl.
    now_ms > timestamp_ms.saturating_add(ttl_ms)
}

/// The last entry of the newest run of ledgers, from the mark-delete's, closed longer than the
/// TTL ago (Pulsar's `checkExpiryByLedgerClosureTime`).
fn expired_by_ledger_close(
    ml: &ManagedLedger,
    from: Position,
    ttl_ms: u64,
    now_ms: u64,
) -> Position {
    let mut upto = Position::new(-1, -1);
    for l in ml
        .ledgers()
        .iter()
        .filter(|l| l.ledger_id >= from.ledger_id)
    {
        match l.closed_ms {
            Some(t) if t != 0 && is_expired(ttl_ms, t, now_ms) => {
                if l.entries > 0 {
                    upto = Position::new(l.ledger_id, i64::try_from(l.entries).unwrap_or(0) - 1);
                }
            }
            _ => break,
        }
    }
    upto.min(ml.last_confirmed())
}

/// The newest entry published longer than the TTL ago (Pulsar's `asyncFindNewestMatching`
/// over the active entries with the `isEntryExpired` predicate).
fn expired_by_publish_time(
    ml: &ManagedLedger,
    ttl_ms: u64,
    now_ms: u64,
) -> Result<Position, BrokerError> {
    // Expired ⇔ publish time < now − ttl: everything before the first entry at or after it.
    let cutoff = now_ms.saturating_sub(ttl_ms);
    let first_kept = ml.find_position_by_time(cutoff)?;
    Ok(ml.previous_position(first_kept))
}

/// What an expiry check works on, for its decisions and its log line.
pub struct Target<'a> {
    /// The topic's name.
    pub topic: &'a str,
    /// The subscription's or replication cursor's name.
    pub name: &'a str,
    /// Whether a backlog under `MINIMUM_BACKLOG_FOR_EXPIRY_CHECK` is checked only when its
    /// oldest entry has expired (a subscription with consumers connected; a replicator always).
    pub small_backlog_rule: bool,
}

/// Expires the messages of `sub` older than `ttl_seconds` (Pulsar's
/// `PersistentSubscription.expireMessages(int)`). Returns whether the check was issued: not
/// when the subscription has no backlog, when it is almost caught up with consumers connected
/// and its oldest entry has not expired, or while another check runs.
///
/// # Errors
/// Storage failures reading timestamps or persisting the cursor.
pub fn expire_messages(
    sub: &Subscription,
    ttl_seconds: u64,
    now_ms: u64,
) -> Result<bool, BrokerError> {
    let target = Target {
        topic: &sub.topic,
        name: &sub.name,
        small_backlog_rule: !sub.consumers().is_empty(),
    };
    let expired = expire_cursor(&sub.cursor, &sub.expiry, &target, ttl_seconds, now_ms)?;
    if expired.is_some_and(|n| n > 0) {
        // Pulsar wakes Key_Shared dispatchers here (`markDeletePositionMoveForward`); every
        // dispatcher may trim what it holds.
        sub.poke();
    }
    Ok(expired.is_some())
}

/// Pulsar's `PersistentMessageExpiryMonitor.expireMessages(int)` on `cursor` with its
/// `monitor`: `None` when the check was not issued (no backlog; a small backlog whose oldest
/// entry has not expired, under `target`'s rule; another check running), else the entries
/// expired.
///
/// # Errors
/// Storage failures reading timestamps or persisting the cursor.
pub fn expire_cursor(
    cursor: &Cursor,
    monitor: &ExpiryMonitor,
    target: &Target<'_>,
    ttl_seconds: u64,
    now_ms: u64,
) -> Result<Option<u64>, BrokerError> {
    let ml = cursor.ledger();
    let ttl_ms = ttl_seconds.saturating_mul(1000);
    let backlog = cursor.backlog();
    if backlog == 0 {
        return Ok(None);
    }
    if target.small_backlog_rule
        && backlog < MINIMUM_BACKLOG_FOR_EXPIRY_CHECK
        && !oldest_expired(ml, cursor, ttl_ms, now_ms)?
    {
        return Ok(None);
    }
    // Relaxed: statistics.
    monitor.last_expire_ms.store(now_ms, Ordering::Relaxed);
    // Acquire: pairs with the Release of the previous check's end.
    if monitor
        .in_progress
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return Ok(None);
    }
    let _running = Running(&monitor.in_progress);
    if ttl_seconds == 0 {
        // Pulsar's `isEntryExpired`: a TTL of 0 expires nothing (the check is still issued).
        return Ok(Some(0));
    }
    let mark_delete = cursor.mark_delete_position();
    let by_close = expired_by_ledger_close(ml, mark_delete, ttl_ms, now_ms);
    let by_time = expired_by_publish_time(ml, ttl_ms, now_ms)?;
    let upto = by_close.max(by_time);
    if upto.entry_id < 0 || upto <= mark_delete {
        return Ok(Some(0));
    }
    let before = cursor.backlog();
    cursor.mark_delete(upto)?;
    let expired = before.saturating_sub(cursor.backlog());
    monitor.expired.record(expired, 0);
    tracing::info!(topic = %target.topic, subscription = %target.name, position = %format!("{}:{}", upto.ledger_id, upto.entry_id), expired, "expired messages by TTL");
    Ok(Some(expired))
}

/// Pulsar's admin `expireMessages` with a message id (`internalExpireMessagesByPosition`): the
/// position and batch ack set are worked out as Pulsar's `calculatePositionAckSet` does, then
/// [`expire_to_position`]. Without a batch index the message itself expires, and with
/// `excluded` the entry after it too (Pulsar expires up to `position.getNext()`); with a batch
/// index of a batch entry, the messages before it expire (through it with `excluded`; the whole
/// entry when that leaves none, or when the index is 0 and not excluded). Blocking I/O.
///
/// # Errors
/// Storage failures reading the entry or persisting the cursor.
pub fn expire_to_message_id(
    sub: &Subscription,
    id: Position,
    batch_index: i32,
    excluded: bool,
) -> Result<bool, BrokerError> {
    let ml = sub.cursor.ledger();
    let batch_size = if batch_index >= 0 && ml.is_valid_position(id) {
        ml.read_entries(id, 1, u64::MAX, id)?
            .first()
            .and_then(|e| pulsar_rs_proto::parse_stored_metadata(&e.data).ok())
            .and_then(|md| md.num_messages_in_batch)
            .map_or(0, |n| usize::try_from(n).unwrap_or(0))
    } else {
        0
    };
    let next = Position::new(id.ledger_id, id.entry_id.saturating_add(1));
    if batch_size == 0 {
        let p = if excluded { next } else { id };
        return expire_to_position(sub, p, None);
    }
    let bi = usize::try_from(batch_index).unwrap_or(0);
    // Messages `first_kept..batch_size` stay; 1 = not expired, as Pulsar's ack sets.
    let first_kept = if excluded { bi + 1 } else { bi };
    if first_kept >= batch_size {
        return expire_to_position(sub, next, None);
    }
    if first_kept == 0 {
        return expire_to_position(sub, id, None);
    }
    let mut words = vec![0u64; batch_size.div_ceil(64)];
    for i in first_kept..batch_size {
        words[i / 64] |= 1 << (i % 64);
    }
    expire_to_position(sub, id, Some(&words))
}

/// Pulsar's `PersistentMessageExpiryMonitor.expireMessages(Position)` (admin expire by message
/// id): the subscription's mark-delete moves to the newest entry at or before `position`; with
/// `ack_set` (Pulsar's bitset, 1 = not expired) `position` is a batch whose leading messages
/// expire, so the mark-delete moves to the entry before it and those batch indexes are
/// acknowledged. Returns false (not issued) for a position past the topic's last entry or while
/// another check runs.
///
/// # Errors
/// Storage failures persisting the cursor.
pub fn expire_to_position(
    sub: &Subscription,
    position: Position,
    ack_set: Option<&[u64]>,
) -> Result<bool, BrokerError> {
    let ml = sub.cursor.ledger();
    let target = if ml.is_valid_position(position) {
        position
    } else if position > ml.last_confirmed() || position.entry_id < 0 {
        return Ok(false);
    } else {
        // Between entries (e.g. after a ledger's last one): the newest entry before it.
        ml.previous_position(ml.next_valid_position(position))
    };
    let monitor = &sub.expiry;
    // Acquire: pairs with the Release of the previous check's end.
    if monitor
        .in_progress
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return Ok(false);
    }
    let _running = Running(&monitor.in_progress);
    let before = sub.cursor.backlog();
    let upto = match ack_set {
        Some(_) => ml.previous_position(target),
        None => target,
    };
    if upto.entry_id >= 0 && upto > sub.cursor.mark_delete_position() {
        sub.cursor.mark_delete(upto)?;
    }
    if let Some(words) = ack_set {
        sub.cursor.ack_batch_index(target, words);
    }
    let expired = before.saturating_sub(sub.cursor.backlog());
    monitor.expired.record(expired, 0);
    tracing::info!(topic = %sub.topic, subscription = %sub.name, position = %format!("{}:{}", target.ledger_id, target.entry_id), expired, "expired messages up to a position");
    sub.poke();
    Ok(true)
}

/// Whether the first unacknowledged entry of `sub` is older than the TTL (Pulsar's
/// `isOldestMessageExpired`).
fn oldest_expired(
    ml: &ManagedLedger,
    cursor: &Cursor,
    ttl_ms: u64,
    now_ms: u64,
) -> Result<bool, BrokerError> {
    let p = ml.next_valid_position(cursor.mark_delete_position());
    if p > ml.last_confirmed() {
        return Ok(false);
    }
    let entries = ml.read_entries(p, 1, u64::MAX, p)?;
    Ok(entries
        .first()
        .and_then(|e| pulsar_rs_proto::parse_stored_entry(&e.data).ok())
        .is_some_and(|(md, _)| is_expired(ttl_ms, md.publish_time, now_ms)))
}

#[cfg(test)]
mod tests {
    use super::is_expired;

    #[test]
    fn expired_strictly_after_the_ttl() {
        // Pulsar's isEntryExpired: now > timestamp + ttl.
        assert!(!is_expired(1000, 5000, 6000));
        assert!(is_expired(1000, 5000, 6001));
        assert!(!is_expired(1000, 5000, 0));
    }
}
