"""Topic tables on :class:`pulsar_rs.Admin`: the ``icebergTable`` policy that commits a topic's
messages to an Apache Iceberg table (``admin.namespaces`` and ``admin.topics``:
``get/set/remove_iceberg_table``), and a table's status (``admin.topics.iceberg_table_status``:
the last message id committed per partition, the current snapshot, rows and files).

The broker needs ``icebergCatalogUri`` (a SQLite catalog, pyiceberg's ``SqlCatalog`` form); the
table is ``<tenant>.<namespace>.<topic>`` in the catalog named by ``icebergCatalogName``
(``pulsar``). docs/iceberg-tables.md tells how pyiceberg and Spark read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .paths import ns_path, topic_path

__all__ = ["NamespaceTables", "TopicTables", "iceberg_table_policy"]


def iceberg_table_policy(
    enabled: bool = True, commit_interval_seconds: int | None = None, partition_by: str | None = None
) -> dict[str, Any]:
    """The policy document: ``{"enabled", "commitIntervalSeconds", "partitionBy"}`` (``day``,
    ``hour`` or ``none``; fields left ``None`` take the broker's defaults: 60 s, ``day``)."""
    doc: dict[str, Any] = {"enabled": bool(enabled)}
    if commit_interval_seconds is not None:
        doc["commitIntervalSeconds"] = int(commit_interval_seconds)
    if partition_by is not None:
        doc["partitionBy"] = partition_by
    return doc


class TopicTables:
    """A topic's table calls (``/admin/v2/persistent/{tenant}/{ns}/{topic}/icebergTable``)."""

    _a: Any

    def _table_path(self, topic: str) -> str:
        return f"/admin/v2/{topic_path(topic)}/icebergTable"

    def get_iceberg_table(self, topic: str) -> dict[str, Any] | None:
        """The topic's own ``icebergTable`` policy (``None``: its namespace's applies)."""
        policy: dict[str, Any] | None = self.iceberg_table_status(topic).get("policy")
        return policy

    def set_iceberg_table(self, topic: str, policy: Mapping[str, Any] | None = None, **fields: Any) -> None:
        """Sets the topic's ``icebergTable`` policy: a document, or
        :func:`iceberg_table_policy`'s keywords (``enabled``, ``commit_interval_seconds``,
        ``partition_by``). 412 when the broker has no catalog."""
        self._a.request("POST", self._table_path(topic), dict(policy or iceberg_table_policy(**fields)))

    def remove_iceberg_table(self, topic: str) -> None:
        """Removes the topic's own policy: its namespace's applies again (the table stays)."""
        self._a.request("DELETE", self._table_path(topic))

    def iceberg_table_status(self, topic: str) -> dict[str, Any]:
        """The table's status: ``policy`` (the topic's own), ``appliedPolicy``, ``table``,
        ``exists``, ``lastCommittedMessageId`` (partition → ``ledger:entry:-1``, ``-1`` for a
        topic that is not partitioned), ``snapshotId``, ``totalRecords``, ``totalDataFiles``,
        ``metadataLocation`` and ``committedHere`` (this broker's commits and last error)."""
        status: dict[str, Any] = self._a.request("GET", self._table_path(topic))
        return status


class NamespaceTables:
    """A namespace's ``icebergTable`` policy (``/admin/v2/namespaces/{tenant}/{ns}/icebergTable``)."""

    _a: Any

    def _ns_table_path(self, namespace: str) -> str:
        return f"/admin/v2/namespaces/{ns_path(namespace)}/icebergTable"

    def get_iceberg_table(self, namespace: str) -> dict[str, Any] | None:
        """The namespace's policy (``None`` when unset)."""
        policy: dict[str, Any] | None = self._a.request("GET", self._ns_table_path(namespace))
        return policy

    def set_iceberg_table(self, namespace: str, policy: Mapping[str, Any] | None = None, **fields: Any) -> None:
        """Sets the namespace's policy (every topic without its own follows it)."""
        self._a.request("POST", self._ns_table_path(namespace), dict(policy or iceberg_table_policy(**fields)))

    def remove_iceberg_table(self, namespace: str) -> None:
        """Removes the namespace's policy (topics stop being committed; their tables stay)."""
        self._a.request("DELETE", self._ns_table_path(namespace))
