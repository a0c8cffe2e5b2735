//! Validation of the broker settings: the values that types alone cannot check, refused with
//! an error naming the key ([`BrokerError::InvalidConfig`]).

use super::inactive_topic_mode::InactiveTopicDeleteMode;
use super::schema_strategy::Strategy;
use super::{bad, AuthProvider, BrokerConfig};
use crate::error::BrokerError;

impl BrokerConfig {
    /// Checks values that types alone cannot.
    ///
    /// # Errors
    /// [`BrokerError::InvalidConfig`] naming the first bad key.
    pub fn validate(&self) -> Result<(), BrokerError> {
        if self.bind_address.parse::<std::net::IpAddr>().is_err() {
            return Err(bad("bindAddress", "must be an IP address"));
        }
        if Strategy::parse(&self.schema_compatibility_strategy).is_none() {
            return Err(bad(
                "schemaCompatibilityStrategy",
                "must be one of UNDEFINED, ALWAYS_INCOMPATIBLE, ALWAYS_COMPATIBLE, BACKWARD, FORWARD, FULL, BACKWARD_TRANSITIVE, FORWARD_TRANSITIVE, FULL_TRANSITIVE",
            ));
        }
        self.validate_bookkeeper()?;
        if self.cluster_metadata_store().is_some() {
            // A broker of a cluster opens connections to its peers: their settings must hold.
            // A standalone opens none and, as Pulsar's, starts with any of them.
            self.broker_client_auth()?;
            self.broker_client_tls()?;
        }
        super::topic_listing::TopicListing::from_config(self)?;
        if self.num_io_threads == Some(0) {
            // As Pulsar's `@FieldContext(minValue = 1)`.
            return Err(bad("numIOThreads", "must be > 0"));
        }
        if self.replicator_prefix.is_empty() || self.replicator_prefix.contains('/') {
            return Err(bad(
                "replicatorPrefix",
                "must be a non-empty name without '/'",
            ));
        }
        // Geo-replication's counts and periods, each at least 1.
        for (key, value) in [
            (
                "replicatedSubscriptionsSnapshotFrequencyMillis",
                self.replicated_subscriptions_snapshot_frequency_millis,
            ),
            (
                "replicatedSubscriptionsSnapshotTimeoutSeconds",
                self.replicated_subscriptions_snapshot_timeout_seconds,
            ),
            (
                "replicatedSubscriptionsSnapshotMaxCachedPerSubscription",
                u64::from(self.replicated_subscriptions_snapshot_max_cached_per_subscription),
            ),
            (
                "replicationProducerQueueSize",
                u64::from(self.replication_producer_queue_size),
            ),
        ] {
            if value == 0 {
                return Err(bad(key, "must be > 0"));
            }
        }
        if self.max_message_size < 1024 {
            return Err(bad("maxMessageSize", "must be at least 1024 bytes"));
        }
        if self.http_requests_limit_enabled
            && (self.http_requests_max_per_second.is_nan()
                || self.http_requests_max_per_second < 1.0)
        {
            return Err(bad("httpRequestsMaxPerSecond", "must be at least 1"));
        }
        if self.max_pending_publish_requests_per_connection == 0 {
            return Err(bad("maxPendingPublishRequestsPerConnection", "must be > 0"));
        }
        if self.dispatcher_max_read_batch_size == 0 {
            return Err(bad("dispatcherMaxReadBatchSize", "must be > 0"));
        }
        if self.dispatcher_min_read_batch_size == 0
            || self.dispatcher_min_read_batch_size > self.dispatcher_max_read_batch_size
        {
            return Err(bad(
                "dispatcherMinReadBatchSize",
                "must be in 1..=dispatcherMaxReadBatchSize",
            ));
        }
        if self.subscription_key_shared_consistent_hashing_replica_points == 0 {
            return Err(bad(
                "subscriptionKeySharedConsistentHashingReplicaPoints",
                "must be > 0",
            ));
        }
        if self.dispatcher_max_round_robin_batch_size == 0 {
            return Err(bad("dispatcherMaxRoundRobinBatchSize", "must be > 0"));
        }
        if !matches!(
            self.allow_auto_topic_creation_type.as_str(),
            "non-partitioned" | "partitioned"
        ) {
            return Err(bad(
                "allowAutoTopicCreationType",
                "must be non-partitioned or partitioned",
            ));
        }
        if self.default_num_partitions == 0 {
            return Err(bad("defaultNumPartitions", "must be > 0"));
        }
        if self.managed_ledger_min_ledger_rollover_time_minutes < 0.0 {
            return Err(bad(
                "managedLedgerMinLedgerRolloverTimeMinutes",
                "must be >= 0",
            ));
        }
        if self.managed_ledger_default_mark_delete_rate_limit <= 0.0 {
            return Err(bad(
                "managedLedgerDefaultMarkDeleteRateLimit",
                "must be > 0",
            ));
        }
        self.listeners()?;
        if self.broker_service_compaction_monitor_interval_in_seconds == 0 {
            return Err(bad(
                "brokerServiceCompactionMonitorIntervalInSeconds",
                "must be > 0",
            ));
        }
        if self.broker_service_compaction_threshold_in_bytes < 0 {
            return Err(bad(
                "brokerServiceCompactionThresholdInBytes",
                "must be >= 0",
            ));
        }
        if self.broker_deduplication_entries_interval == 0 {
            return Err(bad("brokerDeduplicationEntriesInterval", "must be > 0"));
        }
        if self.broker_deduplication_snapshot_frequency_in_seconds == 0 {
            return Err(bad(
                "brokerDeduplicationSnapshotFrequencyInSeconds",
                "must be > 0",
            ));
        }
        if self.message_expiry_check_interval_in_minutes == 0 {
            return Err(bad("messageExpiryCheckIntervalInMinutes", "must be > 0"));
        }
        if self.broker_delete_inactive_topics_frequency_seconds == 0 {
            return Err(bad(
                "brokerDeleteInactiveTopicsFrequencySeconds",
                "must be > 0",
            ));
        }
        let mode = InactiveTopicDeleteMode::parse(&self.broker_delete_inactive_topics_mode);
        if mode.is_none() {
            return Err(bad(
                "brokerDeleteInactiveTopicsMode",
                "must be delete_when_no_subscriptions or delete_when_subscriptions_caught_up",
            ));
        }
        // PIP-470: closing replaces the deletion, and only where a topic without subscriptions
        // is the inactive one (caught-up consumers would have it closed and reloaded forever).
        if self.broker_close_inactive_topics_enabled {
            if self.broker_delete_inactive_topics_enabled {
                return Err(bad(
                    "brokerCloseInactiveTopicsEnabled",
                    "brokerCloseInactiveTopicsEnabled and brokerDeleteInactiveTopicsEnabled are mutually exclusive",
                ));
            }
            if mode != Some(InactiveTopicDeleteMode::DeleteWhenNoSubscriptions) {
                return Err(bad(
                    "brokerCloseInactiveTopicsEnabled",
                    "brokerCloseInactiveTopicsEnabled only supports brokerDeleteInactiveTopicsMode=delete_when_no_subscriptions",
                ));
            }
        }
        self.validate_security()?;
        self.storage_config()
            .validate()
            .map_err(BrokerError::from)?;
        self.ledger_config().validate().map_err(BrokerError::from)?;
        Ok(())
    }

    /// The BookKeeper settings: a store this broker can use, quorums BookKeeper accepts.
    fn validate_bookkeeper(&self) -> Result<(), BrokerError> {
        let url = self.metadata_store_url.trim();
        for scheme in ["oxia:", "http://", "https://"] {
            if url.starts_with(scheme) {
                return Err(bad(
                    "metadataStoreUrl",
                    "only ZooKeeper (zk:host:port), etcd (etcd:http://host:port) or the embedded store (empty) is supported",
                ));
            }
        }
        let bk = self.bookkeeper_metadata_service_uri.trim();
        if url.starts_with(super::storage::ETCD_SCHEME)
            && !(bk.starts_with("zk+")
                || bk.starts_with("zk:")
                || bk.starts_with("metadata-store:zk:"))
        {
            // Pulsar would keep BookKeeper's metadata on etcd too (through its own bookie driver);
            // pulsar-rs's BookKeeper client reads it from ZooKeeper only.
            return Err(bad(
                "bookkeeperMetadataServiceUri",
                "must name BookKeeper's ZooKeeper (zk+hierarchical://host:port/ledgers) when metadataStoreUrl is etcd",
            ));
        }
        if self.cluster_metadata_store().is_none() {
            // On the journal the quorums are unused: accepted as Pulsar accepts them (a conf may
            // set E=1 Qw=1 and leave Qa at its default 2; Pulsar only fails at ledger creation).
            return Ok(());
        }
        if self.managed_ledger_default_ack_quorum == 0 {
            return Err(bad("managedLedgerDefaultAckQuorum", "must be at least 1"));
        }
        if self.managed_ledger_default_write_quorum < self.managed_ledger_default_ack_quorum {
            return Err(bad(
                "managedLedgerDefaultWriteQuorum",
                "must be at least managedLedgerDefaultAckQuorum",
            ));
        }
        if self.managed_ledger_default_ensemble_size < self.managed_ledger_default_write_quorum {
            return Err(bad(
                "managedLedgerDefaultEnsembleSize",
                "must be at least managedLedgerDefaultWriteQuorum",
            ));
        }
        Ok(())
    }

    /// The security keys: what types cannot check (key files are read by the server).
    fn validate_security(&self) -> Result<(), BrokerError> {
        if self.authentication_enabled {
            if self.authentication_providers.is_empty() {
                return Err(bad(
                    "authenticationProviders",
                    "authenticationEnabled needs a provider (token)",
                ));
            }
            let mut kinds = Vec::new();
            for p in &self.authentication_providers {
                match AuthProvider::from_name(p) {
                    Some(k) => kinds.push(k),
                    None => {
                        return Err(BrokerError::InvalidConfig {
                            key: "authenticationProviders".into(),
                            reason: format!(
                            "unsupported provider {p:?} (supported: AuthenticationProviderToken, \
                                 AuthenticationProviderTls, AuthenticationProviderBasic)"
                        ),
                        })
                    }
                }
            }
            if kinds.contains(&AuthProvider::Token)
                && self.token_secret_key.is_none()
                && self.token_public_key.is_none()
            {
                return Err(bad(
                    "tokenSecretKey",
                    "token authentication needs tokenSecretKey or tokenPublicKey",
                ));
            }
            if kinds.contains(&AuthProvider::Basic) && self.basic_auth_conf.is_none() {
                return Err(bad(
                    "basicAuthConf",
                    "AuthenticationProviderBasic needs basicAuthConf (the users file)",
                ));
            }
            if kinds.contains(&AuthProvider::Tls) && self.tls_trust_certs_file_path.is_none() {
                return Err(bad(
                    "tlsTrustCertsFilePath",
                    "AuthenticationProviderTls needs the CA certificates client certificates chain to",
                ));
            }
        }
        if self.authentication_refresh_check_seconds == 0 {
            return Err(bad("authenticationRefreshCheckSeconds", "must be > 0"));
        }
        if self.token_auth_claim.is_empty() {
            return Err(bad("tokenAuthClaim", "must not be empty"));
        }
        if !matches!(
            self.token_public_alg.as_str(),
            "RS256" | "RS384" | "RS512" | "PS256" | "PS384" | "PS512" | "ES256" | "ES384"
        ) {
            return Err(bad(
                "tokenPublicAlg",
                "must be one of RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384",
            ));
        }
        let tls_wanted =
            self.broker_service_port_tls.is_some() || self.web_service_port_tls.is_some();
        if tls_wanted && self.tls_certificate_file_path.is_none() {
            return Err(bad(
                "tlsCertificateFilePath",
                "a TLS port needs a certificate",
            ));
        }
        if tls_wanted && self.tls_key_file_path.is_none() {
            return Err(bad("tlsKeyFilePath", "a TLS port needs a private key"));
        }
        if self.tls_require_trusted_client_cert_on_connect
            && self.tls_trust_certs_file_path.is_none()
        {
            return Err(bad(
                "tlsTrustCertsFilePath",
                "tlsRequireTrustedClientCertOnConnect needs trusted CA certificates",
            ));
        }
        Ok(())
    }
}
