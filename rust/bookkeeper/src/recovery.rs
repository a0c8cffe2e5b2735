//! The recovery open (`ReadOnlyLedgerHandle.recover`, `ReadLastConfirmedOp`, `LedgerRecoveryOp`):
//! mark the ledger IN_RECOVERY, fence it on every bookie of its last ensemble (a read of entry -1
//! with the fence flag and master key) until the answers cover every write quorum, take the largest
//! LAC, read forward from LAC+1 and write each entry found back to its write set with the
//! RECOVERY_ADD flag (replacing, with a new ensemble from that entry on, a write-set bookie that is
//! gone), and close the metadata at the last entry recovered.

use crate::bookie_client::BookieClient;
use crate::digest::{package_entry, verify_entry, VerifiedEntry, MASTER_KEY_LENGTH};
use crate::error::{BkError, Result};
use crate::metadata::{LedgerMetadata, LedgerState};
use crate::placement::{covers_every_write_quorum, replacement, write_set};
use crate::protocol::LAST_ADD_CONFIRMED;
use crate::reader::read_from_write_set;
use crate::zk_store::{MetadataVersion, ZkStore};

/// Fences and closes ledger `ledger_id`, returning its closed metadata.
pub(crate) async fn recover(
    store: &ZkStore,
    bookies: &BookieClient,
    ledger_id: i64,
    password: &[u8],
    master_key: [u8; MASTER_KEY_LENGTH],
) -> Result<LedgerMetadata> {
    let (mut m, mut version) = loop {
        let (mut m, v) = store.read_ledger_metadata(ledger_id).await?;
        if m.password != password {
            return Err(BkError::Unauthorized { ledger_id });
        }
        m.check_digest_supported()?;
        match m.state {
            LedgerState::Closed => return Ok(m),
            LedgerState::InRecovery => break (m, v),
            LedgerState::Open => {
                m.state = LedgerState::InRecovery;
                match store.write_ledger_metadata(ledger_id, &m, v).await {
                    Ok(v) => break (m, v),
                    Err(BkError::MetadataVersionConflict { .. }) => continue,
                    Err(e) => return Err(e),
                }
            }
        }
    };

    let lac = fence_and_read_lac(bookies, &m, ledger_id, master_key).await?;
    let (mut last, mut length) = if lac >= 0 {
        let e = read_from_write_set(bookies, &m, ledger_id, lac, Some(master_key)).await?;
        (lac, e.length)
    } else {
        (-1, 0)
    };
    while let Some(e) = recovery_read(bookies, &m, ledger_id, last + 1, master_key).await? {
        loop {
            let failed = match recovery_add(bookies, &m, ledger_id, &e, master_key).await? {
                Ok(()) => break,
                Err(failed) => failed,
            };
            // A bookie of the write set is gone: replace it from this entry on, as the writer would.
            let mut ensemble = m.ensemble_for(e.entry_id).to_vec();
            let writable = store.writable_bookies().await?;
            for f in &failed {
                if let Some(pos) = ensemble.iter().position(|b| b == f) {
                    ensemble[pos] = replacement(writable.clone(), &ensemble, &failed)?;
                }
            }
            tracing::info!(
                ledger_id,
                entry_id = e.entry_id,
                ?ensemble,
                "ensemble change during recovery"
            );
            let mut changed = m.clone();
            changed.ensembles.insert(e.entry_id, ensemble);
            match store
                .write_ledger_metadata(ledger_id, &changed, version)
                .await
            {
                Ok(v) => (m, version) = (changed, v),
                Err(BkError::MetadataVersionConflict { .. }) => {
                    let (theirs, _) = store.read_ledger_metadata(ledger_id).await?;
                    if theirs.state == LedgerState::Closed {
                        return Ok(theirs);
                    }
                    return Err(BkError::MetadataVersionConflict { ledger_id });
                }
                Err(err) => return Err(err),
            }
        }
        last = e.entry_id;
        length = e.length;
    }
    tracing::info!(ledger_id, lac, last, length, "recovered");

    loop {
        m.state = LedgerState::Closed;
        m.last_entry_id = last;
        m.length = length;
        match store.write_ledger_metadata(ledger_id, &m, version).await {
            Ok(_) => return Ok(m),
            Err(BkError::MetadataVersionConflict { .. }) => {
                let (theirs, v): (LedgerMetadata, MetadataVersion) =
                    store.read_ledger_metadata(ledger_id).await?;
                if theirs.state == LedgerState::Closed {
                    // Another recovery finished first; it saw the same fenced bookies.
                    return Ok(theirs);
                }
                m = theirs;
                version = v;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Fences the ledger on every bookie of the last ensemble and returns the largest piggybacked LAC.
/// ENOLEDGER / ENOENTRY are valid answers (the bookie holds nothing).
async fn fence_and_read_lac(
    bookies: &BookieClient,
    m: &LedgerMetadata,
    ledger_id: i64,
    master_key: [u8; MASTER_KEY_LENGTH],
) -> Result<i64> {
    let (_, ensemble) = m.last_ensemble();
    let mut tasks = tokio::task::JoinSet::new();
    for (i, b) in ensemble.iter().enumerate() {
        let (bookies, b) = (bookies.clone(), b.clone());
        tasks.spawn(async move {
            let r = bookies
                .read(&b, ledger_id, LAST_ADD_CONFIRMED, Some(master_key))
                .await;
            (i, r)
        });
    }
    let mut answered = vec![false; ensemble.len()];
    let mut lac = -1;
    // Done as soon as the answers cover every write quorum (as `ReadLastConfirmedOp`): a slow or
    // hung bookie does not hold recovery up; the read-forward finds what its LAC would have said.
    while let Some(joined) = tasks.join_next().await {
        let (i, r) = joined.map_err(|e| BkError::Protocol(format!("fence task: {e}")))?;
        match r {
            Ok(stored) => {
                let v = verify_entry(m.digest_type, ledger_id, None, stored)?;
                lac = lac.max(v.lac);
                answered[i] = true;
            }
            Err(e) if e.is_absent() => answered[i] = true,
            Err(e) => {
                tracing::warn!(ledger_id, bookie = %ensemble[i], error = %e, "fencing read failed")
            }
        }
        if covers_every_write_quorum(&answered, m.write_quorum, m.ack_quorum) {
            break;
        }
    }
    if !covers_every_write_quorum(&answered, m.write_quorum, m.ack_quorum) {
        return Err(BkError::QuorumNotReached {
            entry_id: LAST_ADD_CONFIRMED,
            reason: "fencing answers do not cover every write quorum".into(),
        });
    }
    Ok(lac)
}

/// Reads `entry_id` from its whole write set. Some(entry) if any bookie has it; None once more than
/// Qw - Qa members say they do not (then no ack quorum can have held it); an error otherwise.
async fn recovery_read(
    bookies: &BookieClient,
    m: &LedgerMetadata,
    ledger_id: i64,
    entry_id: i64,
    master_key: [u8; MASTER_KEY_LENGTH],
) -> Result<Option<VerifiedEntry>> {
    let ensemble = m.ensemble_for(entry_id);
    let tasks: Vec<_> = write_set(entry_id, m.ensemble_size, m.write_quorum)
        .into_iter()
        .map(|pos| {
            let (bookies, b) = (bookies.clone(), ensemble[pos].clone());
            tokio::spawn(async move {
                bookies
                    .read(&b, ledger_id, entry_id, Some(master_key))
                    .await
            })
        })
        .collect();
    let mut missing = 0;
    let mut found = None;
    let mut last_err = None;
    for t in tasks {
        match t
            .await
            .map_err(|e| BkError::Protocol(format!("recovery read task: {e}")))?
        {
            Ok(stored) => match verify_entry(m.digest_type, ledger_id, Some(entry_id), stored) {
                Ok(v) => found = Some(v),
                Err(e) => last_err = Some(e),
            },
            Err(e) if e.is_absent() => missing += 1,
            Err(e) => last_err = Some(e),
        }
    }
    if found.is_some() {
        return Ok(found);
    }
    if missing > m.write_quorum - m.ack_quorum {
        return Ok(None);
    }
    Err(last_err.unwrap_or(BkError::NoSuchEntry {
        ledger_id,
        entry_id,
    }))
}

/// Writes a recovered entry back to its write set with RECOVERY_ADD, unchanged. `Ok(Ok(()))` once
/// Qa bookies took it; `Ok(Err(failed))` names the bookies that failed when too few did, so that the
/// caller can replace them; other errors (fenced, unauthorized, ...) end the recovery.
async fn recovery_add(
    bookies: &BookieClient,
    m: &LedgerMetadata,
    ledger_id: i64,
    e: &VerifiedEntry,
    master_key: [u8; MASTER_KEY_LENGTH],
) -> Result<std::result::Result<(), Vec<String>>> {
    let stored = package_entry(
        m.digest_type,
        ledger_id,
        e.entry_id,
        e.lac,
        e.length,
        &e.payload,
    );
    let ensemble = m.ensemble_for(e.entry_id);
    let tasks: Vec<_> = write_set(e.entry_id, m.ensemble_size, m.write_quorum)
        .into_iter()
        .map(|pos| {
            let (bookies, b, stored, id) = (
                bookies.clone(),
                ensemble[pos].clone(),
                stored.clone(),
                e.entry_id,
            );
            let task = tokio::spawn(async move {
                bookies
                    .add(&b, master_key, ledger_id, id, stored, true)
                    .await
            });
            (pos, task)
        })
        .collect();
    let mut acks = 0;
    let mut failed = Vec::new();
    for (pos, t) in tasks {
        match t
            .await
            .map_err(|e| BkError::Protocol(format!("recovery add task: {e}")))?
        {
            Ok(()) => acks += 1,
            Err(err) if err.is_bookie_failure() => {
                tracing::warn!(ledger_id, bookie = %ensemble[pos], error = %err, "recovery add failed");
                failed.push(ensemble[pos].clone());
            }
            Err(err) => return Err(err),
        }
    }
    Ok(if acks >= m.ack_quorum {
        Ok(())
    } else {
        Err(failed)
    })
}
