"""Tiered storage (offload) on :class:`pulsar_rs.Admin`, with the Java admin's names in snake case:
on a topic (``admin.topics``: ``offload`` and ``offload_status``, Pulsar's ``PUT`` / ``GET
.../offload``, and the topic's ``offloadPolicies``) and on a namespace (``admin.namespaces``:
``offloadThreshold``, ``offloadThresholdInSeconds``, ``offloadDeletionLagMs`` and
``offloadPolicies`` / ``removeOffloadPolicies``).

A topic's settings are resolved field by field as Pulsar's ``mergeConfiguration``: the topic's
``offloadPolicies``, then the namespace's (its ``offload_policies``, where they leave a field
unset its ``offload_threshold``, ``offload_threshold_in_seconds`` and ``offload_deletion_lag_ms``),
then the broker's ``managedLedgerOffload*`` keys (docs/admin.md, "Tiered storage (offload)").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .. import units
from .paths import ns_path, topic_path
from .types import OffloadPolicies, OffloadProcessStatus

__all__ = ["NamespaceOffload", "TopicOffload", "offload_position", "offload_threshold_position"]


def offload_position(message_id: str | tuple[int, int] | Mapping[str, Any]) -> tuple[int, int]:
    """The ``(ledger, entry)`` a message id names: a ``{"ledgerId", "entryId"}`` document (what
    ``internal_stats``, ``last_message_id`` or ``offload_status`` answer), a ``(ledger, entry)``
    pair or ``"L:E"``; ``ValueError`` for anything else."""
    if isinstance(message_id, str):
        return units.message_id(message_id)
    if isinstance(message_id, Mapping):
        try:
            return int(message_id["ledgerId"]), int(message_id["entryId"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"a message id document has ledgerId and entryId, got {message_id!r}") from None
    ledger, entry = message_id
    return int(ledger), int(entry)


def offload_threshold_position(internal_stats: Mapping[str, Any], threshold: int) -> tuple[int, int] | None:
    """The message id ``topics offload -s THRESHOLD`` sends, as Pulsar's
    ``findFirstLedgerWithinThreshold``: the ledgers from the newest (the one being written counts
    ``currentLedgerSize``), their sizes summed; at the first ledger where the sum passes
    ``threshold``, ``(the ledger after it, 0)`` (the newest ledger's own id when it passes alone);
    ``None`` when the sum never does. ``ValueError`` when the topic has no ledger ("Topic doesn't
    have any data")."""
    ledgers = [dict(lg) for lg in internal_stats.get("ledgers") or []]
    if not ledgers:
        raise ValueError("Topic doesn't have any data")
    ledgers[-1]["size"] = internal_stats.get("currentLedgerSize", ledgers[-1].get("size", 0))
    total = 0
    newer = int(ledgers[-1]["ledgerId"])
    for lg in reversed(ledgers):
        total += int(lg.get("size") or 0)
        if total > threshold:
            return newer, 0
        newer = int(lg["ledgerId"])
    return None


class TopicOffload:
    """A topic's offload calls (``/admin/v2/persistent/{tenant}/{ns}/{topic}/...``)."""

    _a: Any
    # Provided by the group's policy calls (:class:`.policies.PolicySetters`) and by
    # :class:`.topics.Topics`.
    get_policy: Callable[[str, str], Any]
    internal_stats: Callable[..., Any]
    set_policy: Callable[..., None]
    remove_policy: Callable[..., None]

    def offload(self, topic: str, message_id: str | tuple[int, int] | Mapping[str, Any]) -> None:
        """Starts offloading every closed ledger before ``message_id``'s ledger to the tiered
        storage the topic's settings name (pulsar-admin's ``topics offload``, which picks the id
        from a size): ``(currentLedgerId, 0)`` offloads all but the ledger being written. 204
        once the job has started (follow it with :meth:`offload_status`); 409 while one runs; 400
        for an invalid position; 405 on a non-persistent topic."""
        ledger, entry = offload_position(message_id)
        partition = message_id.get("partitionIndex", -1) if isinstance(message_id, Mapping) else -1
        body = {"ledgerId": ledger, "entryId": entry, "partitionIndex": partition}
        self._a.request("PUT", f"/admin/v2/{topic_path(topic)}/offload", body)

    def offload_by_size(self, topic: str, size_threshold: int) -> tuple[int, int] | None:
        """Offloads all but the newest ``size_threshold`` bytes of the topic (Pulsar 4.1's
        ``triggerOffload(topic, sizeThreshold)``, PIP-416, and pulsar-admin's ``topics offload
        -s``): the id from :func:`offload_threshold_position` over the topic's ``internalStats``,
        then :meth:`offload`. Returns that id, or ``None`` when the topic holds no more than the
        threshold (nothing is started)."""
        position = offload_threshold_position(self.internal_stats(topic), size_threshold)
        if position is not None:
            self.offload(topic, position)
        return position

    def offload_status(self, topic: str) -> OffloadProcessStatus:
        """The last offload since the topic was loaded: ``{"status": "NOT_RUN" | "RUNNING" |
        "SUCCESS" | "ERROR", "lastError", "firstUnoffloadedMessage"}`` (an unload resets it to
        ``NOT_RUN``, as Pulsar's)."""
        return self._a.request("GET", f"/admin/v2/{topic_path(topic)}/offload")

    def get_offload_policies(self, topic: str) -> OffloadPolicies | None:
        """The topic's own ``offloadPolicies`` (``None``: it follows its namespace's)."""
        return self.get_policy(topic, "offloadPolicies")

    def set_offload_policies(self, topic: str, policies: OffloadPolicies | Mapping[str, Any]) -> None:
        """Sets the topic's ``offloadPolicies`` document (fields it leaves out fall back to the
        namespace's, then to the broker's keys)."""
        self.set_policy(topic, "offloadPolicies", dict(policies))

    def remove_offload_policies(self, topic: str) -> None:
        """Removes the topic's ``offloadPolicies``: its namespace's apply again."""
        self.remove_policy(topic, "offloadPolicies")


class NamespaceOffload:
    """A namespace's offload settings (``/admin/v2/namespaces/{tenant}/{ns}/...``)."""

    _a: Any

    def _offload_path(self, namespace: str, name: str) -> str:
        """The REST path of one of the namespace's offload settings."""
        return f"/admin/v2/namespaces/{ns_path(namespace)}/{name}"

    def get_offload_threshold(self, namespace: str) -> int:
        """Bytes a topic keeps on the broker's storage before its older closed ledgers are
        offloaded (``offload_threshold``; -1: not set, the broker's
        ``managedLedgerOffloadAutoTriggerSizeThresholdBytes`` applies)."""
        return self._a.request("GET", self._offload_path(namespace, "offloadThreshold"))

    def set_offload_threshold(self, namespace: str, threshold_bytes: int) -> None:
        """Sets ``offload_threshold``: 0 offloads every ledger as it closes, -1 falls back to the
        broker's key (pulsar-admin's ``namespaces set-offload-threshold --size``)."""
        path = self._offload_path(namespace, "offloadThreshold")
        self._a.request("PUT", path, raw=str(int(threshold_bytes)).encode())

    def get_offload_threshold_in_seconds(self, namespace: str) -> int:
        """Age in seconds of a closed ledger before it is offloaded (-1: not set)."""
        return self._a.request("GET", self._offload_path(namespace, "offloadThresholdInSeconds"))

    def set_offload_threshold_in_seconds(self, namespace: str, seconds: int) -> None:
        """Sets ``offload_threshold_in_seconds`` (0: every ledger as it closes; a negative value
        is refused, 412, as Pulsar's)."""
        path = self._offload_path(namespace, "offloadThresholdInSeconds")
        self._a.request("PUT", path, raw=str(int(seconds)).encode())

    def get_offload_deletion_lag(self, namespace: str) -> int | None:
        """Milliseconds an offloaded ledger is kept on the broker's storage too
        (``offload_deletion_lag_ms``; ``None``: not set, the broker's
        ``managedLedgerOffloadDeletionLagMs`` applies, and without it the copy is never
        deleted)."""
        return self._a.request("GET", self._offload_path(namespace, "offloadDeletionLagMs"))

    def set_offload_deletion_lag(self, namespace: str, lag_ms: int) -> None:
        """Sets ``offload_deletion_lag_ms`` (pulsar-admin's ``set-offload-deletion-lag --lag``)."""
        path = self._offload_path(namespace, "offloadDeletionLagMs")
        self._a.request("PUT", path, raw=str(int(lag_ms)).encode())

    def clear_offload_deletion_lag(self, namespace: str) -> None:
        """Clears ``offload_deletion_lag_ms``: the broker's key applies again."""
        self._a.request("DELETE", self._offload_path(namespace, "offloadDeletionLagMs"))

    def get_offload_policies(self, namespace: str) -> OffloadPolicies | None:
        """The namespace's ``offload_policies`` (``None`` when not set: the broker answers 204)."""
        return self._a.request("GET", self._offload_path(namespace, "offloadPolicies"))

    def set_offload_policies(self, namespace: str, policies: OffloadPolicies | Mapping[str, Any]) -> None:
        """Sets the namespace's ``offload_policies``; refused (412) for an unknown driver or a
        missing bucket, as Pulsar's ``validateOffloadPolicies``."""
        self._a.request("POST", self._offload_path(namespace, "offloadPolicies"), dict(policies))

    def remove_offload_policies(self, namespace: str) -> None:
        """Removes the namespace's ``offload_policies`` (Pulsar's ``DELETE
        .../removeOffloadPolicies``)."""
        self._a.request("DELETE", self._offload_path(namespace, "removeOffloadPolicies"))
