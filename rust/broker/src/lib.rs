//! The broker core of pulsar_rs: topics, producers, subscriptions, consumers, dispatchers,
//! permits and rate counters. It knows nothing of sockets: the server crate turns wire commands
//! into calls here and implements [`consumer::ConsumerSink`] to carry messages back.

pub mod compaction;
pub mod config;
pub mod consumer;
pub mod dispatch;
pub mod error;
pub mod hash;
pub mod metadata_keys;
pub mod naming;
pub mod nonpersistent;
pub mod permits;
pub mod policies;
pub mod rate;
pub mod replicated_subscriptions;
pub mod schema;
pub mod service;
pub mod subscription;
pub mod topic;
pub mod topic_list;
pub mod transaction;

pub use config::{AuthProvider, BrokerConfig};
pub use consumer::{Consumer, ConsumerEvent, ConsumerSink, SubType};
pub use dispatch::entry::{entry_info, EntryInfo};
pub use dispatch::key_shared::{KeySharedMeta, KeySharedMode};
pub use error::BrokerError;
pub use naming::TopicName;
pub use permits::PermitCounter;
pub use rate::{Meter, TokenBucket};
pub use schema::info::SchemaInfo;
pub use service::backlog_quota::QuotaVerdict;
pub use service::BrokerService;
pub use subscription::{Subscription, SubscriptionStats};
pub use topic::producers::Admission;
pub use topic::publish::Published;
pub use topic::{AccessMode, ProducerInfo, ProducerMeters, Topic};
