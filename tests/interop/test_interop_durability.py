"""Durability with the official ``pulsar-client``: a clean broker restart on the same data
directory, transparent client reconnects across a restart, and a SIGKILL of a standalone broker
process while producing. Every message that got a receipt must be delivered afterwards, and
acknowledgements (including holes) must survive."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pulsar
import pytest

import pulsar_rs
from conftest import admin, assert_no_more, new_client, receive_all
from dispatch_util import wait_for_backlog

pytestmark = pytest.mark.timeout(180)

EARLIEST = pulsar.InitialPosition.Earliest
TOPIC = "persistent://public/default/durable"


def test_restart_keeps_messages_and_acks(tmp_path):
    data = tmp_path / "data"
    with pulsar_rs.Broker(data_dir=data) as broker:
        client = new_client(broker.service_url)
        acker = client.subscribe(TOPIC, "acker", consumer_type=pulsar.ConsumerType.Shared)
        lazy = client.subscribe(TOPIC, "lazy")  # never acks
        cum = client.subscribe(TOPIC, "cum")
        producer = client.create_producer(TOPIC)
        receipts = [producer.send(f"m{i}".encode()) for i in range(100)]
        assert len(receipts) == 100
        got = receive_all(acker, 100, ack=False)
        assert len(got) == 100
        holes = set()
        for i, m in enumerate(got):
            if i % 10 == 3:
                holes.add(m.data())
            else:
                acker.acknowledge(m)
        got_cum = receive_all(cum, 60, ack=False)
        cum.acknowledge_cumulative(got_cum[-1])
        acker.close()
        cum.close()
        lazy.close()
        client.close()
        broker.stop()

    with pulsar_rs.Broker(data_dir=data) as broker:
        client = new_client(broker.service_url)
        try:
            acker = client.subscribe(TOPIC, "acker", consumer_type=pulsar.ConsumerType.Shared)
            back = receive_all(acker, len(holes))
            assert {m.data() for m in back} == holes
            assert_no_more(acker)
            cum = client.subscribe(TOPIC, "cum")
            assert [m.data() for m in receive_all(cum, 40)] == [f"m{i}".encode() for i in range(60, 100)]
            assert_no_more(cum)
            lazy = client.subscribe(TOPIC, "lazy")
            assert [m.data() for m in receive_all(lazy, 100)] == [f"m{i}".encode() for i in range(100)]
            assert_no_more(lazy)
            # Message ids are stable across the restart, and new messages follow the old ones.
            reader = client.create_reader(TOPIC, receipts[49])
            assert reader.read_next(timeout_millis=5000).data() == b"m50"
            new_id = client.create_producer(TOPIC).send(b"after-restart")
            assert (new_id.ledger_id(), new_id.entry_id()) > (receipts[-1].ledger_id(), receipts[-1].entry_id())
        finally:
            client.close()


def test_restart_keeps_batched_messages_and_metadata(tmp_path):
    data = tmp_path / "data"
    n = 5000
    with pulsar_rs.Broker(data_dir=data) as broker:
        short = "parted"
        status, _ = admin(broker.admin_url, "PUT", f"/admin/v2/persistent/public/default/{short}/partitions", 2)
        assert status in (200, 204)
        client = new_client(broker.service_url)
        sub = client.subscribe(f"persistent://public/default/{short}", "s", schema=pulsar.schema.StringSchema())
        producer = client.create_producer(
            f"persistent://public/default/{short}",
            batching_enabled=True,
            block_if_queue_full=True,
            schema=pulsar.schema.StringSchema(),
        )
        results = []
        for i in range(n):
            producer.send_async(f"v{i}", lambda res, mid: results.append(res))
        producer.flush()
        assert results == [pulsar.Result.Ok] * n
        sub.close()
        client.close()

    with pulsar_rs.Broker(data_dir=data) as broker:
        status, meta = admin(broker.admin_url, "GET", "/admin/v2/persistent/public/default/parted/partitions")
        assert status == 200 and meta == {"partitions": 2, "deleted": False}
        client = new_client(broker.service_url)
        try:
            assert len(client.get_topic_partitions("persistent://public/default/parted")) == 2
            sub = client.subscribe("persistent://public/default/parted", "s", schema=pulsar.schema.StringSchema())
            got = receive_all(sub, n)
            assert sorted(m.value() for m in got) == sorted(f"v{i}" for i in range(n))
            assert_no_more(sub)
        finally:
            client.close()


def test_clients_reconnect_across_restart_on_same_port(tmp_path):
    data = tmp_path / "data"
    broker = pulsar_rs.Broker(data_dir=data)
    port = int(broker.service_url.rsplit(":", 1)[1])
    client = new_client(broker.service_url)
    try:
        consumer = client.subscribe(TOPIC, "sub")
        producer = client.create_producer(TOPIC)
        for i in range(10):
            producer.send(f"a{i}".encode())
        first = receive_all(consumer, 5)
        assert [m.data() for m in first] == [f"a{i}".encode() for i in range(5)]
        wait_for_backlog(broker, TOPIC, "sub", 5)
        broker.stop()
        broker = pulsar_rs.Broker(data_dir=data, port=port)
        # The same producer and consumer objects carry on after reconnecting.
        for i in range(5):
            producer.send(f"b{i}".encode())
        rest = receive_all(consumer, 10, timeout_ms=15000)
        assert [m.data() for m in rest] == [f"a{i}".encode() for i in range(5, 10)] + [
            f"b{i}".encode() for i in range(5)
        ]
        assert_no_more(consumer)
    finally:
        client.close()
        broker.stop()


# ---------------------------------------------------------------- standalone process


def _stop(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def _start_standalone(data_dir: Path, port: int = 0) -> tuple[subprocess.Popen, str, str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pulsar_rs.cli",
            "standalone",
            "--data-dir",
            str(data_dir),
            "--port",
            str(port),
            "--admin-port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PULSAR_RS_LOG": "warn"},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.match(r"READY (pulsar://\S+) (http://\S+) data_dir=(.*)$", line.strip())
    if not m:
        _stop(proc)
        pytest.fail(f"standalone did not print READY, got {line!r}")
    return proc, m.group(1), m.group(2)


def test_standalone_sigterm_shuts_down_cleanly(tmp_path):
    proc, url, admin_url = _start_standalone(tmp_path / "d")
    try:
        status, _body = admin(admin_url, "GET", "/admin/v2/brokers/health")
        assert status == 200
        client = new_client(url)
        client.create_producer(TOPIC).send(b"x")
        client.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        _stop(proc)


@pytest.mark.slow  # about 9 s here (README, 'Tests')
def test_sigkill_while_producing_loses_nothing_acknowledged(tmp_path):
    data = tmp_path / "d"
    proc, url, _ = _start_standalone(data)
    client = pulsar.Client(
        url,
        operation_timeout_seconds=5,
        connection_timeout_ms=2000,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
    )
    acked: set[bytes] = set()
    failed = []
    lock = threading.Lock()
    try:
        client.subscribe(TOPIC, "sub").close()  # a durable subscription created before the crash
        producers = [
            client.create_producer(TOPIC, batching_enabled=True, send_timeout_millis=3000, block_if_queue_full=True),
            client.create_producer(TOPIC, batching_enabled=False, send_timeout_millis=3000, block_if_queue_full=True),
        ]

        def cb_for(payload: bytes):
            def cb(res, _msg_id):
                with lock:
                    (acked.add(payload) if res == pulsar.Result.Ok else failed.append(payload))

            return cb

        stop = threading.Event()

        def produce(k: int, producer) -> None:
            i = 0
            while not stop.is_set():
                payload = f"p{k}-{i}".encode()
                try:
                    producer.send_async(payload, cb_for(payload))
                except pulsar.PulsarException:
                    return
                i += 1
                if i % 200 == 0:
                    time.sleep(0.001)  # pace the producer threads (machine time), letting the callbacks run

        threads = [threading.Thread(target=produce, args=(k, p)) for k, p in enumerate(producers)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while len(acked) < 5000 and time.monotonic() < deadline:
            time.sleep(0.01)  # poll: the receipts arrive asynchronously
        assert len(acked) >= 5000, "producing did not get going"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        stop.set()
        for t in threads:
            t.join(timeout=30)
        # Wait for the pending sends to time out so that `acked` is final.
        time.sleep(5)
        with lock:
            confirmed = set(acked)
    finally:
        _stop(proc)
        client.close()
    print(f"\n{len(confirmed)} sends confirmed before SIGKILL, {len(failed)} failed")

    proc, url, _ = _start_standalone(data)
    try:
        client = new_client(url)
        sub = client.subscribe(TOPIC, "sub")
        delivered: list[bytes] = []
        while True:
            try:
                m = sub.receive(timeout_millis=3000)
            except pulsar.Timeout:
                break
            delivered.append(m.data())
            sub.acknowledge(m)
        missing = confirmed - set(delivered)
        assert not missing, f"{len(missing)} acknowledged messages lost, e.g. {sorted(missing)[:5]}"
        assert len(delivered) == len(set(delivered)), "a message was stored twice"
        # Per producer, what survived is an ordered prefix of what was sent.
        for k in range(2):
            seq = [int(d.split(b"-")[1]) for d in delivered if d.startswith(f"p{k}-".encode())]
            assert seq == list(range(len(seq)))
        client.close()
    finally:
        _stop(proc, signal.SIGTERM)


def test_restart_keeps_thousands_of_ack_holes(tmp_path):
    """Pulsar drops ack holes beyond 10 000 on restart; pulsar_rs keeps all of them."""
    data = tmp_path / "data"
    n = 24_000
    with pulsar_rs.Broker(data_dir=data) as broker:
        client = new_client(broker.service_url)
        consumer = client.subscribe(TOPIC, "holes", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=2000)
        producer = client.create_producer(TOPIC, batching_enabled=False, block_if_queue_full=True)
        for i in range(n):
            producer.send_async(str(i).encode(), None)
        producer.flush()
        got = receive_all(consumer, n, ack=False)
        assert len(got) == n
        for m in got:
            if int(m.data()) % 2 == 0:
                consumer.acknowledge(m)
        consumer.close()
        client.close()

    with pulsar_rs.Broker(data_dir=data) as broker:
        client = new_client(broker.service_url)
        try:
            consumer = client.subscribe(TOPIC, "holes", consumer_type=pulsar.ConsumerType.Shared)
            back = receive_all(consumer, n // 2)
            assert sorted(int(m.data()) for m in back) == list(range(1, n, 2))
            assert_no_more(consumer)
        finally:
            client.close()
