//! Pulsar's `InactiveTopicDeleteMode`: the values of the broker setting
//! `brokerDeleteInactiveTopicsMode` (checked when the settings are validated) and of a
//! namespace's or topic's `inactiveTopicPolicies`; it stands with the settings, below the
//! policies.

use serde::{Deserialize, Serialize};

/// Pulsar's `InactiveTopicDeleteMode`: what makes a topic without producers still active.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InactiveTopicDeleteMode {
    /// Active while it has any subscription.
    #[default]
    DeleteWhenNoSubscriptions,
    /// Active while any subscription has a backlog.
    DeleteWhenSubscriptionsCaughtUp,
}

impl InactiveTopicDeleteMode {
    /// Parses Pulsar's name (`delete_when_no_subscriptions`, ...).
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "delete_when_no_subscriptions" => Some(Self::DeleteWhenNoSubscriptions),
            "delete_when_subscriptions_caught_up" => Some(Self::DeleteWhenSubscriptionsCaughtUp),
            _ => None,
        }
    }
}
