//! Pulsar's namespace `Policies` document (the JSON its admin API answers and takes, and every
//! broker of a cluster keeps at `/admin/policies/{tenant}/{ns}`) and the broker's stored
//! namespace policies, each turned into the other: the fields the broker applies are typed
//! (rates keyed by cluster in the document, backlog quotas, retention, persistence, limits),
//! every other field of the document is kept as given and returned.

// Parsing returns the ready 400 response as its error; the admin path is cold.
#![allow(clippy::result_large_err)]

use axum::http::StatusCode;
use axum::response::Response;
use pulsar_rs_broker::policies::backlog_quota::BacklogQuota;
use pulsar_rs_broker::policies::Policies;
use serde_json::{json, Map, Value};

use crate::http::fail;

/// Where Pulsar keeps a namespace's bookie affinity group (its local policies); not shown in
/// the `Policies` document.
pub(crate) const BOOKIE_AFFINITY: &str = "bookieAffinityGroup";

/// Renders stored policies as Pulsar's `Policies` document.
#[must_use]
pub fn document(p: &Policies, cluster: &str) -> Value {
    let per_cluster = |v: Option<Value>| match v {
        Some(v) => json!({ cluster: v }),
        None => json!({}),
    };
    let to = |v: Option<serde_json::Result<Value>>| v.and_then(Result::ok);
    let dispatch = per_cluster(to(p.dispatch_rate.map(serde_json::to_value)));
    let mut doc = json!({
        "auth_policies": serde_json::to_value(&p.auth_policies).unwrap_or_default(),
        "replication_clusters": [cluster],
        "bundles": {"boundaries": ["0x00000000", "0xffffffff"], "numBundles": 1},
        "backlog_quota_map": serde_json::to_value(&p.backlog_quota_map).unwrap_or_default(),
        "clusterDispatchRate": dispatch.clone(),
        "topicDispatchRate": dispatch,
        "subscriptionDispatchRate":
            per_cluster(to(p.subscription_dispatch_rate.map(serde_json::to_value))),
        "replicatorDispatchRate": {},
        "clusterSubscribeRate": {},
        "publishMaxMessageRate": per_cluster(to(p.publish_rate.map(serde_json::to_value))),
        "latency_stats_sample_rate": {},
        "retention_policies": to(p.retention.map(serde_json::to_value)),
        "deleted": false,
        "encryption_required": false,
        "subscription_auth_mode": "None",
        "offload_threshold": -1,
        "schema_compatibility_strategy": p.schema_compatibility_strategy.unwrap_or_default(),
        "is_allow_auto_update_schema": p.is_allow_auto_update_schema.unwrap_or(true),
        "schema_validation_enforced": p.schema_validation_enforced.unwrap_or(false),
        "subscription_types_enabled": [],
        "allowed_topic_properties_for_metrics": [],
        "properties": {},
    });
    if let Value::Object(m) = &mut doc {
        for (k, v) in &p.other {
            // Pulsar keeps the bookie affinity group in local policies, not this document.
            if k != BOOKIE_AFFINITY {
                m.insert(k.clone(), v.clone());
            }
        }
        if let Some(on) = p.deduplication_enabled {
            m.insert("deduplicationEnabled".into(), on.into());
        }
        if let Some(ttl) = p.message_ttl_in_seconds {
            m.insert("message_ttl_in_seconds".into(), ttl.into());
        }
        if let Some(Ok(v)) = p.inactive_topic_policies.map(serde_json::to_value) {
            m.insert("inactive_topic_policies".into(), v);
        }
        if let Some(Ok(v)) = p.persistence.as_ref().map(serde_json::to_value) {
            m.insert("persistence".into(), v);
        }
        if let Some(t) = p.compaction_threshold {
            m.insert("compaction_threshold".into(), t.into());
        }
        // The limits, when set (Pulsar leaves a null `Integer` out of the document).
        for (name, v) in limit_fields(p) {
            if let Some(v) = v {
                m.insert(name.into(), v.into());
            }
        }
    }
    doc
}

/// The namespace limits of a `Policies` document, by their JSON names.
fn limit_fields(p: &Policies) -> [(&'static str, Option<i32>); 5] {
    [
        ("max_producers_per_topic", p.max_producers_per_topic),
        ("max_consumers_per_topic", p.max_consumers_per_topic),
        (
            "max_consumers_per_subscription",
            p.max_consumers_per_subscription,
        ),
        ("max_subscriptions_per_topic", p.max_subscriptions_per_topic),
        ("max_topics_per_namespace", p.max_topics_per_namespace),
    ]
}

/// Fields the document renders itself (a body's values for them are not kept in `other`).
const RENDERED: [&str; 21] = [
    "deduplicationEnabled",
    "persistence",
    "compaction_threshold",
    "schema_compatibility_strategy",
    "is_allow_auto_update_schema",
    "schema_validation_enforced",
    "message_ttl_in_seconds",
    "inactive_topic_policies",
    "auth_policies",
    "backlog_quota_map",
    "clusterDispatchRate",
    "topicDispatchRate",
    "subscriptionDispatchRate",
    "publishMaxMessageRate",
    "retention_policies",
    "bundles",
    "max_producers_per_topic",
    "max_consumers_per_topic",
    "max_consumers_per_subscription",
    "max_subscriptions_per_topic",
    "max_topics_per_namespace",
];

/// Parses a `Policies` document (as Pulsar's admin clients send it) into stored policies.
///
/// # Errors
/// A field of the wrong shape, as the 400 response.
pub fn parse_document(doc: &Map<String, Value>, cluster: &str) -> Result<Policies, Response> {
    fn field<T: serde::de::DeserializeOwned>(name: &str, v: &Value) -> Result<T, Response> {
        serde_json::from_value(v.clone())
            .map_err(|e| fail(StatusCode::BAD_REQUEST, format!("invalid {name}: {e}")))
    }
    // A per-cluster map: this cluster's entry, else the only one.
    let mine = |name: &str| -> Option<&Value> {
        let m = doc.get(name)?.as_object()?;
        m.get(cluster)
            .or_else(|| (m.len() == 1).then(|| m.values().next()).flatten())
            .filter(|v| !v.is_null())
    };
    let mut p = Policies::default();
    if let Some(v) = mine("publishMaxMessageRate") {
        p.publish_rate = Some(field("publishMaxMessageRate", v)?);
    }
    if let Some(v) = mine("topicDispatchRate").or_else(|| mine("clusterDispatchRate")) {
        p.dispatch_rate = Some(field("topicDispatchRate", v)?);
    }
    if let Some(v) = mine("subscriptionDispatchRate") {
        p.subscription_dispatch_rate = Some(field("subscriptionDispatchRate", v)?);
    }
    if let Some(v) = doc.get("auth_policies").filter(|v| !v.is_null()) {
        p.auth_policies = field("auth_policies", v)?;
        crate::auth::authz::validate_actions(&p.auth_policies).map_err(|e| {
            fail(
                StatusCode::BAD_REQUEST,
                format!("invalid auth_policies: {e}"),
            )
        })?;
    }
    if let Some(v) = doc.get("retention_policies").filter(|v| !v.is_null()) {
        p.retention = Some(field("retention_policies", v)?);
    }
    if let Some(v) = doc.get("message_ttl_in_seconds").filter(|v| !v.is_null()) {
        p.message_ttl_in_seconds = Some(field("message_ttl_in_seconds", v)?);
    }
    if let Some(v) = doc.get("inactive_topic_policies").filter(|v| !v.is_null()) {
        p.inactive_topic_policies = Some(field("inactive_topic_policies", v)?);
    }
    if let Some(v) = doc.get("persistence").filter(|v| !v.is_null()) {
        p.persistence = Some(field("persistence", v)?);
    }
    if let Some(v) = doc.get("compaction_threshold").filter(|v| !v.is_null()) {
        p.compaction_threshold = Some(field("compaction_threshold", v)?);
    }
    if let Some(v) = doc
        .get("schema_compatibility_strategy")
        .filter(|v| !v.is_null())
    {
        p.schema_compatibility_strategy = Some(field("schema_compatibility_strategy", v)?);
    }
    if let Some(v) = doc
        .get("is_allow_auto_update_schema")
        .filter(|v| !v.is_null())
    {
        p.is_allow_auto_update_schema = Some(field("is_allow_auto_update_schema", v)?);
    }
    if let Some(v) = doc
        .get("schema_validation_enforced")
        .filter(|v| !v.is_null())
    {
        p.schema_validation_enforced = Some(field("schema_validation_enforced", v)?);
    }
    if let Some(Value::Object(m)) = doc.get("backlog_quota_map") {
        for (kind, q) in m {
            // `BacklogQuota` reads Pulsar's `limit` / `limitSize` pair itself.
            let q: BacklogQuota = field("backlog_quota_map", q)?;
            p.backlog_quota_map.insert(kind.clone(), q);
        }
    }
    if let Some(v) = doc.get("deduplicationEnabled").filter(|v| !v.is_null()) {
        p.deduplication_enabled = Some(field("deduplicationEnabled", v)?);
    }
    for (name, slot) in [
        ("max_producers_per_topic", &mut p.max_producers_per_topic),
        ("max_consumers_per_topic", &mut p.max_consumers_per_topic),
        (
            "max_consumers_per_subscription",
            &mut p.max_consumers_per_subscription,
        ),
        (
            "max_subscriptions_per_topic",
            &mut p.max_subscriptions_per_topic,
        ),
        ("max_topics_per_namespace", &mut p.max_topics_per_namespace),
    ] {
        if let Some(v) = doc.get(name).filter(|v| !v.is_null()) {
            // Kept as given: Pulsar stores and shows a negative limit, and reads it as unset
            // (`AbstractTopic.normalizeValue`; `Limits::resolve` here).
            *slot = Some(field(name, v)?);
        }
    }
    for (k, v) in doc {
        // An empty list of replication clusters is the local cluster, as Pulsar's
        // `validatePolicies` makes it (pulsar-admin's `namespaces create` sends `[]`).
        let no_clusters = k == "replication_clusters" && v.as_array().is_some_and(Vec::is_empty);
        if !RENDERED.contains(&k.as_str()) && !no_clusters {
            p.other.insert(k.clone(), v.clone());
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clusters_after(body: Value) -> Value {
        let Value::Object(doc) = body else {
            unreachable!()
        };
        let p = parse_document(&doc, "standalone").unwrap_or_else(|_| panic!("refused"));
        document(&p, "standalone")["replication_clusters"].clone()
    }

    #[test]
    fn an_empty_list_of_replication_clusters_is_the_local_cluster() {
        assert_eq!(
            clusters_after(json!({"replication_clusters": []})),
            json!(["standalone"])
        );
        assert_eq!(clusters_after(json!({})), json!(["standalone"]));
        assert_eq!(
            clusters_after(json!({"replication_clusters": ["east", "west"]})),
            json!(["east", "west"])
        );
    }
}
