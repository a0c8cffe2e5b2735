"""``admin.topics`` of :class:`pulsar_rs.Admin`: creating and deleting topics and partitioned
topics, their stats and internal stats, subscriptions and cursors (skip, reset, expire),
permissions, messages read through the API, unload, compaction and lookup (the topic-level
policy and limit setters come from :mod:`.policies` and :mod:`.limits`, offload from
:mod:`.offload`)."""

from __future__ import annotations

import builtins
import json
import urllib.parse
from typing import Any

from .. import units
from .errors import AdminError
from .groups import Group
from .limits import TopicLimits
from .messages import messages_of
from .offload import TopicOffload
from .paths import ns_path, segment, topic_path
from .policies import TopicPolicySetters
from .tables import TopicTables
from .types import (
    CompactionStatus,
    LookupData,
    MessageIdData,
    PartitionedTopicInternalStats,
    PartitionedTopicMetadata,
    PartitionedTopicStats,
    PersistentTopicInternalStats,
    RawMessage,
    TopicStats,
)

__all__ = ["Topics", "message_id_body"]


def message_id_body(message_id: str | tuple[int, int], excluded: bool = False) -> dict[str, Any]:
    """A message id as Pulsar's ``ResetCursorData`` JSON (``earliest`` is -1:-1, ``latest``
    Long.MAX_VALUE twice, as ``MessageId.earliest`` / ``MessageId.latest``)."""
    ledger, entry = units.message_id(message_id) if isinstance(message_id, str) else message_id
    return {"ledgerId": ledger, "entryId": entry, "partitionIndex": -1, "isExcluded": excluded}


class Topics(Group, TopicPolicySetters, TopicLimits, TopicOffload, TopicTables):
    """``admin.topics``: topics, their stats, subscriptions, messages and policies."""

    def list(self, namespace: str, properties: dict[str, str] | None = None) -> list[str]:
        """The namespace's persistent topics; with ``properties`` (PIP-452, ``?properties=k=v,...``)
        those the broker's ``pulsarResourcesExtendedClassName`` lists for them (Pulsar's default
        ignores them; ``pulsar_rs.TopicPropertiesListing``: the topics whose properties hold every
        pair)."""
        path = f"/admin/v2/persistent/{ns_path(namespace)}"
        if properties:
            path += "?" + urllib.parse.urlencode({"properties": ",".join(f"{k}={v}" for k, v in properties.items())})
        return self._a.request("GET", path)

    def list_partitioned(self, namespace: str) -> builtins.list[str]:
        return self._a.request("GET", f"/admin/v2/persistent/{ns_path(namespace)}/partitioned")

    def create(self, topic: str, partitions: int = 0) -> None:
        """Creates a topic, partitioned when ``partitions`` > 0."""
        path = f"/admin/v2/{topic_path(topic)}"
        if partitions > 0:
            self._a.request("PUT", path + "/partitions", raw=str(partitions).encode())
        else:
            self._a.request("PUT", path)

    def delete(self, topic: str, partitioned: bool = False, force: bool = False) -> None:
        """Deletes a topic (``partitioned``: the partitioned topic and its partitions): refused
        (412) while producers or consumers are connected, unless ``force``, which closes them."""
        path = f"/admin/v2/{topic_path(topic)}" + ("/partitions" if partitioned else "")
        self._a.request("DELETE", path + ("?force=true" if force else ""))

    def stats(self, topic: str) -> TopicStats:
        return self._a.request("GET", f"/admin/v2/{topic_path(topic)}/stats")

    def internal_stats(self, topic: str, metadata: bool = False) -> PersistentTopicInternalStats:
        """Pulsar's ``PersistentTopicInternalStats``; with ``metadata``, each ledger on BookKeeper
        carries its ``metadata`` (quorums, state, ensembles) as Pulsar shows it."""
        query = "?metadata=true" if metadata else ""
        return self._a.request("GET", f"/admin/v2/{topic_path(topic)}/internalStats{query}")

    def subscriptions(self, topic: str) -> builtins.list[str]:
        return self._a.request("GET", f"/admin/v2/{topic_path(topic)}/subscriptions")

    def partitioned_internal_stats(self, topic: str) -> PartitionedTopicInternalStats:
        """``{"metadata": {"partitions": N, ...}, "partitions": {name: internal stats}}`` for the
        partitions that exist (pulsar-admin's ``topics partitioned-stats-internal``)."""
        return self._a.request("GET", f"/admin/v2/{topic_path(topic)}/partitioned-internalStats")

    def partitioned_stats(self, topic: str, per_partition: bool = True) -> PartitionedTopicStats:
        """The partitions' stats summed, with ``metadata.partitions`` and (``per_partition``)
        each partition's own under ``partitions``."""
        flag = "true" if per_partition else "false"
        return self._a.request("GET", f"/admin/v2/{topic_path(topic)}/partitioned-stats?perPartition={flag}")

    def create_partitioned_topic(self, topic: str, partitions: int) -> None:
        self._a.request("PUT", f"/admin/v2/{topic_path(topic)}/partitions", raw=str(partitions).encode())

    def get_partitioned_topic_metadata(self, topic: str) -> PartitionedTopicMetadata:
        """``{"partitions": N}``, 0 for a topic that is not partitioned."""
        return self._a.request("GET", f"/admin/v2/{topic_path(topic)}/partitions")

    def update_partitioned_topic(self, topic: str, partitions: int) -> None:
        """Raises the partition count (it never shrinks)."""
        self._a.request("POST", f"/admin/v2/{topic_path(topic)}/partitions", raw=str(partitions).encode())

    def delete_partitioned_topic(self, topic: str, force: bool = False) -> None:
        self.delete(topic, partitioned=True, force=force)

    def create_subscription(self, topic: str, subscription: str, message_id: str | tuple[int, int] = "latest") -> None:
        """A durable subscription starting at ``message_id`` (default ``latest``)."""
        body = message_id_body(message_id)
        self._a.request("PUT", f"/admin/v2/{topic_path(topic)}/subscription/{segment(subscription)}", body)

    def unsubscribe(self, topic: str, subscription: str, force: bool = False) -> None:
        """Deletes a subscription: refused (412) while it has consumers, unless ``force``, which
        disconnects them first."""
        query = "?force=true" if force else ""
        self._a.request("DELETE", f"/admin/v2/{topic_path(topic)}/subscription/{segment(subscription)}{query}")

    def skip(self, topic: str, subscription: str, count: int) -> None:
        """Skips (acknowledges) the next ``count`` messages of the subscription's backlog."""
        self._a.request("POST", f"/admin/v2/{topic_path(topic)}/subscription/{segment(subscription)}/skip/{count}")

    def clear_backlog(self, topic: str, subscription: str) -> None:
        """Skips the whole backlog (pulsar-admin's ``clear-backlog`` / ``skip-all``)."""
        self._a.request("POST", f"/admin/v2/{topic_path(topic)}/subscription/{segment(subscription)}/skip_all")

    skip_all = clear_backlog

    def reset_cursor(
        self,
        topic: str,
        subscription: str,
        timestamp_ms: int | None = None,
        message_id: str | tuple[int, int] | None = None,
        excluded: bool = False,
    ) -> None:
        """Moves the subscription to the first message published at or after ``timestamp_ms``,
        or to ``message_id`` (the one after it when ``excluded``); consumers are disconnected."""
        path = f"/admin/v2/{topic_path(topic)}/subscription/{segment(subscription)}/resetcursor"
        if (timestamp_ms is None) == (message_id is None):
            raise ValueError("reset_cursor takes one of timestamp_ms and message_id")
        if timestamp_ms is not None:
            self._a.request("POST", f"{path}/{timestamp_ms}")
        else:
            self._a.request("POST", path, message_id_body(message_id, excluded))  # type: ignore[arg-type]

    def expire_messages(
        self,
        topic: str,
        subscription: str,
        seconds: int | None = None,
        *,
        message_id: str | tuple[int, int] | None = None,
        excluded: bool = False,
        batch_index: int = -1,
    ) -> None:
        """Acknowledges the subscription's messages published more than ``seconds`` ago, or those
        up to ``message_id`` (``LEDGER:ENTRY``; Pulsar's ``expireMessages`` by position, with its
        ``isExcluded`` and ``batchIndex``). Not issued (409): a position past the last message."""
        if (seconds is None) == (message_id is None):
            raise ValueError("expire_messages takes one of seconds and message_id")
        path = f"/admin/v2/{topic_path(topic)}/subscription/{segment(subscription)}/expireMessages"
        if seconds is not None:
            self._a.request("POST", f"{path}/{seconds}")
        else:
            body = message_id_body(message_id, excluded)  # type: ignore[arg-type]
            self._a.request("POST", path, {**body, "batchIndex": batch_index})

    def set_replicated_subscription_status(self, topic: str, subscription: str, enabled: bool) -> None:
        """Makes the subscription replicated (its acknowledgements move it in the clusters the
        topic replicates to) or not, on every partition (pulsar-admin's
        ``set-replicated-subscription-status``)."""
        path = f"/admin/v2/{topic_path(topic)}/subscription/{segment(subscription)}/replicatedSubscriptionStatus"
        self._a.request("POST", path, enabled)

    def get_replicated_subscription_status(self, topic: str, subscription: str) -> dict[str, bool]:
        """Whether the subscription is replicated, by topic or partition."""
        path = f"/admin/v2/{topic_path(topic)}/subscription/{segment(subscription)}/replicatedSubscriptionStatus"
        return self._a.request("GET", path)

    def diagnose_subscription(self, topic: str, subscription: str) -> dict[str, dict[str, Any]]:
        """What holds the subscription's delivery back now, by topic or partition: its consumers'
        state and a list of ``blockers``, each with a ``reason`` (``NO_PERMITS``,
        ``KEY_HELD_BY_OTHER_CONSUMER``, ``DELAYED_DELIVERY``, ``OPEN_TRANSACTION``, ...; docs/admin.md),
        and the oldest unacknowledged message with its age (``diagnose-subscription``)."""
        path = f"/admin/v2/{topic_path(topic)}/subscription/{segment(subscription)}/diagnosis"
        return self._a.request("GET", path)

    def unacked_messages(self, topic: str, subscription: str, limit: int | None = None) -> dict[str, dict[str, Any]]:
        """The subscription's unacknowledged messages, by topic or partition: each consumer's
        delivered, unacknowledged entries and those waiting for redelivery, each with its
        ``redeliveryCount`` (at most ``limit`` per list, 100 by default; ``truncated`` says when a
        list was cut) (``unacked-messages``)."""
        suffix = f"?limit={limit}" if limit is not None else ""
        path = f"/admin/v2/{topic_path(topic)}/subscription/{segment(subscription)}/unackedMessages{suffix}"
        return self._a.request("GET", path)

    def search_messages(
        self,
        topic: str,
        *,
        key: str | None = None,
        properties: dict[str, str] | None = None,
        from_publish_time: int | None = None,
        to_publish_time: int | None = None,
        from_message_id: str | None = None,
        limit: int | None = None,
        max_entries: int | None = None,
    ) -> dict[str, Any]:
        """The messages of a topic (or one partition) with this key (partition or ordering key),
        these properties (all of them) and a publish time in ``[from_publish_time,
        to_publish_time]`` (ms), each message of a batch on its own: ``{"messages": [...],
        "entriesScanned", "lastScanned", "complete"}``. The scan stops after ``max_entries``
        entries (100 000 by default; ``complete`` is then false: go on with ``from_message_id``
        after ``lastScanned``) or ``limit`` matches (100) (``search-messages``)."""
        query: dict[str, str] = {}
        if key is not None:
            query["key"] = key
        if properties:
            query["properties"] = ",".join(f"{k}={v}" for k, v in properties.items())
        for name, value in (
            ("fromPublishTime", from_publish_time),
            ("toPublishTime", to_publish_time),
            ("fromMessageId", from_message_id),
            ("limit", limit),
            ("maxEntries", max_entries),
        ):
            if value is not None:
                query[name] = str(value)
        suffix = "?" + urllib.parse.urlencode(query) if query else ""
        return self._a.request("GET", f"/admin/v2/{topic_path(topic)}/searchMessages{suffix}")

    def expire_messages_all_subscriptions(self, topic: str, seconds: int) -> None:
        self._a.request("POST", f"/admin/v2/{topic_path(topic)}/all_subscription/expireMessages/{seconds}")

    def permissions(self, topic: str) -> dict[str, builtins.list[str]]:
        return self._a.request("GET", f"/admin/v2/{topic_path(topic)}/permissions")

    def grant_permission(self, topic: str, role: str, actions: builtins.list[str]) -> None:
        self._a.request("POST", f"/admin/v2/{topic_path(topic)}/permissions/{segment(role)}", actions)

    def revoke_permission(self, topic: str, role: str) -> None:
        self._a.request("DELETE", f"/admin/v2/{topic_path(topic)}/permissions/{segment(role)}")

    def _policy_path(self, topic: str, policy: str) -> str:
        return f"/admin/v2/{topic_path(topic)}/{policy}"

    def _messages(self, path: str) -> builtins.list[RawMessage]:
        headers, body = self._a.request_raw("GET", f"/admin/v2/{path}")
        return messages_of(headers, body)

    def peek_messages(self, topic: str, subscription: str, count: int = 1) -> builtins.list[RawMessage]:
        """The first ``count`` messages of the subscription's backlog, without consuming them
        (a batch counts each of its messages); see :mod:`pulsar_rs.admin.messages` for a
        message's keys. Not on a partitioned topic's base name (405): peek a partition."""
        out: builtins.list[RawMessage] = []
        sub = segment(subscription)
        n = 1
        while len(out) < count:
            try:
                out.extend(self._messages(f"{topic_path(topic)}/subscription/{sub}/position/{n}"))
            except AdminError as e:
                if e.status == 404 and e.reason == "Message not found" and out:
                    break
                raise
            n += 1
        return out[:count]

    def examine_message(self, topic: str, initial_position: str = "latest", message_position: int = 1) -> RawMessage:
        """The ``message_position``-th entry from the ``earliest`` or the ``latest`` end (its
        first message when it is a batch)."""
        query = f"initialPosition={initial_position}&messagePosition={int(message_position)}"
        return self._messages(f"{topic_path(topic)}/examinemessage?{query}")[0]

    def get_message_by_id(self, topic: str, ledger_id: int, entry_id: int) -> builtins.list[RawMessage]:
        """The messages of entry ``ledger_id:entry_id`` (several for a batch)."""
        return self._messages(f"{topic_path(topic)}/ledger/{int(ledger_id)}/entry/{int(entry_id)}")

    def last_message_id(self, topic: str) -> MessageIdData:
        """``{"ledgerId", "entryId", "partitionIndex"}`` of the last message (with ``batchIndex``
        when it ends a batch; -1:-1 when the topic is empty)."""
        return self._a.request("GET", f"/admin/v2/{topic_path(topic)}/lastMessageId")

    def unload(self, topic: str) -> None:
        """Unloads the topic, or each partition of a partitioned topic, from the broker serving
        it: it is closed until its next use, its producers and consumers reconnect (pulsar-admin's
        ``topics unload``). Nothing stored changes."""
        self._a.request("PUT", f"/admin/v2/{topic_path(topic)}/unload")

    def terminate(self, topic: str) -> MessageIdData:
        """Terminates the topic (pulsar-admin's ``topics terminate``): it takes no more messages,
        for good; its producers are closed and refused from then on (``TopicTerminatedError``),
        and its consumers are told once they have acknowledged everything (``REACHED_END_OF_TOPIC``).
        The id of its last message (``L:-1`` when it has none). Terminating again answers the same."""
        return self._a.request("POST", f"/admin/v2/{topic_path(topic)}/terminate")

    def terminate_partitioned(self, topic: str) -> dict[str, MessageIdData]:
        """Terminates every partition of a partitioned topic (pulsar-admin's ``topics
        partitioned-terminate``): the last message id of each, by partition index (``"0"``, ...)."""
        return self._a.request("POST", f"/admin/v2/{topic_path(topic)}/terminate/partitions")

    def compact(self, topic: str) -> None:
        """Starts a compaction run (409 while one runs)."""
        self._a.request("PUT", f"/admin/v2/{topic_path(topic)}/compaction")

    def compaction_status(self, topic: str) -> CompactionStatus:
        """``{"status": "NOT_RUN" | "RUNNING" | "SUCCESS" | "ERROR", "lastError": ...}``."""
        return self._a.request("GET", f"/admin/v2/{topic_path(topic)}/compaction")

    def lookup(self, topic: str) -> LookupData:
        """The broker serving the topic: ``{"brokerUrl", "brokerUrlTls", "httpUrl", "httpUrlTls",
        "nativeUrl"}`` (the REST lookup; in a cluster the broker asked may redirect, 307, to the
        leader or the owner, and the redirects are followed)."""
        return self._a.request("GET", f"/lookup/v2/topic/{topic_path(topic)}")

    def bundle_range(self, topic: str) -> str:
        """The range of the namespace bundle the topic falls in, ``0x..._0x...`` (pulsar-admin's
        ``topics bundle-range``, at Pulsar's ``/lookup/v2/topic/.../bundle``, which answers the
        bare range)."""
        body = self._a.request_raw("GET", f"/lookup/v2/topic/{topic_path(topic)}/bundle")[1]
        text = body.decode().strip()
        return json.loads(text) if text.startswith('"') else text
