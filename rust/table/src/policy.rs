//! The `icebergTable` policy, at namespace and topic level (a topic's own wins, as every
//! Pulsar topic policy): whether the topic is committed to its table, how often the open tail
//! is committed, and how the table is partitioned by publish time.

use serde_json::Value;

/// The document key the policy is kept under, in namespace and topic policies.
pub const KEY: &str = "icebergTable";

/// The default commit interval (seconds): how old the newest uncommitted message may get.
pub const DEFAULT_COMMIT_INTERVAL_SECONDS: u64 = 60;

/// How a table is partitioned by `__publish_time`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PartitionBy {
    /// `day(__publish_time)`.
    #[default]
    Day,
    /// `hour(__publish_time)`.
    Hour,
    /// Unpartitioned.
    None,
}

impl PartitionBy {
    /// The policy's spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Day => "day",
            Self::Hour => "hour",
            Self::None => "none",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "day" => Some(Self::Day),
            "hour" => Some(Self::Hour),
            "none" => Some(Self::None),
            _ => None,
        }
    }
}

/// One level's `icebergTable` policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IcebergTablePolicy {
    /// Whether the topic's messages go to its table.
    pub enabled: bool,
    /// Seconds between commits of a topic's new messages (at least 1).
    pub commit_interval_seconds: u64,
    /// The partitioning of a table this policy creates (an existing table keeps its own).
    pub partition_by: PartitionBy,
}

impl IcebergTablePolicy {
    /// Parses an admin body: `{"enabled": true, "commitIntervalSeconds": 60, "partitionBy":
    /// "day"}` (missing fields take their defaults).
    ///
    /// # Errors
    /// The reason, for a 400/412 answer: not an object, an unknown field, a wrong type, an
    /// interval below 1 s, a partitioning other than `day`, `hour` or `none`.
    pub fn parse(v: &Value) -> Result<Self, String> {
        let Some(o) = v.as_object() else {
            return Err("icebergTable must be an object".into());
        };
        if let Some(k) = o
            .keys()
            .find(|k| !["enabled", "commitIntervalSeconds", "partitionBy"].contains(&k.as_str()))
        {
            return Err(format!("icebergTable: unknown field {k}"));
        }
        let enabled = match o.get("enabled") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err("icebergTable.enabled must be true or false".into()),
        };
        let commit_interval_seconds = match o.get("commitIntervalSeconds") {
            None | Some(Value::Null) => DEFAULT_COMMIT_INTERVAL_SECONDS,
            Some(n) => n.as_u64().filter(|&n| n >= 1).ok_or(
                "icebergTable.commitIntervalSeconds must be a whole number of seconds, at least 1",
            )?,
        };
        let partition_by = match o.get("partitionBy") {
            None | Some(Value::Null) => PartitionBy::Day,
            Some(Value::String(s)) => {
                PartitionBy::parse(s).ok_or("icebergTable.partitionBy must be day, hour or none")?
            }
            Some(_) => return Err("icebergTable.partitionBy must be day, hour or none".into()),
        };
        Ok(Self {
            enabled,
            commit_interval_seconds,
            partition_by,
        })
    }

    /// The policy as its admin JSON.
    #[must_use]
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "enabled": self.enabled,
            "commitIntervalSeconds": self.commit_interval_seconds,
            "partitionBy": self.partition_by.as_str(),
        })
    }

    /// The policy in force for a topic: its own, else its namespace's (a stored document that
    /// no longer parses counts as unset).
    #[must_use]
    pub fn resolve(topic: Option<&Value>, namespace: Option<&Value>) -> Option<Self> {
        topic
            .and_then(|v| Self::parse(v).ok())
            .or_else(|| namespace.and_then(|v| Self::parse(v).ok()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn defaults_and_refusals() {
        let p = IcebergTablePolicy::parse(&json!({"enabled": true})).unwrap();
        assert_eq!(p.commit_interval_seconds, DEFAULT_COMMIT_INTERVAL_SECONDS);
        assert_eq!(p.partition_by, PartitionBy::Day);
        let p = IcebergTablePolicy::parse(
            &json!({"enabled": true, "commitIntervalSeconds": 5, "partitionBy": "HOUR"}),
        )
        .unwrap();
        assert_eq!(
            (p.commit_interval_seconds, p.partition_by),
            (5, PartitionBy::Hour)
        );
        for bad in [
            json!([]),
            json!({"enabled": "yes"}),
            json!({"commitIntervalSeconds": 0}),
            json!({"commitIntervalSeconds": -3}),
            json!({"partitionBy": "week"}),
            json!({"tableName": "x"}),
        ] {
            assert!(IcebergTablePolicy::parse(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_topic_level_wins() {
        let ns = json!({"enabled": true, "commitIntervalSeconds": 9});
        let topic = json!({"enabled": false});
        let p = IcebergTablePolicy::resolve(Some(&topic), Some(&ns)).unwrap();
        assert!(!p.enabled);
        let p = IcebergTablePolicy::resolve(None, Some(&ns)).unwrap();
        assert_eq!(p.commit_interval_seconds, 9);
        assert_eq!(IcebergTablePolicy::resolve(None, None), None);
    }
}
