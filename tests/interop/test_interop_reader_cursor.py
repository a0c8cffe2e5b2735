"""Readers' non-durable cursors with the official ``pulsar-client`` (issue 12.7): a reader's seek
by publish time, and a reader never displacing a durable subscription of the same name."""

from __future__ import annotations

import time

import pulsar
import pytest

from conftest import admin, assert_no_more, new_client, receive_all
from pulsar_rs import Broker, ManagedLedger

pytestmark = pytest.mark.timeout(120)

#: Small ledgers so that trimming has something to delete.
SMALL_LEDGERS = {
    "managedLedgerMaxEntriesPerLedger": 2,
    "managedLedgerMinLedgerRolloverTimeMinutes": 0,
}


def test_reader_seek_by_publish_time(client, topic):
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(5):
        producer.send(f"early{i}".encode())
    time.sleep(0.05)  # the client stamps publish times with the real clock: a real gap
    boundary_ms = int(time.time() * 1000)
    time.sleep(0.05)  # the client stamps publish times with the real clock: a real gap
    for i in range(5):
        producer.send(f"late{i}".encode())
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    first = [reader.read_next(timeout_millis=5000) for _ in range(10)]
    assert first[4].publish_timestamp() < boundary_ms <= first[5].publish_timestamp()
    # The C++ client resubscribes after a seek by time *without* a start message id: the broker
    # must keep the reader's reset cursor (as Pulsar's newNonDurableCursor returns it by name).
    reader.seek(boundary_ms)
    got = [reader.read_next(timeout_millis=5000).data() for _ in range(5)]
    assert got == [f"late{i}".encode() for i in range(5)]
    with pytest.raises(pulsar.Timeout):
        reader.read_next(timeout_millis=300)
    reader.seek(0)
    assert len([reader.read_next(timeout_millis=5000) for _ in range(10)]) == 10
    # New messages still reach the reader after its seeks.
    producer.send(b"new")
    assert reader.read_next(timeout_millis=5000).data() == b"new"


def _reader_subscriptions(admin_url, short):
    status, stats = admin(admin_url, "GET", f"/admin/v2/persistent/public/default/{short}/stats")
    assert status == 200, stats
    return stats["subscriptions"]


@pytest.mark.slow  # about 8 s here (README, 'Tests')
def test_reader_does_not_replace_durable_subscription_of_same_name(tmp_path, topic):
    """A reader reconnecting with the name of a durable subscription is refused (Pulsar:
    NotAllowed "Durable subscription with the same name already exists."), so trimming keeps the
    durable subscription's unread ledgers."""
    short = topic.rsplit("/", 1)[1]
    data = tmp_path / "data"
    broker = Broker(data_dir=data, **SMALL_LEDGERS)
    port = broker.port
    client = new_client(broker.service_url)
    try:
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(10):
            producer.send(f"m{i}".encode())
        producer.close()
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        for _ in range(10):
            reader.read_next(timeout_millis=5000)
        (name,) = _reader_subscriptions(broker.admin_url, short)
        # While the broker is down (the reader keeps retrying), a durable cursor of the reader's
        # subscription name is created at the first entry, with the ledger API on the same data.
        broker.stop()
        ml = ManagedLedger(data, f"public/default/persistent/{short}", **SMALL_LEDGERS)
        ml.open_cursor(name, earliest=True)
        ml.close()
        broker = Broker(data_dir=data, port=port, **SMALL_LEDGERS)
        # Give the reader time to reconnect and housekeeping (1 s) time to trim.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            subs = _reader_subscriptions(broker.admin_url, short)
            if subs.get(name, {}).get("consumers"):
                break  # the reader took the durable subscription's place (the bug)
            time.sleep(0.2)  # poll: the reader reconnects after its own real-time back-off
        time.sleep(2.5)  # negative check over housekeeping's real-time schedule (1 s): nothing trimmed
        reader.close()
        # The durable subscription still has its whole backlog.
        consumer = client.subscribe(topic, name, initial_position=pulsar.InitialPosition.Earliest)
        got = [m.data() for m in receive_all(consumer, 10)]
        assert got == [f"m{i}".encode() for i in range(10)]
        assert_no_more(consumer)
    finally:
        client.close()
        broker.stop()


def test_seek_to_latest_then_new_message_is_available(client, topic):
    """``seek(MessageId.latest)`` puts the cursor just after the last entry, as Pulsar's
    ``resetCursor(LATEST)`` does (mark-delete = last entry): nothing is available until the next
    message is published, which then is."""
    producer = client.create_producer(topic)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    producer.send(b"m0")
    assert reader.has_message_available()
    reader.seek(pulsar.MessageId.latest)
    assert not reader.has_message_available()
    producer.send(b"m1")
    assert reader.has_message_available()
    assert reader.read_next(5000).data() == b"m1"
