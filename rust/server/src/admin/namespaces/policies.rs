//! Policies with Pulsar's paths and JSON field names: `publishRate`, `dispatchRate`,
//! `subscriptionDispatchRate`, `backlogQuota` / `backlogQuotaMap`, `retention`, deduplication
//! (namespace `deduplication`, topic `deduplicationEnabled`), `messageTTL` (namespace: the body;
//! topic: `?messageTTL=N`), `inactiveTopicPolicies`, `compactionThreshold`,
//! `schemaCompatibilityStrategy`, `isAllowAutoUpdateSchema`, `schemaValidationEnforced`, at
//! namespace and topic level; the limits (namespace `maxProducersPerTopic`, `maxConsumersPerTopic`,
//! `maxConsumersPerSubscription`, `maxSubscriptionsPerTopic`, `maxTopicsPerNamespace`; topic
//! `maxProducers`, `maxConsumers`, `maxConsumersPerSubscription`, `maxSubscriptionsPerTopic`,
//! `maxMessageSize`); `persistence` (E/Qw/Qa of new ledgers on BookKeeper); PIP-437's
//! `maxDelayedDeliveryTime` and `fixedDelayedDeliveryTime` (seconds, both levels).

// Helpers return the ready 4xx response as their error; the admin path is cold, so the size of
// `Response` in a `Result` does not matter here.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use pulsar_rs_broker::config::schema_strategy::Strategy;
use pulsar_rs_broker::policies::backlog_quota::BacklogQuota;
use pulsar_rs_broker::policies::{
    DispatchRate, InactiveTopicPolicies, PersistencePolicies, Policies, PublishRate, Retention,
};
use pulsar_rs_broker::{BrokerError, BrokerService, TopicName};
use serde_json::Value;

use pulsar_rs_broker::policies::replication::RATE_FIELD;
// The key of a topic's properties in its document.
use pulsar_rs_broker::policies::TOPIC_PROPERTIES as PROPERTIES;

use super::per_cluster;
use super::policy_kinds::{json, kind, topic_keys, view, Kind, Level};
use super::quota_retention::{check_quota, check_retention, At};
use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::Ctx;
use crate::admin::machinery::topic_path::{existing, DeferredTopicPath};
use crate::context::ServerContext;
use crate::http::{broker_fail, fail};

/// A change to a policy document, applied under the policy store's lock.
type Change = Box<dyn FnOnce(&mut Policies) + Send>;

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new()
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/{policy}",
            Access::Tenant,
            get(get_namespace_policy)
                .post(set_namespace_policy)
                .put(set_namespace_policy)
                .delete(delete_namespace_policy),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/{policy}",
            Access::Tenant,
            get(get_topic_policy)
                .post(set_topic_policy)
                .put(set_topic_policy)
                .delete(delete_topic_policy),
        )
}

/// A policy's JSON request body (400 when it is not one).
fn parse<T: serde::de::DeserializeOwned>(body: &str) -> Result<T, Response> {
    serde_json::from_str(body)
        .map_err(|e| fail(StatusCode::BAD_REQUEST, format!("invalid JSON body: {e}")))
}

fn quota_type(q: &HashMap<String, String>) -> Result<String, Response> {
    let t = q
        .get("backlogQuotaType")
        .map_or("destination_storage", String::as_str);
    if t == "destination_storage" || t == "message_age" {
        Ok(t.to_owned())
    } else {
        Err(fail(
            StatusCode::BAD_REQUEST,
            "backlogQuotaType must be destination_storage or message_age",
        ))
    }
}

/// A change merging `new` into a topic's properties (Pulsar's `updateProperties`).
pub(in crate::admin) fn merge_properties(
    new: HashMap<String, String>,
) -> impl FnOnce(&mut Policies) {
    move |p| {
        let mut map = match p.other.remove(PROPERTIES) {
            Some(Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        for (k, v) in new {
            map.insert(k, Value::String(v));
        }
        p.other.insert(PROPERTIES.to_owned(), Value::Object(map));
    }
}

/// Pulsar's `SubscribeRate`.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct SubscribeRate {
    #[serde(default = "minus_one")]
    subscribe_throttling_rate_per_consumer: i32,
    #[serde(default = "thirty")]
    rate_period_in_second: i32,
}

/// Pulsar's `DelayedDeliveryPolicies` (primitive fields: a missing one is 0 / false).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct DelayedDelivery {
    #[serde(default)]
    tick_time: i64,
    #[serde(default)]
    active: bool,
    #[serde(default)]
    max_delivery_delay_in_millis: i64,
}

/// Pulsar's `AutoSubscriptionCreationOverride`.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct AutoSubscriptionCreationOverride {
    #[serde(default)]
    allow_auto_subscription_creation: bool,
}

fn minus_one() -> i32 {
    -1
}

fn thirty() -> i32 {
    30
}

/// A change that stores `fields` (JSON name, value) in a topic's document.
fn store(fields: Vec<(&'static str, Value)>) -> Change {
    Box::new(move |p| {
        for (key, v) in fields {
            p.other.insert(key.to_owned(), v);
        }
    })
}

/// A limit from a request body, refused with Pulsar's 412 and message when negative (or, for
/// `maxMessageSize`, above the broker's `maxMessageSize`).
fn limit_value(
    k: Kind,
    name: &str,
    level: Level,
    body: &str,
    broker_max_message_size: u32,
) -> Result<i32, Response> {
    let v: i32 = serde_json::from_str(body)
        .map_err(|e| fail(StatusCode::BAD_REQUEST, format!("invalid JSON body: {e}")))?;
    let refused = |reason: String| Err(fail(StatusCode::PRECONDITION_FAILED, reason));
    match (k, level) {
        (Kind::MaxMessageSize, _) if v < 0 || i64::from(v) > i64::from(broker_max_message_size) => {
            refused(
                "topic-level maxMessageSize must be greater than or equal to 0 and must be \
                 smaller than that in the broker-level"
                    .into(),
            )
        }
        (Kind::MaxConsumersPerSubscription, Level::Topic) if v < 0 => {
            refused("Invalid value for maxConsumersPerSubscription".into())
        }
        _ if v < 0 => refused(format!("{name} must be 0 or more")),
        _ => Ok(v),
    }
}

/// The request a policy change comes from: the policy's path name and level, and the broker's
/// `maxMessageSize` (the bound of the topic's).
struct Request<'a> {
    name: &'a str,
    level: Level,
    broker_max_message_size: u32,
    /// The broker's `managedLedgerMaxEnsembleSize`, `...MaxWriteQuorum`, `...MaxAckQuorum`.
    max_quorums: (usize, usize, usize),
    /// The known clusters (the bound of a topic's replication clusters).
    clusters: Vec<String>,
    /// This broker's cluster (`clusterName`): the entry a per-cluster namespace policy sets.
    cluster: String,
}

/// The bounds of a `persistence` policy.
fn max_quorums(c: &pulsar_rs_broker::BrokerConfig) -> (usize, usize, usize) {
    (
        c.managed_ledger_max_ensemble_size,
        c.managed_ledger_max_write_quorum,
        c.managed_ledger_max_ack_quorum,
    )
}

/// Parses `body` for `k` and returns the change to apply, or the 4xx response.
fn change(
    k: Kind,
    body: &str,
    q: &HashMap<String, String>,
    r: &Request<'_>,
) -> Result<Change, Response> {
    let limit = |k: Kind| limit_value(k, r.name, r.level, body, r.broker_max_message_size);
    Ok(match k {
        Kind::PublishRate => {
            let v: PublishRate = parse(body)?;
            Box::new(move |p| p.publish_rate = Some(v))
        }
        Kind::DispatchRate => {
            let v: DispatchRate = parse(body)?;
            Box::new(move |p| p.dispatch_rate = Some(v))
        }
        Kind::SubscriptionDispatchRate => {
            let v: DispatchRate = parse(body)?;
            Box::new(move |p| p.subscription_dispatch_rate = Some(v))
        }
        Kind::BacklogQuota => {
            let v: BacklogQuota = parse(body)?;
            let t = quota_type(q)?;
            Box::new(move |p| {
                p.backlog_quota_map.insert(t, v);
            })
        }
        Kind::Retention => {
            let v: Retention = parse(body)?;
            Box::new(move |p| p.retention = Some(v))
        }
        Kind::Persistence => {
            let v: PersistencePolicies = parse(body)?;
            v.check(r.max_quorums)
                .map_err(|why| fail(StatusCode::BAD_REQUEST, why))?;
            Box::new(move |p| p.persistence = Some(v))
        }
        Kind::Deduplication => {
            let v: bool = parse(body)?;
            Box::new(move |p| p.deduplication_enabled = Some(v))
        }
        Kind::MessageTtl => {
            // Topic level: `?messageTTL=N` (Pulsar's query parameter); namespace: the body.
            // Each level refuses a negative TTL with its own text, as Pulsar's.
            let v: i64 = match q.get("messageTTL") {
                Some(v) => v.parse().ok().filter(|v| *v >= 0).ok_or_else(|| {
                    fail(
                        StatusCode::PRECONDITION_FAILED,
                        "Invalid value for message TTL",
                    )
                })?,
                None => parse(body)?,
            };
            if v < 0 {
                return Err(fail(
                    StatusCode::PRECONDITION_FAILED,
                    "Invalid value for message TTL, message TTL must >= 0",
                ));
            }
            Box::new(move |p| p.message_ttl_in_seconds = Some(v))
        }
        Kind::InactiveTopicPolicies => {
            let v: InactiveTopicPolicies = parse(body)?;
            Box::new(move |p| p.inactive_topic_policies = Some(v))
        }
        Kind::CompactionThreshold => {
            let v: i64 = parse(body)?;
            Box::new(move |p| p.compaction_threshold = Some(v))
        }
        Kind::SchemaCompatibilityStrategy => {
            // A JSON string (`"FORWARD"`), or the bare name as some clients send it.
            let name: String = parse(body).unwrap_or_else(|_| body.trim().to_owned());
            let v = Strategy::parse(&name).ok_or_else(|| {
                fail(
                    StatusCode::BAD_REQUEST,
                    format!("invalid schema compatibility strategy {name:?}"),
                )
            })?;
            Box::new(move |p| p.schema_compatibility_strategy = Some(v))
        }
        Kind::IsAllowAutoUpdateSchema => {
            let v: bool = parse(body)?;
            Box::new(move |p| p.is_allow_auto_update_schema = Some(v))
        }
        Kind::SchemaValidationEnforced => {
            let v: bool = parse(body)?;
            Box::new(move |p| p.schema_validation_enforced = Some(v))
        }

        Kind::MaxProducers => {
            let v = limit(k)?;
            Box::new(move |p| p.max_producers_per_topic = Some(v))
        }
        Kind::MaxConsumers => {
            let v = limit(k)?;
            Box::new(move |p| p.max_consumers_per_topic = Some(v))
        }
        Kind::MaxConsumersPerSubscription => {
            let v = limit(k)?;
            Box::new(move |p| p.max_consumers_per_subscription = Some(v))
        }
        Kind::MaxSubscriptions => {
            let v = limit(k)?;
            Box::new(move |p| p.max_subscriptions_per_topic = Some(v))
        }
        Kind::MaxTopics => {
            let v = limit(k)?;
            Box::new(move |p| p.max_topics_per_namespace = Some(v))
        }
        Kind::MaxMessageSize => {
            let v = limit(k)?;
            Box::new(move |p| p.max_message_size = Some(v))
        }
        Kind::SubscribeRate => {
            let v: SubscribeRate = parse(body)?;
            store(vec![("subscribeRate", json(&v))])
        }
        Kind::DeduplicationSnapshotInterval => {
            let v: i32 = parse(body)?;
            store(vec![(
                "deduplicationSnapshotIntervalSeconds",
                Value::from(v),
            )])
        }
        Kind::ReplicatorDispatchRate => {
            let v: DispatchRate = parse(body)?;
            match r.level {
                Level::Topic => store(vec![(RATE_FIELD, json(&v))]),
                Level::Namespace => {
                    let cluster = r.cluster.clone();
                    Box::new(move |p| per_cluster::set(p, RATE_FIELD, &cluster, json(&v)))
                }
            }
        }
        Kind::OffloadPolicies => {
            let v: Value = parse(body)?;
            if !v.is_object() {
                return Err(fail(
                    StatusCode::BAD_REQUEST,
                    "invalid JSON body: offload policies must be an object",
                ));
            }
            pulsar_rs_broker::policies::offload::validate(&v)
                .map_err(|reason| fail(StatusCode::PRECONDITION_FAILED, reason))?;
            store(vec![("offloadPolicies", v)])
        }
        Kind::AutoSubscriptionCreation => {
            let v: AutoSubscriptionCreationOverride = parse(body)?;
            store(vec![("autoSubscriptionCreationOverride", json(&v))])
        }
        Kind::ReplicationClusters => {
            let v: Vec<String> = parse(body)?;
            replication_clusters(&v, &r.clusters)?;
            store(vec![("replicationClusters", json(&v))])
        }
        Kind::MaxDelayedDeliveryTime | Kind::FixedDelayedDeliveryTime => {
            let v: i64 = parse(body)?;
            if v < 0 {
                return Err(fail(
                    StatusCode::PRECONDITION_FAILED,
                    format!("{} must be 0 or more", r.name),
                ));
            }
            store(vec![(topic_keys(k)[0], Value::from(v))])
        }
        Kind::MaxUnackedOnConsumer | Kind::MaxUnackedOnSubscription => {
            let v: i32 = parse(body)?;
            if v < 0 {
                return Err(fail(
                    StatusCode::PRECONDITION_FAILED,
                    "maxUnackedNum must be 0 or more",
                ));
            }
            store(vec![(topic_keys(k)[0], Value::from(v))])
        }
        Kind::Properties => {
            let v: HashMap<String, String> = parse(body)?;
            Box::new(merge_properties(v))
        }
        Kind::DelayedDelivery => {
            let v: DelayedDelivery = parse(body)?;
            store(vec![
                ("delayedDeliveryEnabled", Value::Bool(v.active)),
                ("delayedDeliveryTickTimeMillis", Value::from(v.tick_time)),
                (
                    "delayedDeliveryMaxDelayInMillis",
                    Value::from(v.max_delivery_delay_in_millis),
                ),
            ])
        }
        Kind::BacklogQuotaMap => {
            return Err(fail(
                StatusCode::METHOD_NOT_ALLOWED,
                "backlogQuotaMap is read-only",
            ))
        }
    })
}

/// Pulsar's checks of a topic's replication clusters (`internalSetReplicationClusters`): 412
/// for an empty list or `global`, 403 for a cluster that is not registered.
fn replication_clusters(v: &[String], known: &[String]) -> Result<(), Response> {
    let refused = |why: String| Err(fail(StatusCode::PRECONDITION_FAILED, why));
    if v.is_empty() {
        return refused("ClusterIds should not be null or empty".into());
    }
    if v.iter().any(|c| c == "global") {
        return refused("Cannot specify global in the list of replication clusters".into());
    }
    if let Some(c) = v.iter().find(|c| !known.contains(c)) {
        return Err(fail(
            StatusCode::FORBIDDEN,
            format!("Invalid cluster id: {c}"),
        ));
    }
    Ok(())
}

/// The change removing `k`; `cluster` (this broker's) for the namespace's per-cluster policies.
fn removal(
    k: Kind,
    q: &HashMap<String, String>,
    level: Level,
    cluster: &str,
) -> Result<Change, Response> {
    if (k, level) == (Kind::ReplicatorDispatchRate, Level::Namespace) {
        let cluster = cluster.to_owned();
        return Ok(Box::new(move |p| {
            per_cluster::remove(p, RATE_FIELD, &cluster);
        }));
    }
    Ok(match k {
        Kind::PublishRate => Box::new(|p| p.publish_rate = None),
        Kind::DispatchRate => Box::new(|p| p.dispatch_rate = None),
        Kind::SubscriptionDispatchRate => Box::new(|p| p.subscription_dispatch_rate = None),
        Kind::BacklogQuota => {
            let t = quota_type(q)?;
            Box::new(move |p| {
                p.backlog_quota_map.remove(&t);
            })
        }
        Kind::Retention => Box::new(|p| p.retention = None),
        Kind::Deduplication => Box::new(|p| p.deduplication_enabled = None),
        Kind::MessageTtl => Box::new(|p| p.message_ttl_in_seconds = None),
        Kind::InactiveTopicPolicies => Box::new(|p| p.inactive_topic_policies = None),
        Kind::CompactionThreshold => Box::new(|p| p.compaction_threshold = None),
        Kind::SchemaCompatibilityStrategy => Box::new(|p| p.schema_compatibility_strategy = None),
        Kind::IsAllowAutoUpdateSchema => Box::new(|p| p.is_allow_auto_update_schema = None),
        Kind::SchemaValidationEnforced => Box::new(|p| p.schema_validation_enforced = None),
        Kind::MaxProducers => Box::new(|p| p.max_producers_per_topic = None),
        Kind::MaxConsumers => Box::new(|p| p.max_consumers_per_topic = None),
        Kind::MaxConsumersPerSubscription => Box::new(|p| p.max_consumers_per_subscription = None),
        Kind::MaxSubscriptions => Box::new(|p| p.max_subscriptions_per_topic = None),
        Kind::MaxTopics => Box::new(|p| p.max_topics_per_namespace = None),
        Kind::MaxMessageSize => Box::new(|p| p.max_message_size = None),
        Kind::Persistence => Box::new(|p| p.persistence = None),
        // `DELETE .../properties?key=K` removes one key (Pulsar's `removeProperties`).
        Kind::Properties => {
            let key = q
                .get("key")
                .cloned()
                .ok_or_else(|| fail(StatusCode::BAD_REQUEST, "query parameter key is required"))?;
            Box::new(move |p| {
                if let Some(Value::Object(m)) = p.other.get_mut(PROPERTIES) {
                    m.remove(&key);
                }
            })
        }
        Kind::SubscribeRate
        | Kind::DeduplicationSnapshotInterval
        | Kind::ReplicatorDispatchRate
        | Kind::OffloadPolicies
        | Kind::AutoSubscriptionCreation
        | Kind::ReplicationClusters
        | Kind::MaxUnackedOnConsumer
        | Kind::MaxUnackedOnSubscription
        | Kind::DelayedDelivery
        | Kind::MaxDelayedDeliveryTime
        | Kind::FixedDelayedDeliveryTime => Box::new(move |p| {
            for key in topic_keys(k) {
                p.other.remove(*key);
            }
        }),
        Kind::BacklogQuotaMap => {
            return Err(fail(
                StatusCode::METHOD_NOT_ALLOWED,
                "backlogQuotaMap is read-only",
            ))
        }
    })
}

/// The namespace of a path, which must exist (404 otherwise, as Pulsar).
fn valid_namespace(ctx: &ServerContext, tenant: &str, ns: &str) -> Result<String, Response> {
    let ns = TopicName::parse(&format!("persistent://{tenant}/{ns}/x"))
        .map(|t| t.namespace_name())
        .map_err(|e| broker_fail(&e))?;
    match super::lifecycle::missing(ctx, &ns) {
        Some(r) => Err(r),
        None => Ok(ns),
    }
}

/// Runs a blocking policy update and re-applies policies to loaded topics.
async fn update(
    ctx: &Arc<ServerContext>,
    f: impl FnOnce(&BrokerService) -> Result<(), BrokerError> + Send + 'static,
) -> Response {
    crate::http::no_content(ctx, move |svc| f(svc).map(|()| svc.refresh_policies())).await
}

async fn get_namespace_policy(
    State(ctx): Ctx,
    Path((tenant, ns, policy)): Path<(String, String, String)>,
) -> Response {
    let (k, ns) = match (
        kind(&policy, Level::Namespace),
        valid_namespace(&ctx, &tenant, &ns),
    ) {
        (Ok(k), Ok(ns)) => (k, ns),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    let policies = ctx.service.policies.namespace(&ns);
    let mut v = match k {
        Kind::ReplicatorDispatchRate => {
            per_cluster::get(&policies, RATE_FIELD, &ctx.service.config.cluster_name)
        }
        _ => view(&policies, k),
    };
    // Pulsar's `internalGetIsAllowAutoUpdateSchema`: unset, the broker's own setting (a null
    // would make pulsar-admin fail unboxing it).
    if v.is_null() && k == Kind::IsAllowAutoUpdateSchema {
        v = ctx
            .service
            .config
            .is_allow_auto_update_schema_enabled
            .into();
    }
    // Pulsar 4.0.8 answers an unset namespace `persistence` with 200 and an empty body (no
    // `null`: the Go admin client decodes `null` into an empty policy); checked against it.
    if v.is_null() && k == Kind::Persistence {
        return StatusCode::OK.into_response();
    }
    Json(v).into_response()
}

async fn set_namespace_policy(
    State(ctx): Ctx,
    Path((tenant, ns, policy)): Path<(String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
    body: String,
) -> Response {
    let request = Request {
        name: &policy,
        level: Level::Namespace,
        broker_max_message_size: ctx.service.config.max_message_size,
        max_quorums: max_quorums(&ctx.service.config),
        clusters: ctx.resources.clusters(),
        cluster: ctx.service.config.cluster_name.clone(),
    };
    let (f, ns) = match (
        kind(&policy, Level::Namespace).and_then(|k| change(k, &body, &q, &request)),
        valid_namespace(&ctx, &tenant, &ns),
    ) {
        (Ok(f), Ok(ns)) => (f, ns),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    let current = ctx.service.policies.namespace(&ns);
    if let Err(r) = against_each_other(&ctx, &policy, &body, &q, At::Namespace, &current, None) {
        return r;
    }
    crate::cluster::sync::update_namespace(&ctx, ns, f).await
}

/// Retention and the backlog quota, the one set now against the other in force
/// ([`super::quota_retention`]); other policies pass.
fn against_each_other(
    ctx: &ServerContext,
    policy: &str,
    body: &str,
    q: &HashMap<String, String>,
    at: At,
    namespace: &Policies,
    topic: Option<&Policies>,
) -> Result<(), Response> {
    let config = &ctx.service.config;
    let level = match at {
        At::Namespace => Level::Namespace,
        At::Topic => Level::Topic,
    };
    match kind(policy, level) {
        Ok(Kind::Retention) => {
            let r: Retention = parse(body)?;
            check_retention(&r, at, namespace, topic, config)
        }
        Ok(Kind::BacklogQuota) => {
            let quota: BacklogQuota = parse(body)?;
            check_quota(&quota, &quota_type(q)?, at, namespace, topic, config)
        }
        _ => Ok(()),
    }
}

async fn delete_namespace_policy(
    State(ctx): Ctx,
    Path((tenant, ns, policy)): Path<(String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let (f, ns) = match (
        kind(&policy, Level::Namespace)
            .and_then(|k| removal(k, &q, Level::Namespace, &ctx.service.config.cluster_name)),
        valid_namespace(&ctx, &tenant, &ns),
    ) {
        (Ok(f), Ok(ns)) => (f, ns),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    crate::cluster::sync::update_namespace(&ctx, ns, f).await
}

async fn get_topic_policy(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, policy)): Path<(String, String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let (k, name) = match (kind(&policy, Level::Topic), existing(&ctx, path)) {
        (Ok(k), Ok(n)) => (k, n),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    let applied = q.get("applied").is_some_and(|v| v == "true");
    if applied {
        if let Some(v) = applied_view(&ctx, &name, k) {
            return Json(v).into_response();
        }
    }
    let v = view(&ctx.service.policies.topic(&name), k);
    // Pulsar answers these unset topic policies with 204 and no body (the others: `null`).
    let no_body = matches!(
        k,
        Kind::MaxConsumersPerSubscription | Kind::MaxSubscriptions | Kind::MaxMessageSize
    );
    if v.is_null() && no_body {
        return StatusCode::NO_CONTENT.into_response();
    }
    Json(v).into_response()
}

/// `?applied=true`: the value in force (topic, else namespace, else broker), as Pulsar's
/// `applied` reads; `None` for a policy this broker answers only at the topic level.
fn applied_view(ctx: &ServerContext, name: &TopicName, k: Kind) -> Option<Value> {
    let eff = ctx.service.policies.effective(name);
    match k {
        Kind::SchemaCompatibilityStrategy => Some(json(&eff.schema_compatibility_strategy)),
        Kind::MaxUnackedOnConsumer => Some(json(&eff.max_unacked_per_consumer)),
        Kind::MaxUnackedOnSubscription => Some(json(&eff.max_unacked_per_subscription)),
        // In force, in the path's unit (seconds, rounded down); 0 = none.
        Kind::MaxDelayedDeliveryTime => Some(json(&(eff.delivery_delay.max_ms / 1000))),
        Kind::FixedDelayedDeliveryTime => Some(json(&(eff.delivery_delay.fixed_ms / 1000))),
        _ => None,
    }
}

async fn set_topic_policy(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, policy)): Path<(String, String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
    body: String,
) -> Response {
    let request = Request {
        name: &policy,
        level: Level::Topic,
        broker_max_message_size: ctx.service.config.max_message_size,
        max_quorums: max_quorums(&ctx.service.config),
        clusters: ctx.resources.clusters(),
        cluster: ctx.service.config.cluster_name.clone(),
    };
    let (f, name) = match (
        kind(&policy, Level::Topic).and_then(|k| change(k, &body, &q, &request)),
        existing(&ctx, path),
    ) {
        (Ok(f), Ok(n)) => (f, n),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    let namespace = ctx.service.policies.namespace(&name.namespace_name());
    let topic = ctx.service.policies.topic(&name);
    let checked = against_each_other(
        &ctx,
        &policy,
        &body,
        &q,
        At::Topic,
        &namespace,
        Some(&topic),
    );
    if let Err(r) = checked {
        return r;
    }
    update(&ctx, move |svc| svc.policies.update_topic(&name, f)).await
}

async fn delete_topic_policy(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, policy)): Path<(String, String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let (f, name) = match (
        kind(&policy, Level::Topic)
            .and_then(|k| removal(k, &q, Level::Topic, &ctx.service.config.cluster_name)),
        existing(&ctx, path),
    ) {
        (Ok(f), Ok(n)) => (f, n),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    update(&ctx, move |svc| svc.policies.update_topic(&name, f)).await
}
