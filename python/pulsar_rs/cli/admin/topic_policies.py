"""Topic-level policies, with pulsar-admin's names: ``topics set-retention T -t TIME -s SIZE``
(and ``get-`` / ``remove-``) for retention, message-ttl (``--ttl/-t``), backlog-quota(s),
deduplication, publish-rate, dispatch-rate, subscription-dispatch-rate, replicator-dispatch-rate, compaction-threshold,
inactive-topic-policies, max-delivery-delay and fixed-delivery-delay (PIP-437, ``--delay/-d``),
the limits of :mod:`.limits` (``set-max-producers``, ``set-max-consumers``,
``set-max-consumers-per-subscription``, ``set-max-subscriptions-per-topic``, ``set-max-message-size``),
``set-offload-policies`` (and ``get-`` / ``remove-``; :mod:`.offload`),
plus the older ``enable-deduplication`` / ``disable-deduplication`` /
``get-deduplication-enabled``, and ``set-replication-clusters -c A,B`` (and ``get-`` / ``remove-``:
geo-replication of one topic). The same commands form pulsar-admin's ``topicPolicies`` group,
which also has ``delete T`` (PIP-422: every policy of the topic forgotten, its properties kept).
A topic-level policy overrides the namespace's for that topic; a getter shows the topic's own
setting (``(not set)`` when it follows the namespace)."""

from __future__ import annotations

from typing import Any

from . import limits, offload
from .namespaces import add_policies


def _topic_arg(p: Any) -> None:
    p.add_argument("topic", help="persistent://tenant/ns/topic (or tenant/ns/topic, or topic)")


def add_to(g: Any) -> None:
    """Registers the topic-level policy commands on a group's sub-parsers ``g``."""
    add_policies(g, "topic")
    limits.add(g, "topic")
    offload.add_policies(g, "topic")
    for verb, enabled in (("enable-deduplication", True), ("disable-deduplication", False)):
        p = g.add_parser(verb)
        _topic_arg(p)
        p.set_defaults(call=lambda admin, a, on=enabled: admin.topics.set_deduplication(a.topic, on))
    p = g.add_parser("get-deduplication-enabled")
    _topic_arg(p)
    p.set_defaults(call=lambda admin, a: admin.topics.get_policy(a.topic, "deduplicationEnabled"))
    p = g.add_parser("set-replication-clusters")
    _topic_arg(p)
    p.add_argument("--clusters", "-c", required=True, help="comma-separated replication clusters")
    p.set_defaults(
        call=lambda admin, a: admin.topics.set_policy(a.topic, "replication", [c for c in a.clusters.split(",") if c])
    )
    p = g.add_parser("get-replication-clusters")
    _topic_arg(p)
    p.set_defaults(call=lambda admin, a: admin.topics.get_policy(a.topic, "replication"))
    p = g.add_parser("remove-replication-clusters")
    _topic_arg(p)
    p.set_defaults(call=lambda admin, a: admin.topics.remove_policy(a.topic, "replication"))


def add(groups: Any) -> None:
    """pulsar-admin's ``topicPolicies`` group."""
    g = groups.add_parser("topicPolicies", help="topic-level policies").add_subparsers(dest="action", required=True)
    add_to(g)
    # PIP-422: only here (``topics delete`` deletes the topic).
    p = g.add_parser("delete", help="delete every policy of the topic, local and global (PIP-422)")
    _topic_arg(p)
    p.add_argument("--global", "-g", dest="is_global", action="store_true", help="accepted: both go either way")
    p.set_defaults(call=lambda admin, a: admin.topics.delete_topic_policies(a.topic))
