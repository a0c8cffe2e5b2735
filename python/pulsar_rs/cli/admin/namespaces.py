"""``pulsar-rs admin namespaces``: list, create, delete [--force/-f], policies, permissions, topics,
grant-permission, revoke-permission, subscription-permission, grant-/revoke-subscription-permission,
set-/get-subscription-auth-mode, set-/get-schema-compatibility-strategy (``--compatibility/-c``),
set-/get-is-allow-auto-update-schema and set-/get-schema-validation-enforce (``--enable/-e`` or
``--disable/-d``), ``bundles``, ``unload [--bundle/-b RANGE [--destinationBroker/-d BROKER]]``,
``split-bundle --bundle/-b RANGE [--unload/-u] [--split-algorithm-name/-san NAME] [--split-boundaries P,..]``,
and ``set-`` / ``get-`` / ``remove-`` for each policy the broker applies, with pulsar-admin's names
and flags:

==========================  ==============================================================
retention                   ``--time/-t`` (e.g. 3h; -1 unlimited), ``--size/-s`` (e.g. 10G)
message-ttl                 ``--messageTTL/-ttl`` (e.g. 120, 2h)
backlog-quota(s)            ``--limit/-l``, ``--limitTime/-lt``, ``--policy/-p``, ``--type/-t``
                            (remove: ``--type/-t``, older ``--backlogQuotaType/-bqt``)
deduplication               ``--enable/-e`` or ``--disable/-d``
publish-rate                ``--msg-publish-rate/-m``, ``--byte-publish-rate/-b``
dispatch-rate               ``--msg-dispatch-rate/-md``, ``--byte-dispatch-rate/-bd``,
subscription-dispatch-rate  ``--dispatch-rate-period/-dt``, ``--relative-to-publish-rate/-rp``
replicator-dispatch-rate    ``--msg-dispatch-rate/-md``, ``--byte-dispatch-rate/-bd``,
                            ``--dispatch-rate-period/-dt`` (geo-replication; the namespace's
                            is this cluster's)
compaction-threshold        ``--threshold/-t`` (e.g. 100M)
persistence                 ``--bookkeeper-ensemble/-e``, ``--bookkeeper-write-quorum/-w``,
                            ``--bookkeeper-ack-quorum/-a``, ``--ml-mark-delete-max-rate/-r``
inactive-topic-policies     ``--enable-delete-while-inactive/-e`` or
                            ``--disable-delete-while-inactive/-d``,
                            ``--max-inactive-duration/-t``, ``--delete-mode/-m``
max-delivery-delay          ``--delay/-d`` (seconds, e.g. 1h; PIP-437)
fixed-delivery-delay        ``--delay/-d`` (seconds, e.g. 30s; 0: none; PIP-437)
==========================  ==============================================================

The limit commands (``set-max-producers-per-topic`` and the others) are in :mod:`.limits`, the
tiered-storage ones (``set-offload-threshold``, ``set-offload-deletion-lag``,
``set-offload-policies`` and their getters) in :mod:`.offload`.

The same policy commands serve the topic level (:func:`add_policies` with a ``topic``
positional; the TTL flag is then ``--ttl/-t``), registered by :mod:`.topic_policies`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ...admin import Admin
from . import limits, offload, tables
from .output import NOT_SET
from .units import csv, seconds, size

_Call = Callable[[Admin, argparse.Namespace], Any]


def scope(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    """The group and target a policy command acts on: ``admin.topics`` and the topic for the
    topic-level commands (:mod:`.topic_policies`), else ``admin.namespaces`` and the namespace."""
    topic = getattr(a, "topic", None)
    return (admin.topics, topic) if topic is not None else (admin.namespaces, a.namespace)


def _get(policy: str) -> _Call:
    def call(admin: Admin, a: argparse.Namespace) -> Any:
        group, target = scope(admin, a)
        v = group.get_policy(target, policy)
        return NOT_SET if v is None else v

    return call


def _remove(policy: str) -> _Call:
    def call(admin: Admin, a: argparse.Namespace) -> None:
        group, target = scope(admin, a)
        group.remove_policy(target, policy)

    return call


def _set_retention(admin: Admin, a: argparse.Namespace) -> None:
    minutes = a.time if a.time <= 0 else max(1, a.time // 60)
    mb = a.size if a.size <= 0 else max(1, a.size >> 20)
    group, target = scope(admin, a)
    group.set_retention(target, minutes, mb)


def _set_backlog_quota(admin: Admin, a: argparse.Namespace) -> None:
    if a.type == "destination_storage" and a.limit is None:
        raise ValueError("a destination_storage backlog quota needs --limit")
    if a.type == "message_age" and a.limitTime is None:
        raise ValueError("a message_age backlog quota needs --limitTime")
    limit = -1 if a.limit is None else a.limit
    limit_time = -1 if a.limitTime is None else a.limitTime
    group, target = scope(admin, a)
    group.set_backlog_quota(target, limit, limit_time, a.policy, a.type)


def _set_dispatch_rate(subscription: bool) -> _Call:
    def call(admin: Admin, a: argparse.Namespace) -> None:
        group, target = scope(admin, a)
        group.set_dispatch_rate(
            target,
            a.msg_dispatch_rate,
            a.byte_dispatch_rate,
            a.dispatch_rate_period,
            a.relative_to_publish_rate,
            subscription=subscription,
        )

    return call


def _set_inactive(admin: Admin, a: argparse.Namespace) -> None:
    group, target = scope(admin, a)
    group.set_inactive_topic_policies(target, a.enable, a.max_inactive_duration, a.delete_mode)


def _add_policy(
    g: Any, name: str, policy: str, set_call: _Call, flags: Callable[[Any], None], target: str = "namespace"
) -> None:
    """``set-NAME`` (with ``flags``), ``get-NAME`` and ``remove-NAME`` for the REST ``policy``,
    on a ``target`` positional (``namespace``, or ``topic`` for the topic-level commands)."""
    p = g.add_parser(f"set-{name}")
    p.add_argument(target)
    flags(p)
    p.set_defaults(call=set_call)
    p = g.add_parser(f"get-{name}")
    p.add_argument(target)
    p.set_defaults(call=_get(policy))
    p = g.add_parser(f"remove-{name}")
    p.add_argument(target)
    p.set_defaults(call=_remove(policy))


def _retention_flags(p: Any) -> None:
    p.add_argument("--time", "-t", type=seconds, required=True, help="e.g. 100m, 3h, 2d; -1 unlimited, 0 none")
    p.add_argument("--size", "-s", type=size, required=True, help="e.g. 10M, 16G; -1 unlimited, 0 none")


def _persistence_flags(p: Any) -> None:
    p.add_argument("--bookkeeper-ensemble", "-e", type=int, required=True)
    p.add_argument("--bookkeeper-write-quorum", "-w", type=int, required=True)
    p.add_argument("--bookkeeper-ack-quorum", "-a", type=int, required=True)
    p.add_argument("--ml-mark-delete-max-rate", "-r", type=float, default=0.0)


def _ttl_flags(p: Any) -> None:
    p.add_argument("--messageTTL", "-ttl", dest="ttl", type=seconds, required=True, help="e.g. 120, 2h")


def _delay_flags(p: Any) -> None:
    p.add_argument("--delay", "-d", type=seconds, required=True, help="e.g. 30s, 10m, 1d (0: none)")


def _on_off_flags(p: Any) -> None:
    on = p.add_mutually_exclusive_group(required=True)
    on.add_argument("--enable", "-e", dest="enabled", action="store_true")
    on.add_argument("--disable", "-d", dest="enabled", action="store_false")


def _publish_rate_flags(p: Any) -> None:
    p.add_argument("--msg-publish-rate", "-m", type=int, default=-1, help="messages/s (-1: no limit)")
    p.add_argument("--byte-publish-rate", "-b", type=int, default=-1, help="bytes/s (-1: no limit)")


def _dispatch_rate_flags(p: Any) -> None:
    p.add_argument("--msg-dispatch-rate", "-md", type=int, default=-1, help="messages a period (-1: no limit)")
    p.add_argument("--byte-dispatch-rate", "-bd", type=int, default=-1, help="bytes a period (-1: no limit)")
    p.add_argument("--dispatch-rate-period", "-dt", type=int, default=1, help="the period in seconds")
    p.add_argument("--relative-to-publish-rate", "-rp", action="store_true")


def _replicator_rate_flags(p: Any) -> None:
    p.add_argument("--msg-dispatch-rate", "-md", type=int, default=-1, help="messages a period (-1: no limit)")
    p.add_argument("--byte-dispatch-rate", "-bd", type=int, default=-1, help="bytes a period (-1: no limit)")
    p.add_argument("--dispatch-rate-period", "-dt", type=int, default=1, help="the period in seconds")


def _compaction_flags(p: Any) -> None:
    p.add_argument("--threshold", "-t", type=size, required=True, help="backlog bytes that trigger it, e.g. 100M")


def _inactive_flags(p: Any) -> None:
    on = p.add_mutually_exclusive_group(required=True)
    on.add_argument("--enable-delete-while-inactive", "-e", dest="enable", action="store_true")
    on.add_argument("--disable-delete-while-inactive", "-d", dest="enable", action="store_false")
    p.add_argument("--max-inactive-duration", "-t", type=seconds, required=True, help="e.g. 1h")
    p.add_argument(
        "--delete-mode",
        "-m",
        required=True,
        choices=["delete_when_no_subscriptions", "delete_when_subscriptions_caught_up"],
    )


#: The schema policies: CLI name → ``Admin.namespaces`` method suffix.
_SCHEMA_SWITCHES = {
    "is-allow-auto-update-schema": "is_allow_auto_update_schema",
    "schema-validation-enforce": "schema_validation_enforce",
}
_STRATEGIES = [
    "UNDEFINED",
    "ALWAYS_INCOMPATIBLE",
    "ALWAYS_COMPATIBLE",
    "BACKWARD",
    "FORWARD",
    "FULL",
    "BACKWARD_TRANSITIVE",
    "FORWARD_TRANSITIVE",
    "FULL_TRANSITIVE",
]


def _add_schema_policies(g: Any) -> None:
    p = g.add_parser("set-schema-compatibility-strategy")
    p.add_argument("namespace")
    p.add_argument("--compatibility", "-c", required=True, type=str.upper, choices=_STRATEGIES)
    p.set_defaults(
        call=lambda admin, a: admin.namespaces.set_schema_compatibility_strategy(a.namespace, a.compatibility)
    )
    p = g.add_parser("get-schema-compatibility-strategy")
    p.add_argument("namespace")
    p.set_defaults(call=lambda admin, a: admin.namespaces.get_schema_compatibility_strategy(a.namespace))
    for name, method in _SCHEMA_SWITCHES.items():
        p = g.add_parser(f"set-{name}")
        p.add_argument("namespace")
        _on_off_flags(p)
        p.set_defaults(call=lambda admin, a, m=method: getattr(admin.namespaces, f"set_{m}")(a.namespace, a.enabled))
        p = g.add_parser(f"get-{name}")
        p.add_argument("namespace")
        p.set_defaults(call=lambda admin, a, m=method: getattr(admin.namespaces, f"get_{m}")(a.namespace))


def add(groups: Any) -> None:
    g = groups.add_parser("namespaces", help="namespaces").add_subparsers(dest="action", required=True)
    p = g.add_parser("list")
    p.add_argument("tenant")
    p.set_defaults(call=lambda admin, a: admin.namespaces.list(a.tenant))
    p = g.add_parser("create")
    p.add_argument("namespace", help="tenant/name")
    p.add_argument("--bundles", "-b", type=int, help="number of bundles (the broker's default: 4)")
    p.set_defaults(call=lambda admin, a: admin.namespaces.create(a.namespace, bundles=a.bundles))
    for verb in ("policies", "permissions", "topics"):
        p = g.add_parser(verb)
        p.add_argument("namespace", help="tenant/name")
        p.set_defaults(call=lambda admin, a: getattr(admin.namespaces, a.action)(a.namespace))
    p = g.add_parser("delete")
    p.add_argument("namespace", help="tenant/name")
    p.add_argument("--force", "-f", action="store_true", help="delete its topics too (forceDeleteNamespaceAllowed)")
    p.set_defaults(call=lambda admin, a: admin.namespaces.delete(a.namespace, a.force))
    p = g.add_parser("set-clusters")
    p.add_argument("namespace", help="tenant/name")
    p.add_argument("--clusters", "-c", required=True, help="comma-separated replication clusters")
    p.set_defaults(call=lambda admin, a: admin.namespaces.set_clusters(a.namespace, csv(a.clusters)))
    p = g.add_parser("get-clusters")
    p.add_argument("namespace", help="tenant/name")
    p.set_defaults(call=lambda admin, a: admin.namespaces.get_clusters(a.namespace))
    # PIP-447: the topic property keys allowed as metric labels (Pulsar's admin method
    # setAllowedTopicPropertiesForMetrics).
    p = g.add_parser("set-allowed-topic-properties-for-metrics")
    p.add_argument("namespace", help="tenant/name")
    p.add_argument("--keys", "-k", required=True, help="comma-separated topic property keys")
    p.set_defaults(
        call=lambda admin, a: admin.namespaces.set_allowed_topic_property_keys_for_metrics(a.namespace, csv(a.keys))
    )
    p = g.add_parser("get-allowed-topic-properties-for-metrics")
    p.add_argument("namespace", help="tenant/name")
    p.set_defaults(call=lambda admin, a: admin.namespaces.get_allowed_topic_property_keys_for_metrics(a.namespace))
    p = g.add_parser("remove-allowed-topic-properties-for-metrics")
    p.add_argument("namespace", help="tenant/name")
    p.set_defaults(call=lambda admin, a: admin.namespaces.remove_allowed_topic_property_keys_for_metrics(a.namespace))
    p = g.add_parser("grant-permission")
    p.add_argument("namespace")
    p.add_argument("--role", required=True)
    p.add_argument("--actions", required=True, help="comma-separated: produce,consume")
    p.set_defaults(call=lambda admin, a: admin.namespaces.grant_permission(a.namespace, a.role, csv(a.actions)))
    p = g.add_parser("revoke-permission")
    p.add_argument("namespace")
    p.add_argument("--role", required=True)
    p.set_defaults(call=lambda admin, a: admin.namespaces.revoke_permission(a.namespace, a.role))
    p = g.add_parser("subscription-permission")
    p.add_argument("namespace")
    p.set_defaults(call=lambda admin, a: admin.namespaces.subscription_permissions(a.namespace))
    p = g.add_parser("grant-subscription-permission")
    p.add_argument("namespace")
    p.add_argument("--subscription", "-s", required=True)
    p.add_argument("--roles", required=True, help="comma-separated roles")
    p.set_defaults(
        call=lambda admin, a: admin.namespaces.grant_subscription_permission(a.namespace, a.subscription, csv(a.roles))
    )
    p = g.add_parser("revoke-subscription-permission")
    p.add_argument("namespace")
    p.add_argument("--subscription", "-s", required=True)
    p.add_argument("--role", required=True)
    p.set_defaults(
        call=lambda admin, a: admin.namespaces.revoke_subscription_permission(a.namespace, a.subscription, a.role)
    )
    p = g.add_parser("set-subscription-auth-mode")
    p.add_argument("namespace")
    p.add_argument("--subscription-auth-mode", "-m", dest="mode", required=True, choices=["None", "Prefix"])
    p.set_defaults(call=lambda admin, a: admin.namespaces.set_subscription_auth_mode(a.namespace, a.mode))
    p = g.add_parser("get-subscription-auth-mode")
    p.add_argument("namespace")
    p.set_defaults(call=lambda admin, a: admin.namespaces.get_subscription_auth_mode(a.namespace))
    p = g.add_parser("bundles", help="the namespace's bundle boundaries")
    p.add_argument("namespace")
    p.set_defaults(call=lambda admin, a: admin.namespaces.bundles(a.namespace))
    p = g.add_parser("unload", help="unload the namespace (or one bundle) from its brokers")
    p.add_argument("namespace")
    p.add_argument("--bundle", "-b", default=None, help="{start-boundary}_{end-boundary}, e.g. 0x00000000_0x40000000")
    p.add_argument(
        "--destinationBroker",
        "-d",
        dest="destination",
        default=None,
        help="with --bundle: the broker (host:port) to take it",
    )
    p.set_defaults(call=lambda admin, a: admin.namespaces.unload(a.namespace, a.bundle, a.destination))
    p = g.add_parser("split-bundle", help="split one bundle of the namespace")
    p.add_argument("namespace")
    p.add_argument("--bundle", "-b", required=True, help="{start-boundary}_{end-boundary}, e.g. 0x00000000_0x40000000")
    p.add_argument("--unload", "-u", action="store_true", help="unload the new bundles afterwards")
    p.add_argument(
        "--split-algorithm-name",
        "-san",
        dest="algorithm",
        default=None,
        help="range_equally_divide (default), topic_count_equally_divide or specified_positions_divide",
    )
    p.add_argument(
        "--split-boundaries",
        dest="boundaries",
        default=None,
        type=lambda v: [int(x, 0) for x in v.split(",") if x],
        help="with specified_positions_divide: the positions, comma-separated (e.g. 0x20000000,0x30000000)",
    )
    p.set_defaults(
        call=lambda admin, a: admin.namespaces.split_bundle(a.namespace, a.bundle, a.unload, a.algorithm, a.boundaries)
    )

    _add_schema_policies(g)
    add_policies(g, "namespace")
    limits.add(g, "namespace")
    offload.add_namespace_commands(g)
    offload.add_policies(g, "namespace")
    tables.add(g, "namespace")


def _call(method: str, *fields: str) -> _Call:
    """A setter: ``group.method(target, a.FIELD, ...)`` on the command's scope."""

    def call(admin: Admin, a: argparse.Namespace) -> None:
        group, target = scope(admin, a)
        getattr(group, method)(target, *(getattr(a, f) for f in fields))

    return call


def _topic_ttl_flags(p: Any) -> None:
    p.add_argument("--ttl", "-t", dest="ttl", type=seconds, required=True, help="e.g. 120, 2h")


def add_policies(g: Any, target: str) -> None:
    """``set-`` / ``get-`` / ``remove-`` for every policy the broker applies, on a ``namespace``
    or (topic-level policies, :mod:`.topic_policies`) a ``topic`` positional."""
    ttl_flags = _ttl_flags if target == "namespace" else _topic_ttl_flags
    dedup = "deduplication" if target == "namespace" else "deduplicationEnabled"
    _add_policy(g, "retention", "retention", _set_retention, _retention_flags, target)
    persistence = _call(
        "set_persistence",
        "bookkeeper_ensemble",
        "bookkeeper_write_quorum",
        "bookkeeper_ack_quorum",
        "ml_mark_delete_max_rate",
    )
    _add_policy(g, "persistence", "persistence", persistence, _persistence_flags, target)
    _add_policy(g, "message-ttl", "messageTTL", _call("set_message_ttl", "ttl"), ttl_flags, target)
    _add_policy(g, "deduplication", dedup, _call("set_deduplication", "enabled"), _on_off_flags, target)
    rate = _call("set_publish_rate", "msg_publish_rate", "byte_publish_rate")
    _add_policy(g, "publish-rate", "publishRate", rate, _publish_rate_flags, target)
    _add_policy(g, "dispatch-rate", "dispatchRate", _set_dispatch_rate(False), _dispatch_rate_flags, target)
    _add_policy(
        g,
        "subscription-dispatch-rate",
        "subscriptionDispatchRate",
        _set_dispatch_rate(True),
        _dispatch_rate_flags,
        target,
    )
    replicator = _call(
        "set_replicator_dispatch_rate", "msg_dispatch_rate", "byte_dispatch_rate", "dispatch_rate_period"
    )
    _add_policy(g, "replicator-dispatch-rate", "replicatorDispatchRate", replicator, _replicator_rate_flags, target)
    threshold = _call("set_compaction_threshold", "threshold")
    _add_policy(g, "compaction-threshold", "compactionThreshold", threshold, _compaction_flags, target)
    _add_policy(g, "inactive-topic-policies", "inactiveTopicPolicies", _set_inactive, _inactive_flags, target)
    # PIP-437 (Pulsar 4.2): the longest and the fixed delivery delay, in seconds.
    longest = _call("set_max_delivery_delay", "delay")
    _add_policy(g, "max-delivery-delay", "maxDelayedDeliveryTime", longest, _delay_flags, target)
    fixed = _call("set_fixed_delivery_delay", "delay")
    _add_policy(g, "fixed-delivery-delay", "fixedDelayedDeliveryTime", fixed, _delay_flags, target)

    # Backlog quotas: pulsar-admin's plural getter, and a type on set/remove.
    p = g.add_parser("set-backlog-quota")
    p.add_argument(target)
    p.add_argument("--limit", "-l", type=size, default=None, help="backlog size, e.g. 10G")
    p.add_argument("--limitTime", "-lt", type=seconds, default=None, help="age of the oldest message, e.g. 3h")
    p.add_argument(
        "--policy",
        "-p",
        required=True,
        choices=["producer_request_hold", "producer_exception", "consumer_backlog_eviction"],
    )
    p.add_argument("--type", "-t", default="destination_storage", choices=["destination_storage", "message_age"])
    p.set_defaults(call=_set_backlog_quota)
    p = g.add_parser("get-backlog-quotas")
    p.add_argument(target)
    p.set_defaults(call=_get("backlogQuotaMap"))
    p = g.add_parser("remove-backlog-quota")
    p.add_argument(target)
    # pulsar-admin's -t/--type; -bqt/--backlogQuotaType is its older namespace spelling.
    p.add_argument(
        "--type",
        "-t",
        "--backlogQuotaType",
        "-bqt",
        dest="quota_type",
        default="destination_storage",
        choices=["destination_storage", "message_age"],
    )
    p.set_defaults(call=_call("remove_backlog_quota", "quota_type"))
