//! PIP-437 (Pulsar 4.2): a topic's limits on delivery delays. `maxDelayedDeliveryTimeInSeconds`
//! (topic, else namespace, else the delayed-delivery policies' `maxDeliveryDelayInMillis` of
//! PIP-315, else the broker's `delayedDeliveryMaxDelayInMillis`) refuses a SEND asking for a
//! longer delay; `fixedDelayedDeliveryTimeInSeconds` (topic, else namespace) gives every message
//! that delay instead of the one its producer asked for, and then the maximum does not apply.
//! Both values are kept under these names in the topic's and the namespace's documents.

use serde_json::Value;

use super::Policies;
use crate::config::BrokerConfig;

/// The key of the maximum in both documents (PIP-437's `TopicPolicies` / `Policies` field).
pub const MAX_KEY: &str = "maxDelayedDeliveryTimeInSeconds";
/// The key of the fixed delay in both documents.
pub const FIXED_KEY: &str = "fixedDelayedDeliveryTimeInSeconds";

/// The delivery-delay limits in force on a topic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeliveryDelay {
    /// Longest delay a message may ask for, in ms (0 = no limit).
    pub max_ms: i64,
    /// Delay every message is given, in ms (0 = none: the producer's `deliver_at_time` stands).
    pub fixed_ms: i64,
}

/// What a SEND becomes under [`DeliveryDelay`].
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Stored as sent.
    AsSent,
    /// Stored with this `deliver_at_time` (ms) in place of the producer's.
    DeliverAt(i64),
    /// Refused: it asks for more than `max_ms`.
    TooLate {
        /// The maximum in force, in ms.
        max_ms: i64,
    },
}

impl DeliveryDelay {
    /// Resolves a topic's limits from its document `tp`, its namespace's `np` and the broker's
    /// keys (topic wins over namespace wins over broker).
    #[must_use]
    pub fn resolve(tp: &Policies, np: &Policies, c: &BrokerConfig) -> Self {
        let seconds = |key: &str| {
            field(tp, key)
                .or_else(|| field(np, key))
                .map(|s| s.saturating_mul(1000))
        };
        let pip_315 = field(tp, "delayedDeliveryMaxDelayInMillis").or_else(|| {
            np.other
                .get("delayed_delivery_policies")
                .and_then(|d| d.get("maxDeliveryDelayInMillis"))
                .and_then(Value::as_i64)
        });
        Self {
            max_ms: seconds(MAX_KEY)
                .or(pip_315)
                .unwrap_or(c.delayed_delivery_max_delay_in_millis)
                .max(0),
            fixed_ms: seconds(FIXED_KEY).unwrap_or(0).max(0),
        }
    }

    /// The verdict on a message asking for `deliver_at` (ms) at `now_ms`: the fixed delay
    /// first (it overrides the producer's and ignores the maximum, as PIP-437 says), then the
    /// maximum against the delay from now.
    #[must_use]
    pub fn verdict(&self, deliver_at: Option<i64>, now_ms: i64) -> Verdict {
        if self.fixed_ms > 0 {
            return Verdict::DeliverAt(now_ms.saturating_add(self.fixed_ms));
        }
        match deliver_at {
            Some(at) if self.max_ms > 0 && at.saturating_sub(now_ms) > self.max_ms => {
                Verdict::TooLate {
                    max_ms: self.max_ms,
                }
            }
            _ => Verdict::AsSent,
        }
    }
}

/// A number kept under `key` among a document's other fields (`null` counts as unset).
fn field(p: &Policies, key: &str) -> Option<i64> {
    p.other.get(key).and_then(Value::as_i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(fields: &[(&str, Value)]) -> Policies {
        let mut p = Policies::default();
        for (k, v) in fields {
            p.other.insert((*k).to_owned(), v.clone());
        }
        p
    }

    #[test]
    fn the_topic_wins_over_the_namespace_and_the_namespace_over_the_broker() {
        let c = BrokerConfig {
            delayed_delivery_max_delay_in_millis: 7_000,
            ..BrokerConfig::default()
        };
        let none = Policies::default();
        assert_eq!(DeliveryDelay::resolve(&none, &none, &c).max_ms, 7_000);
        let ns = doc(&[(MAX_KEY, Value::from(60)), (FIXED_KEY, Value::from(5))]);
        let d = DeliveryDelay::resolve(&none, &ns, &c);
        assert_eq!((d.max_ms, d.fixed_ms), (60_000, 5_000));
        let topic = doc(&[(MAX_KEY, Value::from(2)), (FIXED_KEY, Value::from(0))]);
        let d = DeliveryDelay::resolve(&topic, &ns, &c);
        assert_eq!((d.max_ms, d.fixed_ms), (2_000, 0));
    }

    #[test]
    fn pip_315s_maximum_counts_where_pip_437s_is_unset() {
        let c = BrokerConfig::default();
        let mut ns = Policies::default();
        ns.other.insert(
            "delayed_delivery_policies".into(),
            serde_json::json!({"active": true, "tickTime": 1000, "maxDeliveryDelayInMillis": 900}),
        );
        let none = Policies::default();
        assert_eq!(DeliveryDelay::resolve(&none, &ns, &c).max_ms, 900);
        let topic = doc(&[("delayedDeliveryMaxDelayInMillis", Value::from(400))]);
        assert_eq!(DeliveryDelay::resolve(&topic, &ns, &c).max_ms, 400);
    }

    #[test]
    fn the_fixed_delay_overrides_and_the_maximum_refuses() {
        let max = DeliveryDelay {
            max_ms: 1_000,
            fixed_ms: 0,
        };
        assert_eq!(max.verdict(Some(10_999), 10_000), Verdict::AsSent);
        assert_eq!(max.verdict(Some(11_000), 10_000), Verdict::AsSent);
        assert_eq!(
            max.verdict(Some(11_001), 10_000),
            Verdict::TooLate { max_ms: 1_000 }
        );
        assert_eq!(max.verdict(None, 10_000), Verdict::AsSent);
        let fixed = DeliveryDelay {
            max_ms: 1_000,
            fixed_ms: 5_000,
        };
        assert_eq!(fixed.verdict(None, 10_000), Verdict::DeliverAt(15_000));
        assert_eq!(
            fixed.verdict(Some(99_000), 10_000),
            Verdict::DeliverAt(15_000)
        );
        assert_eq!(
            DeliveryDelay::default().verdict(Some(i64::MAX), 0),
            Verdict::AsSent
        );
    }
}
