"""``pulsar_rs.Admin``'s transaction calls (``admin.transactions``) against a broker with
``transactionCoordinatorEnabled``: the coordinator's count of transactions not yet ended as
transactions open and end (driven on the raw wire, ``tests/txn_wire.py``), one transaction's
metadata, a topic's buffer stats; and 503 from a broker without transactions."""

from __future__ import annotations

import pytest

from pulsar_rs import Admin, AdminError, Broker
from txn_wire import TxnWire


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
