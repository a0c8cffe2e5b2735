"""Protocol v21 and topic-list watchers (issue 58, item 1), on the wire as Pulsar defines them:
CONNECTED answers ``min(client, 21)`` with ``supports_topic_watchers``; WATCH_TOPIC_LIST answers
WATCH_TOPIC_LIST_SUCCESS with the namespace's persistent topics the pattern names and their hash
(Pulsar's ``TopicList.calculateHash``), or no topics when the client's hash is already that one;
each topic created or deleted afterwards comes as WATCH_TOPIC_UPDATE; WATCH_TOPIC_LIST_CLOSE is
answered SUCCESS and ends the updates; a pattern over ``subscriptionPatternMaxLength`` and a broker
with ``enableBrokerSideSubscriptionPatternEvaluation=false`` refuse the watch. The Java client's
pattern consumer on a watcher: ``tests/java`` (``PatternWatcherTest``)."""

from __future__ import annotations

import uuid

from conftest import admin
from raw_protocol import CONNECT, CONNECTED, ERROR, SUCCESS, Raw, base, fb, fv, next_within, parse, simple_frame

WATCH_TOPIC_LIST, WATCH_TOPIC_LIST_SUCCESS, WATCH_TOPIC_UPDATE, WATCH_TOPIC_LIST_CLOSE = 64, 65, 66, 67
SERVER_ERROR_NOT_ALLOWED = 22
#: Pulsar's TopicList.calculateHash of no topics.
EMPTY_HASH = "00000000"


def connect(url: str, version: int = 21) -> tuple[Raw, dict]:
    raw = Raw(url)
    raw.send(simple_frame(base(CONNECT, fb(1, "raw-test") + fv(4, version))))
    ty, body = raw.recv()
    assert ty == CONNECTED, (ty, body)
    return raw, body


def watch(raw: Raw, request_id: int, watcher_id: int, pattern: str, known_hash: str | None = None) -> None:
    body = fv(1, request_id) + fv(2, watcher_id) + fb(3, "public/default") + fb(4, pattern)
    if known_hash is not None:
        body += fb(5, known_hash)
    raw.send(simple_frame(base(WATCH_TOPIC_LIST, body)))


def strings(body: dict, field: int) -> list[str]:
    return sorted(v.decode() for v in body.get(field, []))


def next_update(raw: Raw, seconds: float = 3.0) -> dict:
    got = next_within(raw, seconds)
    assert got is not None, f"no WATCH_TOPIC_UPDATE within {seconds} s"
    ty, body = got
    assert ty == WATCH_TOPIC_UPDATE, (ty, body)
    return body


def test_v21_is_answered_v21_with_the_watcher_flag(pulsar_broker):
    raw, connected = connect(pulsar_broker.service_url, 21)
    try:
        assert connected[2] == [21]
        flags = connected.get(4)
        assert flags, "CONNECTED without feature flags"
        assert parse(flags[0]).get(4) == [1], "supports_topic_watchers not set"
    finally:
        raw.close()
    raw, connected = connect(pulsar_broker.service_url, 25)
    try:
        assert connected[2] == [21], "a newer client is answered the broker's highest version"
    finally:
        raw.close()


def short_topic() -> str:
    """A topic name short enough for a pattern under ``subscriptionPatternMaxLength`` (50)."""
    return f"persistent://public/default/w{uuid.uuid4().hex[:8]}"


def test_a_watcher_hears_of_topics_created_and_deleted(pulsar_broker, client):
    topic = short_topic()
    prefix = topic.removeprefix("persistent://public/default/")
    pattern = f"persistent://public/default/{prefix}-.*"
    existing = f"{topic}-before"
    client.create_producer(existing).close()
    raw, _ = connect(pulsar_broker.service_url)
    try:
        watch(raw, 1, 7, pattern)
        ty, ok = raw.recv()
        assert ty == WATCH_TOPIC_LIST_SUCCESS, (ty, ok)
        assert ok[1] == [1] and ok[2] == [7]
        assert strings(ok, 3) == [existing]
        first_hash = ok[4][0].decode()
        assert first_hash != EMPTY_HASH and len(first_hash) == 8
        # Nothing else in the namespace is named: another topic comes and goes unheard.
        client.create_producer(f"persistent://public/default/unrelated-{prefix}").close()
        assert next_within(raw, 1.0) is None

        created = f"{topic}-new"
        client.create_producer(created).close()
        up = next_update(raw)
        assert up[1] == [7]
        assert strings(up, 2) == [created] and strings(up, 3) == []
        two_hash = up[4][0].decode()
        assert two_hash not in (first_hash, EMPTY_HASH)

        # A partitioned topic's partitions are its topics on the list.
        status, _ = admin(
            pulsar_broker.admin_url, "PUT", f"/admin/v2/persistent/public/default/{prefix}-parted/partitions", 2
        )
        assert status == 204, status
        up = next_update(raw)
        assert strings(up, 2) == [f"{topic}-parted-partition-0", f"{topic}-parted-partition-1"]

        status, _ = admin(pulsar_broker.admin_url, "DELETE", f"/admin/v2/persistent/public/default/{prefix}-new")
        assert status == 204, status
        up = next_update(raw)
        assert strings(up, 2) == [] and strings(up, 3) == [created]

        # A second watch that knows the list as it is now gets no topics, the same hash.
        now_hash = up[4][0].decode()
        watch(raw, 2, 8, pattern, known_hash=now_hash)
        ty, ok = raw.recv()
        assert ty == WATCH_TOPIC_LIST_SUCCESS, (ty, ok)
        assert strings(ok, 3) == [] and ok[4][0].decode() == now_hash

        # Closed: SUCCESS, and no update for that watcher any more.
        raw.send(simple_frame(base(WATCH_TOPIC_LIST_CLOSE, fv(1, 3) + fv(2, 7))))
        ty, ok = raw.recv()
        assert ty == SUCCESS and ok[1] == [3], (ty, ok)
        raw.send(simple_frame(base(WATCH_TOPIC_LIST_CLOSE, fv(1, 4) + fv(2, 8))))
        ty, ok = raw.recv()
        assert ty == SUCCESS and ok[1] == [4], (ty, ok)
        client.create_producer(f"{topic}-after-close").close()
        assert next_within(raw, 1.0) is None
    finally:
        raw.close()


def test_a_pattern_over_the_limit_is_refused(pulsar_broker):
    raw, _ = connect(pulsar_broker.service_url)
    try:
        watch(raw, 5, 1, "persistent://public/default/" + "x" * 60)
        ty, err = raw.recv()
        assert ty == ERROR and err[1] == [5] and err[2] == [SERVER_ERROR_NOT_ALLOWED], (ty, err)
    finally:
        raw.close()


def test_watchers_off_are_neither_offered_nor_served(pulsar_broker_factory):
    broker = pulsar_broker_factory(enableBrokerSideSubscriptionPatternEvaluation=False)
    raw, connected = connect(broker.service_url)
    try:
        assert parse(connected[4][0]).get(4) == [0]
        watch(raw, 9, 1, "persistent://public/default/t-.*")
        ty, err = raw.recv()
        assert ty == ERROR and err[1] == [9] and err[2] == [SERVER_ERROR_NOT_ALLOWED], (ty, err)
    finally:
        raw.close()


GET_TOPICS_OF_NAMESPACE, GET_TOPICS_OF_NAMESPACE_RESPONSE = 32, 33


def test_a_pattern_filters_the_namespace_list_and_its_hash_says_unchanged(pulsar_broker, client):
    """GET_TOPICS_OF_NAMESPACE with ``topics_pattern``: only the topics it names (``filtered``),
    their hash, and no topics (``changed: false``) when the client's hash is that one."""
    topic = short_topic()
    prefix = topic.removeprefix("persistent://public/default/")
    for suffix in ("x", "y"):
        client.create_producer(f"{topic}-{suffix}").close()
    client.create_producer(f"persistent://public/default/other-{prefix}").close()
    raw, _ = connect(pulsar_broker.service_url)
    try:

        def ask(request_id: int, known: str | None) -> dict:
            body = (
                fv(1, request_id)
                + fb(2, "public/default")
                + fv(3, 0)
                + fb(4, f"persistent://public/default/{prefix}-.*")
            )
            if known is not None:
                body += fb(5, known)
            raw.send(simple_frame(base(GET_TOPICS_OF_NAMESPACE, body)))
            ty, reply = raw.recv()
            assert ty == GET_TOPICS_OF_NAMESPACE_RESPONSE and reply[1] == [request_id], (ty, reply)
            return reply

        first = ask(1, None)
        assert strings(first, 2) == [f"{topic}-x", f"{topic}-y"]
        assert first[3] == [1] and first[5] == [1], first  # filtered, changed
        hash_now = first[4][0].decode()
        again = ask(2, hash_now)
        assert strings(again, 2) == [] and again[5] == [0] and again[4][0].decode() == hash_now, again
    finally:
        raw.close()
