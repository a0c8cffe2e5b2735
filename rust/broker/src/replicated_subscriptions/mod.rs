//! Replicated subscriptions, as Apache Pulsar's: a subscription subscribed with
//! `replicateSubscriptionState` moves its mark-delete in every cluster the topic replicates to.
//!
//! Each topic with such a subscription asks the other clusters, every
//! `replicatedSubscriptionsSnapshotFrequencyMillis`, where they stand ([`controller`]: a
//! snapshot REQUEST marker, replicated; each cluster answers with a RESPONSE marker holding its
//! own position, replicated back to the asker only; two rounds with more than one remote), and
//! keeps the completed snapshot as a SNAPSHOT marker in its own ledger (never replicated). A
//! subscription's dispatcher reads those markers into its [`cache`]; when its mark-delete passes
//! one, the topic writes an UPDATE marker (replicated) naming each other cluster's position,
//! where that cluster moves the subscription's mark-delete. The markers' format is
//! [`markers`]'s (`PulsarMarkers.proto`); no marker is ever delivered to a consumer.

pub mod cache;
pub mod controller;
pub mod markers;

/// The cursor property that makes a subscription replicated (Pulsar's
/// `PersistentSubscription.REPLICATED_SUBSCRIPTION_PROPERTY`); kept across restarts.
pub const REPLICATED_PROPERTY: &str = "pulsar.replicated.subscription";
