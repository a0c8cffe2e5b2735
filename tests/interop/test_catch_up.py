"""Catch-up reads with the official ``pulsar-client``: a consumer that subscribes after a backlog
of large messages was written (with no entry cache, so every read goes to the journal) gets every
message once and in order, while its cursor reads ahead (``pulsar_ml_read_ahead_entries_total``
grows); a seek back into the backlog restarts it at the right message."""

from __future__ import annotations

import re

import pulsar
import pytest

import pulsar_rs
from conftest import admin, assert_no_more, new_client

pytestmark = pytest.mark.timeout(180)

EARLIEST = pulsar.InitialPosition.Earliest
TOPIC = "persistent://public/default/backlog"
COUNT = 600
SIZE = 20 << 10


def payload(i: int) -> bytes:
    return i.to_bytes(4, "big") + bytes([i % 251]) * (SIZE - 4)


def read_ahead_entries(broker: pulsar_rs.Broker) -> float:
    status, text = admin(broker.admin_url, "GET", "/metrics")
    assert status == 200
    m = re.search(r"^pulsar_ml_read_ahead_entries_total\{[^}]*\} (\S+)$", text, re.M)
    assert m, "the metric is exported"
    return float(m.group(1))


def test_catching_up_reads_ahead_and_delivers_every_message_once_in_order(tmp_path):
    with pulsar_rs.Broker(data_dir=tmp_path / "data", managedLedgerCacheSizeMB=0) as broker:
        client = new_client(broker.service_url)
        try:
            producer = client.create_producer(TOPIC, batching_enabled=False)
            ids = [producer.send(payload(i)) for i in range(COUNT)]
            assert read_ahead_entries(broker) == 0
            consumer = client.subscribe(TOPIC, "late", initial_position=EARLIEST, receiver_queue_size=200)
            got = []
            for _ in range(COUNT):
                msg = consumer.receive(timeout_millis=10_000)
                got.append(msg.data())
                consumer.acknowledge(msg)
            assert [int.from_bytes(d[:4], "big") for d in got] == list(range(COUNT))
            assert all(d == payload(i) for i, d in enumerate(got)), "payloads intact"
            assert_no_more(consumer)
            # 20 KiB entries: a dispatcher read of more than 6 entries is read ahead after.
            assert read_ahead_entries(broker) > COUNT / 4

            # A seek back to the middle drops what was read ahead: delivery restarts there (after
            # the message sought, as the official client's own suite expects).
            half = COUNT // 2
            consumer.seek(ids[half])
            again = [consumer.receive(timeout_millis=10_000).data() for _ in range(COUNT - half - 1)]
            assert [int.from_bytes(d[:4], "big") for d in again] == list(range(half + 1, COUNT))
            assert_no_more(consumer)
        finally:
            client.close()
