//! A topic's offload settings, resolved as Pulsar's `OffloadPoliciesImpl.mergeConfiguration`:
//! field by field, the topic's `offloadPolicies`, then the namespace's `offload_policies` (with
//! its older scalar fields `offload_threshold`, `offload_threshold_in_seconds`,
//! `offload_deletion_lag_ms` where the object leaves a field unset, as `oldPoliciesCompatible`),
//! then the broker's settings. The result is keyed by the policy object's field names
//! (`managedLedgerOffloadThresholdInBytes`, `managedLedgerOffloadDeletionLagInMillis`,
//! `managedLedgerOffloadedReadPriority`, the driver's keys), with every value as text.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Policies;
use crate::config::BrokerConfig;

/// The threshold in bytes (policy field).
pub const THRESHOLD_BYTES: &str = "managedLedgerOffloadThresholdInBytes";
/// The threshold in seconds (policy field and broker key).
pub const THRESHOLD_SECONDS: &str = "managedLedgerOffloadThresholdInSeconds";
/// The deletion lag (policy field).
pub const DELETION_LAG: &str = "managedLedgerOffloadDeletionLagInMillis";
/// The read priority (policy field).
pub const READ_PRIORITY: &str = "managedLedgerOffloadedReadPriority";
/// The driver (policy field and broker key).
pub const DRIVER: &str = "managedLedgerOffloadDriver";

/// Broker keys whose policy field has another name (Pulsar's `OffloadPoliciesImpl` reads both).
const BROKER_ALIASES: &[(&str, &str)] = &[
    (
        "managedLedgerOffloadAutoTriggerSizeThresholdBytes",
        THRESHOLD_BYTES,
    ),
    ("managedLedgerOffloadDeletionLagMs", DELETION_LAG),
    ("managedLedgerDataReadPriority", READ_PRIORITY),
];

/// The namespace's older scalar fields and the policy field each fills (unset: -1 or null).
const NAMESPACE_SCALARS: &[(&str, &str)] = &[
    ("offload_threshold", THRESHOLD_BYTES),
    ("offload_threshold_in_seconds", THRESHOLD_SECONDS),
    ("offload_deletion_lag_ms", DELETION_LAG),
];

fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(s.clone()),
        Value::Object(_) | Value::Array(_) => None,
        other => Some(other.to_string()),
    }
}

fn object_fields(p: &Policies, key: &str) -> BTreeMap<String, String> {
    p.other
        .get(key)
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| text(v).map(|t| (k.clone(), t)))
                .collect()
        })
        .unwrap_or_default()
}

/// The resolved offload settings of a topic (see the module docs).
#[must_use]
pub fn resolve(
    topic: &Policies,
    namespace: &Policies,
    c: &BrokerConfig,
) -> BTreeMap<String, String> {
    let mut merged = object_fields(topic, "offloadPolicies");
    let mut ns = object_fields(namespace, "offload_policies");
    for (scalar, field) in NAMESPACE_SCALARS {
        let set = namespace.other.get(*scalar).and_then(text).filter(|t| {
            t.parse::<i64>()
                .map_or(true, |n| n != -1 || *scalar == "offload_deletion_lag_ms")
        });
        if let Some(v) = set {
            ns.entry((*field).to_owned()).or_insert(v);
        }
    }
    for (k, v) in ns {
        merged.entry(k).or_insert(v);
    }
    for (k, v) in &c.offload_properties {
        let field = BROKER_ALIASES
            .iter()
            .find(|(broker, _)| broker == k)
            .map_or(k.as_str(), |(_, field)| field);
        merged.entry(field.to_owned()).or_insert_with(|| v.clone());
    }
    merged
}

/// The drivers Pulsar's offload policies accept (`OffloadPoliciesImpl.INTERNAL_SUPPORTED_DRIVER`).
pub const POLICY_DRIVERS: &[&str] = &[
    "aws-s3",
    "S3",
    "google-cloud-storage",
    "azureblob",
    "aliyun-oss",
    "filesystem",
];

/// Checks an `offloadPolicies` document as Pulsar's admin does (`validateOffloadPolicies`): a
/// driver it knows, and a bucket unless the driver is `filesystem`.
///
/// # Errors
/// The reason (Pulsar answers 412).
pub fn validate(policies: &Value) -> Result<(), String> {
    let Some(o) = policies.as_object() else {
        return Err("offload policies must be a JSON object".into());
    };
    let field = |k: &str| o.get(k).and_then(text);
    let driver = field(DRIVER).unwrap_or_default();
    if !POLICY_DRIVERS
        .iter()
        .any(|d| d.eq_ignore_ascii_case(&driver))
    {
        return Err(format!(
            "The driver {driver:?} is not supported; supported drivers: {}",
            POLICY_DRIVERS.join(", ")
        ));
    }
    let bucket = [
        "managedLedgerOffloadBucket",
        "s3ManagedLedgerOffloadBucket",
        "gcsManagedLedgerOffloadBucket",
    ]
    .iter()
    .find_map(|k| field(k));
    if !driver.eq_ignore_ascii_case("filesystem") && bucket.is_none() {
        return Err("The bucket must be specified for tiered storage".into());
    }
    if let Some(p) = field(READ_PRIORITY) {
        if !["bookkeeper-first", "tiered-storage-first"].contains(&p.as_str()) {
            return Err(format!("Invalid {READ_PRIORITY} {p:?}"));
        }
    }
    Ok(())
}

/// A resolved numeric field (`None`: unset or not a number).
#[must_use]
pub fn number(settings: &BTreeMap<String, String>, field: &str) -> Option<i64> {
    settings.get(field).and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policies(fields: &[(&str, Value)]) -> Policies {
        let mut p = Policies::default();
        for (k, v) in fields {
            p.other.insert((*k).to_owned(), v.clone());
        }
        p
    }

    #[test]
    fn topic_then_namespace_then_broker_field_by_field() {
        let c = BrokerConfig::from_properties(
            "managedLedgerOffloadDriver=S3\n\
             managedLedgerOffloadBucket=broker-bucket\n\
             managedLedgerOffloadServiceEndpoint=http://127.0.0.1:1\n\
             managedLedgerOffloadAutoTriggerSizeThresholdBytes=100\n\
             managedLedgerOffloadDeletionLagMs=5000\n\
             managedLedgerDataReadPriority=bookkeeper-first\n",
        )
        .unwrap();
        let ns = policies(&[
            (
                "offload_policies",
                serde_json::json!({"managedLedgerOffloadBucket": "ns-bucket", "managedLedgerOffloadThresholdInBytes": null}),
            ),
            ("offload_threshold", Value::from(-1)),
            ("offload_threshold_in_seconds", Value::from(60)),
        ]);
        let topic = policies(&[(
            "offloadPolicies",
            serde_json::json!({"managedLedgerOffloadDeletionLagInMillis": 0}),
        )]);
        let r = resolve(&topic, &ns, &c);
        assert_eq!(r[DRIVER], "S3");
        assert_eq!(r["managedLedgerOffloadBucket"], "ns-bucket");
        assert_eq!(number(&r, DELETION_LAG), Some(0));
        assert_eq!(number(&r, THRESHOLD_SECONDS), Some(60));
        // The namespace's -1 is "unset": the broker's value counts.
        assert_eq!(number(&r, THRESHOLD_BYTES), Some(100));
        assert_eq!(r[READ_PRIORITY], "bookkeeper-first");
        let bare = resolve(
            &Policies::default(),
            &Policies::default(),
            &BrokerConfig::default(),
        );
        assert!(bare.is_empty());
    }

    #[test]
    fn validation_is_pulsars() {
        let ok = serde_json::json!({"managedLedgerOffloadDriver": "S3", "managedLedgerOffloadBucket": "b"});
        assert!(validate(&ok).is_ok());
        assert!(validate(&serde_json::json!({"managedLedgerOffloadDriver": "filesystem"})).is_ok());
        assert!(
            validate(&serde_json::json!({"managedLedgerOffloadDriver": "S3"}))
                .unwrap_err()
                .contains("bucket")
        );
        assert!(validate(&serde_json::json!({"managedLedgerOffloadDriver": "ftp", "managedLedgerOffloadBucket": "b"}))
            .unwrap_err()
            .contains("not supported"));
    }
}
