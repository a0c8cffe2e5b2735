"""``pulsar_rs.Admin``'s transaction calls (``admin.transactions``) and ``pulsar-rs admin
transactions`` against a broker with ``transactionCoordinatorEnabled``: the coordinator's count of
transactions not yet ended as transactions open and end (driven on the raw wire,
``tests/txn_wire.py``), one transaction's metadata, the slow transactions, a topic's buffer stats
and a transaction's part of them, a transaction's pending cumulative ack, the coordinator log's
internal stats; and 503 from a broker without transactions."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from pulsar_rs import Admin, AdminError, Broker
from txn_wire import ASSIGN_TOPIC, TxnError, TxnWire


def test_coordinator_counts_follow_open_and_ended_transactions(tmp_path) -> None:
    with Broker(data_dir=str(tmp_path), transactionCoordinatorEnabled=True) as b:
        admin = Admin(b.admin_url)
        topic = "persistent://public/default/admin-txn"
        with TxnWire(b.service_url) as w:
            w.connect_coordinator(0)
            assert admin.transactions.ongoing_count() == 0
            w.producer(topic, 1)
            a, c = w.new_txn(), w.new_txn()
            w.add_partition(a, topic)
            w.send(1, b"x", a)
            stats = admin.transactions.coordinator_stats()
            assert list(stats) == [0] and stats[0]["ongoingTxnSize"] == 2
            assert admin.transactions.coordinator_stats_by_id(0)["state"] == "Ready"
            meta = admin.transactions.transaction_metadata(*a)
            assert meta["status"] == "OPEN" and list(meta["producedPartitions"]) == [topic]
            assert admin.transactions.transaction_buffer_stats(topic)["ongoingTxnSize"] == 1
            w.end_txn(a, commit=True)
            assert admin.transactions.ongoing_count() == 1
            w.end_txn(c, commit=False)
            assert admin.transactions.ongoing_count() == 0
            with pytest.raises(AdminError) as e:
                admin.transactions.transaction_metadata(*a)
            assert e.value.status == 404
            with pytest.raises(AdminError) as e:
                admin.transactions.coordinator_stats_by_id(7)
            assert e.value.status == 404


def test_without_transactions_every_call_is_503(pulsar_broker) -> None:
    admin = Admin(pulsar_broker.admin_url)
    with pytest.raises(AdminError) as e:
        admin.transactions.coordinator_stats()
    assert e.value.status == 503


def test_slow_transactions_in_buffer_and_in_pending_ack_stats(tmp_path) -> None:
    with Broker(data_dir=str(tmp_path), transactionCoordinatorEnabled=True) as b:
        admin = Admin(b.admin_url)
        tx = admin.transactions
        topic = "persistent://public/default/admin-txn-in"
        with TxnWire(b.service_url) as w:
            w.connect_coordinator(0)
            w.producer(topic, 1)
            w.send(1, b"plain")
            w.subscribe(topic, "sub", 1, shared=False)
            w.flow(1, 10)
            plain = w.receive(10)
            assert plain is not None and plain.payload == b"plain"
            long, short, acker = w.new_txn(ttl_ms=60_000), w.new_txn(ttl_ms=5_000), w.new_txn(ttl_ms=30_000)
            w.add_partition(long, topic)
            w.send(1, b"in-txn", long)
            w.add_subscription(acker, topic, "sub")
            w.ack_txn(1, acker, [plain.position], cumulative=True)

            def ids(slow: dict[str, Any]) -> set[str]:
                return set(slow)

            name = "({},{})"
            assert ids(tx.slow_transactions(10_000)) == {name.format(*long), name.format(*acker)}
            assert ids(tx.slow_transactions(1_000)) == {name.format(*t) for t in (long, short, acker)}
            # Strictly longer, as Pulsar: a 60 s timeout is not slower than 60 s.
            assert ids(tx.slow_transactions(60_000, coordinator_id=0)) == set()
            slow = tx.slow_transactions(40_000)
            assert list(slow) == [name.format(*long)]
            assert slow[name.format(*long)]["status"] == "OPEN"
            assert list(slow[name.format(*long)]["producedPartitions"]) == [topic]

            started = tx.transaction_in_buffer_stats(*long, topic)
            assert started["aborted"] is False and started["startPosition"] is not None
            assert started["startPosition"] != "{}:{}".format(*plain.position)
            assert tx.transaction_in_buffer_stats(*short, topic) == {"startPosition": None, "aborted": False}

            held = "{}:{}".format(*plain.position)
            assert tx.transaction_in_pending_ack_stats(*acker, topic, "sub") == {"cumulativeAckPosition": held}
            assert tx.transaction_in_pending_ack_stats(*long, topic, "sub") == {"cumulativeAckPosition": None}
            acked = tx.transaction_metadata(*acker)["ackedPartitions"]
            assert acked == {topic: {"sub": {"cumulativeAckPosition": held}}}
            # Pulsar's timeoutAt is the client's timeout (ms), not an instant.
            assert tx.transaction_metadata(*acker)["timeoutAt"] == 30_000

            w.end_txn(long, commit=False)
            assert tx.transaction_in_buffer_stats(*long, topic) == {"startPosition": None, "aborted": True}
            w.end_txn(acker, commit=True)
            assert tx.transaction_in_pending_ack_stats(*acker, topic, "sub") == {"cumulativeAckPosition": None}
            assert ids(tx.slow_transactions(1_000)) == {name.format(*short)}

            for call, status in [
                (lambda: tx.slow_transactions(0, coordinator_id=7), 404),
                (lambda: tx.transaction_in_buffer_stats(0, 1, topic + "-none"), 404),
                (lambda: tx.transaction_in_pending_ack_stats(0, 1, topic, "no-such-sub"), 404),
            ]:
                with pytest.raises(AdminError) as e:
                    call()
                assert e.value.status == status


def test_coordinator_internal_stats_are_its_logs(tmp_path) -> None:
    with Broker(data_dir=str(tmp_path), transactionCoordinatorEnabled=True) as b:
        tx = Admin(b.admin_url).transactions
        with TxnWire(b.service_url) as w:
            w.connect_coordinator(0)
            before = tx.coordinator_internal_stats(0)["transactionLogStats"]
            assert before["managedLedgerName"] == "pulsar/system/__transaction_log_0"
            ended = w.new_txn()
            w.end_txn(ended, commit=True)
            w.new_txn()
            log = tx.coordinator_internal_stats(0, metadata=True)["transactionLogStats"]
            stats = log["managedLedgerInternalStats"]
            added = before["managedLedgerInternalStats"]["entriesAddedCounter"]
            # NEW, COMMITTING, COMMITTED of the first; NEW of the second.
            assert stats["entriesAddedCounter"] == added + 4
            cursor = stats["cursors"]["transaction.subscription"]
            # The ended transaction's records are acknowledged, the open one's are not.
            assert cursor["markDeletePosition"] != stats["lastConfirmedEntry"]
            last_ledger = stats["ledgers"][-1]["ledgerId"]
            assert stats["lastConfirmedEntry"].split(":")[0] == str(last_ledger)
        with pytest.raises(AdminError) as e:
            tx.coordinator_internal_stats(7)
        assert e.value.status == 404


def test_new_paths_are_503_without_transactions(pulsar_broker) -> None:
    tx = Admin(pulsar_broker.admin_url).transactions
    topic = "persistent://public/default/admin-txn-off"
    for call in (
        lambda: tx.slow_transactions(0),
        lambda: tx.coordinator_internal_stats(0),
        lambda: tx.transaction_in_buffer_stats(0, 1, topic),
        lambda: tx.transaction_in_pending_ack_stats(0, 1, topic, "s"),
        lambda: tx.position_stats_in_pending_ack(topic, "s", 1, 0),
        tx.coordinators,
        lambda: tx.scale_coordinators(2),
        lambda: tx.abort_transaction(0, 1),
    ):
        with pytest.raises(AdminError) as e:
            call()
        assert e.value.status == 503


def _cli(admin_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pulsar_rs.cli", "admin", "--admin-url", admin_url, "--json", "transactions", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def test_cli_transactions_commands(tmp_path) -> None:
    with Broker(data_dir=str(tmp_path), transactionCoordinatorEnabled=True) as b:
        topic = "persistent://public/default/admin-txn-cli"
        with TxnWire(b.service_url) as w:
            w.connect_coordinator(0)
            w.producer(topic, 1)
            w.send(1, b"plain")
            w.subscribe(topic, "sub", 1, shared=False)
            w.flow(1, 10)
            plain = w.receive(10)
            assert plain is not None
            txn = w.new_txn(ttl_ms=120_000)
            w.add_partition(txn, topic)
            w.send(1, b"x", txn)
            w.add_subscription(txn, topic, "sub")
            w.ack_txn(1, txn, [plain.position], cumulative=True)
            most, least = str(txn[0]), str(txn[1])
            held = "{}:{}".format(*plain.position)
            txn_name = f"({most},{least})"

            def ok(*args: str) -> Any:
                p = _cli(b.admin_url, *args)
                assert p.returncode == 0, (args, p.stdout, p.stderr)
                return json.loads(p.stdout)

            assert ok("coordinator-stats")["0"]["ongoingTxnSize"] == 1
            assert ok("coordinator-stats", "-c", "0")["ongoingTxnSize"] == 1
            assert ok("transaction-metadata", "-m", most, "-l", least)["txnId"] == txn_name
            assert list(ok("slow-transactions", "-t", "1m")) == [txn_name]
            assert ok("slow-transactions", "-t", "2m", "-c", "0") == {}
            assert ok("transaction-buffer-stats", "-t", topic)["ongoingTxnSize"] == 1
            in_buffer = ok("transaction-in-buffer-stats", "-m", most, "-l", least, "-t", topic)
            assert in_buffer["aborted"] is False and in_buffer["startPosition"]
            assert ok("pending-ack-stats", "-t", topic, "-s", "sub")["ongoingTxnSize"] == 1
            in_ack = ok("transaction-in-pending-ack-stats", "-m", most, "-l", least, "-t", topic, "-s", "sub")
            assert in_ack == {"cumulativeAckPosition": held}
            internal = ok("coordinator-internal-stats", "-c", "0")
            assert internal["transactionLogStats"]["managedLedgerName"] == "pulsar/system/__transaction_log_0"

            p = _cli(b.admin_url, "coordinator-internal-stats", "-c", "7")
            assert p.returncode == 1 and p.stderr.startswith("pulsar-rs admin: 404 "), p.stderr
            p = _cli(b.admin_url, "slow-transactions")
            assert p.returncode == 2 and "-t/--time" in p.stderr


def test_export_counts_transactions(tmp_path) -> None:
    from pulsar_rs.export import snapshot_tables

    with Broker(data_dir=str(tmp_path), transactionCoordinatorEnabled=True) as b:
        topic = "persistent://public/default/admin-txn-export"
        with TxnWire(b.service_url) as w:
            w.connect_coordinator(0)
            w.producer(topic, 1)
            w.send(1, b"plain")
            w.subscribe(topic, "sub", 1, shared=False)
            w.flow(1, 10)
            plain = w.receive(10)
            assert plain is not None
            committed, aborted, open_ = w.new_txn(), w.new_txn(), w.new_txn()
            w.end_txn(committed, commit=True)
            w.end_txn(aborted, commit=False)
            w.add_partition(open_, topic)
            w.send(1, b"x", open_)
            w.add_subscription(open_, topic, "sub")
            w.ack_txn(1, open_, [plain.position], cumulative=True)
            tables = snapshot_tables(b)
        assert tables["transaction_coordinators"].to_pylist() == [
            {
                "coordinator_id": 0,
                "ongoing": 1,
                "created": 3,
                "committed": 1,
                "aborted": 1,
                "timed_out": 0,
                # Three NEW, COMMITTING/COMMITTED, ABORTING/ABORTED, ADD_PARTITION, ADD_SUBSCRIPTION (the
                # ACK goes to the subscription's pending-ack log, as in Pulsar).
                "append_log": 9,
            }
        ]
        rows = {r["topic"]: r for r in tables["topics"].to_pylist()}
        row = rows[topic]
        assert row["txn_ongoing"] == 1
        # Dispatch stops at the plain message, before the open transaction's first one.
        assert (row["txn_max_read_ledger"], row["txn_max_read_entry"]) == plain.position
        subs = [s for s in tables["subscriptions"].to_pylist() if s["topic"] == topic]
        assert [(s["subscription"], s["txn_pending_ack_ongoing"]) for s in subs] == [("sub", 1)]


def test_export_without_transactions_leaves_the_columns_null(tmp_path) -> None:
    from pulsar_rs.export import snapshot_tables

    with Broker(data_dir=str(tmp_path)) as b:
        topic = "persistent://public/default/admin-txn-export-off"
        with TxnWire(b.service_url) as w:
            w.producer(topic, 1)
            w.send(1, b"plain")
            w.subscribe(topic, "sub", 1)
        tables = snapshot_tables(b)
    assert tables["transaction_coordinators"].num_rows == 0
    (row,) = [r for r in tables["topics"].to_pylist() if r["topic"] == topic]
    assert row["txn_ongoing"] is None and row["txn_max_read_ledger"] is None
    assert [s["txn_pending_ack_ongoing"] for s in tables["subscriptions"].to_pylist()] == [None]


def test_operator_calls_positions_coordinators_scale_and_abort(tmp_path) -> None:
    """Where a message stands in a subscription's acks (past the mark-delete, held by a
    transaction, free), the coordinators and their broker, a transaction aborted by the operator
    (its message never visible, its ack released, its client's commit refused), and more
    coordinators (never fewer), which a client then uses; the count outlives a restart."""
    with Broker(data_dir=str(tmp_path), transactionCoordinatorEnabled=True) as b:
        tx = Admin(b.admin_url).transactions
        topic = "persistent://public/default/admin-txn-ops"
        with TxnWire(b.service_url) as w:
            w.connect_coordinator(0)
            w.producer(topic, 1)
            for i in range(3):
                w.send(1, b"m%d" % i)
            w.subscribe(topic, "sub", 1)
            w.flow(1, 10)
            got = [w.receive(10) for _ in range(3)]
            m0, m1, m2 = (m.position for m in got if m is not None)
            first = w.new_txn()
            w.add_subscription(first, topic, "sub")
            w.ack_txn(1, first, [m0])
            w.end_txn(first, commit=True)
            held = w.new_txn()
            w.add_subscription(held, topic, "sub")
            w.ack_txn(1, held, [m1])
            w.add_partition(held, topic)
            w.send(1, b"never visible", held)

            def state(p: tuple[int, int], batch_index: int | None = None) -> str:
                return tx.position_stats_in_pending_ack(topic, "sub", p[0], p[1], batch_index)["state"]

            assert state(m0) == "MarkDelete"
            assert state(m1) == "PendingAck" and state(m1, 0) == "PendingAck"
            assert state(m2) == "NotInPendingAck"
            with pytest.raises(AdminError) as e:
                tx.position_stats_in_pending_ack(topic, "no-such-sub", *m1)
            assert e.value.status == 404
            listed = tx.coordinators()
            assert listed == [{"id": 0, "brokerServiceUrl": b.service_url}], listed

            tx.abort_transaction(*held)
            assert state(m1) == "NotInPendingAck"
            assert tx.transaction_in_buffer_stats(*held, topic) == {"startPosition": None, "aborted": True}
            with pytest.raises(TxnError) as refused:
                w.end_txn(held, commit=True)
            assert refused.value.code == "TransactionNotFound"
            for call, status in [
                (lambda: tx.abort_transaction(*held), 404),
                (lambda: tx.abort_transaction(7, 1), 404),
                (lambda: tx.scale_coordinators(1), 406),
                (lambda: tx.scale_coordinators(0), 406),
            ]:
                with pytest.raises(AdminError) as e:
                    call()
                assert e.value.status == status
            # The released ack can be taken again, by another transaction.
            again = w.new_txn()
            w.add_subscription(again, topic, "sub")
            w.ack_txn(1, again, [m1])
            w.end_txn(again, commit=True)
            assert state(m1) == "MarkDelete"

            tx.scale_coordinators(3)
            assert [c["id"] for c in tx.coordinators()] == [0, 1, 2]
            assert w.partitions(ASSIGN_TOPIC) == 3
            w.connect_coordinator(2)
            on_two = w.new_txn(tc_id=2)
            assert on_two[0] == 2
            w.end_txn(on_two, commit=False)
            ops = [
                ("coordinators-list",),
                ("position-stats-in-pending-ack", "-t", topic, "-s", "sub", "-l", str(m2[0]), "-e", str(m2[1])),
            ]
            outs = []
            for args in ops:
                p = _cli(b.admin_url, *args)
                assert p.returncode == 0, (args, p.stdout, p.stderr)
                outs.append(json.loads(p.stdout))
            assert [c["id"] for c in outs[0]] == [0, 1, 2]
            assert outs[1] == {"state": "NotInPendingAck"}
    with Broker(data_dir=str(tmp_path), transactionCoordinatorEnabled=True) as b:
        assert [c["id"] for c in Admin(b.admin_url).transactions.coordinators()] == [0, 1, 2]
