//! Policies with Pulsar's paths and JSON field names: `publishRate`, `dispatchRate`,
//! `subscriptionDispatchRate`, `backlogQuota` / `backlogQuotaMap`, `retention`, deduplication (namespace `deduplication`, topic `deduplicationEnabled`),
//! `messageTTL` (namespace: the body; topic: `?messageTTL=N`), `inactiveTopicPolicies`,
//! `compactionThreshold`, `schemaCompatibilityStrategy`, `isAllowAutoUpdateSchema`,
//! `schemaValidationEnforced`, at namespace and topic level; the limits (namespace
//! `maxProducersPerTopic`, `maxConsumersPerTopic`, `maxConsumersPerSubscription`,
//! `maxSubscriptionsPerTopic`, `maxTopicsPerNamespace`; topic `maxProducers`, `maxConsumers`,
//! `maxConsumersPerSubscription`, `maxSubscriptionsPerTopic`, `maxMessageSize`); `persistence`
//! (E/Qw/Qa of new ledgers on BookKeeper).

// Helpers return the ready 4xx response as their error; the admin path is cold, so the size of
// `Response` in a `Result` does not matter here.
#![allow(clippy::result_large_err)]

use super::access::{Access, Routes};
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

use super::topic_path::{existing, DeferredTopicPath};
use super::Ctx;
use crate::http::{broker_fail, fail};
use crate::ServerContext;

/// A change to a policy document, applied under the policy store's lock.
type Change = Box<dyn FnOnce(&mut Policies) + Send>;

/// The routes of this module.
pub(super) fn routes() -> Routes {
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

/// Which policy a path names.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    PublishRate,
    DispatchRate,
    SubscriptionDispatchRate,
    BacklogQuota,
    BacklogQuotaMap,
    Retention,
    Deduplication,
    MessageTtl,
    InactiveTopicPolicies,
    CompactionThreshold,
    SchemaCompatibilityStrategy,
    IsAllowAutoUpdateSchema,
    SchemaValidationEnforced,
    MaxProducers,
    MaxConsumers,
    MaxConsumersPerSubscription,
    MaxSubscriptions,
    MaxTopics,
    MaxMessageSize,
    Persistence,
}

/// Where a policy path is: a namespace's or a topic's (some policies exist at one level only,
/// and Pulsar's messages name the path).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Namespace,
    Topic,
}

fn kind(name: &str, level: Level) -> Result<Kind, Response> {
    let limit = match (name, level) {
        ("maxProducersPerTopic", Level::Namespace) | ("maxProducers", Level::Topic) => {
            Some(Kind::MaxProducers)
        }
        ("maxConsumersPerTopic", Level::Namespace) | ("maxConsumers", Level::Topic) => {
            Some(Kind::MaxConsumers)
        }
        ("maxConsumersPerSubscription", _) => Some(Kind::MaxConsumersPerSubscription),
        ("maxSubscriptionsPerTopic", _) => Some(Kind::MaxSubscriptions),
        ("maxTopicsPerNamespace", Level::Namespace) => Some(Kind::MaxTopics),
        ("maxMessageSize", Level::Topic) => Some(Kind::MaxMessageSize),
        _ => None,
    };
    if let Some(k) = limit {
        return Ok(k);
    }
    Ok(match name {
        "publishRate" => Kind::PublishRate,
        "dispatchRate" => Kind::DispatchRate,
        "subscriptionDispatchRate" => Kind::SubscriptionDispatchRate,
        "backlogQuota" => Kind::BacklogQuota,
        "backlogQuotaMap" => Kind::BacklogQuotaMap,
        "retention" => Kind::Retention,
        // Namespace path `deduplication`, topic path `deduplicationEnabled` (as Pulsar's).
        "deduplication" | "deduplicationEnabled" => Kind::Deduplication,
        "messageTTL" => Kind::MessageTtl,
        "inactiveTopicPolicies" => Kind::InactiveTopicPolicies,
        "compactionThreshold" => Kind::CompactionThreshold,
        "schemaCompatibilityStrategy" => Kind::SchemaCompatibilityStrategy,
        "isAllowAutoUpdateSchema" => Kind::IsAllowAutoUpdateSchema,
        "schemaValidationEnforced" => Kind::SchemaValidationEnforced,
        "persistence" => Kind::Persistence,
        other => {
            return Err(fail(
                StatusCode::NOT_FOUND,
                format!("unknown policy or path {other:?}"),
            ))
        }
    })
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

fn view(p: &Policies, k: Kind) -> Value {
    let v = match k {
        Kind::PublishRate => serde_json::to_value(p.publish_rate),
        Kind::DispatchRate => serde_json::to_value(p.dispatch_rate),
        Kind::SubscriptionDispatchRate => serde_json::to_value(p.subscription_dispatch_rate),
        Kind::BacklogQuota | Kind::BacklogQuotaMap => serde_json::to_value(&p.backlog_quota_map),
        Kind::Retention => serde_json::to_value(p.retention),
        Kind::Deduplication => serde_json::to_value(p.deduplication_enabled),
        Kind::MessageTtl => serde_json::to_value(p.message_ttl_in_seconds),
        Kind::InactiveTopicPolicies => serde_json::to_value(p.inactive_topic_policies),
        Kind::CompactionThreshold => serde_json::to_value(p.compaction_threshold),
        // Pulsar answers UNDEFINED when nothing is set here.
        Kind::SchemaCompatibilityStrategy => {
            serde_json::to_value(p.schema_compatibility_strategy.unwrap_or_default())
        }
        Kind::IsAllowAutoUpdateSchema => serde_json::to_value(p.is_allow_auto_update_schema),
        Kind::SchemaValidationEnforced => {
            serde_json::to_value(p.schema_validation_enforced.unwrap_or(false))
        }
        Kind::MaxProducers => serde_json::to_value(p.max_producers_per_topic),
        Kind::MaxConsumers => serde_json::to_value(p.max_consumers_per_topic),
        Kind::MaxConsumersPerSubscription => serde_json::to_value(p.max_consumers_per_subscription),
        Kind::MaxSubscriptions => serde_json::to_value(p.max_subscriptions_per_topic),
        // Pulsar answers 0 when the namespace sets nothing (the broker's value is not shown).
        Kind::MaxTopics => serde_json::to_value(p.max_topics_per_namespace.unwrap_or(0)),
        Kind::MaxMessageSize => serde_json::to_value(p.max_message_size),
        Kind::Persistence => serde_json::to_value(&p.persistence),
    };
    v.unwrap_or(Value::Null)
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
    fn parse<T: serde::de::DeserializeOwned>(body: &str) -> Result<T, Response> {
        serde_json::from_str(body)
            .map_err(|e| fail(StatusCode::BAD_REQUEST, format!("invalid JSON body: {e}")))
    }
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
            let v: i64 = match q.get("messageTTL") {
                Some(v) => v.parse().map_err(|_| {
                    fail(
                        StatusCode::PRECONDITION_FAILED,
                        "Invalid value for message TTL",
                    )
                })?,
                None => parse(body)?,
            };
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
        Kind::BacklogQuotaMap => {
            return Err(fail(
                StatusCode::METHOD_NOT_ALLOWED,
                "backlogQuotaMap is read-only",
            ))
        }
    })
}

fn removal(k: Kind, q: &HashMap<String, String>) -> Result<Change, Response> {
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
    match super::namespaces::missing(ctx, &ns) {
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
    let v = view(&ctx.service.policies.namespace(&ns), k);
    // Pulsar answers an unset namespace `persistence` with 204 and no body.
    if v.is_null() && k == Kind::Persistence {
        return StatusCode::NO_CONTENT.into_response();
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
    };
    let (f, ns) = match (
        kind(&policy, Level::Namespace).and_then(|k| change(k, &body, &q, &request)),
        valid_namespace(&ctx, &tenant, &ns),
    ) {
        (Ok(f), Ok(ns)) => (f, ns),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    crate::cluster_sync::update_namespace(&ctx, ns, f).await
}

async fn delete_namespace_policy(
    State(ctx): Ctx,
    Path((tenant, ns, policy)): Path<(String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let (f, ns) = match (
        kind(&policy, Level::Namespace).and_then(|k| removal(k, &q)),
        valid_namespace(&ctx, &tenant, &ns),
    ) {
        (Ok(f), Ok(ns)) => (f, ns),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    crate::cluster_sync::update_namespace(&ctx, ns, f).await
}

async fn get_topic_policy(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, policy)): Path<(String, String, String, String)>,
) -> Response {
    let (k, name) = match (kind(&policy, Level::Topic), existing(&ctx, path)) {
        (Ok(k), Ok(n)) => (k, n),
        (Err(r), _) | (_, Err(r)) => return r,
    };
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
    };
    let (f, name) = match (
        kind(&policy, Level::Topic).and_then(|k| change(k, &body, &q, &request)),
        existing(&ctx, path),
    ) {
        (Ok(f), Ok(n)) => (f, n),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    update(&ctx, move |svc| svc.policies.update_topic(&name, f)).await
}

async fn delete_topic_policy(
    State(ctx): Ctx,
    path: DeferredTopicPath,
    Path((_, _, _, policy)): Path<(String, String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let (f, name) = match (
        kind(&policy, Level::Topic).and_then(|k| removal(k, &q)),
        existing(&ctx, path),
    ) {
        (Ok(f), Ok(n)) => (f, n),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    update(&ctx, move |svc| svc.policies.update_topic(&name, f)).await
}
