"""The transaction calls of :class:`pulsar_rs.Admin` (``admin.transactions``), Pulsar's
``/admin/v3/transactions/...`` paths as ``pulsar-admin transactions`` names them: coordinator
stats (with the count of transactions not yet ended) and internal stats (its log's managed
ledger), one transaction's metadata, the slow transactions, a topic's transaction buffer stats
and one transaction's part of it, a subscription's pending-ack stats and one transaction's part
of it, and its pending-ack log's internal stats. A broker without
``transactionCoordinatorEnabled`` answers every one with 503 (:class:`pulsar_rs.AdminError`).
"""

from __future__ import annotations

from .paths import persistent_path, segment
from .requester import Requester
from .types import (
    CoordinatorStats,
    TransactionBufferStats,
    TransactionCoordinatorInternalStats,
    TransactionInBufferStats,
    TransactionInPendingAckStats,
    TransactionMetadata,
    TransactionPendingAckInternalStats,
    TransactionPendingAckStats,
)

__all__ = ["CoordinatorStats", "Transactions"]


class Transactions:
    """``admin.transactions``."""

    def __init__(self, admin: Requester) -> None:
        self._a = admin

    def coordinator_stats(self) -> dict[int, CoordinatorStats]:
        """Every coordinator this broker hosts, by id."""
        stats = self._a.request("GET", "/admin/v3/transactions/coordinatorStats")
        return {int(k): v for k, v in stats.items()}

    def coordinator_stats_by_id(self, coordinator_id: int) -> CoordinatorStats:
        """One coordinator (404 when this broker does not host it)."""
        return self._a.request("GET", f"/admin/v3/transactions/coordinatorStats?coordinatorId={int(coordinator_id)}")

    def ongoing_count(self) -> int:
        """Transactions not yet ended, over every coordinator here."""
        return sum(s["ongoingTxnSize"] for s in self.coordinator_stats().values())

    def transaction_metadata(self, most_bits: int, least_bits: int) -> TransactionMetadata:
        """A transaction not yet ended: ``txnId``, ``status``, ``openTimestamp``, ``timeoutAt``,
        ``producedPartitions``, ``ackedPartitions`` (404 once it has ended)."""
        return self._a.request("GET", f"/admin/v3/transactions/transactionMetadata/{int(most_bits)}/{int(least_bits)}")

    def transaction_buffer_stats(self, topic: str) -> TransactionBufferStats:
        """A topic's transaction buffer: ``maxReadPosition``, ``ongoingTxnSize``, ..."""
        return self._a.request("GET", f"/admin/v3/transactions/transactionBufferStats/{persistent_path(topic)}")

    def pending_ack_stats(self, topic: str, subscription: str) -> TransactionPendingAckStats:
        """A subscription's pending acks: ``ongoingTxnSize``, ..."""
        path = f"{persistent_path(topic)}/{segment(subscription)}"
        return self._a.request("GET", f"/admin/v3/transactions/pendingAckStats/{path}")

    def pending_ack_internal_stats(
        self, topic: str, subscription: str, metadata: bool = False
    ) -> TransactionPendingAckInternalStats:
        """A subscription's pending-ack log: its managed ledger's name and internal stats
        (``metadata``: each ledger's metadata too); 404 while no transactional ack created it."""
        path = f"{persistent_path(topic)}/{segment(subscription)}"
        query = "?metadata=true" if metadata else ""
        return self._a.request("GET", f"/admin/v3/transactions/pendingAckInternalStats/{path}{query}")

    def slow_transactions(self, timeout_ms: int, coordinator_id: int | None = None) -> dict[str, TransactionMetadata]:
        """Pulsar's slow transactions, by ``txnId``: those not yet ended whose timeout (as their
        client set it) is longer than ``timeout_ms``, on every coordinator here or on one (404
        when this broker does not host it)."""
        path = f"/admin/v3/transactions/slowTransactions/{int(timeout_ms)}"
        if coordinator_id is not None:
            path += f"?coordinatorId={int(coordinator_id)}"
        return self._a.request("GET", path)

    def coordinator_internal_stats(
        self, coordinator_id: int, metadata: bool = False
    ) -> TransactionCoordinatorInternalStats:
        """A coordinator's log: its managed ledger's name and internal stats (``metadata``: each
        ledger's metadata too); 404 when this broker does not host it."""
        query = "?metadata=true" if metadata else ""
        return self._a.request("GET", f"/admin/v3/transactions/coordinatorInternalStats/{int(coordinator_id)}{query}")

    def transaction_in_buffer_stats(self, most_bits: int, least_bits: int, topic: str) -> TransactionInBufferStats:
        """A transaction on a topic's buffer: ``startPosition`` while it is ongoing there,
        ``aborted``."""
        path = f"{persistent_path(topic)}/{int(most_bits)}/{int(least_bits)}"
        return self._a.request("GET", f"/admin/v3/transactions/transactionInBufferStats/{path}")

    def transaction_in_pending_ack_stats(
        self, most_bits: int, least_bits: int, topic: str, subscription: str
    ) -> TransactionInPendingAckStats:
        """A transaction on a subscription: the ``cumulativeAckPosition`` it holds there."""
        path = f"{persistent_path(topic)}/{segment(subscription)}/{int(most_bits)}/{int(least_bits)}"
        return self._a.request("GET", f"/admin/v3/transactions/transactionInPendingAckStats/{path}")
