//! The broker crate's one error type. The server maps each variant to a Pulsar `ServerError`.

use pulsar_rs_ledger::LedgerError;

/// Broker-level failures.
#[derive(thiserror::Error, Debug)]
#[non_exhaustive]
pub enum BrokerError {
    /// Storage failed.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// A setting is invalid.
    #[error("invalid setting {key}: {reason}")]
    InvalidConfig {
        /// Pulsar's key name.
        key: String,
        /// Why it was refused.
        reason: String,
    },
    /// A topic name does not parse.
    #[error("invalid topic name {name:?}: {reason}")]
    InvalidTopicName {
        /// The name as given.
        name: String,
        /// Why.
        reason: String,
    },
    /// The topic does not exist and may not be created (Pulsar's text).
    #[error("Topic {0} not found")]
    TopicNotFound(String),
    /// The subscription does not exist and may not be created (Pulsar's text).
    #[error("Subscription {subscription} not found for topic {topic}")]
    SubscriptionNotFound {
        /// The subscription's name.
        subscription: String,
        /// The topic asked (a partitioned topic's base name when asked by it).
        topic: String,
    },
    /// An exclusive subscription already has a consumer, or the subscription type differs.
    #[error("{0}")]
    ConsumerBusy(String),
    /// A producer with this name is already connected, or the access mode conflicts.
    #[error("{0}")]
    ProducerBusy(String),
    /// An exclusive access mode conflicts, or the producer was fenced by another (Pulsar's
    /// ProducerFencedException).
    #[error("{0}")]
    ProducerFenced(String),
    /// The request is not allowed in this state or with these arguments.
    #[error("{0}")]
    NotAllowed(String),
    /// A delete without `force` found producers or consumers connected (Pulsar's
    /// `TopicBusyException`); the message is Pulsar's.
    #[error("{0}")]
    TopicBusy(String),
    /// Already exists (partitioned topic metadata, ...).
    #[error("{0} already exists")]
    AlreadyExists(String),
    /// A Key_Shared range conflicts with an existing consumer's.
    #[error("{0}")]
    ConsumerAssign(String),
    /// A backlog quota is exceeded with a producer-blocking policy.
    #[error("Cannot create producer on topic with backlog quota exceeded ({0:?})")]
    QuotaExceeded(crate::policies::backlog_quota::RetentionPolicy),
    /// A schema is refused (Pulsar's `IncompatibleSchemaException`); the message is Pulsar's.
    #[error("{0}")]
    IncompatibleSchema(String),
    /// No transaction coordinator with this id is loaded here (TransactionCoordinatorNotFound).
    #[error("{0}")]
    CoordinatorNotFound(String),
    /// The transaction is in a state that does not allow the request (InvalidTxnStatus).
    #[error("{0}")]
    InvalidTxnStatus(String),
    /// The transaction is unknown to its coordinator (TransactionNotFound).
    #[error("{0}")]
    TransactionNotFound(String),
    /// A transactional ack conflicts with an ack or another transaction (TransactionConflict).
    #[error("{0}")]
    TransactionConflict(String),
    /// NEW_TXN on a coordinator holding `maxActiveTransactionsPerCoordinator` transactions not
    /// yet ended (Pulsar's `ReachMaxActiveTxnException`): the request gets no answer at all.
    #[error("{0}")]
    ReachMaxActiveTxn(String),
    /// The topic was terminated: no producer and no message is taken any more (Pulsar's
    /// `TopicTerminatedException`).
    #[error("{0}")]
    TopicTerminated(String),
    /// The broker is shutting down.
    #[error("broker is shutting down")]
    ShuttingDown,
    /// In a cluster, the topic's bundle is owned by another broker (or none): the client must
    /// look the topic up again.
    #[error("{0}")]
    NotServed(String),
}

impl BrokerError {
    /// A topic whose bundle this broker does not own, in Pulsar's words
    /// (`checkTopicNsOwnership`): the client must look the topic up again.
    #[must_use]
    pub fn not_served(topic: &str, namespace: &str) -> BrokerError {
        BrokerError::NotServed(format!(
            "Namespace bundle for topic ({topic}) not served by this instance. Please redo the lookup. Request is denied: namespace={namespace}"
        ))
    }
}
