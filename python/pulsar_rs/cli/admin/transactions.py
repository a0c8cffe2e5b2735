"""``pulsar-rs admin transactions``: pulsar-admin's transaction commands with its names and flags.

``coordinator-stats [-c ID]``, ``coordinator-internal-stats -c ID [-m]``,
``transaction-metadata -m MOST -l LEAST``, ``slow-transactions -t TIME [-c ID]`` (TIME as
pulsar-admin's: ``1s``, ``10m``, ``5h``, ``3d``; the transactions whose timeout is longer),
``transaction-buffer-stats -t TOPIC [-l]``, ``transaction-in-buffer-stats -m MOST -l LEAST -t TOPIC``,
``pending-ack-stats -t TOPIC -s SUB [-l]``, ``pending-ack-internal-stats -t TOPIC -s SUB [-m]`` and
``transaction-in-pending-ack-stats -m MOST -l LEAST -t TOPIC -s SUB``,
``position-stats-in-pending-ack -t TOPIC -s SUB -l LEDGER -e ENTRY [-b BATCH_INDEX]``,
``coordinators-list``, ``scale-transactionCoordinators -r N`` and
``abort-transaction -m MOST -l LEAST``. A broker without
``transactionCoordinatorEnabled`` refuses every one with 503.
"""

from __future__ import annotations

import argparse
from typing import Any

from ...admin import Admin
from .units import seconds


def _coordinator_stats(admin: Admin, a: argparse.Namespace) -> Any:
    if a.coordinator_id is not None:
        return admin.transactions.coordinator_stats_by_id(a.coordinator_id)
    return admin.transactions.coordinator_stats()


def _txn_id(p: argparse.ArgumentParser) -> None:
    p.add_argument("-m", "--most-sig-bits", dest="most", type=int, required=True, help="the most sig bits")
    p.add_argument("-l", "--least-sig-bits", dest="least", type=int, required=True, help="the least sig bits")


def add(groups: Any) -> None:
    g = groups.add_parser("transactions", help="transactions").add_subparsers(dest="action", required=True)

    p = g.add_parser("coordinator-stats", help="transaction coordinator stats")
    p.add_argument("-c", "--coordinator-id", type=int, default=None, help="the coordinator id")
    p.set_defaults(call=_coordinator_stats)

    p = g.add_parser("coordinator-internal-stats", help="a coordinator's log internal stats")
    p.add_argument("-c", "--coordinator-id", type=int, required=True, help="the coordinator id")
    p.add_argument("-m", "--metadata", action="store_true", help="include ledger metadata")
    p.set_defaults(call=lambda admin, a: admin.transactions.coordinator_internal_stats(a.coordinator_id, a.metadata))

    p = g.add_parser("transaction-metadata", help="one transaction's metadata")
    _txn_id(p)
    p.set_defaults(call=lambda admin, a: admin.transactions.transaction_metadata(a.most, a.least))

    p = g.add_parser("slow-transactions", help="transactions whose timeout is longer than TIME")
    p.add_argument("-t", "--time", type=seconds, required=True, help="the transaction timeout time (eg: 1s, 10s, 1m)")
    p.add_argument("-c", "--coordinator-id", type=int, default=None, help="the coordinator id")
    p.set_defaults(call=lambda admin, a: admin.transactions.slow_transactions(a.time * 1000, a.coordinator_id))

    p = g.add_parser("transaction-buffer-stats", help="a topic's transaction buffer stats")
    p.add_argument("-t", "--topic", required=True, help="the topic")
    p.add_argument("-l", "--low-water-mark", action="store_true", help="accepted; no low water marks are kept")
    p.set_defaults(call=lambda admin, a: admin.transactions.transaction_buffer_stats(a.topic))

    p = g.add_parser("transaction-in-buffer-stats", help="a transaction on a topic's transaction buffer")
    _txn_id(p)
    p.add_argument("-t", "--topic", required=True, help="the topic")
    p.set_defaults(call=lambda admin, a: admin.transactions.transaction_in_buffer_stats(a.most, a.least, a.topic))

    p = g.add_parser("pending-ack-stats", help="a subscription's pending ack stats")
    p.add_argument("-t", "--topic", required=True, help="the topic")
    p.add_argument("-s", "--sub-name", dest="subscription", required=True, help="the subscription name")
    p.add_argument("-l", "--low-water-mark", action="store_true", help="accepted; no low water marks are kept")
    p.set_defaults(call=lambda admin, a: admin.transactions.pending_ack_stats(a.topic, a.subscription))

    p = g.add_parser("pending-ack-internal-stats", help="a subscription's pending-ack log internal stats")
    p.add_argument("-t", "--topic", required=True, help="the topic")
    p.add_argument("-s", "--sub-name", dest="subscription", required=True, help="the subscription name")
    p.add_argument("-m", "--metadata", action="store_true", help="include ledger metadata")
    p.set_defaults(
        call=lambda admin, a: admin.transactions.pending_ack_internal_stats(a.topic, a.subscription, a.metadata)
    )

    p = g.add_parser("transaction-in-pending-ack-stats", help="a transaction on a subscription's pending acks")
    _txn_id(p)
    p.add_argument("-t", "--topic", required=True, help="the topic name")
    p.add_argument("-s", "--sub-name", dest="subscription", required=True, help="the subscription name")
    p.set_defaults(
        call=lambda admin, a: admin.transactions.transaction_in_pending_ack_stats(
            a.most, a.least, a.topic, a.subscription
        )
    )

    p = g.add_parser("position-stats-in-pending-ack", help="where a message stands in a subscription's acks")
    p.add_argument("-t", "--topic", required=True, help="the topic name")
    p.add_argument("-s", "--subscription-name", dest="subscription", required=True, help="subscription name")
    p.add_argument("-l", "--ledger-id", type=int, required=True, help="ledger ID of the position")
    p.add_argument("-e", "--entry-id", type=int, required=True, help="entry ID of the position")
    p.add_argument("-b", "--batch-index", type=int, default=None, help="batch index of the position")
    p.set_defaults(
        call=lambda admin, a: admin.transactions.position_stats_in_pending_ack(
            a.topic, a.subscription, a.ledger_id, a.entry_id, a.batch_index
        )
    )

    p = g.add_parser("coordinators-list", help="list transaction coordinators")
    p.set_defaults(call=lambda admin, a: admin.transactions.coordinators())

    p = g.add_parser("scale-transactionCoordinators", help="update the scale of transaction coordinators")
    p.add_argument("-r", "--replicas", type=int, required=True, help="the scale of the transaction coordinators")
    p.set_defaults(call=lambda admin, a: admin.transactions.scale_coordinators(a.replicas))

    p = g.add_parser("abort-transaction", help="abort transaction")
    _txn_id(p)
    p.set_defaults(call=lambda admin, a: admin.transactions.abort_transaction(a.most, a.least))
