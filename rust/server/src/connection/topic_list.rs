//! Topic-list watchers (WATCH_TOPIC_LIST, Pulsar's `TopicListService`): a pattern consumer asks
//! once for the persistent topics of a namespace its pattern names, and the broker tells it of
//! every such topic created or deleted afterwards (WATCH_TOPIC_UPDATE), instead of the client
//! polling the namespace every `patternAutoDiscoveryPeriod`. Offered in CONNECTED's
//! `supports_topic_watchers` with `enableBrokerSideSubscriptionPatternEvaluation`; a pattern
//! longer than `subscriptionPatternMaxLength` is refused, as Pulsar refuses it.
//!
//! Each watcher is a task of its own that compares the namespace's list (the broker's, kept in
//! memory; in a cluster read again from the metadata store every second) with what it last told
//! the client, every [`POLL`]; it ends with WATCH_TOPIC_LIST_CLOSE or the connection.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use pulsar_rs_broker::topic_list::{topics_hash, TopicsPattern};
use pulsar_rs_broker::BrokerService;
use pulsar_rs_proto::{commands, pb, ServerError as Wire};

use super::{frame, Connection};
use crate::context::ServerContext;
use crate::outbound::OutboundTx;

/// How often a watcher compares its namespace's topics with what it told the client.
const POLL: Duration = Duration::from_millis(200);
/// How often, in a cluster, the namespace's topics are read again from the metadata store.
const CLUSTER_REFRESH: Duration = Duration::from_secs(1);

/// What one watcher watches.
struct Watch {
    ctx: Arc<ServerContext>,
    service: Arc<BrokerService>,
    tx: OutboundTx,
    namespace: String,
    pattern: TopicsPattern,
    watcher_id: u64,
}

impl Watch {
    /// The namespace's persistent topics the pattern names, sorted; in a cluster, read from
    /// the store first when `refresh`.
    async fn topics(&self, refresh: bool) -> Result<Vec<String>, String> {
        if refresh && self.ctx.cluster.get().is_some() {
            crate::cluster::member::refresh_known_topics(&self.ctx)
                .await
                .map_err(|e| e.to_string())?;
        }
        let all = self
            .service
            .discoverable_topics(&self.namespace, true, false);
        Ok(self.pattern.filter(&all))
    }

    /// Answers the watch (the list, or none when the client's hash is the list's), then tells
    /// the client of every change until the connection or the watcher closes.
    async fn run(self, request_id: u64, client_hash: Option<String>) {
        let mut known = match self.topics(true).await {
            Ok(t) => t,
            Err(e) => {
                let _ = self
                    .tx
                    .send(frame(&commands::error(request_id, Wire::MetadataError, e)));
                return;
            }
        };
        let hash = topics_hash(&known);
        let listed = if client_hash.as_deref() == Some(hash.as_str()) {
            Vec::new()
        } else {
            known.clone()
        };
        let ok = commands::watch_topic_list_success(request_id, self.watcher_id, listed, hash);
        if self.tx.send(frame(&ok)).is_err() {
            return;
        }
        let mut tick = tokio::time::interval(POLL);
        let mut refreshed = pulsar_rs_clock::monotonic();
        loop {
            tick.tick().await;
            if self.tx.is_closed() {
                return;
            }
            let refresh = refreshed.elapsed() >= CLUSTER_REFRESH;
            if refresh {
                refreshed = pulsar_rs_clock::monotonic();
            }
            let now = match self.topics(refresh).await {
                Ok(t) => t,
                Err(e) => {
                    tracing::debug!(namespace = %self.namespace, error = %e, "topic-list watcher: reading the store");
                    continue;
                }
            };
            if now == known {
                continue;
            }
            let (before, after): (BTreeSet<&String>, BTreeSet<&String>) =
                (known.iter().collect(), now.iter().collect());
            let new_topics = after.difference(&before).map(|t| (*t).clone()).collect();
            let deleted = before.difference(&after).map(|t| (*t).clone()).collect();
            let update = commands::watch_topic_update(
                self.watcher_id,
                new_topics,
                deleted,
                topics_hash(&now),
            );
            if self.tx.send(frame(&update)).is_err() {
                return;
            }
            known = now;
        }
    }
}

impl Connection {
    /// WATCH_TOPIC_LIST: refused as Pulsar refuses it, else a watcher task (a second watch
    /// with a live id is answered again by a new one, replacing it).
    pub(super) fn watch_topic_list(&mut self, w: &pb::CommandWatchTopicList) {
        let refuse = |code: Wire, msg: String| commands::error(w.request_id, code, msg);
        let config = &self.service.config;
        if !config.enable_broker_side_subscription_pattern_evaluation {
            self.send(&refuse(
                Wire::NotAllowedError,
                "Broker side subscription pattern evaluation is disabled".into(),
            ));
            return;
        }
        let max = config.subscription_pattern_max_length as usize;
        if w.topics_pattern.len() > max {
            self.send(&refuse(
                Wire::NotAllowedError,
                format!("Unable to create topic list watcher: the pattern is longer than subscriptionPatternMaxLength ({max})"),
            ));
            return;
        }
        let role = self.role.as_ref().ok().and_then(Option::as_deref);
        if let Err(msg) = self.ctx.authz.check_namespace(role, &w.namespace) {
            self.send(&refuse(Wire::AuthorizationError, msg));
            return;
        }
        let pattern = match TopicsPattern::parse(&w.topics_pattern) {
            Ok(p) => p,
            Err(e) => {
                self.send(&refuse(Wire::NotAllowedError, e.to_string()));
                return;
            }
        };
        let watch = Watch {
            ctx: Arc::clone(&self.ctx),
            service: Arc::clone(&self.service),
            tx: self.tx.clone(),
            namespace: w.namespace.clone(),
            pattern,
            watcher_id: w.watcher_id,
        };
        let task = tokio::spawn(watch.run(w.request_id, w.topics_hash.clone()));
        if let Some(old) = self.watchers.insert(w.watcher_id, task.abort_handle()) {
            old.abort();
        }
    }

    /// WATCH_TOPIC_LIST_CLOSE: the watcher ends; answered with SUCCESS, known or not.
    pub(super) fn close_topic_list_watcher(&mut self, c: &pb::CommandWatchTopicListClose) {
        if let Some(w) = self.watchers.remove(&c.watcher_id) {
            w.abort();
        }
        self.send(&commands::success(c.request_id));
    }
}

/// GET_TOPICS_OF_NAMESPACE's answer as Pulsar gives it: with a pattern (within
/// `subscriptionPatternMaxLength`, broker-side evaluation on) only the topics it names
/// (`filtered`); always the list's hash, and no topics (`changed: false`) when the client's hash
/// is already that one.
pub(super) fn namespace_topics_response(
    config: &pulsar_rs_broker::BrokerConfig,
    request: &pb::CommandGetTopicsOfNamespace,
    topics: Vec<String>,
) -> pulsar_rs_proto::BaseCommand {
    let pattern = request
        .topics_pattern
        .as_deref()
        .filter(|p| {
            config.enable_broker_side_subscription_pattern_evaluation
                && p.len() <= config.subscription_pattern_max_length as usize
        })
        .and_then(|p| TopicsPattern::parse(p).ok());
    let filtered = pattern.is_some();
    let topics = match &pattern {
        Some(p) => p.filter(&topics),
        None => topics,
    };
    let hash = topics_hash(&topics);
    let unchanged = request.topics_hash.as_deref() == Some(hash.as_str());
    pb::CommandGetTopicsOfNamespaceResponse {
        request_id: request.request_id,
        topics: if unchanged { Vec::new() } else { topics },
        filtered: Some(filtered),
        topics_hash: Some(hash),
        changed: Some(!unchanged),
    }
    .into()
}
