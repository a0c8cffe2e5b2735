//! Broker settings, with Pulsar's `broker.conf` key names and defaults.
//!
//! Read from Pulsar's own `broker.conf` / `standalone.conf`, a TOML file or Python keyword
//! arguments ([`load`], over [`properties`] text and the [`pulsar_keys`] list); bad values are
//! refused with an error naming the key ([`validate`](BrokerConfig::validate), in `validate.rs`).
//! Advertised listeners are parsed in [`listeners`]; the storage layer's settings are derived
//! in `storage.rs`.

pub mod broker_client;
pub mod inactive_topic_mode;
pub mod listeners;
pub mod load;
pub mod offload_keys;
pub mod properties;
pub mod pulsar_keys;
pub mod schema_strategy;
mod storage;
pub mod topic_listing;
mod validate;

use serde::{Deserialize, Serialize};

use crate::error::BrokerError;

/// Every setting the broker understands. Field names map to camelCase keys.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[allow(missing_docs)]
pub struct BrokerConfig {
    /// Cluster name reported in stats.
    pub cluster_name: String,
    /// Address the service and admin ports bind to.
    pub bind_address: String,
    /// Host name put in LOOKUP answers (defaults to the bind address).
    pub advertised_address: Option<String>,
    /// Named addresses for lookups (`name:pulsar://host:port,...`; see [`listeners`]).
    pub advertised_listeners: Option<String>,
    /// The listener lookups answer with when the client names none (default: the first).
    pub internal_listener_name: Option<String>,
    /// Pulsar binary protocol port (0 = ephemeral).
    pub broker_service_port: u16,
    /// Admin REST / metrics port (0 = ephemeral).
    pub web_service_port: u16,
    /// Data directory (the standalone default is `./data`; Python uses a temporary one).
    pub data_dir: Option<String>,
    /// Threads serving connections (Pulsar's Netty IO threads; here the Tokio workers). None:
    /// one per core less one, at least one ([`BrokerConfig::io_threads`]).
    #[serde(rename = "numIOThreads")]
    pub num_io_threads: Option<u32>,

    pub journal_sync_data: bool,
    pub auto_skip_non_recoverable_data: bool,
    #[serde(rename = "journalMaxSizeMB")]
    pub journal_max_size_mb: u64,
    #[serde(rename = "journalMaxGroupWaitMSec")]
    pub journal_max_group_wait_msec: u64,
    pub journal_buffered_writes_threshold: u64,
    pub journal_adaptive_group_wait_micros: u64,
    #[serde(rename = "journalPreAllocSizeMB")]
    pub journal_pre_alloc_size_mb: u64,
    /// Ours: durable journal rounds written past the page cache where the file system takes it.
    pub journal_direct_writes: bool,
    #[serde(rename = "managedLedgerCacheSizeMB")]
    pub managed_ledger_cache_size_mb: u64,
    pub managed_ledger_cache_eviction_watermark: f64,
    pub managed_ledger_cache_eviction_time_threshold_millis: u64,
    pub managed_ledger_cache_eviction_interval_ms: u64,
    pub managed_ledger_max_entries_per_ledger: u64,
    /// Where the topics live: empty (or Pulsar's embedded `rocksdb:`/`memory:` stores) keeps
    /// them in the local journal; `zk:host:port[,host:port]` puts every managed ledger on
    /// BookKeeper, its ledger list and cursors in that ZooKeeper, in Pulsar's formats.
    pub metadata_store_url: String,
    /// The configuration (global) metadata store, shared by clusters that know each other:
    /// cluster records, tenants, namespace policies and partitioned-topic metadata are kept
    /// there, everything else in `metadataStoreUrl`'s. Empty (or the same URL): that store.
    pub configuration_metadata_store_url: String,
    /// BookKeeper's metadata service; empty: `metadata-store:{metadataStoreUrl}/ledgers`.
    pub bookkeeper_metadata_service_uri: String,
    /// Bookies each ledger is striped over (E).
    pub managed_ledger_default_ensemble_size: usize,
    /// Copies of each entry (Qw).
    pub managed_ledger_default_write_quorum: usize,
    /// Copies acknowledged before an entry is (Qa).
    pub managed_ledger_default_ack_quorum: usize,
    /// The largest ensemble a `persistence` policy may ask for.
    pub managed_ledger_max_ensemble_size: usize,
    /// The largest write quorum a `persistence` policy may ask for.
    pub managed_ledger_max_write_quorum: usize,
    /// The largest ack quorum a `persistence` policy may ask for.
    pub managed_ledger_max_ack_quorum: usize,
    /// Per bookie request.
    pub bookkeeper_client_timeout_in_seconds: u64,
    /// The metadata-store session: this long after a broker stops answering, its bundles go
    /// to the other brokers of the cluster (Pulsar's `zooKeeperSessionTimeoutMillis` too).
    pub metadata_store_session_timeout_millis: u64,
    /// Bundles of a namespace created through this broker, in a cluster.
    pub default_number_of_namespace_bundles: u32,
    /// Split a bundle this broker owns once its load passes one of the limits below.
    pub load_balancer_auto_bundle_split_enabled: bool,
    /// Unload the halves of an automatic split (the leader places them anew).
    pub load_balancer_auto_unload_split_bundles_enabled: bool,
    /// Topics in one bundle before it is split (0: no limit).
    pub load_balancer_namespace_bundle_max_topics: u64,
    /// Producers and consumers in one bundle before it is split (0: no limit).
    pub load_balancer_namespace_bundle_max_sessions: u64,
    /// Messages per second in and out of one bundle before it is split (0: no limit).
    pub load_balancer_namespace_bundle_max_msg_rate: f64,
    /// MB per second in and out of one bundle before it is split (0: no limit).
    pub load_balancer_namespace_bundle_max_bandwidth_mbytes: f64,
    /// A namespace is not split past this many bundles.
    pub load_balancer_namespace_maximum_bundles: u32,
    /// How often the bundles are checked for splitting, in minutes.
    pub load_balancer_split_interval_minutes: u64,
    /// Bundles split at most per check.
    pub load_balancer_max_number_of_bundles_to_split_per_cycle: u32,
    /// The split algorithm of automatic splits (and of `split-bundle` without one).
    pub default_namespace_bundle_split_algorithm: String,
    /// The leader unloads bundles from overloaded brokers (load shedding).
    pub load_balancer_shedding_enabled: bool,
    /// How often the leader looks for load to shed, in minutes.
    pub load_balancer_shedding_interval_minutes: u64,
    /// A bundle shed is not shed again within this many minutes.
    pub load_balancer_shedding_grace_period_minutes: u64,
    /// `AvgShedder` (default, as Pulsar 5.0), `ThresholdShedder` (Pulsar 2.10 to 4.x) or
    /// `UniformLoadShedder` (Pulsar's class names).
    pub load_balancer_load_shedding_strategy: String,
    /// Where a bundle goes: `AvgShedder` (default, as Pulsar 5.0: a bundle it shed goes to the
    /// broker it was paired with) or `LeastLongTermMessageRate` (the least-loaded broker).
    pub load_balancer_load_placement_strategy: String,
    /// `AvgShedder`: a pair of brokers this many score points apart counts a low hit.
    pub load_balancer_avg_shedder_low_threshold: f64,
    /// `AvgShedder`: a pair of brokers this many score points apart counts a high hit too.
    pub load_balancer_avg_shedder_high_threshold: f64,
    /// `AvgShedder`: consecutive low hits before a pair sheds.
    pub load_balancer_avg_shedder_hit_count_low_threshold: u32,
    /// `AvgShedder`: consecutive high hits before a pair sheds.
    pub load_balancer_avg_shedder_hit_count_high_threshold: u32,
    /// `ThresholdShedder`: shed from a broker this many percentage points over the average usage.
    pub load_balancer_broker_threshold_shedder_percentage: f64,
    /// `ThresholdShedder`: the share of the past in a broker's averaged usage.
    pub load_balancer_history_resource_percentage: f64,
    /// `ThresholdShedder`: no shedding of less than this many MB/s.
    pub load_balancer_bundle_unload_min_throughput_threshold: f64,
    /// The weight of the broker's CPU in its usage.
    #[serde(rename = "loadBalancerCPUResourceWeight")]
    pub load_balancer_cpu_resource_weight: f64,
    /// The weight of direct memory in a broker's usage (none here: 0 by default, as Pulsar's).
    pub load_balancer_direct_memory_resource_weight: f64,
    /// The weight of incoming bandwidth in a broker's usage.
    pub load_balancer_bandwidth_in_resource_weight: f64,
    /// The weight of outgoing bandwidth in a broker's usage.
    pub load_balancer_bandwidth_out_resource_weight: f64,
    /// The network's speed, Gbit/s, for the bandwidth usage (unset: bandwidth is not counted).
    pub load_balancer_override_broker_nic_speed_gbps: Option<f64>,
    /// `UniformLoadShedder`: shed when the busiest broker has this many percent more messages
    /// per second than the quietest.
    pub load_balancer_msg_rate_difference_shedder_threshold: f64,
    /// `UniformLoadShedder`: shed when the busiest broker has this many times the quietest's bytes
    /// per second.
    pub load_balancer_msg_throughput_multiplier_difference_shedder_threshold: f64,
    /// `UniformLoadShedder`: the share of the difference shed.
    pub max_unload_percentage: f64,
    /// `UniformLoadShedder`: no shedding of fewer messages per second.
    pub min_unload_message: u64,
    /// `UniformLoadShedder`: no shedding of fewer bytes per second.
    pub min_unload_message_throughput: u64,
    /// `UniformLoadShedder`: bundles shed at most per round (-1: no limit).
    pub max_unload_bundle_num_per_shedding: i64,
    /// A placement avoids a broker whose busiest resource is past this percentage.
    pub load_balancer_broker_overloaded_threshold_percentage: f64,
    /// A load report is written when a figure moved by more than this percentage.
    pub load_balancer_report_update_threshold_percentage: f64,
    /// Load reports are written at most this often (ms), bundle changes aside.
    pub load_balancer_report_update_min_interval_millis: u64,
    /// Load reports are written at least this often (minutes).
    pub load_balancer_report_update_max_interval_minutes: u64,
    pub managed_ledger_max_size_per_ledger_mbytes: u64,
    /// PIP-444 (Pulsar 4.2): ledger deletions under way at once across the broker, on BookKeeper
    /// (0 or less: no limit).
    pub managed_ledger_delete_max_concurrent_requests: i64,
    pub managed_ledger_min_ledger_rollover_time_minutes: f64,
    pub managed_ledger_max_ledger_rollover_time_minutes: f64,
    pub managed_ledger_default_mark_delete_rate_limit: f64,
    pub default_retention_time_in_minutes: i64,
    #[serde(rename = "defaultRetentionSizeInMB")]
    pub default_retention_size_in_mb: i64,

    pub max_message_size: u32,
    pub max_pending_publish_requests_per_connection: u32,
    pub keep_alive_interval_seconds: u64,
    /// Pattern consumers' topic lists filtered here, and topic-list watchers
    /// (`supports_topic_watchers`, WATCH_TOPIC_LIST) offered.
    pub enable_broker_side_subscription_pattern_evaluation: bool,
    /// The longest pattern a watcher or a filtered topic list takes.
    pub subscription_pattern_max_length: u32,
    /// PIP-452 (Pulsar 4.2): topic-list watchers offered (with
    /// `enableBrokerSideSubscriptionPatternEvaluation`); a watcher ignores the client's
    /// properties, so a listing by properties needs it off.
    pub enable_broker_topic_list_watcher: bool,
    /// PIP-452: how the topic lists of the admin API and of GET_TOPICS_OF_NAMESPACE use the
    /// client's properties ([`topic_listing::TopicListing`]).
    pub pulsar_resources_extended_class_name: String,
    /// PIP-442: memory (MB) the topic lists being assembled may take at once (GET_TOPICS_OF_NAMESPACE
    /// and topic-list watchers; 0 = no limit).
    #[serde(rename = "maxTopicListInFlightHeapMemSizeMB")]
    pub max_topic_list_in_flight_heap_mem_size_mb: u32,
    /// PIP-442: how long a topic list waits for its memory (ms) before it is refused.
    pub max_topic_list_in_flight_heap_mem_size_permits_acquire_timeout_millis: u64,
    /// PIP-442: topic lists that may wait for memory at once (more are refused at once).
    pub max_topic_list_in_flight_heap_mem_size_permits_acquire_queue_size: u32,
    /// PIP-442: memory (MB) the encoded topic-list answers not yet written to their sockets may
    /// take at once (0 = no limit).
    #[serde(rename = "maxTopicListInFlightDirectMemSizeMB")]
    pub max_topic_list_in_flight_direct_mem_size_mb: u32,
    /// PIP-442: how long an encoded answer waits for its memory (ms).
    pub max_topic_list_in_flight_direct_mem_size_permits_acquire_timeout_millis: u64,
    /// PIP-442: encoded answers that may wait for memory at once.
    pub max_topic_list_in_flight_direct_mem_size_permits_acquire_queue_size: u32,
    /// Topic tables (`icebergTable` policy): the SQL catalog, in pyiceberg's `SqlCatalog` form
    /// (`sqlite:////abs/path/catalog.db`); empty: no topic tables on this broker.
    pub iceberg_catalog_uri: String,
    /// Topic tables: the warehouse their metadata and Parquet files go to (an absolute
    /// directory, `file:///abs/path` or `s3://bucket/prefix`); empty: `warehouse/` beside the
    /// catalog's file.
    pub iceberg_warehouse: String,
    /// Topic tables on an `s3://` warehouse: an S3-compatible service's URL (path-style
    /// requests); empty: Amazon S3. Credentials: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`.
    #[serde(rename = "icebergS3Endpoint")]
    pub iceberg_s3_endpoint: String,
    /// Topic tables on an `s3://` warehouse: the region requests are signed for; empty:
    /// `us-east-1`.
    #[serde(rename = "icebergS3Region")]
    pub iceberg_s3_region: String,
    /// Topic tables: the catalog's name (pyiceberg and Spark name the catalog so too).
    pub iceberg_catalog_name: String,
    /// Geo-replication: the prefix of replication cursors (`<prefix>.<remote cluster>`) and
    /// replicator producers (`<prefix>.<local>--><remote>`).
    pub replicator_prefix: String,
    /// Geo-replication: SENDs a replicator keeps in flight to its remote cluster.
    pub replication_producer_queue_size: u32,
    /// Geo-replication: the `pulsar_replication_*` metrics.
    pub replication_metrics_enabled: bool,
    /// Geo-replication: a replicator's messages per second when no `replicatorDispatchRate`
    /// policy says (0 = unlimited).
    pub dispatch_throttling_rate_per_replicator_in_msg: i64,
    /// The same in bytes per second.
    pub dispatch_throttling_rate_per_replicator_in_byte: i64,
    /// Replicated subscriptions: a subscription subscribed with `replicateSubscriptionState`
    /// keeps its mark-delete in step across the replicating clusters (snapshot markers).
    pub enable_replicated_subscriptions: bool,
    /// Replicated subscriptions: how often a topic with one asks the other clusters for a
    /// snapshot of their positions (ms).
    pub replicated_subscriptions_snapshot_frequency_millis: u64,
    /// Replicated subscriptions: a snapshot not answered by every cluster within this is dropped.
    pub replicated_subscriptions_snapshot_timeout_seconds: u64,
    /// Replicated subscriptions: the snapshots a subscription keeps while its mark-delete
    /// catches up with them.
    pub replicated_subscriptions_snapshot_max_cached_per_subscription: u32,
    pub allow_auto_topic_creation: bool,
    /// `non-partitioned` or `partitioned`.
    pub allow_auto_topic_creation_type: String,
    pub default_num_partitions: u32,
    pub allow_auto_subscription_creation: bool,

    // Limits (0 = unlimited, as in Pulsar). Namespace and topic policies of the same names win
    // over them; see `crate::policies::limits`.
    /// Most partitions a partitioned topic may have (REST create and update).
    pub max_num_partitions_per_partitioned_topic: u32,
    /// Whether `DELETE /admin/v2/namespaces/{tenant}/{ns}?force=true` deletes the namespace
    /// with its topics (else refused 405, as Pulsar).
    pub force_delete_namespace_allowed: bool,
    /// Most persistent topics (partitions counted one by one) in one namespace.
    pub max_topics_per_namespace: u32,
    /// Most subscriptions on one topic.
    pub max_subscriptions_per_topic: u32,
    /// Most producers on one topic.
    pub max_producers_per_topic: u32,
    /// Most consumers on one topic (all subscriptions together).
    pub max_consumers_per_topic: u32,
    /// Most consumers on one subscription.
    pub max_consumers_per_subscription: u32,
    /// Most producers on one topic from one client IP address.
    pub max_same_address_producers_per_topic: u32,
    /// Most consumers on one topic from one client IP address.
    pub max_same_address_consumers_per_topic: u32,
    /// Refuse admin HTTP requests above `httpRequestsMaxPerSecond` with 429 (Pulsar's
    /// `RateLimitingFilter`).
    pub http_requests_limit_enabled: bool,
    /// Admin HTTP requests per second, broker-wide, when the limit is enabled.
    pub http_requests_max_per_second: f64,

    pub dispatcher_max_read_batch_size: u32,
    pub dispatcher_min_read_batch_size: u32,
    pub dispatcher_max_read_size_bytes: u64,
    pub dispatcher_max_round_robin_batch_size: u32,
    pub max_unacked_messages_per_consumer: u32,
    pub max_unacked_messages_per_subscription: u32,
    pub active_consumer_failover_delay_time_millis: u64,
    pub active_consumer_failover_consistent_hashing: bool,
    pub subscription_redelivery_tracker_enabled: bool,
    pub subscription_key_shared_enable: bool,
    pub subscription_key_shared_use_consistent_hashing: bool,
    pub subscription_key_shared_consistent_hashing_replica_points: u32,
    pub key_shared_look_ahead_msg_in_replay_threshold_per_consumer: u32,
    pub key_shared_look_ahead_msg_in_replay_threshold_per_subscription: u32,
    pub key_shared_unblocking_interval_ms: u64,
    pub delayed_delivery_enabled: bool,
    /// Transactions: the coordinator, transaction buffers and pending acks.
    pub transaction_coordinator_enabled: bool,
    /// Transactions not yet ended one coordinator holds before NEW_TXN goes unanswered, as
    /// Pulsar leaves it (apache/pulsar#15133: the client times out); 0: no limit.
    pub max_active_transactions_per_coordinator: u64,
    /// A topic's transaction buffer takes a snapshot once this many transactions ended on it
    /// since the last one (Pulsar's count; 0 counts as 1).
    pub transaction_buffer_snapshot_max_transaction_count: u64,
    /// ... or once one ended and this long passed since the last snapshot.
    pub transaction_buffer_snapshot_min_time_in_millis: u64,
    pub delayed_delivery_tick_time_millis: u64,
    pub delayed_delivery_deliver_at_time_strict: bool,
    /// Pulsar's `delayedDeliveryMaxDelayInMillis` (PIP-315): the broker tier of the longest
    /// delivery delay a SEND may ask for (0 = no limit); a topic's or namespace's
    /// `maxDelayedDeliveryTimeInSeconds` (PIP-437) wins over it.
    pub delayed_delivery_max_delay_in_millis: i64,
    /// Pulsar's `acknowledgmentAtBatchIndexLevelEnabled` (PIP-391: true since Pulsar 4.1, false
    /// before): acks of single messages of a batch are kept; false ignores an individual ack
    /// that carries an ack set and takes a cumulative one inside a batch to the entry before.
    pub acknowledgment_at_batch_index_level_enabled: bool,

    pub max_publish_rate_per_topic_in_messages: i64,
    pub max_publish_rate_per_topic_in_bytes: i64,
    pub broker_publisher_throttling_max_message_rate: i64,
    pub broker_publisher_throttling_max_byte_rate: i64,
    #[serde(rename = "maxMessagePublishBufferSizeInMB")]
    pub max_message_publish_buffer_size_in_mb: i64,
    pub dispatch_throttling_rate_in_msg: i64,
    pub dispatch_throttling_rate_in_byte: i64,
    pub dispatch_throttling_rate_per_topic_in_msg: i64,
    pub dispatch_throttling_rate_per_topic_in_byte: i64,
    pub dispatch_throttling_rate_per_subscription_in_msg: i64,
    pub dispatch_throttling_rate_per_subscription_in_byte: i64,
    pub backlog_quota_check_enabled: bool,
    /// PIP-492 (Pulsar 5.0): each durable subscription's backlog age kept by the backlog quota
    /// check and exposed as `pulsar_subscription_storage_backlog_age_seconds`.
    pub expose_subscription_backlog_age_in_prometheus: bool,
    /// PIP-447 (Pulsar 4.2): a topic's properties whose keys are allowed become labels of its
    /// metrics.
    pub expose_custom_topic_metric_labels_enabled: bool,
    /// PIP-447: the topic property keys allowed as metric labels where the namespace's
    /// `allowed_topic_properties_for_metrics` policy sets none. A list, or one comma-separated
    /// string as in `broker.conf`.
    #[serde(deserialize_with = "string_list")]
    pub allowed_topic_property_keys_for_metrics: Vec<String>,
    pub backlog_quota_check_interval_in_seconds: u64,
    pub backlog_quota_default_limit_bytes: i64,
    /// Deprecated in Pulsar but still applied there: above 0 it wins over
    /// `backlogQuotaDefaultLimitBytes` (gigabytes of 2^30 bytes; Pulsar's standalone.conf sets 10).
    #[serde(rename = "backlogQuotaDefaultLimitGB")]
    pub backlog_quota_default_limit_gb: f64,
    pub backlog_quota_default_limit_second: i64,
    /// `producer_request_hold`, `producer_exception` or `consumer_backlog_eviction`.
    pub backlog_quota_default_retention_policy: String,

    // Message deduplication.
    pub broker_deduplication_enabled: bool,
    pub broker_deduplication_max_number_of_producers: u32,
    pub broker_deduplication_entries_interval: u64,
    pub broker_deduplication_producer_inactivity_timeout_minutes: u64,
    pub broker_deduplication_snapshot_frequency_in_seconds: u64,
    pub broker_deduplication_snapshot_interval_seconds: u64,
    // Message TTL and inactive topics (see `crate::subscription::expiry` and `crate::service::inactive`).
    /// Broker default message TTL in seconds (0 = messages never expire).
    pub ttl_duration_default_in_seconds: u32,
    /// Period of the message expiry check, minutes (Pulsar's unit).
    pub message_expiry_check_interval_in_minutes: u32,
    /// Delete topics inactive for longer than their inactive-topic policy allows.
    pub broker_delete_inactive_topics_enabled: bool,
    /// PIP-470 (Pulsar 5.0): close (unload) inactive topics instead, keeping their data; with
    /// `delete_when_no_subscriptions` only, and never with the deletion
    /// (`crate::service::inactive_close`).
    pub broker_close_inactive_topics_enabled: bool,
    /// Period of the inactive-topic check, seconds.
    pub broker_delete_inactive_topics_frequency_seconds: u32,
    /// `delete_when_no_subscriptions` or `delete_when_subscriptions_caught_up`.
    pub broker_delete_inactive_topics_mode: String,
    /// How long a topic must be inactive before deletion (none: the check frequency).
    pub broker_delete_inactive_topics_max_inactive_duration_seconds: Option<u32>,
    /// Also delete a partitioned topic's metadata once GC deleted all of its partitions.
    pub broker_delete_inactive_partitioned_topic_metadata_enabled: bool,

    // Topic compaction.
    /// Default `compactionThreshold` in bytes (0 = no automatic compaction).
    pub broker_service_compaction_threshold_in_bytes: i64,
    /// How often the compaction threshold is checked.
    pub broker_service_compaction_monitor_interval_in_seconds: u64,
    /// Keep messages without a key in the compacted view.
    pub topic_compaction_retain_null_key: bool,

    // Schemas (applied by the schema registry, `schema/`).
    /// Default schema compatibility strategy (`FULL`; `UNDEFINED` means `FULL`).
    pub schema_compatibility_strategy: String,
    /// Whether producers may add schema versions unless a namespace or topic says otherwise.
    pub is_allow_auto_update_schema_enabled: bool,
    /// Whether producers without a schema are refused on topics with one.
    pub is_schema_validation_enforced: bool,

    // Security: all off by default (the embedded use case). See `security` in the server crate.
    /// Require clients (binary protocol and admin API) to authenticate.
    pub authentication_enabled: bool,
    /// Provider class names or short names: `token` (`AuthenticationProviderToken`), `tls`
    /// (`AuthenticationProviderTls`), `basic` (`AuthenticationProviderBasic`). A list, or one
    /// comma-separated string as in `broker.conf`.
    #[serde(deserialize_with = "string_list")]
    pub authentication_providers: Vec<String>,
    /// Users of the Basic provider, `user:hash` lines (`$apr1$` MD5 or DES crypt, as htpasswd
    /// writes them): a path, `file:` / `data:` URL, or base64 text.
    pub basic_auth_conf: Option<String>,
    /// How often long-lived connections are checked for expired credentials (token `exp`);
    /// an expired one is sent AUTH_CHALLENGE and closed unless it answers with valid credentials.
    pub authentication_refresh_check_seconds: u64,
    /// Role given to clients that send no credentials (none: such clients are refused).
    pub anonymous_user_role: Option<String>,
    /// Whether `/metrics` also requires authentication.
    pub authenticate_metrics_endpoint: bool,
    /// HMAC key of HS256 tokens: `data:;base64,<b64>`, `file:///path`, a path or base64 text.
    pub token_secret_key: Option<String>,
    /// Public key of RS/ES/PS tokens, PEM or DER, given as for `tokenSecretKey`.
    pub token_public_key: Option<String>,
    /// Signature algorithm of `tokenPublicKey` tokens.
    pub token_public_alg: String,
    /// Claim holding the role.
    pub token_auth_claim: String,
    /// Claim holding the audience, checked when `tokenAudience` is set.
    pub token_audience_claim: String,
    /// Audience this broker accepts (none: not checked).
    pub token_audience: Option<String>,
    /// The credentials plugin of this broker's connections to the other brokers of its
    /// cluster (see [`broker_client`]); none: no credentials.
    pub broker_client_authentication_plugin: Option<String>,
    /// Its parameters (`token:<jwt>`, `file:///path`, `{"userId":...,"password":...}`,
    /// `{"tlsCertFile":...,"tlsKeyFile":...}`, `keyStorePath:...,keyStorePassword:...`).
    pub broker_client_authentication_parameters: Option<String>,
    /// The broker's connections to its peers go to their TLS URLs (`pulsar+ssl://`, `https://`).
    pub broker_client_tls_enabled: bool,
    /// Peers' CA certificates (PEM); none: `tlsTrustCertsFilePath`.
    pub broker_client_trust_certs_file_path: Option<String>,
    /// The client certificate chain presented to peers (PEM), unless the plugin names one.
    pub broker_client_certificate_file_path: Option<String>,
    /// Its private key (PEM).
    pub broker_client_key_file_path: Option<String>,
    /// Certificates and keys from Java key stores instead of PEM files.
    pub broker_client_tls_enabled_with_key_store: bool,
    /// `JKS` or `PKCS12`.
    pub broker_client_tls_key_store_type: String,
    /// The key store holding the client certificate and key.
    pub broker_client_tls_key_store: Option<String>,
    /// Its password.
    pub broker_client_tls_key_store_password: Option<String>,
    /// `JKS` or `PKCS12`.
    pub broker_client_tls_trust_store_type: String,
    /// The trust store holding the peers' CA certificates.
    pub broker_client_tls_trust_store: Option<String>,
    /// Its password.
    pub broker_client_tls_trust_store_password: Option<String>,
    /// Accept any certificate a peer presents (no chain check).
    pub tls_allow_insecure_connection: bool,
    /// Check that a peer's certificate names the host connected to.
    pub tls_hostname_verification_enabled: bool,
    /// Check PRODUCER/SUBSCRIBE/LOOKUP and admin calls against granted permissions.
    pub authorization_enabled: bool,
    /// Roles allowed everything. A list, or one comma-separated string.
    #[serde(deserialize_with = "string_list")]
    pub super_user_roles: Vec<String>,
    /// `pulsar+ssl://` port (none: no TLS listener; 0 = ephemeral).
    pub broker_service_port_tls: Option<u16>,
    /// HTTPS admin port (none: no HTTPS listener; 0 = ephemeral).
    pub web_service_port_tls: Option<u16>,
    /// Server certificate chain (PEM).
    pub tls_certificate_file_path: Option<String>,
    /// Server private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub tls_key_file_path: Option<String>,
    /// CA certificates that client certificates must chain to (PEM).
    pub tls_trust_certs_file_path: Option<String>,
    /// Require a client certificate signed by `tlsTrustCertsFilePath` (mutual TLS).
    pub tls_require_trusted_client_cert_on_connect: bool,

    /// Pulsar keys that were given but are not implemented (named in one warning at start-up).
    /// Filled by [`BrokerConfig::from_json_map`]; not a setting.
    #[serde(skip)]
    pub unimplemented_keys: Vec<String>,

    /// Tiered storage's settings as given (`managedLedgerOffload*`, `s3ManagedLedgerOffload*`,
    /// ... see [`offload_keys`]): handed whole to the offloader, as Pulsar hands its offloaders
    /// the broker's raw properties. Filled by [`BrokerConfig::from_json_map`].
    #[serde(skip)]
    pub offload_properties: std::collections::BTreeMap<String, String>,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig {
            cluster_name: "standalone".into(),
            bind_address: "127.0.0.1".into(),
            advertised_address: None,
            advertised_listeners: None,
            internal_listener_name: None,
            broker_service_port: 6650,
            web_service_port: 8080,
            data_dir: None,
            num_io_threads: None,
            journal_sync_data: true,
            auto_skip_non_recoverable_data: false,
            journal_max_size_mb: 256,
            journal_max_group_wait_msec: 0,
            journal_buffered_writes_threshold: 512 * 1024,
            journal_adaptive_group_wait_micros: 1000,
            journal_pre_alloc_size_mb: 16,
            journal_direct_writes: true,
            managed_ledger_cache_size_mb: 64,
            managed_ledger_cache_eviction_watermark: 0.9,
            managed_ledger_cache_eviction_time_threshold_millis: 1000,
            managed_ledger_cache_eviction_interval_ms: 10,
            managed_ledger_max_entries_per_ledger: 50_000,
            metadata_store_url: String::new(),
            configuration_metadata_store_url: String::new(),
            bookkeeper_metadata_service_uri: String::new(),
            managed_ledger_default_ensemble_size: 2,
            managed_ledger_default_write_quorum: 2,
            managed_ledger_default_ack_quorum: 2,
            managed_ledger_max_ensemble_size: 5,
            managed_ledger_max_write_quorum: 5,
            managed_ledger_max_ack_quorum: 5,
            bookkeeper_client_timeout_in_seconds: 30,
            metadata_store_session_timeout_millis: 30_000,
            default_number_of_namespace_bundles: 4,
            load_balancer_auto_bundle_split_enabled: true,
            load_balancer_auto_unload_split_bundles_enabled: true,
            load_balancer_namespace_bundle_max_topics: 1000,
            load_balancer_namespace_bundle_max_sessions: 1000,
            load_balancer_namespace_bundle_max_msg_rate: 30000.0,
            load_balancer_namespace_bundle_max_bandwidth_mbytes: 100.0,
            load_balancer_namespace_maximum_bundles: 128,
            load_balancer_split_interval_minutes: 1,
            load_balancer_max_number_of_bundles_to_split_per_cycle: 10,
            default_namespace_bundle_split_algorithm: "range_equally_divide".into(),
            load_balancer_shedding_enabled: true,
            load_balancer_shedding_interval_minutes: 1,
            load_balancer_shedding_grace_period_minutes: 30,
            load_balancer_load_shedding_strategy:
                "org.apache.pulsar.broker.loadbalance.impl.AvgShedder".into(),
            load_balancer_load_placement_strategy:
                "org.apache.pulsar.broker.loadbalance.impl.AvgShedder".into(),
            load_balancer_avg_shedder_low_threshold: 15.0,
            load_balancer_avg_shedder_high_threshold: 40.0,
            load_balancer_avg_shedder_hit_count_low_threshold: 8,
            load_balancer_avg_shedder_hit_count_high_threshold: 2,
            load_balancer_broker_threshold_shedder_percentage: 10.0,
            load_balancer_history_resource_percentage: 0.9,
            load_balancer_bundle_unload_min_throughput_threshold: 10.0,
            load_balancer_cpu_resource_weight: 1.0,
            load_balancer_direct_memory_resource_weight: 0.0,
            load_balancer_bandwidth_in_resource_weight: 1.0,
            load_balancer_bandwidth_out_resource_weight: 1.0,
            load_balancer_override_broker_nic_speed_gbps: None,
            load_balancer_msg_rate_difference_shedder_threshold: 50.0,
            load_balancer_msg_throughput_multiplier_difference_shedder_threshold: 4.0,
            max_unload_percentage: 0.2,
            min_unload_message: 1000,
            min_unload_message_throughput: 1024 * 1024,
            max_unload_bundle_num_per_shedding: -1,
            load_balancer_broker_overloaded_threshold_percentage: 85.0,
            load_balancer_report_update_threshold_percentage: 10.0,
            load_balancer_report_update_min_interval_millis: 5000,
            load_balancer_report_update_max_interval_minutes: 15,
            managed_ledger_max_size_per_ledger_mbytes: 2048,
            managed_ledger_delete_max_concurrent_requests: 1000,
            managed_ledger_min_ledger_rollover_time_minutes: 10.0,
            managed_ledger_max_ledger_rollover_time_minutes: 240.0,
            managed_ledger_default_mark_delete_rate_limit: 1.0,
            default_retention_time_in_minutes: 0,
            default_retention_size_in_mb: 0,
            max_message_size: 5 * 1024 * 1024,
            enable_broker_side_subscription_pattern_evaluation: true,
            subscription_pattern_max_length: 50,
            enable_broker_topic_list_watcher: true,
            pulsar_resources_extended_class_name: topic_listing::DEFAULT_RESOURCES_EXTENDED.into(),
            max_topic_list_in_flight_heap_mem_size_mb: 100,
            max_topic_list_in_flight_heap_mem_size_permits_acquire_timeout_millis: 25_000,
            max_topic_list_in_flight_heap_mem_size_permits_acquire_queue_size: 1000,
            max_topic_list_in_flight_direct_mem_size_mb: 100,
            max_topic_list_in_flight_direct_mem_size_permits_acquire_timeout_millis: 25_000,
            max_topic_list_in_flight_direct_mem_size_permits_acquire_queue_size: 1000,
            iceberg_catalog_uri: String::new(),
            iceberg_warehouse: String::new(),
            iceberg_s3_endpoint: String::new(),
            iceberg_s3_region: String::new(),
            iceberg_catalog_name: "pulsar".into(),
            replicator_prefix: "pulsar.repl".into(),
            replication_producer_queue_size: 1000,
            replication_metrics_enabled: true,
            dispatch_throttling_rate_per_replicator_in_msg: 0,
            dispatch_throttling_rate_per_replicator_in_byte: 0,
            enable_replicated_subscriptions: true,
            replicated_subscriptions_snapshot_frequency_millis: 1000,
            replicated_subscriptions_snapshot_timeout_seconds: 30,
            replicated_subscriptions_snapshot_max_cached_per_subscription: 10,
            max_pending_publish_requests_per_connection: 1000,
            keep_alive_interval_seconds: 30,
            allow_auto_topic_creation: true,
            allow_auto_topic_creation_type: "non-partitioned".into(),
            default_num_partitions: 1,
            allow_auto_subscription_creation: true,
            max_num_partitions_per_partitioned_topic: 0,
            force_delete_namespace_allowed: false,
            max_topics_per_namespace: 0,
            max_subscriptions_per_topic: 0,
            max_producers_per_topic: 0,
            max_consumers_per_topic: 0,
            max_consumers_per_subscription: 0,
            max_same_address_producers_per_topic: 0,
            max_same_address_consumers_per_topic: 0,
            http_requests_limit_enabled: false,
            http_requests_max_per_second: 100.0,
            dispatcher_max_read_batch_size: 100,
            dispatcher_min_read_batch_size: 1,
            dispatcher_max_read_size_bytes: 5 * 1024 * 1024,
            dispatcher_max_round_robin_batch_size: 20,
            max_unacked_messages_per_consumer: 50_000,
            max_unacked_messages_per_subscription: 200_000,
            active_consumer_failover_delay_time_millis: 1000,
            active_consumer_failover_consistent_hashing: false,
            subscription_redelivery_tracker_enabled: true,
            subscription_key_shared_enable: true,
            subscription_key_shared_use_consistent_hashing: true,
            subscription_key_shared_consistent_hashing_replica_points: 100,
            key_shared_look_ahead_msg_in_replay_threshold_per_consumer: 2000,
            key_shared_look_ahead_msg_in_replay_threshold_per_subscription: 20_000,
            key_shared_unblocking_interval_ms: 10,
            delayed_delivery_enabled: true,
            transaction_coordinator_enabled: false,
            max_active_transactions_per_coordinator: 0,
            transaction_buffer_snapshot_max_transaction_count: 1000,
            transaction_buffer_snapshot_min_time_in_millis: 5000,
            delayed_delivery_tick_time_millis: 1000,
            delayed_delivery_deliver_at_time_strict: false,
            delayed_delivery_max_delay_in_millis: 0,
            acknowledgment_at_batch_index_level_enabled: true,
            max_publish_rate_per_topic_in_messages: 0,
            max_publish_rate_per_topic_in_bytes: 0,
            broker_publisher_throttling_max_message_rate: 0,
            broker_publisher_throttling_max_byte_rate: 0,
            max_message_publish_buffer_size_in_mb: 256,
            dispatch_throttling_rate_in_msg: 0,
            dispatch_throttling_rate_in_byte: 0,
            dispatch_throttling_rate_per_topic_in_msg: 0,
            dispatch_throttling_rate_per_topic_in_byte: 0,
            dispatch_throttling_rate_per_subscription_in_msg: 0,
            dispatch_throttling_rate_per_subscription_in_byte: 0,
            backlog_quota_check_enabled: true,
            expose_subscription_backlog_age_in_prometheus: false,
            expose_custom_topic_metric_labels_enabled: false,
            allowed_topic_property_keys_for_metrics: Vec::new(),
            backlog_quota_check_interval_in_seconds: 60,
            backlog_quota_default_limit_bytes: -1,
            backlog_quota_default_limit_gb: -1.0,
            backlog_quota_default_limit_second: -1,
            backlog_quota_default_retention_policy: "producer_request_hold".into(),
            broker_deduplication_enabled: false,
            broker_deduplication_max_number_of_producers: 10_000,
            broker_deduplication_entries_interval: 1000,
            broker_deduplication_producer_inactivity_timeout_minutes: 360,
            broker_deduplication_snapshot_frequency_in_seconds: 120,
            broker_deduplication_snapshot_interval_seconds: 120,
            ttl_duration_default_in_seconds: 0,
            message_expiry_check_interval_in_minutes: 5,
            broker_delete_inactive_topics_enabled: true,
            broker_close_inactive_topics_enabled: false,
            broker_delete_inactive_topics_frequency_seconds: 60,
            broker_delete_inactive_topics_mode: "delete_when_no_subscriptions".into(),
            broker_delete_inactive_topics_max_inactive_duration_seconds: None,
            broker_delete_inactive_partitioned_topic_metadata_enabled: false,
            broker_service_compaction_threshold_in_bytes: 0,
            broker_service_compaction_monitor_interval_in_seconds: 60,
            topic_compaction_retain_null_key: false,
            schema_compatibility_strategy: "FULL".into(),
            is_allow_auto_update_schema_enabled: true,
            is_schema_validation_enforced: false,
            authentication_enabled: false,
            authentication_providers: Vec::new(),
            basic_auth_conf: None,
            authentication_refresh_check_seconds: 60,
            anonymous_user_role: None,
            authenticate_metrics_endpoint: false,
            token_secret_key: None,
            token_public_key: None,
            token_public_alg: "RS256".into(),
            token_auth_claim: "sub".into(),
            token_audience_claim: "aud".into(),
            token_audience: None,
            broker_client_authentication_plugin: None,
            broker_client_authentication_parameters: None,
            broker_client_tls_enabled: false,
            broker_client_trust_certs_file_path: None,
            broker_client_certificate_file_path: None,
            broker_client_key_file_path: None,
            broker_client_tls_enabled_with_key_store: false,
            broker_client_tls_key_store_type: "JKS".into(),
            broker_client_tls_key_store: None,
            broker_client_tls_key_store_password: None,
            broker_client_tls_trust_store_type: "JKS".into(),
            broker_client_tls_trust_store: None,
            broker_client_tls_trust_store_password: None,
            tls_allow_insecure_connection: false,
            tls_hostname_verification_enabled: false,
            authorization_enabled: false,
            super_user_roles: Vec::new(),
            broker_service_port_tls: None,
            web_service_port_tls: None,
            tls_certificate_file_path: None,
            tls_key_file_path: None,
            tls_trust_certs_file_path: None,
            tls_require_trusted_client_cert_on_connect: false,
            unimplemented_keys: Vec::new(),
            offload_properties: std::collections::BTreeMap::new(),
        }
    }
}

fn bad(key: &'static str, reason: &str) -> BrokerError {
    BrokerError::InvalidConfig {
        key: key.into(),
        reason: reason.into(),
    }
}

/// A list of strings given as a sequence or as one comma-separated string (`broker.conf` style).
fn string_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum List {
        One(String),
        Many(Vec<String>),
    }
    let items = match List::deserialize(d)? {
        List::One(s) => s.split(',').map(str::to_owned).collect(),
        List::Many(v) => v,
    };
    Ok(items
        .iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect())
}

impl BrokerConfig {
    /// How many threads serve connections: `numIOThreads`, or by default one per core less
    /// one (at least one). Pulsar's default is two per core, for Netty threads that also do
    /// its storage client's work; here the journal flusher and the storage pool have their own
    /// threads, and they need a core under load. On this project's 2-core box, in one run, one
    /// worker against two used 13 % (W2) and 8 % (W3) less broker CPU per message under the
    /// independent load generator, with +21 % (W1) and +10 % (W3) throughput under
    /// `pulsar-rs-perf` (`benches/RESULTS.md`).
    #[must_use]
    pub fn io_threads(&self) -> usize {
        match self.num_io_threads {
            Some(n) => n.max(1) as usize,
            None => std::thread::available_parallelism()
                .map_or(1, std::num::NonZeroUsize::get)
                .saturating_sub(1)
                .max(1),
        }
    }
}

/// An authentication provider of `authenticationProviders`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthProvider {
    /// `AuthenticationProviderToken` (client method `token`).
    Token,
    /// `AuthenticationProviderTls` (client method `tls`): the role is the certificate's CN.
    Tls,
    /// `AuthenticationProviderBasic` (client method `basic`).
    Basic,
}

impl AuthProvider {
    /// The provider named by a class name or a short name, if supported.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        let short = name.trim().rsplit('.').next().unwrap_or("");
        match short {
            "token" | "AuthenticationProviderToken" => Some(AuthProvider::Token),
            "tls" | "AuthenticationProviderTls" => Some(AuthProvider::Tls),
            "basic" | "AuthenticationProviderBasic" => Some(AuthProvider::Basic),
            _ => None,
        }
    }
}

impl BrokerConfig {
    /// The default backlog quota size in bytes (-1: none), as Pulsar's `BacklogQuotaManager`
    /// computes it: `backlogQuotaDefaultLimitGB` when above 0, else `backlogQuotaDefaultLimitBytes`.
    #[must_use]
    pub fn backlog_quota_default_limit_size(&self) -> i64 {
        if self.backlog_quota_default_limit_gb > 0.0 {
            // Truncation as Pulsar's `(long) (gigabytes * BYTES_IN_GIGABYTE)`.
            #[allow(clippy::cast_possible_truncation)]
            let bytes = (self.backlog_quota_default_limit_gb * 1_073_741_824.0) as i64;
            bytes
        } else {
            self.backlog_quota_default_limit_bytes
        }
    }

    /// The parsed `advertisedListeners` (empty when not set).
    ///
    /// # Errors
    /// [`BrokerError::InvalidConfig`] for a malformed value.
    pub fn listeners(&self) -> Result<Vec<listeners::AdvertisedListener>, BrokerError> {
        match self.advertised_listeners.as_deref() {
            Some(spec) if !spec.trim().is_empty() => {
                listeners::parse(spec, self.internal_listener_name.as_deref())
            }
            _ if self.internal_listener_name.is_some() => {
                Err(bad("internalListenerName", "needs advertisedListeners"))
            }
            _ => Ok(Vec::new()),
        }
    }

    /// Whether `authenticationProviders` lists `p` (and authentication is on).
    #[must_use]
    pub fn has_provider(&self, p: AuthProvider) -> bool {
        self.authentication_enabled
            && self
                .authentication_providers
                .iter()
                .any(|n| AuthProvider::from_name(n) == Some(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_keys_are_pulsars() {
        let c = BrokerConfig::from_toml(
            "maxPendingPublishRequestsPerConnection = 10\nmanagedLedgerCacheSizeMB = 5\n",
        )
        .unwrap();
        assert_eq!(c.max_pending_publish_requests_per_connection, 10);
        assert_eq!(c.managed_ledger_cache_size_mb, 5);
        assert_eq!(c.dispatcher_max_round_robin_batch_size, 20);
    }

    #[test]
    fn security_keys() {
        let c = BrokerConfig::from_toml(
            "authenticationEnabled = true\n\
             authenticationProviders = \"org.apache.pulsar.broker.authentication.AuthenticationProviderToken\"\n\
             tokenSecretKey = \"data:;base64,c2VjcmV0\"\n\
             superUserRoles = \"admin, ops\"\n",
        )
        .unwrap();
        assert_eq!(c.super_user_roles, vec!["admin", "ops"]);
        assert_eq!(c.token_auth_claim, "sub");
        let c = BrokerConfig::from_toml("superUserRoles = [\"a\", \"b\"]").unwrap();
        assert_eq!(c.super_user_roles, vec!["a", "b"]);
        let e = BrokerConfig::from_toml(
            "authenticationEnabled = true\nauthenticationProviders = \"token\"",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("tokenSecretKey"), "{e}");
        let e = BrokerConfig::from_toml("authenticationEnabled = true\nauthenticationProviders = \"kerberos\"\ntokenSecretKey = \"x\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("authenticationProviders"), "{e}");
        let e = BrokerConfig::from_toml(
            "authenticationEnabled = true\nauthenticationProviders = \"basic\"",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("basicAuthConf"), "{e}");
        let e = BrokerConfig::from_toml("brokerServicePortTls = 0")
            .unwrap_err()
            .to_string();
        assert!(e.contains("tlsCertificateFilePath"), "{e}");
        let mut m = serde_json::Map::new();
        m.insert("superUserRoles".into(), serde_json::json!("x,y"));
        m.insert("brokerServicePortTls".into(), serde_json::json!(0));
        m.insert("tlsCertificateFilePath".into(), serde_json::json!("/c.pem"));
        m.insert("tlsKeyFilePath".into(), serde_json::json!("/k.pem"));
        let c = BrokerConfig::from_json_map(m).unwrap();
        assert_eq!(c.super_user_roles, vec!["x", "y"]);
        assert_eq!(c.broker_service_port_tls, Some(0));
    }

    #[test]
    fn bad_input_names_the_key() {
        let e = BrokerConfig::from_toml("noSuchKey = 1")
            .unwrap_err()
            .to_string();
        assert!(e.contains("noSuchKey"), "{e}");
        let e = BrokerConfig::from_toml("dispatcherMaxReadBatchSize = 0")
            .unwrap_err()
            .to_string();
        assert!(e.contains("dispatcherMaxReadBatchSize"), "{e}");
        for key in [
            "replicatedSubscriptionsSnapshotFrequencyMillis",
            "replicatedSubscriptionsSnapshotTimeoutSeconds",
            "replicatedSubscriptionsSnapshotMaxCachedPerSubscription",
            "replicationProducerQueueSize",
        ] {
            let e = BrokerConfig::from_toml(&format!("{key} = 0"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(key) && e.contains("must be > 0"), "{e}");
        }
        let mut m = serde_json::Map::new();
        m.insert("maxMessageSize".into(), serde_json::json!("big"));
        let e = BrokerConfig::from_json_map(m).unwrap_err().to_string();
        assert!(e.contains("maxMessageSize"), "{e}");
    }

    #[test]
    fn io_threads_from_num_io_threads() {
        let c = BrokerConfig::from_properties("numIOThreads=3\n").unwrap();
        assert_eq!(c.io_threads(), 3);
        assert!(!c.unimplemented_keys.iter().any(|k| k == "numIOThreads"));
        // Pulsar's files leave it empty: the default.
        let c = BrokerConfig::from_properties("numIOThreads=\n").unwrap();
        assert_eq!(c.num_io_threads, None);
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        assert_eq!(c.io_threads(), cores.saturating_sub(1).max(1));
        let e = BrokerConfig::from_toml("numIOThreads = 0")
            .unwrap_err()
            .to_string();
        assert!(e.contains("numIOThreads"), "{e}");
    }
}
