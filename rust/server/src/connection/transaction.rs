//! Transaction commands (protocol v19+): TC_CLIENT_CONNECT, NEW_TXN, ADD_PARTITION_TO_TXN,
//! ADD_SUBSCRIPTION_TO_TXN, END_TXN, and the coordinator-to-topic END_TXN_ON_PARTITION /
//! END_TXN_ON_SUBSCRIPTION answered on the wire too. The work awaits durable log appends and
//! markers, so it runs in a task of its own that queues the reply; the connection keeps serving.
//! Without `transactionCoordinatorEnabled` each gets a generic ERROR NotAllowedError, as Pulsar
//! answers; a NEW_TXN beyond `maxActiveTransactionsPerCoordinator` gets no answer at all.

use std::future::Future;

use pulsar_rs_broker::transaction::{TxnAction, TxnId};
use pulsar_rs_broker::BrokerError;
use pulsar_rs_proto::commands::{self, TxnError};
use pulsar_rs_proto::{pb, BaseCommand};

use super::{frame, Connection};
use crate::error::wire_code;

fn txn_error(r: Result<(), BrokerError>) -> TxnError {
    r.err().map(|e| (wire_code(&e), e.to_string()))
}

fn txn_id(most: Option<u64>, least: Option<u64>) -> TxnId {
    TxnId::new(most.unwrap_or(0), least.unwrap_or(0))
}

impl Connection {
    /// Refuses a transaction command when transactions are disabled; true if it did.
    fn refuse_without_transactions(&self, request_id: u64) -> bool {
        if self.service.transactions_enabled() {
            return false;
        }
        self.send(&commands::error(
            request_id,
            pb::ServerError::NotAllowedError,
            "Transactions are not enabled.",
        ));
        true
    }

    /// Runs `work` in its own task and queues the reply it returns.
    fn reply_later<F>(&self, work: F)
    where
        F: Future<Output = BaseCommand> + Send + 'static,
    {
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let _ = tx.send(frame(&work.await));
        });
    }

    pub(super) fn tc_client_connect(&self, c: &pb::CommandTcClientConnectRequest) {
        if self.refuse_without_transactions(c.request_id) {
            return;
        }
        let (request_id, tc_id) = (c.request_id, c.tc_id);
        if self.service.coordinator(tc_id).is_ok() {
            self.send(&commands::tc_client_connect_response(request_id, None));
            return;
        }
        // Loading a coordinator replays its log: blocking pool.
        let svc = std::sync::Arc::clone(&self.service);
        self.offload_reply(move || {
            let err = txn_error(svc.connect_coordinator(tc_id));
            commands::tc_client_connect_response(request_id, err)
        });
    }

    pub(super) fn new_txn(&self, c: &pb::CommandNewTxn) {
        if self.refuse_without_transactions(c.request_id) {
            return;
        }
        let svc = std::sync::Arc::clone(&self.service);
        let (request_id, tc_id) = (c.request_id, c.tc_id.unwrap_or(0));
        // The field is named seconds but carries milliseconds (see PulsarApi.proto).
        let timeout_ms = c.txn_ttl_seconds.unwrap_or(0);
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let reply = match svc.new_txn(tc_id, timeout_ms).await {
                Ok(id) => commands::new_txn_response(request_id, (id.most, id.least), None),
                // Pulsar answers nothing here, so that clients back off by timing out instead
                // of retrying at once (apache/pulsar#15133).
                Err(BrokerError::ReachMaxActiveTxn(why)) => {
                    tracing::warn!(tc = tc_id, request_id, "{why}");
                    return;
                }
                Err(e) => commands::new_txn_response(
                    request_id,
                    (tc_id, 0),
                    Some((wire_code(&e), e.to_string())),
                ),
            };
            let _ = tx.send(frame(&reply));
        });
    }

    pub(super) fn add_partition_to_txn(&self, c: &pb::CommandAddPartitionToTxn) {
        if self.refuse_without_transactions(c.request_id) {
            return;
        }
        let svc = std::sync::Arc::clone(&self.service);
        let id = txn_id(c.txnid_most_bits, c.txnid_least_bits);
        let (request_id, partitions) = (c.request_id, c.partitions.clone());
        self.reply_later(async move {
            let r = svc.add_partitions_to_txn(id, partitions).await;
            commands::add_partition_to_txn_response(request_id, (id.most, id.least), txn_error(r))
        });
    }

    pub(super) fn add_subscription_to_txn(&self, c: &pb::CommandAddSubscriptionToTxn) {
        if self.refuse_without_transactions(c.request_id) {
            return;
        }
        let svc = std::sync::Arc::clone(&self.service);
        let id = txn_id(c.txnid_most_bits, c.txnid_least_bits);
        let request_id = c.request_id;
        let subs: Vec<(String, String)> = c
            .subscription
            .iter()
            .map(|s| (s.topic.clone(), s.subscription.clone()))
            .collect();
        self.reply_later(async move {
            let r = svc.add_subscriptions_to_txn(id, subs).await;
            commands::add_subscription_to_txn_response(
                request_id,
                (id.most, id.least),
                txn_error(r),
            )
        });
    }

    pub(super) fn end_txn(&self, c: &pb::CommandEndTxn) {
        if self.refuse_without_transactions(c.request_id) {
            return;
        }
        let svc = std::sync::Arc::clone(&self.service);
        let id = txn_id(c.txnid_most_bits, c.txnid_least_bits);
        let (request_id, action) = (c.request_id, TxnAction::from_wire(c.txn_action));
        self.reply_later(async move {
            let r = svc.end_txn(id, action).await;
            commands::end_txn_response(request_id, (id.most, id.least), txn_error(r))
        });
    }

    pub(super) fn end_txn_on_partition(&self, c: &pb::CommandEndTxnOnPartition) {
        if self.refuse_without_transactions(c.request_id) {
            return;
        }
        let svc = std::sync::Arc::clone(&self.service);
        let id = txn_id(c.txnid_most_bits, c.txnid_least_bits);
        let (request_id, action) = (c.request_id, TxnAction::from_wire(c.txn_action));
        let topic = c.topic.clone().unwrap_or_default();
        self.reply_later(async move {
            let r = svc.end_txn_on_partition(&topic, id, action).await;
            commands::end_txn_on_partition_response(request_id, (id.most, id.least), txn_error(r))
        });
    }

    pub(super) fn end_txn_on_subscription(&self, c: &pb::CommandEndTxnOnSubscription) {
        if self.refuse_without_transactions(c.request_id) {
            return;
        }
        let svc = std::sync::Arc::clone(&self.service);
        let id = txn_id(c.txnid_most_bits, c.txnid_least_bits);
        let (request_id, action) = (c.request_id, TxnAction::from_wire(c.txn_action));
        let (topic, sub) = c
            .subscription
            .as_ref()
            .map(|s| (s.topic.clone(), s.subscription.clone()))
            .unwrap_or_default();
        self.reply_later(async move {
            let r = svc.end_txn_on_subscription(&topic, &sub, id, action).await;
            commands::end_txn_on_subscription_response(
                request_id,
                (id.most, id.least),
                txn_error(r),
            )
        });
    }
}
