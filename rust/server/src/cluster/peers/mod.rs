//! This broker as a client of the other brokers of its cluster. The coordinator's
//! [`TransactionBufferClient`]: END_TXN_ON_PARTITION and END_TXN_ON_SUBSCRIPTION sent to the
//! owner of each topic of a transaction, found as a client finds it (the cluster's lookup,
//! then LOOKUP on the wire through the brokers a redirect names), over one pooled connection
//! per broker ([`connection`]), over TCP or TLS as [`client`] says. When the lookup lands on
//! this broker (the bundle came here) the topic is ended locally. [`admin`] makes the calls of
//! the admin REST API on peers (an admin call answered whole, a bundle unloaded on its owner).

pub mod admin;
pub mod client;
pub mod connection;
pub mod credentials;
pub mod tls;

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use pulsar_rs_broker::transaction::buffer_client::{OwnerCall, TransactionBufferClient};
use pulsar_rs_broker::transaction::{TxnAction, TxnId};
use pulsar_rs_broker::{BrokerError, BrokerService};
use pulsar_rs_cluster::{ClusterMember, LookupAnswer};
use pulsar_rs_proto::pb::command_lookup_topic_response::LookupType;
use pulsar_rs_proto::{commands, pb, BaseCommand, ServerError as Wire};

use client::BrokerClient;
use connection::PeerConnection;

/// How long a peer has to accept a connection, or to answer one request.
const PEER_TIMEOUT: Duration = Duration::from_secs(10);

/// Redirects followed before a lookup gives up (Pulsar's client allows a few more; a
/// cluster's chain is at most leader then owner).
const MAX_REDIRECTS: usize = 5;

/// Where a lookup ended.
enum Owner {
    /// This broker serves the topic.
    Here,
    /// Another broker, at this service URL.
    Peer(String),
}

/// The other brokers of the cluster, as seen by this one.
pub struct Peers {
    /// This broker's cluster membership (lookups, its own URLs); shared with the server.
    member: Arc<ClusterMember>,
    /// This broker's service, for topics a lookup finds here. Weak: the service owns this
    /// client.
    service: Weak<BrokerService>,
    /// Itself, for the calls' futures, which outlive the `&self` they are made from.
    me: Weak<Peers>,
    /// One connection per peer service URL, replaced when it closes. Short lock: a map
    /// operation, never held across a connect.
    connections: Mutex<HashMap<String, Arc<PeerConnection>>>,
    /// How this broker connects to its peers (TLS, credentials); shared with the admin API.
    client: Arc<BrokerClient>,
}

/// A broker error for a peer's answer or failure. Every one of them is retried by END_TXN's
/// fan-out; `NotServed` (look the topic up again) is what a moved bundle or an unreachable
/// owner means.
fn peer_error(code: Option<i32>, message: String) -> BrokerError {
    match code.and_then(|c| Wire::try_from(c).ok()) {
        Some(Wire::NotAllowedError) => BrokerError::NotAllowed(message),
        Some(Wire::TopicNotFound) => BrokerError::TopicNotFound(message),
        Some(code) => BrokerError::NotServed(format!("the owner answered {code:?}: {message}")),
        None => BrokerError::NotServed(message),
    }
}

impl Peers {
    /// The peers of `member`'s cluster, reached through `client`, ending topics found here on
    /// `service`.
    #[must_use]
    pub fn new(
        member: Arc<ClusterMember>,
        service: &Arc<BrokerService>,
        client: Arc<BrokerClient>,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| Peers {
            member,
            service: Arc::downgrade(service),
            me: me.clone(),
            connections: Mutex::new(HashMap::new()),
            client,
        })
    }

    /// The pooled connection to the broker at `service_url`, opened if needed.
    async fn connection(&self, service_url: &str) -> Result<Arc<PeerConnection>, BrokerError> {
        if let Some(c) = self.connections.lock().get(service_url) {
            if !c.is_closed() {
                return Ok(Arc::clone(c));
            }
        }
        let c = PeerConnection::open(service_url, PEER_TIMEOUT, &self.client)
            .await
            .map_err(BrokerError::NotServed)?;
        self.connections
            .lock()
            .insert(service_url.to_owned(), Arc::clone(&c));
        Ok(c)
    }

    /// The broker that serves `topic`: the cluster's lookup, then LOOKUPs on the wire through
    /// the brokers a redirect names, as a client follows them.
    async fn owner(&self, topic: &str) -> Result<Owner, BrokerError> {
        let mine = self.member.urls();
        let me = &mine.service;
        // This broker under either of its names (a redirect may name its TLS URL).
        let is_me = |url: &str| url == me || mine.service_tls.as_deref() == Some(url);
        let url_of = |urls: &pulsar_rs_cluster::BrokerUrls| {
            self.client
                .service_url(urls)
                .map_err(BrokerError::NotServed)
        };
        let (mut at, mut authoritative) = match self.member.lookup(topic, false).await {
            Ok(LookupAnswer::Connect(u)) if &u.service == me => return Ok(Owner::Here),
            Ok(LookupAnswer::Connect(u)) => return Ok(Owner::Peer(url_of(&u)?)),
            Ok(LookupAnswer::Redirect {
                urls,
                authoritative,
            }) => (url_of(&urls)?, authoritative),
            Err(e) => return Err(BrokerError::NotServed(format!("looking up {topic}: {e}"))),
        };
        for _ in 0..MAX_REDIRECTS {
            if is_me(&at) {
                return Ok(Owner::Here);
            }
            let conn = self.connection(&at).await?;
            let reply = conn
                .request(
                    |request_id| commands::lookup_with(topic, request_id, authoritative),
                    PEER_TIMEOUT,
                )
                .await
                .map_err(BrokerError::NotServed)?;
            let Some(r) = reply.lookup_topic_response else {
                let e = reply.error.unwrap_or_default();
                return Err(peer_error(Some(e.error), e.message));
            };
            let url = self.client.lookup_url(&r).map_err(BrokerError::NotServed)?;
            match r.response.and_then(|v| LookupType::try_from(v).ok()) {
                Some(LookupType::Connect) if is_me(&url) => return Ok(Owner::Here),
                Some(LookupType::Connect) => return Ok(Owner::Peer(url)),
                Some(LookupType::Redirect) => {
                    at = url;
                    authoritative = r.authoritative.unwrap_or(false);
                }
                _ => return Err(peer_error(r.error, r.message.unwrap_or_default())),
            }
        }
        Err(BrokerError::NotServed(format!(
            "looking up {topic}: more than {MAX_REDIRECTS} redirects"
        )))
    }

    /// Sends `cmd` (made with a request id) to `topic`'s owner and reads its transaction
    /// response's error, if any; `local` ends the topic here when the lookup finds it here.
    async fn end(
        self: Arc<Self>,
        topic: String,
        build: impl FnOnce(u64) -> BaseCommand + Send,
        local: impl std::future::Future<Output = Result<(), BrokerError>> + Send,
    ) -> Result<(), BrokerError> {
        let url = match self.owner(&topic).await? {
            Owner::Here => return local.await,
            Owner::Peer(url) => url,
        };
        let conn = self.connection(&url).await?;
        let reply = conn
            .request(build, PEER_TIMEOUT)
            .await
            .map_err(BrokerError::NotServed)?;
        let (error, message) = if let Some(r) = reply.end_txn_on_partition_response {
            (r.error, r.message)
        } else if let Some(r) = reply.end_txn_on_subscription_response {
            (r.error, r.message)
        } else {
            let e = reply.error.unwrap_or_default();
            (Some(e.error), Some(e.message))
        };
        match error {
            None => Ok(()),
            code => Err(peer_error(code, message.unwrap_or_default())),
        }
    }

    /// This broker's service and these peers, for one call's future.
    fn handles(&self) -> Result<(Arc<BrokerService>, Arc<Peers>), BrokerError> {
        match (self.service.upgrade(), self.me.upgrade()) {
            (Some(svc), Some(peers)) => Ok((svc, peers)),
            _ => Err(BrokerError::ShuttingDown),
        }
    }
}

fn wire_action(action: TxnAction) -> i32 {
    match action {
        TxnAction::Commit => pb::TxnAction::Commit as i32,
        TxnAction::Abort => pb::TxnAction::Abort as i32,
    }
}

impl TransactionBufferClient for Peers {
    fn end_on_partition(
        &self,
        topic: String,
        id: TxnId,
        action: TxnAction,
        low_water_mark: Option<u64>,
    ) -> OwnerCall {
        let handles = self.handles();
        Box::pin(async move {
            let (svc, peers) = handles?;
            let t = topic.clone();
            let local = async move {
                svc.end_txn_on_partition(&t, id, action, low_water_mark)
                    .await
            };
            let wire_topic = topic.clone();
            let build = move |request_id| {
                pb::CommandEndTxnOnPartition {
                    request_id,
                    txnid_least_bits: Some(id.least),
                    txnid_most_bits: Some(id.most),
                    topic: Some(wire_topic),
                    txn_action: Some(wire_action(action)),
                    txnid_least_bits_of_low_watermark: low_water_mark,
                }
                .into()
            };
            peers.end(topic, build, local).await
        })
    }

    fn end_on_subscription(
        &self,
        topic: String,
        subscription: String,
        id: TxnId,
        action: TxnAction,
        low_water_mark: Option<u64>,
    ) -> OwnerCall {
        let handles = self.handles();
        Box::pin(async move {
            let (svc, peers) = handles?;
            let (t, s) = (topic.clone(), subscription.clone());
            let local = async move {
                svc.end_txn_on_subscription(&t, &s, id, action, low_water_mark)
                    .await
            };
            let wire_topic = topic.clone();
            let build = move |request_id| {
                pb::CommandEndTxnOnSubscription {
                    request_id,
                    txnid_least_bits: Some(id.least),
                    txnid_most_bits: Some(id.most),
                    subscription: Some(pb::Subscription {
                        topic: wire_topic,
                        subscription,
                    }),
                    txn_action: Some(wire_action(action)),
                    txnid_least_bits_of_low_watermark: low_water_mark,
                }
                .into()
            };
            peers.end(topic, build, local).await
        })
    }
}
