"""The transaction calls of :class:`pulsar_rs.Admin` (``admin.transactions``), Pulsar's
``/admin/v3/transactions/...`` paths as ``pulsar-admin transactions`` names them: coordinator
stats (with the count of transactions not yet ended), one transaction's metadata, a topic's
transaction buffer stats and a subscription's pending-ack stats. A broker without
``transactionCoordinatorEnabled`` answers every one with 503 (:class:`pulsar_rs.AdminError`).
"""

from __future__ import annotations

from .paths import persistent_path, segment
from .requester import Requester
from .types import CoordinatorStats, TransactionBufferStats, TransactionMetadata, TransactionPendingAckStats

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
