"""The transaction calls of :class:`pulsar_rs.Admin` (``admin.transactions``), Pulsar's
``/admin/v3/transactions/...`` paths as ``pulsar-admin transactions`` names them: coordinator
stats (with the count of transactions not yet ended) and internal stats (its log's managed
ledger), one transaction's metadata, the slow transactions, a topic's transaction buffer stats
and one transaction's part of it, a subscription's pending-ack stats and one transaction's part
of it, its pending-ack log's internal stats and where a message stands in its acks; and the
operator's calls: the coordinators and the brokers serving them, more coordinators, a
transaction aborted (the last two for superusers). A broker without
``transactionCoordinatorEnabled`` answers every one with 503 (:class:`pulsar_rs.AdminError`).
"""

from __future__ import annotations

from .paths import persistent_path, segment
from .requester import Requester
from .types import (
    CoordinatorStats,
    PositionInPendingAckStats,
    TransactionBufferStats,
    TransactionCoordinatorInfo,
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

    def position_stats_in_pending_ack(
        self, topic: str, subscription: str, ledger_id: int, entry_id: int, batch_index: int | None = None
    ) -> PositionInPendingAckStats:
        """Where the message at ``ledger_id:entry_id`` (with ``batch_index``, that message of a
        batch) stands in the subscription's acks: ``{"state": ...}``."""
        path = f"{persistent_path(topic)}/{segment(subscription)}/{int(ledger_id)}/{int(entry_id)}"
        query = f"?batchIndex={int(batch_index)}" if batch_index is not None else ""
        return self._a.request("GET", f"/admin/v3/transactions/positionStatsInPendingAck/{path}{query}")

    def coordinators(self) -> list[TransactionCoordinatorInfo]:
        """Every coordinator, in id order, with the service URL of the broker serving it."""
        return self._a.request("GET", "/admin/v3/transactions/coordinators")

    def scale_coordinators(self, replicas: int) -> None:
        """Raises the number of coordinators to ``replicas`` (406 unless it is more than now;
        superusers only). Clients started afterwards use them all."""
        self._a.request("POST", "/admin/v3/transactions/transactionCoordinator/replicas", body=int(replicas))

    def abort_transaction(self, most_bits: int, least_bits: int) -> None:
        """Aborts a transaction as its client would (superusers only): 404 for one its
        coordinator does not know, 409 for one already ending."""
        self._a.request("POST", f"/admin/v3/transactions/abortTransaction/{int(most_bits)}/{int(least_bits)}")
