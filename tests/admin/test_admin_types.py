"""The TypedDicts of :mod:`pulsar_rs.admin` against what the broker answers: every key of each
document is declared in its type (nested documents too), every required key is there, and each
value has the declared type. A field the broker starts writing, or one renamed, fails here until
``python/pulsar_rs/admin/types.py`` follows."""

from __future__ import annotations

import types
import typing
from typing import Any, get_args, get_origin, get_type_hints, is_typeddict

import pulsar
import pytest

from pulsar_rs import Admin
from pulsar_rs.admin import BacklogQuota as Quota
from pulsar_rs.admin import (
    BrokerInfo,
    BundlesData,
    ClusterData,
    CompactionStatus,
    CoordinatorStats,
    DispatchRate,
    GetSchemaResponse,
    InactiveTopicPolicies,
    IsCompatibilityResponse,
    LoadReport,
    LookupData,
    MessageIdData,
    NamespaceOwnershipStatus,
    PartitionedTopicInternalStats,
    PartitionedTopicMetadata,
    PartitionedTopicStats,
    PersistencePolicies,
    PersistentTopicInternalStats,
    Policies,
    PublishRate,
    RawMessage,
    RetentionPolicies,
    TenantInfo,
    TopicStats,
    TransactionBufferStats,
    TransactionCoordinatorInternalStats,
    TransactionPendingAckStats,
)

TOPIC = "persistent://public/default/typed"
PARTITIONED = "persistent://public/default/typed-p"


def conforms(value: Any, tp: Any, where: str) -> list[str]:
    """What in ``value`` does not match ``tp`` (empty when it matches)."""
    if tp is Any:
        return []
    if is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{where}: {type(value).__name__}, not a {tp.__name__} document"]
        declared = tp.__required_keys__ | tp.__optional_keys__
        problems = [f"{where}.{k}: not declared in {tp.__name__}" for k in sorted(set(value) - declared)]
        problems += [
            f"{where}.{k}: required by {tp.__name__}, missing" for k in sorted(tp.__required_keys__ - set(value))
        ]
        hints = get_type_hints(tp)
        for k, v in value.items():
            if k in hints:
                problems += conforms(v, hints[k], f"{where}.{k}")
        return problems
    origin = get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = [conforms(value, arg, where) for arg in get_args(tp)]
        return [] if any(not o for o in options) else options[0]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: {type(value).__name__}, not a dict"]
        _, value_type = get_args(tp)
        return [p for k, v in value.items() for p in conforms(v, value_type, f"{where}[{k!r}]")]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {type(value).__name__}, not a list"]
        (item_type,) = get_args(tp)
        return [p for i, v in enumerate(value) for p in conforms(v, item_type, f"{where}[{i}]")]
    if tp is type(None):
        return [] if value is None else [f"{where}: {value!r}, not None"]
    if tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, tp)
    return [] if ok else [f"{where}: {value!r} is not {tp.__name__}"]


def test_conforms_finds_an_undeclared_key_and_a_wrong_type():
    assert conforms({"retentionTimeInMinutes": 1, "retentionSizeInMB": 2}, RetentionPolicies, "r") == []
    assert conforms({"retentionTimeInMinutes": 1}, RetentionPolicies, "r") == [
        "r.retentionSizeInMB: required by RetentionPolicies, missing"
    ]
    assert conforms({"retentionTimeInMinutes": "1", "retentionSizeInMB": 2, "x": 0}, RetentionPolicies, "r") == [
        "r.x: not declared in RetentionPolicies",
        "r.retentionTimeInMinutes: '1' is not int",
    ]


def test_each_answer_matches_its_type(pulsar_broker_factory):
    broker = pulsar_broker_factory(transactionCoordinatorEnabled=True)
    admin = Admin(broker.admin_url)
    client = pulsar.Client(broker.service_url)
    try:
        producer = client.create_producer(TOPIC)
        consumer = client.subscribe(TOPIC, "s", consumer_name="c")
        for i in range(3):
            producer.send(f"m{i}".encode(), properties={"k": "v"}, partition_key="key")
        consumer.acknowledge(consumer.receive(timeout_millis=5000))
        admin.topics.create(PARTITIONED, 2)
        cluster = admin.clusters.list()[0]
        broker_id = admin.brokers.list(cluster)[0]
        admin.namespaces.set_retention(
            "public/default", 10, 2048
        )  # keeps more than the quota below lets pile up (Pulsar refuses less)
        admin.namespaces.set_backlog_quota("public/default", limit_size=1 << 30)
        admin.namespaces.set_persistence("public/default", 1, 1, 1)
        admin.namespaces.set_dispatch_rate("public/default", 100)
        admin.namespaces.set_publish_rate("public/default", 100)
        admin.namespaces.set_inactive_topic_policies("public/default", False, 60)
        admin.schemas.upload(TOPIC + "-schema", "STRING", "")
        answers: list[tuple[str, Any, Any]] = [
            ("stats", admin.topics.stats(TOPIC), TopicStats),
            ("internal_stats", admin.topics.internal_stats(TOPIC), PersistentTopicInternalStats),
            ("partitioned_stats", admin.topics.partitioned_stats(PARTITIONED), PartitionedTopicStats),
            (
                "partitioned_internal_stats",
                admin.topics.partitioned_internal_stats(PARTITIONED),
                PartitionedTopicInternalStats,
            ),
            ("partition metadata", admin.topics.get_partitioned_topic_metadata(PARTITIONED), PartitionedTopicMetadata),
            ("last_message_id", admin.topics.last_message_id(TOPIC), MessageIdData),
            ("compaction_status", admin.topics.compaction_status(TOPIC), CompactionStatus),
            ("lookup", admin.topics.lookup(TOPIC), LookupData),
            ("peek_messages", admin.topics.peek_messages(TOPIC, "s", 2), list[RawMessage]),
            ("examine_message", admin.topics.examine_message(TOPIC, "earliest", 1), RawMessage),
            ("clusters.get", admin.clusters.get(cluster), ClusterData),
            ("tenants.get", admin.tenants.get("public"), TenantInfo),
            ("policies", admin.namespaces.policies("public/default"), Policies),
            ("bundles", admin.namespaces.bundles("public/default"), BundlesData),
            ("retention", admin.namespaces.get_policy("public/default", "retention"), RetentionPolicies),
            ("persistence", admin.namespaces.get_policy("public/default", "persistence"), PersistencePolicies),
            ("dispatchRate", admin.namespaces.get_policy("public/default", "dispatchRate"), DispatchRate),
            ("publishRate", admin.namespaces.get_policy("public/default", "publishRate"), PublishRate),
            (
                "inactiveTopicPolicies",
                admin.namespaces.get_policy("public/default", "inactiveTopicPolicies"),
                InactiveTopicPolicies,
            ),
            ("backlog quotas", admin.namespaces.get_backlog_quotas("public/default"), dict[str, Quota]),
            ("leader_broker", admin.brokers.leader_broker(), BrokerInfo),
            ("load_report", admin.broker_stats.load_report(), LoadReport),
            (
                "owned_namespaces",
                admin.brokers.owned_namespaces(cluster, broker_id),
                dict[str, NamespaceOwnershipStatus],
            ),
            ("schemas.get", admin.schemas.get(TOPIC + "-schema"), GetSchemaResponse),
            ("schemas.get_all_versions", admin.schemas.get_all_versions(TOPIC + "-schema"), list[GetSchemaResponse]),
            (
                "schemas.compatibility",
                admin.schemas.compatibility(TOPIC + "-schema", "STRING", ""),
                IsCompatibilityResponse,
            ),
            ("coordinator_stats", admin.transactions.coordinator_stats(), dict[int, CoordinatorStats]),
            ("transaction_buffer_stats", admin.transactions.transaction_buffer_stats(TOPIC), TransactionBufferStats),
            ("pending_ack_stats", admin.transactions.pending_ack_stats(TOPIC, "s"), TransactionPendingAckStats),
            (
                "coordinator_internal_stats",
                admin.transactions.coordinator_internal_stats(0, metadata=True),
                TransactionCoordinatorInternalStats,
            ),
        ]
    finally:
        client.close()
    problems = [p for name, value, tp in answers for p in conforms(value, tp, name)]
    assert problems == []
    # The nested documents were there to be checked.
    stats = answers[0][1]
    assert stats["publishers"] and stats["subscriptions"]["s"]["consumers"]


@pytest.mark.parametrize("name", ["ClusterData", "TopicStats", "Policies", "RawMessage"])
def test_types_are_public_names(name):
    import pulsar_rs.admin

    assert name in pulsar_rs.admin.__all__ and is_typeddict(getattr(pulsar_rs.admin, name))
