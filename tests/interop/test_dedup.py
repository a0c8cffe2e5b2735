"""Message deduplication with the official ``pulsar-client``: namespace and topic policies,
``last_sequence_id`` on (re)connect, duplicates answered -1:-1 and not stored, batches, and the
sequence ids surviving a clean restart and a SIGKILL of a standalone broker."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pulsar
import pytest

import pulsar_rs
from conftest import admin, assert_no_more, new_client, receive_all

pytestmark = pytest.mark.timeout(120)

EARLIEST = pulsar.InitialPosition.Earliest
NS = "/admin/v2/namespaces/public/default/deduplication"


def _enable_ns(admin_url: str) -> None:
    status, _ = admin(admin_url, "POST", NS, True)
    assert status == 204
    assert admin(admin_url, "GET", NS) == (200, True)


def _send_seq(producer, ids) -> list:
    return [producer.send(f"m{i}".encode(), sequence_id=i) for i in ids]


def _is_dup_id(mid) -> bool:
    return (mid.ledger_id(), mid.entry_id()) == (-1, -1)


def test_resend_after_reconnect_is_deduplicated(pulsar_broker, topic):
    _enable_ns(pulsar_broker.admin_url)
    client = new_client(pulsar_broker.service_url)
    try:
        consumer = client.subscribe(topic, "s", initial_position=EARLIEST)
        p = client.create_producer(topic, producer_name="p1")
        assert p.last_sequence_id() == -1
        _send_seq(p, range(10))
        assert p.last_sequence_id() == 9
        p.close()
        p = client.create_producer(topic, producer_name="p1")
        assert p.last_sequence_id() == 9  # from PRODUCER_SUCCESS
        ids = _send_seq(p, range(5, 12))
        assert [_is_dup_id(m) for m in ids] == [True] * 5 + [False] * 2
        got = receive_all(consumer, 12)
        assert [m.data() for m in got] == [f"m{i}".encode() for i in range(12)]
        assert_no_more(consumer)
        assert p.last_sequence_id() == 11
    finally:
        client.close()


def test_without_deduplication_duplicates_are_stored(pulsar_broker, topic):
    client = new_client(pulsar_broker.service_url)
    try:
        consumer = client.subscribe(topic, "s")
        p = client.create_producer(topic, producer_name="p1")
        _send_seq(p, range(10))
        p.close()
        p = client.create_producer(topic, producer_name="p1")
        assert p.last_sequence_id() == -1
        ids = _send_seq(p, range(5, 12))
        assert not any(_is_dup_id(m) for m in ids)
        assert len(receive_all(consumer, 17)) == 17
    finally:
        client.close()


def test_topic_policy_overrides_namespace(pulsar_broker, topic):
    _enable_ns(pulsar_broker.admin_url)
    client = new_client(pulsar_broker.service_url)
    try:
        p = client.create_producer(topic, producer_name="p1")
        _send_seq(p, range(3))
        path = "/admin/v2/persistent/" + topic.split("://", 1)[1] + "/deduplicationEnabled"
        assert admin(pulsar_broker.admin_url, "POST", path, False)[0] == 204
        assert admin(pulsar_broker.admin_url, "GET", path) == (200, False)
        p.close()
        p = client.create_producer(topic, producer_name="p1")
        assert p.last_sequence_id() == -1
        assert not _is_dup_id(_send_seq(p, [1])[0])
        assert admin(pulsar_broker.admin_url, "DELETE", path)[0] == 204
        p.close()
        # Back to the namespace's setting; the cursor was deleted while off, so nothing is known.
        p = client.create_producer(topic, producer_name="p1")
        _send_seq(p, [7])
        assert _is_dup_id(_send_seq(p, [7])[0])
    finally:
        client.close()


def test_batches_use_highest_sequence_id(pulsar_broker, topic):
    _enable_ns(pulsar_broker.admin_url)
    client = new_client(pulsar_broker.service_url)
    try:
        consumer = client.subscribe(topic, "s")
        p = client.create_producer(topic, producer_name="batcher", batching_enabled=True, batching_max_messages=10)
        for i in range(30):
            p.send_async(f"b{i}".encode(), None)
        p.flush()
        p.close()
        p = client.create_producer(topic, producer_name="batcher")
        # The C++ client sends no highest_sequence_id: like Pulsar's broker, the last batch counts
        # by its first sequence id (20); a client that sends it (Java) gets 29 (Rust unit test).
        assert p.last_sequence_id() == 20
        assert _is_dup_id(p.send(b"again", sequence_id=17))
        assert len(receive_all(consumer, 30)) == 30
        assert_no_more(consumer)
    finally:
        client.close()


def test_sequence_ids_survive_restart(tmp_path):
    data = tmp_path / "data"
    topic = "persistent://public/default/dedup-restart"
    with pulsar_rs.Broker(data_dir=data, brokerDeduplicationEntriesInterval=4) as broker:
        _enable_ns(broker.admin_url)
        client = new_client(broker.service_url)
        client.subscribe(topic, "s").close()
        p = client.create_producer(topic, producer_name="p1")
        _send_seq(p, range(10))
        client.close()
    with pulsar_rs.Broker(data_dir=data, brokerDeduplicationEntriesInterval=4) as broker:
        client = new_client(broker.service_url)
        try:
            p = client.create_producer(topic, producer_name="p1")
            assert p.last_sequence_id() == 9
            ids = _send_seq(p, range(5, 12))
            assert [_is_dup_id(m) for m in ids] == [True] * 5 + [False] * 2
            consumer = client.subscribe(topic, "s")
            assert [m.data() for m in receive_all(consumer, 12)] == [f"m{i}".encode() for i in range(12)]
            assert_no_more(consumer)
        finally:
            client.close()


def test_sequence_ids_survive_sigkill(tmp_path):
    sys.path.insert(0, str(Path(__file__).parent))
    from test_interop_durability import _start_standalone, _stop

    data = tmp_path / "d"
    topic = "persistent://public/default/dedup-kill"
    proc, url, admin_url = _start_standalone(data)
    try:
        _enable_ns(admin_url)
        client = new_client(url)
        client.subscribe(topic, "s").close()
        p = client.create_producer(topic, producer_name="p1")
        _send_seq(p, range(2500))  # past one snapshot (every 1000 entries), then more
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=15)
        client.close()
    finally:
        _stop(proc)
    proc, url, _admin_url = _start_standalone(data)
    try:
        client = new_client(url)
        p = client.create_producer(topic, producer_name="p1")
        assert p.last_sequence_id() == 2499
        ids = _send_seq(p, range(2495, 2505))
        assert [_is_dup_id(m) for m in ids] == [True] * 5 + [False] * 5
        consumer = client.subscribe(topic, "s")
        got = receive_all(consumer, 2505)
        assert [m.data() for m in got] == [f"m{i}".encode() for i in range(2505)]
        assert_no_more(consumer)
        client.close()
    finally:
        _stop(proc)
