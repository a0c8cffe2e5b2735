"""Topic termination, as Apache Pulsar 4.0 does it (`PersistentTopic.terminate`): the REST calls
and their answers, the producers closed and refused (`TopicTerminatedError`), the consumers told
`REACHED_END_OF_TOPIC` once everything is acknowledged, and the termination kept across a restart.

The official Python client cannot show these (its C++ core has no reached-end API, and before
C++ 4.2 a refused producer only times out), so the wire is read with raw frames; the Go client's
own `TestTopicTermination` runs in `tests/go`.
"""

from __future__ import annotations

import pytest

import pulsar_rs
from conftest import admin
from raw_protocol import (
    CLOSE_PRODUCER,
    ERROR,
    MESSAGE,
    PRODUCER,
    REACHED_END_OF_TOPIC,
    Raw,
    ack,
    base,
    expect,
    fb,
    flow,
    fv,
    next_within,
    parse,
    produce,
    simple_frame,
    subscribe,
)
from raw_protocol import SERVER_ERROR_TOPIC_TERMINATED as TOPIC_TERMINATED


@pytest.fixture
def raws():
    made: list[Raw] = []

    def make(url: str) -> Raw:
        r = Raw(url)
        r.connect()
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


def test_termination_closes_producers_and_ends_the_topic_once_everything_is_acknowledged(pulsar_broker, raws, topic):
    url, web = pulsar_broker.service_url, pulsar_broker.admin_url
    local = topic.removeprefix("persistent://")
    producer = raws(url)
    ids = produce(producer, topic, 3)
    consumer = raws(url)
    subscribe(consumer, topic, "end", 1)
    flow(consumer, 1)
    got = [parse(expect(consumer, MESSAGE)[2][0]) for _ in range(3)]
    assert [(m[1][0], m[2][0]) for m in got] == ids

    status, last = admin(web, "POST", f"/admin/v2/persistent/{local}/terminate")
    assert status == 200, last
    assert last == {
        "ledgerId": ids[-1][0],
        "entryId": ids[-1][1],
        "partitionIndex": -1,
        "batchIndex": -1,
        "batchSize": 0,
    }
    # The producer is closed (CLOSE_PRODUCER), and a new one is refused.
    body = expect(producer, CLOSE_PRODUCER)
    assert body[1] == [1]
    producer.send(simple_frame(base(PRODUCER, fb(1, topic) + fv(2, 2) + fv(3, 2))))
    err = expect(producer, ERROR)
    assert err[2] == [TOPIC_TERMINATED], err
    assert b"terminated" in err[3][0]
    # Not at the end yet: 3 messages are unacknowledged.
    assert next_within(consumer) is None
    for lid, eid in ids[:2]:
        ack(consumer, 1, lid, eid)
    assert next_within(consumer) is None
    ack(consumer, 1, *ids[2])
    assert expect(consumer, REACHED_END_OF_TOPIC)[1] == [1]
    assert next_within(consumer) is None

    # Terminating again answers the same id; the ledger says it is terminated.
    assert admin(web, "POST", f"/admin/v2/persistent/{local}/terminate") == (200, last)
    status, stats = admin(web, "GET", f"/admin/v2/persistent/{local}/internalStats")
    assert status == 200 and stats["state"] == "Terminated", stats

    # A subscription made afterwards at the end is told at its first FLOW.
    late = raws(url)
    subscribe(late, topic, "late", 2, earliest=False)
    flow(late, 2)
    assert expect(late, REACHED_END_OF_TOPIC)[1] == [2]


def test_termination_rest_answers_as_pulsar(pulsar_broker, topic):
    web = pulsar_broker.admin_url
    local = topic.removeprefix("persistent://")
    # Termination creates no topic.
    status, body = admin(web, "POST", f"/admin/v2/persistent/{local}/terminate")
    assert status == 404, body
    # A partitioned topic: only through /terminate/partitions, each partition's last id by index.
    assert admin(web, "PUT", f"/admin/v2/persistent/{local}/partitions", 2)[0] == 204
    status, body = admin(web, "POST", f"/admin/v2/persistent/{local}/terminate")
    assert status == 405 and body["reason"] == "Termination of a partitioned topic is not allowed", body
    status, body = admin(web, "POST", f"/admin/v2/persistent/{local}/terminate/partitions")
    assert status == 200 and sorted(body) == ["0", "1"], body
    assert all(v["entryId"] == -1 and v["partitionIndex"] == -1 for v in body.values()), body
    status, stats = admin(web, "GET", f"/admin/v2/persistent/{local}-partition-1/internalStats")
    assert stats["state"] == "Terminated", stats
    # /terminate/partitions on anything else, a missing topic included: 405.
    for other in (f"{local}-partition-0", f"{local}-missing"):
        status, body = admin(web, "POST", f"/admin/v2/persistent/{other}/terminate/partitions")
        assert status == 405, (other, status, body)
    status, body = admin(web, "POST", f"/admin/v2/non-persistent/{local}/terminate")
    assert status == 406 and body["reason"] == "Need to provide a persistent topic name", body


def test_termination_survives_a_restart_and_the_admin_client_and_cli_reach_it(tmp_path, raws, topic):
    local = topic.removeprefix("persistent://")
    data = tmp_path / "data"
    with pulsar_rs.Broker(data_dir=data) as broker:
        ids = produce(raws(broker.service_url), topic, 2)
        last = pulsar_rs.Admin(broker.admin_url).topics.terminate(topic)
        assert (last["ledgerId"], last["entryId"]) == ids[-1]
    with pulsar_rs.Broker(data_dir=data) as broker:
        raw = raws(broker.service_url)
        raw.send(simple_frame(base(PRODUCER, fb(1, topic) + fv(2, 1) + fv(3, 1))))
        assert expect(raw, ERROR)[2] == [TOPIC_TERMINATED]
        assert pulsar_rs.Admin(broker.admin_url).topics.terminate(topic) == last
        status, stats = admin(broker.admin_url, "GET", f"/admin/v2/persistent/{local}/internalStats")
        assert status == 200 and stats["state"] == "Terminated", stats
