//! The reading side of a ledger: entries read from the bookies of their write set (the next one is
//! tried when a bookie fails or lacks the entry), digests checked, and the LAC read from the
//! bookies of the last ensemble (the piggybacked LAC of the last entry each holds).

use crate::bookie_client::BookieClient;
use crate::digest::{verify_entry, VerifiedEntry, MASTER_KEY_LENGTH};
use crate::error::{BkError, Result};
use crate::metadata::{LedgerMetadata, LedgerState};
use crate::placement::write_set;
use crate::protocol::LAST_ADD_CONFIRMED;

/// A ledger opened for reading. Immutable once opened; clones are handed to read tasks.
#[derive(Clone)]
pub struct LedgerReader {
    /// The ledger id.
    pub(crate) ledger_id: i64,
    /// The metadata read when the ledger was opened (after recovery, the closed metadata).
    pub(crate) metadata: LedgerMetadata,
    /// The client's shared connections.
    pub(crate) bookies: BookieClient,
}

impl LedgerReader {
    /// The ledger id.
    pub fn id(&self) -> i64 {
        self.ledger_id
    }

    /// The metadata the ledger was opened with.
    pub fn metadata(&self) -> &LedgerMetadata {
        &self.metadata
    }

    /// For a closed ledger, its last entry (-1 if empty); for an open one, None.
    pub fn last_entry_id(&self) -> Option<i64> {
        (self.metadata.state == LedgerState::Closed).then_some(self.metadata.last_entry_id)
    }

    /// Reads one entry, verified.
    pub async fn read_entry(&self, entry_id: i64) -> Result<VerifiedEntry> {
        read_from_write_set(
            &self.bookies,
            &self.metadata,
            self.ledger_id,
            entry_id,
            None,
        )
        .await
    }

    /// Reads `first..=last`, in order (requests pipelined).
    pub async fn read_entries(&self, first: i64, last: i64) -> Result<Vec<VerifiedEntry>> {
        if first < 0 || last < first {
            return Err(BkError::InvalidArgument(format!(
                "entries {first}..={last}"
            )));
        }
        let mut tasks = Vec::new();
        for e in first..=last {
            let me = self.clone();
            tasks.push(tokio::spawn(async move { me.read_entry(e).await }));
        }
        let mut out = Vec::with_capacity(tasks.len());
        for t in tasks {
            out.push(
                t.await
                    .map_err(|e| BkError::Protocol(format!("read task: {e}")))??,
            );
        }
        Ok(out)
    }

    /// The last add confirmed: from the metadata of a closed ledger, else the largest LAC the bookies
    /// of the last ensemble carry on the last entry each holds (`readLastAddConfirmed`).
    pub async fn read_last_add_confirmed(&self) -> Result<i64> {
        if self.metadata.state == LedgerState::Closed {
            return Ok(self.metadata.last_entry_id);
        }
        let (_, ensemble) = self.metadata.last_ensemble();
        let mut lac = -1;
        let mut answered = 0;
        let mut last_err = None;
        for b in ensemble {
            match self
                .bookies
                .read(b, self.ledger_id, LAST_ADD_CONFIRMED, None)
                .await
            {
                Ok(stored) => {
                    let v = verify_entry(self.metadata.digest_type, self.ledger_id, None, stored)?;
                    lac = lac.max(v.lac);
                    answered += 1;
                }
                Err(e) if e.is_absent() => answered += 1,
                Err(e) => last_err = Some(e),
            }
        }
        if answered == 0 {
            return Err(last_err.unwrap_or(BkError::NotEnoughBookies {
                needed: 1,
                available: 0,
            }));
        }
        Ok(lac)
    }
}

/// Reads an entry from the first member of its write set that has it.
pub(crate) async fn read_from_write_set(
    bookies: &BookieClient,
    metadata: &LedgerMetadata,
    ledger_id: i64,
    entry_id: i64,
    fence: Option<[u8; MASTER_KEY_LENGTH]>,
) -> Result<VerifiedEntry> {
    let ensemble = metadata.ensemble_for(entry_id);
    let mut last_err = BkError::NoSuchEntry {
        ledger_id,
        entry_id,
    };
    for pos in write_set(entry_id, metadata.ensemble_size, metadata.write_quorum) {
        match bookies
            .read(&ensemble[pos], ledger_id, entry_id, fence)
            .await
        {
            Ok(stored) => {
                match verify_entry(metadata.digest_type, ledger_id, Some(entry_id), stored) {
                    Ok(v) => return Ok(v),
                    Err(e) => last_err = e,
                }
            }
            Err(e) => last_err = e,
        }
    }
    Err(last_err)
}
