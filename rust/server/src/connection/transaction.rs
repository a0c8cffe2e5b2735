//! Transaction commands (protocol v19+): TC_CLIENT_CONNECT, NEW_TXN, ADD_PARTITION_TO_TXN,
//! ADD_SUBSCRIPTION_TO_TXN, END_TXN, and the coordinator-to-topic END_TXN_ON_PARTITION /
//! END_TXN_ON_SUBSCRIPTION answered on the wire too. The work awaits durable log appends and
//! markers, so it runs in a task of its own that queues the reply; the connection keeps serving.
//! Without `transactionCoordinatorEnabled` each gets a generic ERROR NotAllowedError, as Pulsar
//! answers; a NEW_TXN beyond `maxActiveTransactionsPerCoordinator` gets no answer at all.
//! With authentication a transaction belongs to the role that opened it: ADD_PARTITION,
//! ADD_SUBSCRIPTION and END_TXN from another role (not a superuser) get TransactionNotFound, and
//! with authorization END_TXN_ON_* are taken from a superuser only (the brokers' role), as Pulsar.

use std::future::Future;

use pulsar_rs_broker::transaction::{TxnAction, TxnId};
use pulsar_rs_broker::BrokerError;
use pulsar_rs_proto::commands::{self, TxnError};
use pulsar_rs_proto::{pb, BaseCommand, ServerError as Wire};

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

    /// This connection's role, if it authenticated.
    fn txn_role(&self) -> Option<String> {
        self.role.as_ref().ok().and_then(Clone::clone)
    }

    /// Pulsar's `verifyTxnOwnership` for ADD_PARTITION, ADD_SUBSCRIPTION and END_TXN: the role
    /// that opened the transaction, or (authentication and authorization on) a superuser.
    ///
    /// # Errors
    /// TransactionNotFound for anyone else, as Pulsar answers; the coordinator's errors.
    fn check_txn_owner(&self, id: TxnId) -> Result<(), BrokerError> {
        let role = self.txn_role();
        if self.service.txn_owned_by(id, role.as_deref())? {
            return Ok(());
        }
        if self.ctx.auth.enabled
            && self.ctx.authz.enabled
            && self.ctx.authz.is_superuser(role.as_deref())
        {
            return Ok(());
        }
        Err(BrokerError::TransactionNotFound(format!(
            "Client ({}) is neither the owner of the transaction {id} nor a super user",
            role.as_deref().unwrap_or("null")
        )))
    }

    /// END_TXN_ON_PARTITION / END_TXN_ON_SUBSCRIPTION come from a coordinator's broker: with
    /// authorization on, from a superuser only (the brokers' own role).
    fn check_broker_call(&self) -> TxnError {
        let role = self.txn_role();
        if !self.ctx.authz.enabled || self.ctx.authz.is_superuser(role.as_deref()) {
            return None;
        }
        Some((
            Wire::AuthorizationError,
            format!(
                "Ending a transaction on a topic is for the brokers (a super user), not {}",
                role.as_deref().unwrap_or("an anonymous client")
            ),
        ))
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
        let owner = self.txn_role();
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let reply = match svc.new_txn(tc_id, timeout_ms, owner).await {
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
        let owned = self.check_txn_owner(id);
        self.reply_later(async move {
            let r = match owned {
                Ok(()) => svc.add_partitions_to_txn(id, partitions).await,
                Err(e) => Err(e),
            };
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
        let owned = self.check_txn_owner(id);
        self.reply_later(async move {
            let r = match owned {
                Ok(()) => svc.add_subscriptions_to_txn(id, subs).await,
                Err(e) => Err(e),
            };
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
        let owned = self.check_txn_owner(id);
        self.reply_later(async move {
            let r = match owned {
                Ok(()) => svc.end_txn(id, action).await,
                Err(e) => Err(e),
            };
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
        let lwm = c.txnid_least_bits_of_low_watermark;
        let allowed = self.check_broker_call();
        self.reply_later(async move {
            let err = match allowed {
                None => txn_error(svc.end_txn_on_partition(&topic, id, action, lwm).await),
                refused => refused,
            };
            commands::end_txn_on_partition_response(request_id, (id.most, id.least), err)
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
        let lwm = c.txnid_least_bits_of_low_watermark;
        let allowed = self.check_broker_call();
        self.reply_later(async move {
            let err = match allowed {
                None => txn_error(
                    svc.end_txn_on_subscription(&topic, &sub, id, action, lwm)
                        .await,
                ),
                refused => refused,
            };
            commands::end_txn_on_subscription_response(request_id, (id.most, id.least), err)
        });
    }
}
