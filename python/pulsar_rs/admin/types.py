"""The JSON documents :class:`pulsar_rs.Admin` returns, as TypedDicts named after Apache Pulsar's
classes (``TopicStats``, ``SubscriptionStats``, ``PersistentTopicInternalStats``, ``TenantInfo``,
``ClusterData``, ``RetentionPolicies``, ...) with the field names the broker's JSON has
(``msgRateIn``, ``msgBacklog``, ...).

They are plain dicts at runtime (``admin.topics.stats(t)["msgBacklog"]``); the types only tell a
type checker and an editor what the broker answers. Documents whose fields Pulsar writes only
when they are set are ``total=False``; so are the large stats documents, whose set of fields
grows with Pulsar's versions.
"""

# No `from __future__ import annotations` here: with it, Python 3.11's TypedDict cannot see a
# NotRequired[...] inside a string annotation and lists the key as required at runtime
# (``__required_keys__``). Every type below is defined before it is used.
from typing import Any, NotRequired, TypedDict

__all__ = [
    "AuthPolicies",
    "BacklogQuota",
    "BrokerInfo",
    "BundlesData",
    "ClusterData",
    "CompactionStats",
    "CompactionStatus",
    "ConsumerStats",
    "CoordinatorStats",
    "CursorStats",
    "DispatchRate",
    "GetSchemaResponse",
    "InactiveTopicPolicies",
    "IsCompatibilityResponse",
    "LedgerInfo",
    "LookupData",
    "ManagedLedgerInternalStats",
    "MessageIdData",
    "NamespaceOwnershipStatus",
    "OffloadPolicies",
    "OffloadProcessStatus",
    "PartitionedTopicInternalStats",
    "PartitionedTopicMetadata",
    "PartitionedTopicStats",
    "PersistencePolicies",
    "PersistentTopicInternalStats",
    "Policies",
    "PositionInPendingAckStats",
    "PublishRate",
    "PublisherStats",
    "RawMessage",
    "RetentionPolicies",
    "SubscriptionStats",
    "TenantInfo",
    "TopicStats",
    "TransactionBufferStats",
    "TransactionCoordinatorInfo",
    "TransactionCoordinatorInternalStats",
    "TransactionInBufferStats",
    "TransactionInPendingAckStats",
    "TransactionLogStats",
    "TransactionMetadata",
    "TransactionPendingAckStats",
]


# --- clusters, tenants, brokers, namespaces ---------------------------------------------------


class ClusterData(TypedDict, total=False):
    """A cluster (``clusters.get``, the body of ``clusters.create`` / ``update``)."""

    serviceUrl: str
    serviceUrlTls: str
    brokerServiceUrl: str
    brokerServiceUrlTls: str
    proxyServiceUrl: str
    proxyProtocol: str
    peerClusterNames: list[str]
    authenticationPlugin: str
    authenticationParameters: str
    brokerClientTlsEnabled: bool
    tlsAllowInsecureConnection: bool
    brokerClientTlsEnabledWithKeyStore: bool
    brokerClientTlsTrustStoreType: str
    brokerClientTlsKeyStoreType: str
    brokerClientSslFactoryPlugin: str
    listenerName: str


class TenantInfo(TypedDict):
    """A tenant (``tenants.get``): the roles that administer it and the clusters it may use."""

    adminRoles: list[str]
    allowedClusters: list[str]


class BrokerInfo(TypedDict):
    """The cluster's leader broker (``brokers.leader_broker``)."""

    brokerId: str
    serviceUrl: str


class ResourceUsage(TypedDict):
    """One resource of a load report: what is used of what is available."""

    usage: float
    limit: float


class NamespaceBundleStats(TypedDict):
    """What one bundle's topics carry on its owner (a load report's ``lastStats``)."""

    msgRateIn: float
    msgThroughputIn: float
    msgRateOut: float
    msgThroughputOut: float
    consumerCount: int
    producerCount: int
    topics: int
    cacheSize: int


class LoadReport(TypedDict, total=False):
    """A broker's load report (``broker_stats.load_report``; Pulsar's ``LocalBrokerData``)."""

    webServiceUrl: str
    webServiceUrlTls: str | None
    pulsarServiceUrl: str
    pulsarServiceUrlTls: str | None
    persistentTopicsEnabled: bool
    nonPersistentTopicsEnabled: bool
    cpu: ResourceUsage
    memory: ResourceUsage
    directMemory: ResourceUsage
    bandwidthIn: ResourceUsage
    bandwidthOut: ResourceUsage
    msgRateIn: float
    msgRateOut: float
    msgThroughputIn: float
    msgThroughputOut: float
    numTopics: int
    numConsumers: int
    numProducers: int
    numBundles: int
    bundles: list[str]
    lastStats: dict[str, NamespaceBundleStats]
    lastUpdate: int
    startTimestamp: int
    brokerVersionString: str | None
    loadManagerClassName: str | None


class NamespaceOwnershipStatus(TypedDict):
    """One bundle a broker owns (``brokers.owned_namespaces``), snake case as Pulsar's JSON."""

    broker_assignment: str
    is_controlled: bool
    is_active: bool


class BundlesData(TypedDict):
    """A namespace's bundles (``namespaces.bundles``): ``numBundles`` ranges between ``boundaries``."""

    boundaries: list[str]
    numBundles: int


class RetentionPolicies(TypedDict):
    """``retention``: -1 is unlimited, 0 no retention."""

    retentionTimeInMinutes: int
    retentionSizeInMB: int


class BacklogQuota(TypedDict, total=False):
    """One backlog quota (``get_backlog_quotas`` maps the quota type to it). ``limit`` is
    Pulsar's deprecated name of ``limitSize``."""

    limit: int
    limitSize: int
    limitTime: int
    policy: str


class PersistencePolicies(TypedDict):
    """``persistence``: E, Qw and Qa of new ledgers on BookKeeper."""

    bookkeeperEnsemble: int
    bookkeeperWriteQuorum: int
    bookkeeperAckQuorum: int
    managedLedgerMaxMarkDeleteRate: float


class DispatchRate(TypedDict, total=False):
    """``dispatchRate`` / ``subscriptionDispatchRate`` (-1: unlimited)."""

    dispatchThrottlingRateInMsg: int
    dispatchThrottlingRateInByte: int
    ratePeriodInSecond: int
    relativeToPublishRate: bool


class PublishRate(TypedDict):
    """``publishRate`` (-1: unlimited)."""

    publishThrottlingRateInMsg: int
    publishThrottlingRateInByte: int


class InactiveTopicPolicies(TypedDict):
    """``inactiveTopicPolicies``."""

    deleteWhileInactive: bool
    maxInactiveDurationSeconds: int
    inactiveTopicDeleteMode: str


class AuthPolicies(TypedDict, total=False):
    """The permissions part of a namespace's :class:`Policies`: role → actions."""

    namespace_auth: dict[str, list[str]]
    destination_auth: dict[str, dict[str, list[str]]]
    subscription_auth_roles: dict[str, list[str]]


class OffloadPolicies(TypedDict, total=False):
    """Tiered storage settings (Pulsar's ``OffloadPolicies``): a namespace's
    (``namespaces.get_offload_policies``, ``Policies.offload_policies``) or a topic's
    (``topics.get_offload_policies``). A field left out falls back, field by field, to the
    namespace's and then to the broker's key of the same name (docs/admin.md, "Tiered storage").
    ``managedLedgerOffloadDriver`` is ``S3``, ``aws-s3`` or ``aliyun-oss`` here (Pulsar's other
    drivers are accepted and stored); ``aws-s3`` reads the ``s3ManagedLedgerOffload*`` fields
    first; ``managedLedgerOffloadedReadPriority`` is ``tiered-storage-first`` or
    ``bookkeeper-first``."""

    managedLedgerOffloadDriver: str
    offloadersDirectory: str
    managedLedgerOffloadMaxThreads: int
    managedLedgerOffloadReadThreads: int
    managedLedgerOffloadPrefetchRounds: int
    managedLedgerOffloadThresholdInBytes: int | None
    managedLedgerOffloadThresholdInSeconds: int | None
    managedLedgerOffloadDeletionLagInMillis: int | None
    managedLedgerOffloadedReadPriority: str
    managedLedgerExtraConfigurations: dict[str, str]
    managedLedgerOffloadBucket: str | None
    managedLedgerOffloadRegion: str | None
    managedLedgerOffloadServiceEndpoint: str | None
    managedLedgerOffloadMaxBlockSizeInBytes: int | None
    managedLedgerOffloadReadBufferSizeInBytes: int | None
    s3ManagedLedgerOffloadBucket: str | None
    s3ManagedLedgerOffloadRegion: str | None
    s3ManagedLedgerOffloadServiceEndpoint: str | None
    s3ManagedLedgerOffloadMaxBlockSizeInBytes: int | None
    s3ManagedLedgerOffloadReadBufferSizeInBytes: int | None
    s3ManagedLedgerOffloadCredentialId: str | None
    s3ManagedLedgerOffloadCredentialSecret: str | None
    s3ManagedLedgerOffloadRole: str | None
    s3ManagedLedgerOffloadRoleSessionName: str | None


class Policies(TypedDict, total=False):
    """A namespace's ``Policies`` document (``namespaces.policies``), Pulsar's mixed snake and
    camel case; a policy not set is absent or ``None``."""

    auth_policies: AuthPolicies
    replication_clusters: list[str]
    bundles: BundlesData
    backlog_quota_map: dict[str, BacklogQuota]
    clusterDispatchRate: dict[str, DispatchRate]
    topicDispatchRate: dict[str, DispatchRate]
    subscriptionDispatchRate: dict[str, DispatchRate]
    replicatorDispatchRate: dict[str, DispatchRate]
    clusterSubscribeRate: dict[str, Any]
    publishMaxMessageRate: dict[str, PublishRate]
    latency_stats_sample_rate: dict[str, int]
    persistence: PersistencePolicies | None
    deduplicationEnabled: bool | None
    retention_policies: RetentionPolicies | None
    message_ttl_in_seconds: int | None
    inactive_topic_policies: InactiveTopicPolicies | None
    max_producers_per_topic: int | None
    max_consumers_per_topic: int | None
    max_consumers_per_subscription: int | None
    max_subscriptions_per_topic: int | None
    max_topics_per_namespace: int | None
    compaction_threshold: int | None
    deleted: bool
    encryption_required: bool
    is_allow_auto_update_schema: bool
    schema_validation_enforced: bool
    schema_compatibility_strategy: str
    schema_auto_update_compatibility_strategy: str
    subscription_auth_mode: str
    subscription_expiration_time_minutes: int
    subscription_types_enabled: list[str]
    allowed_topic_properties_for_metrics: list[str]
    offload_threshold: int
    offload_threshold_in_seconds: int
    offload_deletion_lag_ms: int | None
    offload_policies: OffloadPolicies | None
    properties: dict[str, str]


# --- topics: stats ---------------------------------------------------------------------------


class PublisherStats(TypedDict, total=False):
    """One producer of a topic (``TopicStats.publishers``)."""

    accessMode: str
    msgRateIn: float
    msgThroughputIn: float
    averageMsgSize: float
    chunkedMessageRate: float
    producerId: int
    supportsPartialProducer: bool
    producerName: str
    address: str
    connectedSince: str
    clientVersion: str
    metadata: dict[str, str]


class _DeliveryStats(TypedDict, total=False):
    """The delivery rates and counters a consumer and a subscription both report (Pulsar's
    ``ConsumerStats`` and ``SubscriptionStats`` repeat them)."""

    msgRateOut: float
    msgThroughputOut: float
    bytesOutCounter: int
    msgOutCounter: int
    msgRateRedeliver: float
    messageAckRate: float
    chunkedMessageRate: float


class ConsumerStats(_DeliveryStats, total=False):
    """One consumer of a subscription (``SubscriptionStats.consumers``)."""

    consumerName: str
    availablePermits: int
    unackedMessages: int
    avgMessagesPerEntry: int
    blockedConsumerOnUnackedMsgs: bool
    drainingHashesCount: int
    drainingHashesClearedTotal: int
    drainingHashesUnackedMessages: int
    address: str
    connectedSince: str
    clientVersion: str
    lastAckedTimestamp: int
    lastConsumedTimestamp: int
    lastConsumedFlowTimestamp: int
    lastAckedTime: str
    lastConsumedTime: str
    metadata: dict[str, str]


class SubscriptionStats(_DeliveryStats, total=False):
    """One subscription of a topic (``TopicStats.subscriptions`` maps its name to it)."""

    msgBacklog: int
    backlogSize: int
    earliestMsgPublishTimeInBacklog: int
    msgBacklogNoDelayed: int
    blockedSubscriptionOnUnackedMsgs: bool
    msgDelayed: int
    msgInReplay: int
    unackedMessages: int
    type: str
    activeConsumerName: str | None
    msgRateExpired: float
    totalMsgExpired: int
    lastExpireTimestamp: int
    lastConsumedFlowTimestamp: int
    lastConsumedTimestamp: int
    lastAckedTimestamp: int
    lastMarkDeleteAdvancedTimestamp: int
    consumers: list[ConsumerStats]
    isDurable: bool
    isReplicated: bool
    durable: bool
    replicated: bool
    allowOutOfOrderDelivery: bool
    consumersAfterMarkDeletePosition: dict[str, str]
    drainingHashesCount: int
    drainingHashesClearedTotal: int
    drainingHashesUnackedMessages: int
    nonContiguousDeletedMessagesRanges: int
    nonContiguousDeletedMessagesRangesSerializedSize: int
    delayedMessageIndexSizeInBytes: int
    subscriptionProperties: dict[str, str]
    filterProcessedMsgCount: int
    filterAcceptedMsgCount: int
    filterRejectedMsgCount: int
    filterRescheduledMsgCount: int
    dispatchThrottledMsgEventsBySubscriptionLimit: int
    dispatchThrottledBytesEventsBySubscriptionLimit: int
    dispatchThrottledMsgEventsByTopicLimit: int
    dispatchThrottledBytesEventsByTopicLimit: int
    dispatchThrottledMsgEventsByBrokerLimit: int
    dispatchThrottledBytesEventsByBrokerLimit: int


class CompactionStats(TypedDict, total=False):
    """The last compaction run of a topic (``TopicStats.compaction``)."""

    lastCompactionRemovedEventCount: int
    lastCompactionSucceedTimestamp: int
    lastCompactionFailedTimestamp: int
    lastCompactionDurationTimeInMills: int


class TopicStats(TypedDict, total=False):
    """A topic's stats (``topics.stats``)."""

    msgRateIn: float
    msgThroughputIn: float
    msgRateOut: float
    msgThroughputOut: float
    bytesInCounter: int
    msgInCounter: int
    systemTopicBytesInCounter: int
    bytesOutCounter: int
    msgOutCounter: int
    bytesOutInternalCounter: int
    averageMsgSize: float
    msgChunkPublished: bool
    storageSize: int
    backlogSize: int
    backlogQuotaLimitSize: int
    backlogQuotaLimitTime: int
    oldestBacklogMessageAgeSeconds: int
    publishRateLimitedTimes: int
    earliestMsgPublishTimeInBacklogs: int
    offloadedStorageSize: int
    lastOffloadLedgerId: int
    lastOffloadSuccessTimeStamp: int
    lastOffloadFailureTimeStamp: int
    ongoingTxnCount: int
    abortedTxnCount: int
    committedTxnCount: int
    publishers: list[PublisherStats]
    waitingPublishers: int
    subscriptions: dict[str, SubscriptionStats]
    replication: dict[str, Any]
    deduplicationStatus: str
    nonContiguousDeletedMessagesRanges: int
    nonContiguousDeletedMessagesRangesSerializedSize: int
    delayedMessageIndexSizeInBytes: int
    compaction: CompactionStats
    ownerBroker: str
    topicCreationTimeStamp: int
    lastPublishTimeStamp: int


class PartitionedTopicMetadata(TypedDict, total=False):
    """``{"partitions": N}`` (0: not partitioned), with ``deleted`` as Pulsar writes it."""

    partitions: int
    deleted: bool
    properties: dict[str, str]


class PartitionedTopicStats(TopicStats, total=False):
    """A partitioned topic's stats (``topics.partitioned_stats``): the partitions' summed, its
    ``metadata`` and, per partition, its own :class:`TopicStats` by partition name."""

    metadata: PartitionedTopicMetadata
    partitions: dict[str, TopicStats]


# --- topics: internal stats ------------------------------------------------------------------


class LedgerInfo(TypedDict):
    """One ledger of a topic's managed ledger (``ledgers``, ``compactedLedger``); ``metadata``
    (quorums, state, ensembles) with ``internal_stats(metadata=True)`` on BookKeeper."""

    ledgerId: int
    entries: int
    size: int
    offloaded: bool
    underReplicated: bool
    metadata: NotRequired[str]


class CursorStats(TypedDict, total=False):
    """One cursor (subscription) of a topic's managed ledger (``cursors`` by name)."""

    markDeletePosition: str
    readPosition: str
    waitingReadOp: bool
    pendingReadOps: int
    messagesConsumedCounter: int
    cursorLedger: int
    cursorLedgerLastEntry: int
    individuallyDeletedMessages: str
    lastLedgerSwitchTimestamp: str
    state: str
    active: bool
    numberOfEntriesSinceFirstNotAckedMessage: int
    totalNonContiguousDeletedMessagesRange: int
    subscriptionHavePendingRead: bool
    subscriptionHavePendingReplayRead: bool
    properties: dict[str, int]


class ManagedLedgerInternalStats(TypedDict, total=False):
    """A topic's managed ledger (Pulsar's ``ManagedLedgerInternalStats``)."""

    entriesAddedCounter: int
    numberOfEntries: int
    totalSize: int
    currentLedgerEntries: int
    currentLedgerSize: int
    lastLedgerCreatedTimestamp: str
    lastLedgerCreationFailureTimestamp: str
    waitingCursorsCount: int
    pendingAddEntriesCount: int
    lastConfirmedEntry: str
    state: str
    ledgers: list[LedgerInfo]
    cursors: dict[str, CursorStats]
    #: pulsar-rs: the positions of entries found corrupt.
    corruptEntries: list[str]


class PersistentTopicInternalStats(ManagedLedgerInternalStats, total=False):
    """``topics.internal_stats``: the managed ledger, its cursors, the compacted ledger, and
    (pulsar-rs) the positions of entries found corrupt."""

    schemaLedgers: list[LedgerInfo]
    compactedLedger: LedgerInfo


class PartitionedTopicInternalStats(TypedDict):
    """``topics.partitioned_internal_stats``: each existing partition's internal stats by name."""

    metadata: PartitionedTopicMetadata
    partitions: dict[str, PersistentTopicInternalStats]


# --- topics: messages, compaction, lookup ----------------------------------------------------


class MessageIdData(TypedDict):
    """A message id (``topics.last_message_id``): -1:-1 when the topic is empty; ``batchIndex``
    when the message ends a batch (``topics.terminate`` answers ``batchIndex`` -1 and
    ``batchSize`` 0, as Pulsar's ``MessageIdImpl``)."""

    ledgerId: int
    entryId: int
    partitionIndex: int
    batchIndex: NotRequired[int]
    batchSize: NotRequired[int]


class RawMessage(TypedDict):
    """A message read through the admin API (``peek_messages``, ``examine_message``,
    ``get_message_by_id``; :mod:`.messages`). ``messageId`` is ``"L:E"``, ``"L:E:I"`` inside a
    batch; times are ms since the epoch (0: not set)."""

    messageId: str
    publishTime: int
    eventTime: int
    properties: dict[str, str]
    key: str | None
    producerName: str
    sequenceId: int
    data: bytes


class CompactionStatus(TypedDict, total=False):
    """``topics.compaction_status`` (Pulsar's ``LongRunningProcessStatus``): ``status`` is
    ``NOT_RUN``, ``RUNNING``, ``SUCCESS`` or ``ERROR``."""

    status: str
    lastError: str


class OffloadProcessStatus(TypedDict, total=False):
    """``topics.offload_status`` (Pulsar's ``OffloadProcessStatus``): ``status`` is ``NOT_RUN``
    (nothing run since the topic was loaded), ``RUNNING``, ``SUCCESS`` or ``ERROR`` (the reason in
    ``lastError``); ``firstUnoffloadedMessage`` is the first ledger kept on the broker's storage
    (``L:0``) after a success, -1:-1 otherwise."""

    status: str
    lastError: str
    firstUnoffloadedMessage: MessageIdData


class LookupData(TypedDict, total=False):
    """The broker serving a topic (``topics.lookup``)."""

    brokerUrl: str
    brokerUrlTls: str
    httpUrl: str
    httpUrlTls: str
    nativeUrl: str


# --- schemas ---------------------------------------------------------------------------------


class GetSchemaResponse(TypedDict, total=False):
    """One schema version (``schemas.get``, ``schemas.get_all_versions``)."""

    version: int
    type: str
    timestamp: int
    data: str
    properties: dict[str, str]


class IsCompatibilityResponse(TypedDict):
    """``schemas.compatibility``; ``reason`` when it is not compatible."""

    compatibility: bool
    schemaCompatibilityStrategy: str
    reason: NotRequired[str]


# --- transactions ----------------------------------------------------------------------------


class CoordinatorStats(TypedDict):
    """One coordinator's stats (Pulsar's ``TransactionCoordinatorStats``)."""

    state: str
    #: The highest transaction sequence handed out and not yet ended.
    leastSigBits: int
    lowWaterMark: int
    #: Transactions not yet ended (OPEN, COMMITTING or ABORTING).
    ongoingTxnSize: int
    recoverStartTime: int
    recoverEndTime: int


class TransactionInBufferStats(TypedDict):
    """A transaction's state on one partition it produced to."""

    startPosition: str | None
    aborted: bool


class TransactionInPendingAckStats(TypedDict):
    """A transaction's acknowledgements on one subscription."""

    cumulativeAckPosition: str | None


class PositionInPendingAckStats(TypedDict):
    """``transactions.position_stats_in_pending_ack``: where a message stands in a
    subscription's acks, ``PendingAck``, ``MarkDelete``, ``NotInPendingAck``,
    ``PendingAckNotReady`` or ``InvalidPosition`` (a batch index past the batch)."""

    state: str


class TransactionCoordinatorInfo(TypedDict):
    """``transactions.coordinators``: one coordinator and the broker serving it."""

    id: int
    brokerServiceUrl: str


class TransactionMetadata(TypedDict):
    """A transaction not yet ended (``transactions.transaction_metadata``)."""

    txnId: str
    status: str
    openTimestamp: int
    timeoutAt: int  # the client's timeout in ms, as Pulsar reports it (not an instant)
    producedPartitions: dict[str, TransactionInBufferStats]
    ackedPartitions: dict[str, dict[str, TransactionInPendingAckStats]]


class TransactionLogStats(TypedDict):
    """A coordinator's transaction log (or a subscription's pending-ack log): its managed
    ledger's name and internal stats."""

    managedLedgerName: str
    managedLedgerInternalStats: ManagedLedgerInternalStats


class TransactionCoordinatorInternalStats(TypedDict):
    """``transactions.coordinator_internal_stats`` (Pulsar's ``TransactionCoordinatorInternalStats``)."""

    transactionLogStats: TransactionLogStats


class TransactionPendingAckInternalStats(TypedDict):
    """``transactions.pending_ack_internal_stats`` (Pulsar's ``TransactionPendingAckInternalStats``):
    the subscription's pending-ack log."""

    pendingAckLogStats: TransactionLogStats


class TransactionBufferStats(TypedDict, total=False):
    """A topic's transaction buffer (``transactions.transaction_buffer_stats``)."""

    state: str
    maxReadPosition: str
    lastSnapshotTimestamps: int
    ongoingTxnSize: int
    lowWaterMarks: dict[str, int]
    snapshotType: str


class TransactionPendingAckStats(TypedDict, total=False):
    """A subscription's pending acknowledgements (``transactions.pending_ack_stats``)."""

    state: str
    lowWaterMarks: dict[str, int]
    ongoingTxnSize: int
