"""PIP-442 (Pulsar 4.2): the memory topic lists may take at once, on the wire. A namespace list
larger than ``maxTopicListInFlightHeapMemSizeMB`` is refused ``TooManyRequests``; a client that
asks for big lists and does not read its socket holds the direct memory of the answers queued
for it (``pulsar_broker_topic_list_direct_memory_used_bytes``), so further answers wait in line
and are refused after ``...PermitsAcquireTimeoutMillis`` or when the line is full, and the memory
comes back once the client reads; a watcher whose list is over the heap limit is refused. The
lists are a partitioned topic's partitions (metadata only)."""

from __future__ import annotations

import re
import time

from conftest import admin
from raw_protocol import CONNECT, CONNECTED, ERROR, Raw, base, fb, fv, next_within, simple_frame

GET_TOPICS_OF_NAMESPACE, GET_TOPICS_OF_NAMESPACE_RESPONSE = 32, 33
WATCH_TOPIC_LIST, WATCH_TOPIC_LIST_SUCCESS = 64, 65
TOO_MANY_REQUESTS = 14
#: Long names make big lists of few partitions: each takes its length + 32 bytes of the heap limit.
BASE = "limits-" + "x" * 150


def connect(url: str) -> Raw:
    raw = Raw(url)
    raw.send(simple_frame(base(CONNECT, fb(1, "raw-test") + fv(4, 21))))
    ty, body = raw.recv()
    assert ty == CONNECTED, (ty, body)
    return raw


def ask_list(raw: Raw, request_id: int) -> None:
    raw.send(simple_frame(base(GET_TOPICS_OF_NAMESPACE, fv(1, request_id) + fb(2, "public/default"))))


def partitioned(broker, topics: int) -> None:
    """``topics`` partitioned topics of 1 000 partitions (each ~234 KB of the heap estimate)."""
    for k in range(topics):
        path = f"/admin/v2/persistent/public/default/{BASE}-{k}/partitions"
        status, body = admin(broker.admin_url, "PUT", path, 1000)
        assert status in (200, 204), (status, body)


def metric(broker, name: str) -> float:
    _, text = admin(broker.admin_url, "GET", "/metrics")
    m = re.search(rf"^{name}\{{[^}}]*\}} (\S+)$", text, re.M)
    assert m, f"{name} not in /metrics"
    return float(m.group(1))


def test_a_list_over_the_heap_limit_is_refused_too_many_requests(pulsar_broker_factory):
    broker = pulsar_broker_factory(maxTopicListInFlightHeapMemSizeMB=1)
    # 5 000 names of ~202 bytes: over 1 MB with Pulsar's 32 bytes each.
    partitioned(broker, 5)
    raw = connect(broker.service_url)
    try:
        ask_list(raw, 7)
        ty, body = raw.recv()
        assert ty == ERROR, (ty, body)
        assert body[1] == [7] and body[2] == [TOO_MANY_REQUESTS], body
        assert b"heap memory limit exceeded" in body[3][0], body
        assert b"maxTopicListInFlightHeapMemSizeMB" in body[3][0], body
    finally:
        raw.close()
    assert metric(broker, "pulsar_broker_topic_list_heap_memory_limit_bytes") == 1 << 20
    # The same list under the default limit (100 MB) is answered.
    big = pulsar_broker_factory()
    partitioned(big, 5)
    raw = connect(big.service_url)
    try:
        ask_list(raw, 8)
        ty, body = raw.recv()
        assert ty == GET_TOPICS_OF_NAMESPACE_RESPONSE, (ty, body)
        assert len(body[2]) == 5000
    finally:
        raw.close()


def test_answers_a_client_does_not_read_hold_direct_memory_and_later_ones_wait_then_are_refused(
    pulsar_broker_factory,
):
    broker = pulsar_broker_factory(
        maxTopicListInFlightDirectMemSizeMB=1,
        maxTopicListInFlightDirectMemSizePermitsAcquireTimeoutMillis=300,
        maxTopicListInFlightDirectMemSizePermitsAcquireQueueSize=2,
    )
    # Each answer ~0.4 MB: two fit in the limit.
    partitioned(broker, 2)
    raw = connect(broker.service_url)
    asked = 80  # ~40 MB of answers: more than the sockets' buffers hold.
    try:
        for i in range(asked):
            ask_list(raw, 100 + i)
        deadline = time.monotonic() + 20
        while metric(broker, "pulsar_broker_topic_list_direct_timeout_total") == 0:
            assert time.monotonic() < deadline, "no answer waited for direct memory and timed out"
            time.sleep(0.2)  # poll: a wait times out after the broker's real 300 ms
        held = metric(broker, "pulsar_broker_topic_list_direct_memory_used_bytes")
        assert held > 0, "the answers queued for a client that does not read hold no memory"
        assert held <= 1 << 20
        answers, refused = 0, []
        while answers + len(refused) < asked:
            got = next_within(raw, 10)
            assert got is not None, f"{answers} answers and {len(refused)} refusals of {asked}"
            ty, body = got
            if ty == GET_TOPICS_OF_NAMESPACE_RESPONSE:
                assert len(body[2]) == 2000
                answers += 1
            else:
                assert ty == ERROR and body[2] == [TOO_MANY_REQUESTS], (ty, body)
                refused.append(body[3][0].decode())
        assert answers >= 2 and refused, (answers, refused)
        assert all("Cannot acquire permits for direct memory" in r for r in refused), refused[:3]
        assert any("PermitsAcquireTimeoutMillis" in r or "PermitsAcquireQueueSize" in r for r in refused)
    finally:
        raw.close()
    # Everything written or dropped with the connection: the memory is back.
    deadline = time.monotonic() + 10
    while metric(broker, "pulsar_broker_topic_list_direct_memory_used_bytes") != 0:
        assert time.monotonic() < deadline, "direct memory not given back"
        time.sleep(0.2)  # poll: the writer drops the frames of the closed connection on its own task
    assert metric(broker, "pulsar_broker_topic_list_heap_memory_used_bytes") == 0


def watch_once(broker) -> tuple[int, dict]:
    """A watch of the long names' pattern on a new connection: its answer."""
    raw = connect(broker.service_url)
    try:
        pattern = f"persistent://public/default/{BASE[:15]}.*"
        raw.send(simple_frame(base(WATCH_TOPIC_LIST, fv(1, 1) + fv(2, 5) + fb(3, "public/default") + fb(4, pattern))))
        got = next_within(raw, 10)
        assert got is not None, "the watch was not answered"
        return got
    finally:
        raw.close()


def test_a_watcher_whose_list_is_over_the_heap_limit_is_refused_and_one_under_it_is_answered(
    pulsar_broker_factory,
):
    broker = pulsar_broker_factory(maxTopicListInFlightHeapMemSizeMB=1)
    partitioned(broker, 5)
    ty, body = watch_once(broker)
    assert ty == ERROR and body[1] == [1] and body[2] == [TOO_MANY_REQUESTS], (ty, body)
    assert b"heap memory limit exceeded" in body[3][0], body
    small = pulsar_broker_factory(maxTopicListInFlightHeapMemSizeMB=1)
    partitioned(small, 1)
    ty, body = watch_once(small)
    assert ty == WATCH_TOPIC_LIST_SUCCESS and len(body[3]) == 1000, (ty, len(body.get(3, [])))
