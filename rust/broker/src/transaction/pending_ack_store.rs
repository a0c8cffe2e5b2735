//! A subscription's pending-ack log (Pulsar's `MLPendingAckStore`): the acks transactions hold
//! on the subscription, made durable in a managed ledger of the topic's storage before the
//! client is answered, so that they outlive the broker that took them (a restart, or another
//! broker of a cluster taking the topic over) however far away the coordinator is.
//!
//! As Pulsar's: the ledger is `<topic>-<subscription>__transaction_pending_ack` in the topic's
//! namespace, its cursor `__pending_ack_state`, one entry per record in Pulsar's
//! `PendingAckMetadataEntry` (with its field numbers): ACK (the positions and the ack type),
//! then COMMIT or ABORT once the subscription applied or released them. The ledger is created
//! by the first transactional ack (Pulsar's lazy initialisation); a topic load replays it when
//! it exists, holding again the acks of transactions that have not ended. Records of ended
//! transactions are acknowledged on the cursor, so a replay skips them.

use std::collections::HashMap;

use parking_lot::Mutex;
use prost::Message;
use pulsar_rs_ledger::{Cursor, LedgerConfig, ManagedLedger, Position, Storage};
use std::sync::Arc;

use super::pending_ack::AckedId;
use super::{TxnAction, TxnId};
use crate::error::BrokerError;
use crate::naming::{TopicName, PENDING_ACK_SUFFIX};

/// The cursor of a pending-ack ledger (Pulsar's `PENDING_ACK_STORE_CURSOR_NAME`).
pub const PENDING_ACK_CURSOR: &str = "__pending_ack_state";

/// Acks a transaction holds on one subscription (one ACK command's worth).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldAck {
    /// The (partition) topic.
    pub topic: String,
    /// The subscription.
    pub subscription: String,
    /// The message ids (entries, or messages of batch entries).
    pub positions: Vec<AckedId>,
    /// Cumulative (at the one position) or individual.
    pub cumulative: bool,
}

/// `PendingAckOp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Ack = 1,
    Commit = 2,
    Abort = 3,
}

/// `PendingAckMetadata`: one acknowledged position.
#[derive(Clone, PartialEq, Message)]
struct AckedPosition {
    #[prost(int64, tag = "1")]
    ledger_id: i64,
    #[prost(int64, tag = "2")]
    entry_id: i64,
    /// The ack set of a batch-index ack (Java longs: the same 64 bits).
    #[prost(int64, repeated, tag = "3")]
    ack_set: Vec<i64>,
    #[prost(int32, optional, tag = "4")]
    batch_size: Option<i32>,
}

impl AckedPosition {
    #[allow(clippy::cast_possible_wrap, clippy::cast_possible_truncation)]
    fn of(id: &AckedId) -> Self {
        AckedPosition {
            ledger_id: id.position.ledger_id,
            entry_id: id.position.entry_id,
            ack_set: id.ack_set.iter().map(|w| *w as i64).collect(),
            batch_size: (id.batch_size > 0).then_some(id.batch_size as i32),
        }
    }

    #[allow(clippy::cast_sign_loss)]
    fn id(&self) -> AckedId {
        AckedId {
            position: Position::new(self.ledger_id, self.entry_id),
            ack_set: self.ack_set.iter().map(|w| *w as u64).collect(),
            batch_size: self.batch_size.map_or(0, |n| n.max(0) as u32),
        }
    }
}

/// `PendingAckMetadataEntry`: one record of the log.
#[derive(Clone, PartialEq, Message)]
struct Record {
    /// [`Op`].
    #[prost(int32, optional, tag = "1")]
    pending_ack_op: Option<i32>,
    /// `CommandAck.AckType`: 0 individual, 1 cumulative.
    #[prost(int32, optional, tag = "2")]
    ack_type: Option<i32>,
    #[prost(int64, optional, tag = "3")]
    txnid_least_bits: Option<i64>,
    #[prost(int64, optional, tag = "4")]
    txnid_most_bits: Option<i64>,
    #[prost(message, repeated, tag = "5")]
    pending_ack_metadata: Vec<AckedPosition>,
}

/// The ledger name of `subscription`'s pending-ack log on `topic`.
///
/// # Errors
/// A name that does not make a topic name.
pub fn ledger_name(topic: &TopicName, subscription: &str) -> Result<String, BrokerError> {
    Ok(TopicName::parse(&format!("{topic}-{subscription}{PENDING_ACK_SUFFIX}"))?.ledger_name())
}

/// The acks of one transaction a replay found unended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unended {
    /// Individually acknowledged message ids.
    pub individual: Vec<AckedId>,
    /// The cumulative acks, in log order (each past the one before).
    pub cumulative: Vec<AckedId>,
}

/// What a replay found: each unended transaction's acks, in log order.
pub type Replayed = Vec<(TxnId, Unended)>;

/// One subscription's pending-ack log.
pub struct PendingAckStore {
    /// The log; appended to by the tasks serving acks and ends.
    ledger: Arc<ManagedLedger>,
    /// Its cursor: records of ended transactions are acknowledged on it.
    cursor: Arc<Cursor>,
    /// Positions of each unended transaction's records, acknowledged when it ends. Short lock:
    /// never held across an append.
    records: Mutex<HashMap<TxnId, Vec<Position>>>,
}

fn corrupt(e: impl std::fmt::Display) -> BrokerError {
    BrokerError::Ledger(pulsar_rs_ledger::LedgerError::io(
        "decoding a pending-ack record",
        std::io::Error::other(e.to_string()),
    ))
}

fn txn_of(r: &Record) -> TxnId {
    // The ids are Java longs on the wire: the same 64 bits.
    #[allow(clippy::cast_sign_loss)]
    TxnId::new(
        r.txnid_most_bits.unwrap_or(0) as u64,
        r.txnid_least_bits.unwrap_or(0) as u64,
    )
}

impl PendingAckStore {
    /// Opens `name`'s log (creating it) and replays it: the acks of transactions not ended.
    /// Blocking I/O: call it off the async workers.
    ///
    /// # Errors
    /// Storage failures; a corrupt record.
    pub fn open(
        storage: &Storage,
        name: &str,
        config: LedgerConfig,
    ) -> Result<(Arc<Self>, Replayed), BrokerError> {
        let ledger = storage.open_ledger(name, config)?;
        let cursor = ledger.open_cursor_at(PENDING_ACK_CURSOR, true)?;
        let mut unended: Vec<(TxnId, Unended)> = Vec::new();
        let mut records: HashMap<TxnId, Vec<Position>> = HashMap::new();
        let mut done = Vec::new();
        loop {
            let entries = cursor.read_entries(1000)?;
            if entries.is_empty() {
                break;
            }
            for e in entries {
                let r = Record::decode(e.data.clone()).map_err(corrupt)?;
                let txn = txn_of(&r);
                match r.pending_ack_op {
                    Some(op) if op == Op::Ack as i32 => {
                        records.entry(txn).or_default().push(e.position);
                        let at = match unended.iter().position(|(t, _)| *t == txn) {
                            Some(i) => i,
                            None => {
                                unended.push((txn, Unended::default()));
                                unended.len() - 1
                            }
                        };
                        let acks = &mut unended[at].1;
                        let ids = r.pending_ack_metadata.iter().map(AckedPosition::id);
                        if r.ack_type == Some(1) {
                            acks.cumulative.extend(ids);
                        } else {
                            acks.individual.extend(ids);
                        }
                    }
                    _ => {
                        // COMMIT or ABORT: the transaction's records are done with.
                        done.extend(records.remove(&txn).unwrap_or_default());
                        done.push(e.position);
                        unended.retain(|(t, _)| *t != txn);
                    }
                }
            }
        }
        cursor.delete(&done);
        let store = PendingAckStore {
            ledger,
            cursor,
            records: Mutex::new(records),
        };
        Ok((Arc::new(store), unended))
    }

    /// Makes an ack `txn` holds durable; done once its record is.
    ///
    /// # Errors
    /// Append failures.
    pub async fn append_ack(&self, txn: TxnId, ack: &HeldAck) -> Result<(), BrokerError> {
        #[allow(clippy::cast_possible_wrap)]
        let r = Record {
            pending_ack_op: Some(Op::Ack as i32),
            ack_type: Some(i32::from(ack.cumulative)),
            txnid_least_bits: Some(txn.least as i64),
            txnid_most_bits: Some(txn.most as i64),
            pending_ack_metadata: ack.positions.iter().map(AckedPosition::of).collect(),
        };
        let at = self.ledger.add_entry(r.encode_to_vec().into()).await?;
        self.records.lock().entry(txn).or_default().push(at);
        Ok(())
    }

    /// Records that `txn` ended on the subscription (after its acks were applied or released)
    /// and lets its records go; done once the end record is durable.
    ///
    /// # Errors
    /// Append failures.
    pub async fn end(&self, txn: TxnId, action: TxnAction) -> Result<(), BrokerError> {
        if !self.records.lock().contains_key(&txn) {
            // Nothing of this transaction was logged here.
            return Ok(());
        }
        let op = match action {
            TxnAction::Commit => Op::Commit,
            TxnAction::Abort => Op::Abort,
        };
        #[allow(clippy::cast_possible_wrap)]
        let r = Record {
            pending_ack_op: Some(op as i32),
            txnid_least_bits: Some(txn.least as i64),
            txnid_most_bits: Some(txn.most as i64),
            ..Record::default()
        };
        let at = self.ledger.add_entry(r.encode_to_vec().into()).await?;
        let mut done = self.records.lock().remove(&txn).unwrap_or_default();
        done.push(at);
        self.cursor.delete(&done);
        Ok(())
    }

    /// The log's managed ledger and cursor (for their internal stats).
    #[must_use]
    pub fn log(&self) -> (&ManagedLedger, &Cursor) {
        (&self.ledger, &self.cursor)
    }

    /// Deletes the log with its cursor (its subscription or topic is deleted, as Pulsar deletes
    /// the pending-ack managed ledger). Blocking I/O.
    ///
    /// # Errors
    /// Storage failures.
    pub fn delete(&self) -> Result<(), BrokerError> {
        Ok(self.ledger.delete()?)
    }

    /// Closes the log (persisting its cursor). Blocking I/O.
    pub fn close(&self) {
        if let Err(e) = self.ledger.close() {
            tracing::warn!(ledger = %self.ledger.name(), error = %e, "closing a pending-ack log");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BrokerConfig;

    fn held(positions: &[(i64, i64)], cumulative: bool) -> HeldAck {
        HeldAck {
            topic: "persistent://public/default/t".into(),
            subscription: "s".into(),
            positions: positions
                .iter()
                .map(|&(ledger_id, entry_id)| AckedId::whole(Position::new(ledger_id, entry_id)))
                .collect(),
            cumulative,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_replay_holds_the_acks_of_unended_transactions_only() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = BrokerConfig {
            journal_sync_data: false,
            ..BrokerConfig::default()
        };
        let topic = TopicName::parse("persistent://public/default/t").unwrap();
        let name = ledger_name(&topic, "s").unwrap();
        assert_eq!(
            name,
            "public/default/persistent/t-s__transaction_pending_ack"
        );
        assert!(TopicName::from_ledger_name(&name).is_none(), "no topic");
        let (committed, aborted, open) = (TxnId::new(0, 1), TxnId::new(0, 2), TxnId::new(0, 3));
        {
            let storage = Storage::open(dir.path(), cfg.storage_config()).unwrap();
            assert!(!storage.ledger_exists(&name).unwrap());
            let (store, unended) =
                PendingAckStore::open(&storage, &name, cfg.ledger_config()).unwrap();
            assert!(unended.is_empty());
            store
                .append_ack(committed, &held(&[(1, 0)], false))
                .await
                .unwrap();
            store
                .append_ack(aborted, &held(&[(1, 1)], false))
                .await
                .unwrap();
            store
                .append_ack(open, &held(&[(1, 2), (1, 3)], false))
                .await
                .unwrap();
            store
                .append_ack(open, &held(&[(1, 5)], true))
                .await
                .unwrap();
            // A batch-index ack keeps its ack set and batch size.
            let mut in_batch = held(&[(1, 7)], false);
            in_batch.positions[0].ack_set = vec![0b1011];
            in_batch.positions[0].batch_size = 4;
            store.append_ack(open, &in_batch).await.unwrap();
            store.end(committed, TxnAction::Commit).await.unwrap();
            store.end(aborted, TxnAction::Abort).await.unwrap();
            store.close();
            storage.close().unwrap();
        }
        let storage = Storage::open(dir.path(), cfg.storage_config()).unwrap();
        assert!(storage.ledger_exists(&name).unwrap());
        let (_store, unended) =
            PendingAckStore::open(&storage, &name, cfg.ledger_config()).unwrap();
        let p = |entry_id| AckedId::whole(Position::new(1, entry_id));
        let in_batch = AckedId {
            ack_set: vec![0b1011],
            batch_size: 4,
            ..p(7)
        };
        assert_eq!(
            unended,
            vec![(
                open,
                Unended {
                    individual: vec![p(2), p(3), in_batch],
                    cumulative: vec![p(5)],
                }
            )]
        );
    }
}
