//! A transaction coordinator (Pulsar's `MLTransactionMetadataStore`): the metadata of the
//! transactions of one TC id, kept in memory and made durable in its transaction log, a managed
//! ledger on the local journal (records in [`super::log`]). Every change is appended and awaited
//! before it is applied and answered; [`TransactionCoordinator::open`] replays the log, so after
//! a restart OPEN transactions are open again (their timeouts re-armed by the caller) and
//! COMMITTING/ABORTING ones are finished again. When a transaction ends, the positions of its
//! records are acknowledged on the log's cursor, so a log replay skips them.
//!
//! The coordinator knows nothing of topics: ending a transaction on its partitions and
//! subscriptions is the broker service's job, between [`TransactionCoordinator::begin_end`]
//! and [`TransactionCoordinator::finish_end`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use prost::Message;
use pulsar_rs_ledger::{Cursor, LedgerConfig, ManagedLedger, Position, Storage};

use super::log::{LogOp, LogRecord, LogSubscription};
use super::{TxnAction, TxnId, TxnStatus};
use crate::error::BrokerError;

/// The cursor of a transaction log (Pulsar's name).
pub const LOG_CURSOR: &str = "transaction.subscription";

/// The managed-ledger name of TC `id`'s log. It has three segments, unlike a topic's four, so
/// it is never taken for a topic when the storage's ledgers are listed.
#[must_use]
pub fn log_ledger_name(id: u64) -> String {
    format!("pulsar/system/__transaction_log_{id}")
}

/// One transaction's metadata (Pulsar's `TxnMeta`).
#[derive(Clone, Debug)]
pub struct TxnMeta {
    /// Its id.
    pub id: TxnId,
    /// Its state.
    pub status: TxnStatus,
    /// Partitions it produced to (full topic names).
    pub partitions: BTreeSet<String>,
    /// Subscriptions it acknowledged on: (topic, subscription).
    pub subscriptions: BTreeSet<(String, String)>,
    /// Its timeout in ms.
    pub timeout_ms: u64,
    /// When it started, ms since the epoch.
    pub start_ms: u64,
    /// When it last changed, ms since the epoch.
    pub last_modified_ms: u64,
    /// The role that opened it (none without authentication).
    pub owner: Option<String>,
    /// Positions of its log records, acknowledged when it ends.
    positions: Vec<Position>,
}

/// Counters of one coordinator (Pulsar's `TransactionMetadataStoreStats`); Relaxed: statistics.
#[derive(Debug, Default)]
pub struct CoordinatorStats {
    /// Transactions created.
    pub created: AtomicU64,
    /// Transactions committed.
    pub committed: AtomicU64,
    /// Transactions aborted (timeouts included).
    pub aborted: AtomicU64,
    /// Transactions aborted by their timeout.
    pub timed_out: AtomicU64,
    /// Records appended to the log.
    pub append_log: AtomicU64,
}

/// What [`TransactionCoordinator::begin_end`] hands the caller to end on the topics.
#[derive(Clone, Debug)]
pub struct EndPlan {
    /// The transaction.
    pub id: TxnId,
    /// How it ends.
    pub action: TxnAction,
    /// Partitions to end it on.
    pub partitions: Vec<String>,
    /// Subscriptions to end it on: (topic, subscription).
    pub subscriptions: Vec<(String, String)>,
}

/// One transaction coordinator.
pub struct TransactionCoordinator {
    /// Its TC id (the `most` bits of its transactions); immutable.
    pub id: u64,
    /// The log; immutable handle, appended to by the tasks serving requests.
    ledger: Arc<ManagedLedger>,
    /// The log's cursor: records of ended transactions are acknowledged on it.
    cursor: Arc<Cursor>,
    /// Transactions not yet ended, by sequence. Short lock: never held across an append.
    txns: Mutex<BTreeMap<u64, TxnMeta>>,
    /// The last sequence handed out. Relaxed fetch_add: only uniqueness matters, and it is
    /// raised past every replayed id and the stored reservation before the coordinator serves.
    seq: AtomicU64,
    /// Sequences up to this are covered by the log's `max_local_txn_id` property: raised (by
    /// `reserve_through`, under `reserving`) only after the property is durable.
    reserved: AtomicU64,
    /// Serialises the property's writes, so a lower reservation never overwrites a higher one.
    /// An async lock: held across the (blocking-pool) metadata write, which is awaited.
    reserving: tokio::sync::Mutex<()>,
    /// Its counters.
    pub stats: CoordinatorStats,
}

/// The log's property naming the highest sequence that may have been handed out (Pulsar's
/// `MLTransactionSequenceIdGenerator` keeps `max_local_txn_id` there): ids are never reused,
/// even after every transaction ended and its records were let go.
pub const MAX_LOCAL_TXN_ID: &str = "max_local_txn_id";

/// Sequences reserved by one write of [`MAX_LOCAL_TXN_ID`] (one metadata write per this many
/// NEW_TXN; a restart skips at most this many ids).
const ID_RESERVATION: u64 = 1000;

fn not_found(id: TxnId) -> BrokerError {
    BrokerError::TransactionNotFound(format!(
        "The transaction {id} is not found in the transaction coordinator"
    ))
}

fn invalid_status(id: TxnId, status: TxnStatus, expected: TxnStatus) -> BrokerError {
    BrokerError::InvalidTxnStatus(format!(
        "Expect Txn `{id}` to be in {} status but it is in {} status",
        expected.name(),
        status.name()
    ))
}

impl TransactionCoordinator {
    /// Opens TC `id`'s log and replays it. Blocking I/O: call it off the async workers.
    ///
    /// # Errors
    /// Storage failures; a corrupt record.
    pub fn open(
        storage: &Storage,
        id: u64,
        config: LedgerConfig,
    ) -> Result<Arc<Self>, BrokerError> {
        let ledger = storage.open_ledger(&log_ledger_name(id), config)?;
        let cursor = ledger.open_cursor_at(LOG_CURSOR, true)?;
        let tc = TransactionCoordinator {
            id,
            ledger,
            cursor,
            txns: Mutex::new(BTreeMap::new()),
            seq: AtomicU64::new(0),
            reserved: AtomicU64::new(0),
            reserving: tokio::sync::Mutex::new(()),
            stats: CoordinatorStats::default(),
        };
        tc.replay()?;
        let stored = tc
            .ledger
            .properties()
            .get(MAX_LOCAL_TXN_ID)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        // Relaxed/Release: no other thread sees the coordinator before `open` returns it.
        tc.seq.fetch_max(stored, Ordering::Relaxed);
        tc.reserved.store(stored, Ordering::Release);
        Ok(Arc::new(tc))
    }

    /// Closes its log (persisting the cursor), so that another broker can open it: the
    /// coordinator's assign partition moved away. Blocking I/O.
    pub fn close(&self) {
        if let Err(e) = self.ledger.close() {
            tracing::warn!(tc = self.id, error = %e, "closing a transaction log");
        }
    }

    /// Rebuilds the transactions from the log's unacknowledged records.
    fn replay(&self) -> Result<(), BrokerError> {
        let mut max_seq = 0u64;
        let mut done = Vec::new();
        loop {
            let entries = self.cursor.read_entries(1000)?;
            if entries.is_empty() {
                break;
            }
            for e in entries {
                let record = LogRecord::decode(e.data.clone()).map_err(|err| {
                    BrokerError::Ledger(pulsar_rs_ledger::LedgerError::io(
                        "decoding a transaction log record",
                        std::io::Error::other(err.to_string()),
                    ))
                })?;
                max_seq = max_seq
                    .max(record.max_local_txn_id)
                    .max(record.txnid_least_bits);
                if let Some(ended) = self.apply(&record, e.position) {
                    done.extend(ended);
                }
            }
        }
        // Relaxed: no other thread sees the coordinator before `open` returns it.
        self.seq.store(max_seq, Ordering::Relaxed);
        self.cursor.delete(&done);
        Ok(())
    }

    /// Applies one record at `position` to the in-memory state; returns the positions to
    /// acknowledge when it ended a transaction (or belongs to one already ended).
    fn apply(&self, r: &LogRecord, position: Position) -> Option<Vec<Position>> {
        let seq = r.txnid_least_bits;
        let id = TxnId::new(r.txnid_most_bits, seq);
        let mut txns = self.txns.lock();
        match r.op()? {
            LogOp::New => {
                txns.insert(
                    seq,
                    TxnMeta {
                        id,
                        status: TxnStatus::Open,
                        partitions: BTreeSet::new(),
                        subscriptions: BTreeSet::new(),
                        timeout_ms: r.timeout_ms,
                        start_ms: r.start_time,
                        last_modified_ms: r.last_modification_time,
                        owner: r.owner.clone(),
                        positions: vec![position],
                    },
                );
                None
            }
            op => {
                let Some(meta) = txns.get_mut(&seq) else {
                    return Some(vec![position]);
                };
                meta.positions.push(position);
                meta.last_modified_ms = r.last_modification_time;
                match op {
                    LogOp::AddPartition => meta.partitions.extend(r.partitions.iter().cloned()),
                    LogOp::AddSubscription => meta.subscriptions.extend(
                        r.subscriptions
                            .iter()
                            .map(|s| (s.topic.clone(), s.subscription.clone())),
                    ),
                    LogOp::Update | LogOp::New => {
                        if let Some(s) = TxnStatus::from_i32(r.new_status) {
                            meta.status = s;
                        }
                    }
                }
                if matches!(meta.status, TxnStatus::Committed | TxnStatus::Aborted) {
                    return txns.remove(&seq).map(|m| m.positions);
                }
                None
            }
        }
    }

    /// Appends a record and waits until it is durable.
    async fn append(&self, record: &LogRecord) -> Result<Position, BrokerError> {
        let position = self.ledger.add_entry(record.to_bytes()).await?;
        // Relaxed: a statistic.
        self.stats.append_log.fetch_add(1, Ordering::Relaxed);
        Ok(position)
    }

    fn record(op: LogOp, id: TxnId, now_ms: u64) -> LogRecord {
        LogRecord {
            metadata_op: op as i32,
            txnid_most_bits: id.most,
            txnid_least_bits: id.least,
            last_modification_time: now_ms,
            ..LogRecord::default()
        }
    }

    /// NEW_TXN: a new OPEN transaction with the client's timeout, opened by `owner` (the
    /// client's role, none without authentication), durable before it returns.
    ///
    /// # Errors
    /// Log append failures.
    pub async fn new_txn(
        &self,
        timeout_ms: u64,
        now_ms: u64,
        owner: Option<String>,
    ) -> Result<TxnId, BrokerError> {
        // Relaxed: uniqueness only (see the field).
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        self.reserve_through(seq).await?;
        let id = TxnId::new(self.id, seq);
        let mut r = Self::record(LogOp::New, id, now_ms);
        r.timeout_ms = timeout_ms;
        r.start_time = now_ms;
        r.max_local_txn_id = seq;
        r.owner = owner;
        let position = self.append(&r).await?;
        self.apply(&r, position);
        // Relaxed: a statistic.
        self.stats.created.fetch_add(1, Ordering::Relaxed);
        Ok(id)
    }

    /// Makes sure the log's [`MAX_LOCAL_TXN_ID`] covers `seq` before it is handed out.
    async fn reserve_through(&self, seq: u64) -> Result<(), BrokerError> {
        // Acquire: pairs with the Release below (the property is durable).
        if seq <= self.reserved.load(Ordering::Acquire) {
            return Ok(());
        }
        let _writer = self.reserving.lock().await;
        if seq <= self.reserved.load(Ordering::Acquire) {
            return Ok(());
        }
        let upto = seq + ID_RESERVATION;
        let ledger = Arc::clone(&self.ledger);
        tokio::task::spawn_blocking(move || {
            ledger.set_property(MAX_LOCAL_TXN_ID, &upto.to_string())
        })
        .await
        .map_err(|_| BrokerError::ShuttingDown)??;
        // Release: readers that see it see a durable property.
        self.reserved.store(upto, Ordering::Release);
        Ok(())
    }

    /// Whether `role` owns `id` (Pulsar's `verifyTxnOwnership`): a transaction opened without
    /// authentication has no owner and is anyone's.
    ///
    /// # Errors
    /// TransactionNotFound.
    pub fn owned_by(&self, id: TxnId, role: Option<&str>) -> Result<bool, BrokerError> {
        let txns = self.txns.lock();
        let meta = txns.get(&id.least).ok_or_else(|| not_found(id))?;
        Ok(meta.owner.is_none() || meta.owner.as_deref() == role)
    }

    /// The low watermark (Pulsar's `getLowWaterMark`): every transaction of this coordinator
    /// with a sequence at or below it has ended — one before the oldest not yet ended, or the
    /// last handed out when none is.
    #[must_use]
    pub fn low_water_mark(&self) -> u64 {
        match self.txns.lock().keys().next() {
            Some(first) => first.saturating_sub(1),
            // Relaxed: uniqueness only (see the field); a lower value is as safe.
            None => self.seq.load(Ordering::Relaxed),
        }
    }

    /// Checks that `id` is OPEN.
    ///
    /// # Errors
    /// TransactionNotFound; InvalidTxnStatus when it is not OPEN.
    pub fn check_open(&self, id: TxnId) -> Result<(), BrokerError> {
        let txns = self.txns.lock();
        let meta = txns.get(&id.least).ok_or_else(|| not_found(id))?;
        if meta.status != TxnStatus::Open {
            return Err(invalid_status(id, meta.status, TxnStatus::Open));
        }
        Ok(())
    }

    /// ADD_PARTITION_TO_TXN.
    ///
    /// # Errors
    /// TransactionNotFound, InvalidTxnStatus (not OPEN), log append failures.
    pub async fn add_partitions(
        &self,
        id: TxnId,
        partitions: Vec<String>,
        now_ms: u64,
    ) -> Result<(), BrokerError> {
        self.check_open(id)?;
        let mut r = Self::record(LogOp::AddPartition, id, now_ms);
        r.partitions = partitions;
        let position = self.append(&r).await?;
        self.apply(&r, position);
        Ok(())
    }

    /// ADD_SUBSCRIPTION_TO_TXN.
    ///
    /// # Errors
    /// TransactionNotFound, InvalidTxnStatus (not OPEN), log append failures.
    pub async fn add_subscriptions(
        &self,
        id: TxnId,
        subscriptions: Vec<(String, String)>,
        now_ms: u64,
    ) -> Result<(), BrokerError> {
        self.check_open(id)?;
        let mut r = Self::record(LogOp::AddSubscription, id, now_ms);
        r.subscriptions = subscriptions
            .into_iter()
            .map(|(topic, subscription)| LogSubscription {
                topic,
                subscription,
            })
            .collect();
        let position = self.append(&r).await?;
        self.apply(&r, position);
        Ok(())
    }

    /// The first half of END_TXN: OPEN moves to COMMITTING/ABORTING (durably); a repeated end
    /// with the same action is allowed while it is in progress. Returns what to end.
    ///
    /// # Errors
    /// TransactionNotFound, InvalidTxnStatus (the other action in progress), log failures.
    pub async fn begin_end(
        &self,
        id: TxnId,
        action: TxnAction,
        now_ms: u64,
    ) -> Result<EndPlan, BrokerError> {
        let (ending, status) = match action {
            TxnAction::Commit => (TxnStatus::Committing, TxnStatus::Committed),
            TxnAction::Abort => (TxnStatus::Aborting, TxnStatus::Aborted),
        };
        let current = {
            let txns = self.txns.lock();
            txns.get(&id.least).ok_or_else(|| not_found(id))?.status
        };
        if current == TxnStatus::Open {
            let mut r = Self::record(LogOp::Update, id, now_ms);
            r.expected_status = TxnStatus::Open as i32;
            r.new_status = ending as i32;
            let position = self.append(&r).await?;
            self.apply(&r, position);
        } else if current != ending && current != status {
            return Err(invalid_status(id, current, TxnStatus::Open));
        }
        let txns = self.txns.lock();
        let meta = txns.get(&id.least).ok_or_else(|| not_found(id))?;
        Ok(EndPlan {
            id,
            action,
            partitions: meta.partitions.iter().cloned().collect(),
            subscriptions: meta.subscriptions.iter().cloned().collect(),
        })
    }

    /// The second half of END_TXN, once every partition and subscription has ended it:
    /// COMMITTED/ABORTED is made durable and the transaction leaves the coordinator.
    ///
    /// # Errors
    /// Log append failures (the transaction stays COMMITTING/ABORTING and can be ended again).
    pub async fn finish_end(&self, plan: &EndPlan, now_ms: u64) -> Result<(), BrokerError> {
        let (ending, status) = match plan.action {
            TxnAction::Commit => (TxnStatus::Committing, TxnStatus::Committed),
            TxnAction::Abort => (TxnStatus::Aborting, TxnStatus::Aborted),
        };
        let mut r = Self::record(LogOp::Update, plan.id, now_ms);
        r.expected_status = ending as i32;
        r.new_status = status as i32;
        let position = self.append(&r).await?;
        if let Some(done) = self.apply(&r, position) {
            self.cursor.delete(&done);
            let counter = match plan.action {
                TxnAction::Commit => &self.stats.committed,
                TxnAction::Abort => &self.stats.aborted,
            };
            // Relaxed: a statistic.
            counter.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// A transaction's metadata, while it has not ended.
    #[must_use]
    pub fn get(&self, id: TxnId) -> Option<TxnMeta> {
        if id.most != self.id {
            return None;
        }
        self.txns.lock().get(&id.least).cloned()
    }

    /// Every transaction not yet ended.
    #[must_use]
    pub fn transactions(&self) -> Vec<TxnMeta> {
        self.txns.lock().values().cloned().collect()
    }

    /// Pulsar's slow transactions (`MLTransactionMetadataStore.getSlowTransactions`): those not
    /// yet ended whose timeout, as the client set it, is longer than `timeout_ms`. (Pulsar
    /// compares `TxnMeta.getTimeoutAt()`, which holds the transaction's timeout, not how long it
    /// has been open.)
    #[must_use]
    pub fn slow_transactions(&self, timeout_ms: u64) -> Vec<TxnMeta> {
        self.txns
            .lock()
            .values()
            .filter(|m| m.timeout_ms > timeout_ms)
            .cloned()
            .collect()
    }

    /// The transaction log (a managed ledger) and its cursor, for internal stats.
    #[must_use]
    pub fn log(&self) -> (&Arc<ManagedLedger>, &Arc<Cursor>) {
        (&self.ledger, &self.cursor)
    }

    /// Transactions not yet ended.
    #[must_use]
    pub fn active_count(&self) -> usize {
        self.txns.lock().len()
    }

    /// The lowest sequence not yet ended, minus one (Pulsar's low watermark), for statistics.
    #[must_use]
    pub fn low_watermark(&self) -> u64 {
        self.txns
            .lock()
            .keys()
            .next()
            // Relaxed: a statistic.
            .map_or_else(|| self.seq.load(Ordering::Relaxed), |s| s.saturating_sub(1))
    }
}
