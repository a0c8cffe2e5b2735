//! The coordinator's way to the topics of a transaction that another broker owns (Pulsar's
//! `TransactionBufferClient`): in a cluster, END_TXN's fan-out sends END_TXN_ON_PARTITION and
//! END_TXN_ON_SUBSCRIPTION to each topic's owner over the binary protocol. The broker crate
//! knows no sockets and no lookups: the server sets one at start
//! (`BrokerService::set_buffer_client`); a broker on its own has none and ends every topic
//! itself.

use std::future::Future;
use std::pin::Pin;

use super::{TxnAction, TxnId};
use crate::error::BrokerError;

/// One call to a topic's owner: done when the owner answered (success or its error).
pub type OwnerCall = Pin<Box<dyn Future<Output = Result<(), BrokerError>> + Send>>;

/// Ends a transaction on topics other brokers own.
pub trait TransactionBufferClient: Send + Sync {
    /// END_TXN_ON_PARTITION for `topic` (a partition's full name) at its owner, with the
    /// coordinator's low watermark (every transaction of it up to that sequence has ended).
    fn end_on_partition(
        &self,
        topic: String,
        id: TxnId,
        action: TxnAction,
        low_water_mark: Option<u64>,
    ) -> OwnerCall;

    /// END_TXN_ON_SUBSCRIPTION for `subscription` of `topic` at the topic's owner.
    fn end_on_subscription(
        &self,
        topic: String,
        subscription: String,
        id: TxnId,
        action: TxnAction,
        low_water_mark: Option<u64>,
    ) -> OwnerCall;
}
