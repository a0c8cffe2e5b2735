//! The broker's transaction service (Pulsar's `TransactionMetadataStoreService` and its
//! `TransactionBufferClient`): the coordinators it hosts, NEW_TXN with its timeout, adding
//! partitions and subscriptions, and END_TXN's fan-out to the transaction's partitions (their
//! transaction buffers) and subscriptions (their pending acks) between the coordinator's two
//! durable status changes. A coordinator recovered at start finishes what was COMMITTING or
//! ABORTING and re-arms the timeouts of what was OPEN.
//!
//! In a cluster a coordinator is hosted by the broker that owns its assign partition's bundle
//! (loaded on TC_CLIENT_CONNECT, closed when the bundle goes), and END_TXN reaches the topics
//! other brokers own through the [`TransactionBufferClient`] the server sets.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;

use super::BrokerService;
use crate::error::BrokerError;
use crate::naming::TopicName;
use crate::transaction::buffer_client::TransactionBufferClient;
use crate::transaction::coordinator::{EndPlan, TransactionCoordinator};
use crate::transaction::pending_ack_store::{self, HeldAck, PendingAckStore};
use crate::transaction::{TxnAction, TxnId, TxnStatus, COORDINATOR_ASSIGN_TOPIC};

/// Coordinators created on a fresh broker (Pulsar standalone's partitions of the assign topic).
pub const DEFAULT_COORDINATORS: u32 = 1;

/// How long a failed fan-out waits before it is tried again (Pulsar retries every second).
const END_RETRY: Duration = Duration::from_secs(1);

/// The coordinators hosted by this broker.
#[derive(Default)]
pub struct Coordinators {
    /// Loaded coordinators by TC id. Short lock: a map lookup.
    loaded: Mutex<HashMap<u64, Arc<TransactionCoordinator>>>,
    /// Per-id load locks, as topics have: one is held across its coordinator's open and log
    /// replay (on the blocking pool), so a second connect for that id waits instead of replaying
    /// the log twice, and connects for other ids do not wait. Short lock on the map.
    loading: Mutex<HashMap<u64, Arc<Mutex<()>>>>,
}

/// The assign partition that places TC `id` (`transaction_coordinator_assign-partition-<id>`).
fn assign_partition(id: u64) -> Result<TopicName, BrokerError> {
    let partition = u32::try_from(id).map_err(|_| {
        BrokerError::CoordinatorNotFound(format!("Transaction coordinator with id {id} not found!"))
    })?;
    Ok(TopicName::parse(COORDINATOR_ASSIGN_TOPIC)?.partition(partition))
}

/// Holds again on `s` the acks a pending-ack log replay found unended for `txn`.
fn hold_again(
    s: &crate::subscription::Subscription,
    txn: TxnId,
    acks: &pending_ack_store::Unended,
) {
    if !acks.individual.is_empty() {
        s.restore_txn_acks(txn, &acks.individual, false);
    }
    if !acks.cumulative.is_empty() {
        s.restore_txn_acks(txn, &acks.cumulative, true);
    }
}

fn disabled() -> BrokerError {
    BrokerError::NotAllowed("Transactions are not enabled.".into())
}

impl BrokerService {
    /// Whether transactions are enabled (`transactionCoordinatorEnabled`).
    #[must_use]
    pub fn transactions_enabled(&self) -> bool {
        self.config.transaction_coordinator_enabled
    }

    /// At start, with transactions enabled: creates the assign topic when missing and, on a
    /// broker of its own, opens (replays) the log of every coordinator it places here and of
    /// any other coordinator that has a log. Blocking I/O.
    ///
    /// # Errors
    /// Storage failures.
    pub fn open_coordinators(&self) -> Result<(), BrokerError> {
        if !self.transactions_enabled() {
            return Ok(());
        }
        let assign = TopicName::parse(COORDINATOR_ASSIGN_TOPIC)?;
        let n = match self.partitions(&assign, false)? {
            0 => {
                self.create_partitioned(&assign, DEFAULT_COORDINATORS)?;
                DEFAULT_COORDINATORS
            }
            n => n,
        };
        // In a cluster the count is the cluster's (this one is recorded there by the first
        // PARTITIONED_METADATA when `initialize-cluster-metadata` made none), and a coordinator
        // is loaded where a client finds its assign partition's owner.
        if self.config.cluster_metadata_store().is_some() {
            return Ok(());
        }
        let prefix = crate::transaction::coordinator::log_ledger_name(0);
        let prefix = prefix.trim_end_matches('0');
        let mut ids: Vec<u64> = (0..u64::from(n)).collect();
        ids.extend(
            self.storage
                .ledger_names()?
                .iter()
                .filter_map(|l| l.strip_prefix(prefix)?.parse::<u64>().ok()),
        );
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            self.load_coordinator(id)?;
        }
        Ok(())
    }

    /// TC `id`, opened and replayed if it is not loaded yet; with whether this call loaded it.
    fn load_coordinator_once(
        &self,
        id: u64,
    ) -> Result<(Arc<TransactionCoordinator>, bool), BrokerError> {
        if let Some(tc) = self.coordinators.loaded.lock().get(&id) {
            return Ok((Arc::clone(tc), false));
        }
        let slot = Arc::clone(self.coordinators.loading.lock().entry(id).or_default());
        let _loading = slot.lock();
        let existing = self.coordinators.loaded.lock().get(&id).cloned();
        let result = match existing {
            Some(tc) => Ok((tc, false)),
            None => TransactionCoordinator::open(&self.storage, id, self.config.ledger_config())
                .map(|tc| {
                    tracing::info!(
                        tc = id,
                        open = tc.active_count(),
                        "transaction coordinator loaded"
                    );
                    self.coordinators.loaded.lock().insert(id, Arc::clone(&tc));
                    (tc, true)
                }),
        };
        // Short lock: the entry goes once the coordinator is in `loaded` (or failed to load).
        self.coordinators.loading.lock().remove(&id);
        result
    }

    /// TC `id`, opened and replayed if it is not loaded yet (Pulsar loads a coordinator when a
    /// client connects to it, for any id whose assign partition this broker owns). Blocking I/O.
    ///
    /// # Errors
    /// NotAllowed without transactions; storage failures.
    pub fn load_coordinator(&self, id: u64) -> Result<Arc<TransactionCoordinator>, BrokerError> {
        if !self.transactions_enabled() {
            return Err(disabled());
        }
        self.load_coordinator_once(id).map(|(tc, _)| tc)
    }

    /// After [`BrokerService::open_coordinators`], on the runtime: ends again what was ending
    /// and re-arms the timeouts of open transactions.
    pub fn resume_transactions(self: &Arc<Self>) {
        for tc in self.coordinators() {
            self.resume_coordinator(&tc);
        }
    }

    /// Resumes one coordinator's unfinished transactions (see
    /// [`BrokerService::resume_transactions`]); on the runtime.
    pub fn resume_coordinator(self: &Arc<Self>, tc: &TransactionCoordinator) {
        for meta in tc.transactions() {
            match meta.status {
                TxnStatus::Open => {
                    self.arm_timeout(meta.id, meta.start_ms.saturating_add(meta.timeout_ms));
                }
                TxnStatus::Committing | TxnStatus::Aborting => {
                    let action = if meta.status == TxnStatus::Committing {
                        TxnAction::Commit
                    } else {
                        TxnAction::Abort
                    };
                    let svc = Arc::clone(self);
                    tokio::spawn(async move {
                        if let Err(e) = svc.end_txn(meta.id, action).await {
                            tracing::warn!(txn = %meta.id, error = %e, "finishing a recovered transaction");
                        }
                    });
                }
                TxnStatus::Committed | TxnStatus::Aborted => {}
            }
        }
    }

    /// TC_CLIENT_CONNECT: loads TC `id` if needed (resuming its transactions). Blocking I/O, on
    /// a blocking-pool thread of the runtime.
    ///
    /// # Errors
    /// NotAllowed without transactions; storage failures.
    pub fn connect_coordinator(self: &Arc<Self>, id: u64) -> Result<(), BrokerError> {
        if !self.transactions_enabled() {
            return Err(disabled());
        }
        // Pulsar's `checkTopicNsOwnership` of the assign partition.
        let assign = assign_partition(id)?;
        if !self.owns_bundle_of(&assign) {
            return Err(BrokerError::not_served(
                &assign.to_string(),
                &assign.namespace_name(),
            ));
        }
        let (tc, loaded_now) = self.load_coordinator_once(id)?;
        if loaded_now {
            self.resume_coordinator(&tc);
        }
        Ok(())
    }

    /// In a cluster, closes the coordinators whose assign partition `released` says this
    /// broker gave up (Pulsar removes a coordinator's store when its bundle is unloaded): their
    /// clients find the new owner through lookup, which replays the log. Blocking I/O.
    pub fn unload_coordinators_where(&self, released: impl Fn(&TopicName) -> bool) {
        let gone: Vec<Arc<TransactionCoordinator>> = {
            let mut loaded = self.coordinators.loaded.lock();
            let ids: Vec<u64> = loaded
                .keys()
                .copied()
                .filter(|id| assign_partition(*id).is_ok_and(|t| released(&t)))
                .collect();
            ids.iter().filter_map(|id| loaded.remove(id)).collect()
        };
        for tc in gone {
            tracing::info!(
                tc = tc.id,
                "transaction coordinator unloaded: its bundle moved"
            );
            tc.close();
        }
    }

    /// Sets how END_TXN reaches topics another broker owns (in a cluster; see
    /// [`TransactionBufferClient`]). Only the first call has an effect.
    pub fn set_buffer_client(&self, client: Arc<dyn TransactionBufferClient>) {
        let _ = self.buffer_client.set(client);
    }

    /// The client to end a transaction on `topic` with when another broker owns it; `None`
    /// when this broker serves it (or is on its own).
    fn owner_elsewhere(&self, topic: &str) -> Option<Arc<dyn TransactionBufferClient>> {
        let client = self.buffer_client.get()?;
        let name = TopicName::parse(topic).ok()?;
        (!self.owns_bundle_of(&name)).then(|| Arc::clone(client))
    }

    /// TC `id`, if this broker hosts it.
    ///
    /// # Errors
    /// NotAllowed without transactions; CoordinatorNotFound for an unknown id.
    pub fn coordinator(&self, id: u64) -> Result<Arc<TransactionCoordinator>, BrokerError> {
        if !self.transactions_enabled() {
            return Err(disabled());
        }
        self.coordinators
            .loaded
            .lock()
            .get(&id)
            .cloned()
            .ok_or_else(|| {
                BrokerError::CoordinatorNotFound(format!(
                    "Transaction coordinator with id {id} not found!"
                ))
            })
    }

    /// Every coordinator hosted here, by id.
    #[must_use]
    pub fn coordinators(&self) -> Vec<Arc<TransactionCoordinator>> {
        let mut v: Vec<Arc<TransactionCoordinator>> =
            self.coordinators.loaded.lock().values().cloned().collect();
        v.sort_by_key(|tc| tc.id);
        v
    }

    /// NEW_TXN on TC `tc_id` with the client's timeout (ms), opened by `owner` (the client's
    /// role); aborted when it expires.
    ///
    /// # Errors
    /// As [`BrokerService::coordinator`]; ReachMaxActiveTxn when the coordinator already holds
    /// `maxActiveTransactionsPerCoordinator` transactions not yet ended; log failures.
    pub async fn new_txn(
        self: &Arc<Self>,
        tc_id: u64,
        timeout_ms: u64,
        owner: Option<String>,
    ) -> Result<TxnId, BrokerError> {
        let tc = self.coordinator(tc_id)?;
        let max = self.config.max_active_transactions_per_coordinator;
        // Checked before the append, as Pulsar checks it: NEW_TXNs racing here may pass the
        // limit by the number in flight, which Pulsar's check allows too.
        if max > 0 && tc.active_count() as u64 >= max {
            return Err(BrokerError::ReachMaxActiveTxn(format!(
                "New txn op reach max active txn! tcId : {tc_id}"
            )));
        }
        let now = self.clock().now_ms();
        let id = tc.new_txn(timeout_ms, now, owner).await?;
        self.arm_timeout(id, now.saturating_add(timeout_ms));
        Ok(id)
    }

    /// Aborts `id` at `deadline` (ms on the broker's clock) if it is still OPEN then. The wait
    /// is re-armed whenever the clock jumps (a test's `ManualClock`), so a jump past the
    /// deadline times the transaction out at once.
    fn arm_timeout(self: &Arc<Self>, id: TxnId, deadline: u64) {
        let weak: Weak<BrokerService> = Arc::downgrade(self);
        let jumps = Arc::clone(&self.clock_jumps);
        tokio::spawn(async move {
            loop {
                let jumped = jumps.notified();
                tokio::pin!(jumped);
                // Registered before the clock is read: a jump after the read still wakes us.
                jumped.as_mut().enable();
                let remaining = match weak.upgrade() {
                    Some(svc) => deadline.saturating_sub(svc.clock().now_ms()),
                    None => return,
                };
                if remaining == 0 {
                    break;
                }
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(remaining)) => {}
                    () = &mut jumped => {}
                }
            }
            let Some(svc) = weak.upgrade() else { return };
            let Ok(tc) = svc.coordinator(id.most) else {
                return;
            };
            if tc.get(id).is_some_and(|m| m.status == TxnStatus::Open) {
                tracing::debug!(txn = %id, "transaction timed out: aborting");
                // Relaxed: a statistic.
                tc.stats.timed_out.fetch_add(1, Ordering::Relaxed);
                if let Err(e) = svc.end_txn(id, TxnAction::Abort).await {
                    tracing::warn!(txn = %id, error = %e, "aborting a timed-out transaction");
                }
            }
        });
    }

    /// Whether `role` owns transaction `id` (its coordinator is served here).
    ///
    /// # Errors
    /// CoordinatorNotFound, TransactionNotFound.
    pub fn txn_owned_by(&self, id: TxnId, role: Option<&str>) -> Result<bool, BrokerError> {
        self.coordinator(id.most)?.owned_by(id, role)
    }

    /// ADD_PARTITION_TO_TXN.
    ///
    /// # Errors
    /// CoordinatorNotFound, TransactionNotFound, InvalidTxnStatus, log failures.
    pub async fn add_partitions_to_txn(
        &self,
        id: TxnId,
        partitions: Vec<String>,
    ) -> Result<(), BrokerError> {
        let tc = self.coordinator(id.most)?;
        tc.add_partitions(id, partitions, self.clock().now_ms())
            .await
    }

    /// ADD_SUBSCRIPTION_TO_TXN.
    ///
    /// # Errors
    /// CoordinatorNotFound, TransactionNotFound, InvalidTxnStatus, log failures.
    pub async fn add_subscriptions_to_txn(
        &self,
        id: TxnId,
        subscriptions: Vec<(String, String)>,
    ) -> Result<(), BrokerError> {
        let tc = self.coordinator(id.most)?;
        tc.add_subscriptions(id, subscriptions, self.clock().now_ms())
            .await
    }

    /// END_TXN: COMMITTING/ABORTING made durable, then every subscription and partition ended
    /// (retried every second on failure), then COMMITTED/ABORTED made durable.
    ///
    /// # Errors
    /// CoordinatorNotFound, TransactionNotFound, InvalidTxnStatus, log failures.
    pub async fn end_txn(
        self: &Arc<Self>,
        id: TxnId,
        action: TxnAction,
    ) -> Result<(), BrokerError> {
        let tc = self.coordinator(id.most)?;
        let plan = tc.begin_end(id, action, self.clock().now_ms()).await?;
        loop {
            match self.end_on_topics(&plan).await {
                Ok(()) => break,
                Err(BrokerError::ShuttingDown) => return Err(BrokerError::ShuttingDown),
                Err(e) => {
                    tracing::warn!(txn = %id, error = %e, "ending a transaction on its topics; retrying");
                    tokio::time::sleep(END_RETRY).await;
                }
            }
        }
        tc.finish_end(&plan, self.clock().now_ms()).await
    }

    /// The fan-out of one END_TXN.
    async fn end_on_topics(self: &Arc<Self>, plan: &EndPlan) -> Result<(), BrokerError> {
        // Every transaction of this coordinator up to it has ended (Pulsar's low watermark): the
        // topics abort any they still think open (a message that came after its end).
        let lwm = Some(self.coordinator(plan.id.most)?.low_water_mark());
        for (topic, sub) in &plan.subscriptions {
            match self.owner_elsewhere(topic) {
                Some(owner) => {
                    owner
                        .end_on_subscription(topic.clone(), sub.clone(), plan.id, plan.action, lwm)
                        .await?;
                }
                None => {
                    self.end_txn_on_subscription(topic, sub, plan.id, plan.action, lwm)
                        .await?;
                }
            }
        }
        for topic in &plan.partitions {
            match self.owner_elsewhere(topic) {
                Some(owner) => {
                    owner
                        .end_on_partition(topic.clone(), plan.id, plan.action, lwm)
                        .await?;
                }
                None => {
                    self.end_txn_on_partition(topic, plan.id, plan.action, lwm)
                        .await?;
                }
            }
        }
        Ok(())
    }

    /// Loads `topic` if it exists (storage work on the blocking pool); `None` if it does not.
    async fn existing_topic(
        self: &Arc<Self>,
        topic: &str,
    ) -> Result<Option<Arc<crate::topic::Topic>>, BrokerError> {
        let name = TopicName::parse(topic)?;
        let svc = Arc::clone(self);
        let loaded = tokio::task::spawn_blocking(move || svc.topic(&name, false))
            .await
            .map_err(|_| BrokerError::ShuttingDown)?;
        match loaded {
            Ok(t) => Ok(Some(t)),
            Err(BrokerError::TopicNotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// END_TXN_ON_PARTITION: the commit or abort marker on `topic`, then an abort marker for
    /// each transaction of the same coordinator the topic still holds open at or below
    /// `low_water_mark` (Pulsar's `handleLowWaterMark`). A topic that does not exist succeeds,
    /// as in Pulsar.
    ///
    /// # Errors
    /// NotAllowed without transactions; storage failures.
    pub async fn end_txn_on_partition(
        self: &Arc<Self>,
        topic: &str,
        id: TxnId,
        action: TxnAction,
        low_water_mark: Option<u64>,
    ) -> Result<(), BrokerError> {
        if !self.transactions_enabled() {
            return Err(disabled());
        }
        let Some(t) = self.existing_topic(topic).await? else {
            return Ok(());
        };
        t.end_txn(id, action).await?;
        if let Some(lwm) = low_water_mark {
            t.abort_stale_txns(id, lwm).await?;
        }
        if t.txn_buffer_snapshot_due() {
            // Metadata I/O: blocking pool, not awaited (the marker already made the end durable).
            tokio::task::spawn_blocking(move || {
                if let Err(e) = t.take_txn_buffer_snapshot() {
                    tracing::warn!(topic = %t.name, error = %e, "a transaction buffer snapshot");
                }
            });
        }
        Ok(())
    }

    /// END_TXN_ON_SUBSCRIPTION: applies or releases the held acks, then releases those of
    /// transactions of the same coordinator at or below `low_water_mark` still held (Pulsar's
    /// pending-ack `handleLowWaterMark`). A topic or subscription that does not exist succeeds,
    /// as in Pulsar.
    ///
    /// # Errors
    /// NotAllowed without transactions; storage failures.
    pub async fn end_txn_on_subscription(
        self: &Arc<Self>,
        topic: &str,
        subscription: &str,
        id: TxnId,
        action: TxnAction,
        low_water_mark: Option<u64>,
    ) -> Result<(), BrokerError> {
        if !self.transactions_enabled() {
            return Err(disabled());
        }
        let Some(t) = self.existing_topic(topic).await? else {
            return Ok(());
        };
        let Some(s) = t.subscription(subscription) else {
            return Ok(());
        };
        Self::end_acks(&s, id, action).await?;
        if let Some(lwm) = low_water_mark {
            for stale in s.pending_acks.transactions_at_or_below(id.most, lwm) {
                if stale != id {
                    tracing::info!(txn = %stale, topic, subscription, "releasing the acks of a transaction below the low watermark");
                    Self::end_acks(&s, stale, TxnAction::Abort).await?;
                }
            }
        }
        Ok(())
    }

    /// Applies or releases what `id` holds on `s`, then logs the end.
    async fn end_acks(
        s: &Arc<crate::subscription::Subscription>,
        id: TxnId,
        action: TxnAction,
    ) -> Result<(), BrokerError> {
        // A commit persists the cursor: blocking pool.
        let sub = Arc::clone(s);
        tokio::task::spawn_blocking(move || sub.end_txn(id, action))
            .await
            .map_err(|_| BrokerError::ShuttingDown)??;
        // Then the end is logged, so a replay no longer holds the acks.
        match s.pending_ack_store.get() {
            Some(store) => store.end(id, action).await,
            None => Ok(()),
        }
    }

    /// `subscription`'s pending-ack log, opened (and replayed) by the first caller. Blocking
    /// I/O on the blocking pool.
    async fn pending_ack_store(
        &self,
        topic: &TopicName,
        subscription: &Arc<crate::subscription::Subscription>,
    ) -> Result<Arc<PendingAckStore>, BrokerError> {
        let store = subscription
            .pending_ack_store
            .get_or_try_init(|| async {
                let name = pending_ack_store::ledger_name(topic, &subscription.name)?;
                let (storage, config) = (Arc::clone(&self.storage), self.config.ledger_config());
                let (store, unended) = tokio::task::spawn_blocking(move || {
                    PendingAckStore::open(&storage, &name, config)
                })
                .await
                .map_err(|_| BrokerError::ShuttingDown)??;
                for (txn, acks) in unended {
                    hold_again(subscription, txn, &acks);
                }
                Ok::<_, BrokerError>(store)
            })
            .await?;
        Ok(Arc::clone(store))
    }

    /// Makes a transactional ack durable in the subscription's pending-ack log (Pulsar's
    /// `MLPendingAckStore`), after the subscription accepted it (conflict checks). On failure
    /// the caller releases it again.
    ///
    /// # Errors
    /// NotAllowed without transactions; the topic or subscription gone; log failures.
    pub async fn persist_txn_ack(&self, id: TxnId, ack: HeldAck) -> Result<(), BrokerError> {
        if !self.transactions_enabled() {
            return Err(disabled());
        }
        // A coordinator hosted here refuses an ack in a transaction that is not OPEN, as before
        // the acks moved to the pending-ack log (one on another broker is not asked: Pulsar's
        // pending ack does not ask either).
        if let Ok(tc) = self.coordinator(id.most) {
            tc.check_open(id)?;
        }
        let name = TopicName::parse(&ack.topic)?;
        let topic = self
            .loaded_topic(&name)
            .ok_or_else(|| BrokerError::TopicNotFound(ack.topic.clone()))?;
        let subscription = topic.subscription(&ack.subscription).ok_or_else(|| {
            BrokerError::SubscriptionNotFound {
                subscription: ack.subscription.clone(),
                topic: ack.topic.clone(),
            }
        })?;
        let store = self.pending_ack_store(&name, &subscription).await?;
        store.append_ack(id, &ack).await
    }

    /// At topic load (blocking): the acks unended transactions hold on its subscriptions, from
    /// each subscription's pending-ack log when it has one, held again.
    ///
    /// # Errors
    /// Storage failures; a corrupt pending-ack record.
    pub(super) fn restore_txn_acks(&self, topic: &crate::topic::Topic) -> Result<(), BrokerError> {
        if !self.transactions_enabled() {
            return Ok(());
        }
        for s in topic.subscriptions() {
            let name = pending_ack_store::ledger_name(&topic.name, &s.name)?;
            if !self.storage.ledger_exists(&name)? {
                continue;
            }
            let (store, unended) =
                PendingAckStore::open(&self.storage, &name, self.config.ledger_config())?;
            for (txn, acks) in unended {
                hold_again(&s, txn, &acks);
            }
            let _ = s.pending_ack_store.set(store);
        }
        Ok(())
    }
}
