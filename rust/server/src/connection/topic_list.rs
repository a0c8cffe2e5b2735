//! Topic-list watchers (WATCH_TOPIC_LIST, Pulsar's `TopicListService`): a pattern consumer asks
//! once for the persistent topics of a namespace its pattern names, and the broker tells it of
//! every such topic created or deleted afterwards (WATCH_TOPIC_UPDATE), instead of the client
//! polling the namespace every `patternAutoDiscoveryPeriod`. Offered in CONNECTED's
//! `supports_topic_watchers` with `enableBrokerSideSubscriptionPatternEvaluation` and
//! `enableBrokerTopicListWatcher` (PIP-452); a pattern
//! longer than `subscriptionPatternMaxLength` is refused, as Pulsar refuses it.
//!
//! Each watcher is a task of its own that compares the namespace's list (the broker's, kept in
//! memory; in a cluster read again from the metadata store every second) with what it last told
//! the client, every [`POLL`]; it ends with WATCH_TOPIC_LIST_CLOSE or the connection.
//!
//! Lists and answers take their memory from PIP-442's limits ([`crate::topic_list_limit`]):
//! GET_TOPICS_OF_NAMESPACE is refused with `TooManyRequests` when it does not come, a watcher
//! tries again at its next poll, as Pulsar's retries.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use pulsar_rs_broker::topic_list::{topics_hash, TopicsPattern};
use pulsar_rs_broker::BrokerService;
use pulsar_rs_proto::{commands, pb, ServerError as Wire};

use super::{frame, Connection};
use crate::context::ServerContext;
use crate::outbound::OutboundTx;
use crate::topic_list_limit::{estimate, MemoryPermit, Refusal};
use crate::writer::Outbound;

/// How often a watcher compares its namespace's topics with what it told the client.
const POLL: Duration = Duration::from_millis(200);
/// How often, in a cluster, the namespace's topics are read again from the metadata store.
const CLUSTER_REFRESH: Duration = Duration::from_secs(1);

/// Why a watcher's list was not read.
enum Unlisted {
    /// Its memory (PIP-442) did not come.
    Memory(Refusal),
    /// The metadata store failed (in a cluster).
    Store(String),
}

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
    /// The namespace's persistent topics the pattern names, sorted, with the heap memory the
    /// list holds; in a cluster, read from the store first when `refresh`.
    async fn topics(&self, refresh: bool) -> Result<(Vec<String>, MemoryPermit), Unlisted> {
        let limiter = &self.ctx.topic_list_limiter;
        let key = list_key(
            &self.namespace,
            pb::command_get_topics_of_namespace::Mode::Persistent,
        );
        let mut heap = limiter
            .heap
            .acquire(limiter.last_size(&key))
            .await
            .map_err(Unlisted::Memory)?;
        if refresh && self.ctx.cluster.get().is_some() {
            crate::cluster::member::refresh_known_topics(&self.ctx)
                .await
                .map_err(|e| Unlisted::Store(e.to_string()))?;
        }
        let all = self
            .service
            .discoverable_topics(&self.namespace, true, false);
        let size = estimate(&all);
        limiter.remember(&key, size);
        limiter
            .heap
            .resize(&mut heap, size)
            .await
            .map_err(Unlisted::Memory)?;
        Ok((self.pattern.filter(&all), heap))
    }

    /// Queues the watch's SUCCESS with its direct memory; false when the watcher ends (the
    /// connection gone, or an answer larger than the whole limit, refused). Waits for the
    /// memory again after a timeout or a full line, as Pulsar's watcher retries.
    async fn send_success(&self, request_id: u64, cmd: &pulsar_rs_proto::BaseCommand) -> bool {
        loop {
            if self.tx.is_closed() {
                return false;
            }
            match self.ctx.topic_list_limiter.frame(cmd).await {
                Ok(f) => return self.tx.send(Outbound::Frame(f)).is_ok(),
                Err(r @ Refusal::TooLarge { .. }) => {
                    self.refuse(request_id, Wire::TooManyRequests, r.reason());
                    return false;
                }
                Err(r) => {
                    tracing::info!(namespace = %self.namespace, watcher = self.watcher_id, reason = %r.reason(), "topic-list watcher: retrying its answer");
                    tokio::time::sleep(POLL).await;
                }
            }
        }
    }

    fn refuse(&self, request_id: u64, code: Wire, msg: String) {
        let _ = self.tx.send(frame(&commands::error(request_id, code, msg)));
    }

    /// Answers the watch (the list, or none when the client's hash is the list's), then tells
    /// the client of every change until the connection or the watcher closes.
    async fn run(self, request_id: u64, client_hash: Option<String>) {
        let mut known = loop {
            match self.topics(true).await {
                Ok((t, _heap)) => break t,
                Err(Unlisted::Store(e)) => {
                    return self.refuse(request_id, Wire::MetadataError, e);
                }
                Err(Unlisted::Memory(r @ Refusal::TooLarge { .. })) => {
                    let msg = format!("Failed due to heap memory limit exceeded: {}", r.reason());
                    return self.refuse(request_id, Wire::TooManyRequests, msg);
                }
                Err(Unlisted::Memory(r)) => {
                    if self.tx.is_closed() {
                        return;
                    }
                    // A timeout or a full line: tried again, as Pulsar retries a watcher's start.
                    tracing::info!(namespace = %self.namespace, reason = %r.reason(), "topic-list watcher: retrying its start");
                    tokio::time::sleep(POLL).await;
                }
            }
        };
        let hash = topics_hash(&known);
        let listed = if client_hash.as_deref() == Some(hash.as_str()) {
            Vec::new()
        } else {
            known.clone()
        };
        let ok = commands::watch_topic_list_success(request_id, self.watcher_id, listed, hash);
        if !self.send_success(request_id, &ok).await {
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
            let (now, _heap) = match self.topics(refresh).await {
                Ok(t) => t,
                Err(Unlisted::Store(e)) => {
                    tracing::debug!(namespace = %self.namespace, error = %e, "topic-list watcher: reading the store");
                    continue;
                }
                Err(Unlisted::Memory(r)) => {
                    tracing::debug!(namespace = %self.namespace, reason = %r.reason(), "topic-list watcher: listing deferred");
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
            // Without its memory the update waits for the next poll, which finds the same
            // difference (or a newer one) again.
            match self.ctx.topic_list_limiter.frame(&update).await {
                Ok(f) => {
                    if self.tx.send(Outbound::Frame(f)).is_err() {
                        return;
                    }
                }
                Err(r) => {
                    tracing::info!(namespace = %self.namespace, watcher = self.watcher_id, reason = %r.reason(), "topic-list watcher: update deferred");
                    continue;
                }
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
        // PIP-452: watchers can be turned off on their own (a listing by properties needs it).
        if !config.enable_broker_topic_list_watcher {
            self.send(&refuse(
                Wire::NotAllowedError,
                "Topic list watcher is disabled on the broker (enableBrokerTopicListWatcher=false)"
                    .into(),
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

/// The key of a namespace's list in the limiter's sizes.
fn list_key(namespace: &str, mode: pb::command_get_topics_of_namespace::Mode) -> String {
    format!("{namespace}#{}", mode.as_str_name())
}

/// GET_TOPICS_OF_NAMESPACE answered within PIP-442's limits: the list takes its heap memory
/// (its namespace's last size, then its own), in a cluster after reading the store, and its
/// answer its direct memory; refused with `TooManyRequests` when either does not come.
pub(super) async fn namespace_topics(
    ctx: &Arc<ServerContext>,
    request: &pb::CommandGetTopicsOfNamespace,
    persistent: bool,
    non_persistent: bool,
) -> Outbound {
    let request_id = request.request_id;
    let limiter = &ctx.topic_list_limiter;
    let heap_refused = |r: &Refusal| {
        frame(&commands::error(
            request_id,
            Wire::TooManyRequests,
            format!("Failed due to heap memory limit exceeded: {}", r.reason()),
        ))
    };
    let key = list_key(&request.namespace, request.mode());
    let mut heap = match limiter.heap.acquire(limiter.last_size(&key)).await {
        Ok(p) => p,
        Err(r) => return heap_refused(&r),
    };
    // In a cluster the list is the cluster's, read from the metadata store.
    if ctx.cluster.get().is_some() {
        if let Err(e) = crate::cluster::member::refresh_known_topics(ctx).await {
            return frame(&commands::error(
                request_id,
                Wire::MetadataError,
                e.to_string(),
            ));
        }
    }
    // PIP-452: the client's properties (a Java pattern consumer's), as the listing chooses.
    let properties = request
        .properties
        .iter()
        .map(|kv| (kv.key.clone(), kv.value.clone()))
        .collect();
    let topics = ctx.service.list_by_properties(
        ctx.service
            .discoverable_topics(&request.namespace, persistent, non_persistent),
        &properties,
    );
    let size = estimate(&topics);
    limiter.remember(&key, size);
    if let Err(r) = limiter.heap.resize(&mut heap, size).await {
        return heap_refused(&r);
    }
    let answer = namespace_topics_response(&ctx.service.config, request, topics);
    match limiter.frame(&answer).await {
        Ok(f) => Outbound::Frame(f),
        Err(r) => frame(&commands::error(
            request_id,
            Wire::TooManyRequests,
            format!("Cannot acquire permits for direct memory: {}", r.reason()),
        )),
    }
}

/// GET_TOPICS_OF_NAMESPACE's answer as Pulsar gives it: with a pattern (within
/// `subscriptionPatternMaxLength`, broker-side evaluation on) only the topics it names
/// (`filtered`); always the list's hash, and no topics (`changed: false`) when the client's hash
/// is already that one.
fn namespace_topics_response(
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
