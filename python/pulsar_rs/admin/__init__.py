"""The admin REST client of a broker, as a package: ``from pulsar_rs.admin import Admin``.

:mod:`.client` is :class:`Admin` itself (requests and redirects); :mod:`.errors` its
:class:`AdminError`; :mod:`.paths` quotes names into URL paths; :mod:`.groups`,
:mod:`.namespaces`, :mod:`.topics` and :mod:`.transactions` are its call groups (``admin.brokers``,
``admin.clusters``, ``admin.tenants``, ``admin.schemas``, ``admin.namespaces``, ``admin.topics``,
``admin.transactions``); :mod:`.policies` and :mod:`.limits` the policy and limit calls of
namespaces and topics; :mod:`.messages` decodes messages read through the API; :mod:`.types` the
JSON documents the calls return, as TypedDicts (``TopicStats``, ``TenantInfo``, ...), all
importable from here.
"""

from __future__ import annotations

from .client import MAX_REDIRECTS, Admin
from .errors import AdminError
from .groups import Brokers, Clusters, Schemas, Tenants
from .namespaces import Namespaces
from .topics import Topics
from .transactions import Transactions
from .types import (
    AuthPolicies,
    BacklogQuota,
    BrokerInfo,
    BundlesData,
    ClusterData,
    CompactionStats,
    CompactionStatus,
    ConsumerStats,
    CoordinatorStats,
    CursorStats,
    DispatchRate,
    GetSchemaResponse,
    InactiveTopicPolicies,
    IsCompatibilityResponse,
    LedgerInfo,
    LookupData,
    ManagedLedgerInternalStats,
    MessageIdData,
    NamespaceOwnershipStatus,
    PartitionedTopicInternalStats,
    PartitionedTopicMetadata,
    PartitionedTopicStats,
    PersistencePolicies,
    PersistentTopicInternalStats,
    Policies,
    PublisherStats,
    PublishRate,
    RawMessage,
    RetentionPolicies,
    SubscriptionStats,
    TenantInfo,
    TopicStats,
    TransactionBufferStats,
    TransactionCoordinatorInternalStats,
    TransactionInBufferStats,
    TransactionInPendingAckStats,
    TransactionLogStats,
    TransactionMetadata,
    TransactionPendingAckStats,
)

__all__ = [
    "MAX_REDIRECTS",
    "Admin",
    "AdminError",
    "AuthPolicies",
    "BacklogQuota",
    "BrokerInfo",
    "Brokers",
    "BundlesData",
    "ClusterData",
    "Clusters",
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
    "Namespaces",
    "PartitionedTopicInternalStats",
    "PartitionedTopicMetadata",
    "PartitionedTopicStats",
    "PersistencePolicies",
    "PersistentTopicInternalStats",
    "Policies",
    "PublishRate",
    "PublisherStats",
    "RawMessage",
    "RetentionPolicies",
    "Schemas",
    "SubscriptionStats",
    "TenantInfo",
    "Tenants",
    "TopicStats",
    "Topics",
    "TransactionBufferStats",
    "TransactionCoordinatorInternalStats",
    "TransactionInBufferStats",
    "TransactionInPendingAckStats",
    "TransactionLogStats",
    "TransactionMetadata",
    "TransactionPendingAckStats",
    "Transactions",
]
