"""``pulsar-rs admin topics``: pulsar-admin's topic commands with its names and flags.

Topics: ``list NS [-p k=v,...]``, ``list-partitioned-topics NS``, ``create T``, ``delete T [-f]``,
``create-partitioned-topic T -p N``, ``get-partitioned-topic-metadata T``,
``update-partitioned-topic T -p N``, ``delete-partitioned-topic T [-f]``, ``stats T``,
``partitioned-stats T [--per-partition]``, ``stats-internal T`` (or ``internal-stats``),
``partitioned-stats-internal T``; permissions:
``permissions T``, ``grant-permission T --role R --actions a,b``, ``revoke-permission T --role R``;
subscriptions: ``subscriptions T``, ``create-subscription T -s S [-m latest|earliest|L:E]``,
``unsubscribe T -s S [-f]``, ``skip T -s S -n N``, ``clear-backlog T -s S`` (also ``skip-all``),
``reset-cursor T -s S (-t TIME | -m L:E [-e])``, ``expire-messages T -s S (-t TIME | -p L:E [-e])``,
``expire-messages-all-subscriptions T -t TIME``, ``set-replicated-subscription-status T -s S
(--enable | --disable)``, ``get-replicated-subscription-status T -s S``, ``diagnose-subscription T -s S``
(what holds its delivery back now), ``unacked-messages T -s S [-n LIMIT]``,
``search-messages T [-k KEY] [-p k=v,...] [--from-time TIME] [--to-time TIME] [-m LEDGER:ENTRY] [-n LIMIT]
[--max-entries N]``. TIME is relative (``10m``: ten minutes ago).
Also, from their own modules: messages (:mod:`.topic_messages`: ``peek-messages``,
``examine-messages``, ``get-message-by-id``), topic-level policies (:mod:`.topic_policies`) and
``lookup`` / ``bundle-range`` / ``compact`` / ``compaction-status`` (:mod:`.topic_service`),
``offload T -s SIZE`` / ``offload-status T [-w]`` (:mod:`.offload`).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from ...admin import Admin
from . import offload, tables, topic_messages, topic_policies, topic_service
from .units import csv, message_id, seconds


def _reset_cursor(admin: Admin, a: argparse.Namespace) -> None:
    if a.messageId is not None:
        admin.topics.reset_cursor(a.topic, a.subscription, message_id=a.messageId, excluded=a.exclude_reset_position)
    else:
        timestamp_ms = int(time.time() * 1000) - a.time * 1000
        admin.topics.reset_cursor(a.topic, a.subscription, timestamp_ms=max(0, timestamp_ms))


def _properties(text: str | None) -> dict[str, str] | None:
    """``k1=v1,k2=v2`` (pulsar-admin's ``-p``) as a dict; None for no text."""
    return dict(kv.split("=", 1) for kv in text.split(",") if kv) if text else None


def _search_messages(admin: Admin, a: argparse.Namespace) -> Any:
    now_ms = int(time.time() * 1000)
    properties = _properties(a.properties)
    return admin.topics.search_messages(
        a.topic,
        key=a.key,
        properties=properties,
        from_publish_time=None if a.from_time is None else max(0, now_ms - a.from_time * 1000),
        to_publish_time=None if a.to_time is None else max(0, now_ms - a.to_time * 1000),
        from_message_id=a.from_message_id,
        limit=a.limit,
        max_entries=a.max_entries,
    )


def _expire_messages(admin: Admin, a: argparse.Namespace) -> None:
    if a.position is not None:
        admin.topics.expire_messages(a.topic, a.subscription, message_id=a.position, excluded=a.exclude_reset_position)
    else:
        admin.topics.expire_messages(a.topic, a.subscription, a.time)


def _topic_parser(g: Any, name: str, call: Any, sub: bool = False, **kw: Any) -> Any:
    p = g.add_parser(name, **kw)
    p.add_argument("topic", help="persistent://tenant/ns/topic (or tenant/ns/topic, or topic)")
    if sub:
        p.add_argument("--subscription", "-s", required=True, help="the subscription")
    p.set_defaults(call=call)
    return p


def _add_unsubscribe(g: Any) -> None:
    p = _topic_parser(
        g, "unsubscribe", lambda admin, a: admin.topics.unsubscribe(a.topic, a.subscription, a.force), sub=True
    )
    p.add_argument("--force", "-f", action="store_true", help="disconnect its consumers, then delete it")


def _add_families(g: Any) -> None:
    """The topic commands kept in their own modules: messages, topic-level policies, service,
    offload."""
    topic_messages.add_to(g)
    topic_policies.add_to(g)
    topic_service.add_to(g)
    offload.add_topic_commands(g)
    tables.add(g, "topic")


def add(groups: Any) -> None:
    g = groups.add_parser("topics", help="topics").add_subparsers(dest="action", required=True)
    p = g.add_parser("list")
    p.add_argument("namespace", help="tenant/name")
    p.add_argument("--properties", "-p", help="PIP-452: k1=v1,k2=v2 the topics are listed by")
    p.set_defaults(call=lambda admin, a: admin.topics.list(a.namespace, _properties(a.properties)))
    p = g.add_parser("list-partitioned-topics")
    p.add_argument("namespace", help="tenant/name")
    p.set_defaults(call=lambda admin, a: admin.topics.list_partitioned(a.namespace))

    p = _topic_parser(g, "create", lambda admin, a: admin.topics.create(a.topic, a.partitions))
    p.add_argument("--partitions", "-p", type=int, default=0, help="create it partitioned (> 0)")
    p = _topic_parser(g, "delete", lambda admin, a: admin.topics.delete(a.topic, a.partitioned, a.force))
    p.add_argument("--partitioned", action="store_true")
    p.add_argument("--force", "-f", action="store_true", help="close its producers and consumers, then delete it")
    p = _topic_parser(
        g, "delete-partitioned-topic", lambda admin, a: admin.topics.delete_partitioned_topic(a.topic, a.force)
    )
    p.add_argument("--force", "-f", action="store_true", help="close its producers and consumers, then delete it")
    p = _topic_parser(
        g, "create-partitioned-topic", lambda admin, a: admin.topics.create_partitioned_topic(a.topic, a.partitions)
    )
    p.add_argument("--partitions", "-p", type=int, required=True)
    p = _topic_parser(
        g, "update-partitioned-topic", lambda admin, a: admin.topics.update_partitioned_topic(a.topic, a.partitions)
    )
    p.add_argument("--partitions", "-p", type=int, required=True, help="the new count (only grows)")
    for verb in ("get-partitioned-topic-metadata", "stats"):
        fn = verb.replace("-", "_")
        _topic_parser(g, verb, lambda admin, a, fn=fn: getattr(admin.topics, fn)(a.topic))
    # pulsar-admin's name is stats-internal; internal-stats is this CLI's first name for it.
    p = _topic_parser(
        g,
        "internal-stats",
        lambda admin, a: admin.topics.internal_stats(a.topic, a.metadata),
        aliases=["stats-internal"],
    )
    p.add_argument("--metadata", "-m", action="store_true", help="each ledger's metadata (ensembles) too")
    p = _topic_parser(g, "partitioned-stats", lambda admin, a: admin.topics.partitioned_stats(a.topic, a.per_partition))
    p.add_argument("--per-partition", action="store_true", help="each partition's stats too")
    _topic_parser(g, "partitioned-stats-internal", lambda admin, a: admin.topics.partitioned_internal_stats(a.topic))

    _topic_parser(g, "permissions", lambda admin, a: admin.topics.permissions(a.topic))
    p = _topic_parser(
        g, "grant-permission", lambda admin, a: admin.topics.grant_permission(a.topic, a.role, csv(a.actions))
    )
    p.add_argument("--role", "-r", required=True)
    p.add_argument("--actions", "-a", required=True, help="comma-separated: produce,consume")
    p = _topic_parser(g, "revoke-permission", lambda admin, a: admin.topics.revoke_permission(a.topic, a.role))
    p.add_argument("--role", "-r", required=True)

    _topic_parser(g, "subscriptions", lambda admin, a: admin.topics.subscriptions(a.topic))
    p = _topic_parser(
        g,
        "create-subscription",
        lambda admin, a: admin.topics.create_subscription(a.topic, a.subscription, a.messageId),
        sub=True,
    )
    p.add_argument("--messageId", "-m", type=message_id, default="latest", help="latest (default), earliest or L:E")
    _add_unsubscribe(g)
    p = _topic_parser(g, "skip", lambda admin, a: admin.topics.skip(a.topic, a.subscription, a.count), sub=True)
    p.add_argument("--count", "-n", type=int, required=True, help="how many messages to skip")
    for verb in ("clear-backlog", "skip-all"):
        _topic_parser(g, verb, lambda admin, a: admin.topics.clear_backlog(a.topic, a.subscription), sub=True)
    p = _topic_parser(
        g,
        "set-replicated-subscription-status",
        lambda admin, a: admin.topics.set_replicated_subscription_status(a.topic, a.subscription, a.enable),
        sub=True,
    )
    on_off = p.add_mutually_exclusive_group(required=True)
    on_off.add_argument("--enable", "-e", dest="enable", action="store_true", help="replicate the subscription")
    on_off.add_argument("--disable", "-d", dest="enable", action="store_false", help="stop replicating it")
    _topic_parser(
        g,
        "get-replicated-subscription-status",
        lambda admin, a: admin.topics.get_replicated_subscription_status(a.topic, a.subscription),
        sub=True,
    )
    _topic_parser(
        g,
        "diagnose-subscription",
        lambda admin, a: admin.topics.diagnose_subscription(a.topic, a.subscription),
        sub=True,
    )
    p = _topic_parser(
        g,
        "unacked-messages",
        lambda admin, a: admin.topics.unacked_messages(a.topic, a.subscription, a.limit),
        sub=True,
    )
    p.add_argument("--limit", "-n", type=int, help="at most this many entries per list (100)")
    p = _topic_parser(g, "search-messages", _search_messages)
    p.add_argument("--key", "-k", help="the partition key or ordering key")
    p.add_argument("--properties", "-p", help="k1=v1,k2=v2: every one must match")
    p.add_argument("--from-time", type=seconds, help="published at most this long ago, e.g. 10m")
    p.add_argument("--to-time", type=seconds, help="published at least this long ago, e.g. 5m")
    p.add_argument("--from-message-id", "-m", help="LEDGER:ENTRY: scan from there (lastScanned of a search)")
    p.add_argument("--limit", "-n", type=int, help="at most this many messages (100)")
    p.add_argument("--max-entries", type=int, help="scan at most this many entries (100000)")
    p = _topic_parser(g, "reset-cursor", _reset_cursor, sub=True)
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--time", "-t", type=seconds, help="how far back, e.g. 10m, 3h (relative to now)")
    to.add_argument("--messageId", "-m", type=message_id, help="LEDGER:ENTRY (or earliest / latest)")
    p.add_argument("--exclude-reset-position", "-e", action="store_true", help="start after --messageId")
    p = _topic_parser(g, "expire-messages", _expire_messages, sub=True)
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--expireTime", "-t", dest="time", type=seconds, help="age, e.g. 60s, 10m")
    to.add_argument("--position", "-p", "--message-id", dest="position", type=message_id, help="LEDGER:ENTRY")
    p.add_argument("--exclude-reset-position", "-e", action="store_true", help="with --position: expire after it")
    p = _topic_parser(
        g,
        "expire-messages-all-subscriptions",
        lambda admin, a: admin.topics.expire_messages_all_subscriptions(a.topic, a.time),
    )
    p.add_argument("--expireTime", "-t", dest="time", type=seconds, required=True, help="age, e.g. 60s, 10m")
    _add_families(g)
