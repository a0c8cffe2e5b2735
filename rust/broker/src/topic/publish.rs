//! Publishing to a topic: a SEND through deduplication into the managed ledger, with the
//! stored entry's checksum handed to the journal.

use std::sync::Arc;

use bytes::Bytes;
use pulsar_rs_ledger::{AddCompletion, AddWaiter, Added, KnownCrc, Position};

use super::dedup::{SendIds, Ticket, Verdict};
use super::Topic;
use crate::error::BrokerError;

/// What became of a published message.
pub enum Published {
    /// Written at `position` and already stored (non-durable mode): answer at once.
    Stored {
        /// Where it was written.
        position: Position,
    },
    /// Written at `position` and waiting for the journal: the waiter given to
    /// [`Topic::publish_message_then`] is told when it is durable; then report the outcome to
    /// `ticket` before answering.
    Queued {
        /// Where it was written.
        position: Position,
        /// Deduplication's record of the write, when deduplication is on.
        ticket: Option<Ticket>,
    },
    /// A duplicate of a persisted message: answer SEND_RECEIPT −1:−1.
    Duplicate,
    /// A duplicate of a message still being written: answer SEND_ERROR PersistenceError.
    DuplicateUnknown,
}

/// The CRC32C a stored entry carries (its header is proto's to read), for the journal to reuse.
fn verified_checksum(stored: &Bytes) -> Option<KnownCrc> {
    pulsar_rs_proto::stored_checksum(stored).map(|(from, crc)| KnownCrc { from, crc })
}

impl Topic {
    /// Keeps the latest publish time written (Pulsar's `lastPublishTimeStamp`).
    fn note_published(&self, publish_time: u64) {
        // Relaxed: a statistic for the admin API; fetch_max keeps the newest of racing publishers.
        self.last_publish_ms
            .fetch_max(publish_time, std::sync::atomic::Ordering::Relaxed);
    }

    /// Appends a stored entry; returns its position and (durable mode) the completion to await.
    ///
    /// # Errors
    /// Storage failures (disk full, closed ledger).
    pub fn publish(
        &self,
        stored: Bytes,
        publish_time: u64,
        messages: u32,
    ) -> Result<(Position, Option<AddCompletion>), BrokerError> {
        let len = stored.len() as u64;
        let r = self.ledger.start_add(stored, publish_time)?;
        self.msg_in.record(u64::from(messages), len);
        self.note_published(publish_time);
        Ok(r)
    }

    /// Publishes one SEND through deduplication (a duplicate is not written). A durable write
    /// tells `waiter` (with `token`) when it completes: no allocation per message. `stored` must
    /// be an entry whose checksum was verified (a SEND's, `checksum_valid`): the journal reuses
    /// it instead of reading the entry again. A message of transaction `txn` goes through the
    /// transaction buffer.
    ///
    /// # Errors
    /// Storage failures (disk full, closed ledger); NotAllowed for a transactional message
    /// without transactions or of a transaction already ended here.
    #[allow(clippy::too_many_arguments)]
    pub fn publish_message_then(
        &self,
        ids: SendIds<'_>,
        txn: Option<crate::transaction::TxnId>,
        publish_time: u64,
        stored: Bytes,
        messages: u32,
        waiter: &Arc<dyn AddWaiter>,
        token: u64,
    ) -> Result<Published, BrokerError> {
        match self.dedup.check(ids) {
            Verdict::Dup => return Ok(Published::Duplicate),
            Verdict::Unknown => return Ok(Published::DuplicateUnknown),
            Verdict::NotDup => {}
        }
        let len = stored.len() as u64;
        let known = verified_checksum(&stored);
        let add = || {
            let added = self
                .ledger
                .start_add_then(stored, publish_time, known, waiter, token)?;
            let position = match &added {
                Added::Confirmed(p) | Added::Queued(p) => *p,
            };
            Ok((position, added))
        };
        let added = match (txn, &self.txn_buffer) {
            (Some(txn), Some(tb)) => tb.append(txn, add),
            (Some(_), None) => Err(BrokerError::NotAllowed(
                "Transactions are not enabled.".into(),
            )),
            (None, _) => add().map(|(_, added)| added),
        };
        let added = match added {
            Ok(added) => added,
            Err(e) => {
                self.dedup.failed(ids.producer);
                return Err(e);
            }
        };
        self.msg_in.record(u64::from(messages), len);
        if ids.marker {
            self.note_marker();
        } else {
            self.note_published(publish_time);
        }
        Ok(match added {
            Added::Confirmed(position) => {
                if let Some(t) = self.dedup.written(ids, position) {
                    t.persisted(true);
                }
                Published::Stored { position }
            }
            Added::Queued(position) => Published::Queued {
                position,
                ticket: self.dedup.written(ids, position),
            },
        })
    }
}
