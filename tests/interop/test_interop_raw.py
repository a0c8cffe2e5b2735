"""The broker against hand-made frames on a raw socket, for what the official client never sends:
oversized and corrupt SENDs, out-of-state commands, malformed bytes, GET_SCHEMA. Every bad
frame must close only its own connection (or be answered with the right error), while other
clients carry on.

The frames come from ``raw_protocol`` (a hand-rolled proto2 writer/reader), so the test does not
depend on the broker's own codec.
"""

from __future__ import annotations

import pulsar
import pytest
from pulsar.schema import StringSchema

from conftest import assert_no_more, new_client, receive_all
from raw_protocol import (
    ACTIVE_CONSUMER_CHANGE,
    CONNECT,
    GET_SCHEMA,
    GET_SCHEMA_RESPONSE,
    PRODUCER,
    PRODUCER_SUCCESS,
    SEND_ERROR,
    SEND_RECEIPT,
    SERVER_ERROR_CHECKSUM,
    SERVER_ERROR_NOT_ALLOWED,
    SUBSCRIBE,
    SUCCESS,
    Raw,
    base,
    fb,
    fv,
    parse,
    send_frame,
    simple_frame,
)

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def raw_factory():
    made: list[Raw] = []

    def make(url: str) -> Raw:
        r = Raw(url)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


def test_raw_round_trip_reaches_official_consumer(pulsar_broker, client, raw_factory, topic):
    consumer = client.subscribe(topic, "sub")
    raw = raw_factory(pulsar_broker.service_url)
    connected = raw.connect()
    assert connected[1][0]  # server_version
    assert connected[2][0] == 20  # protocol version = min(client, 20)
    assert connected[3][0] == 5 * 1024 * 1024  # max_message_size
    raw.create_producer(topic)
    raw.send(send_frame(1, 0, b"hello-raw", checksum=None))
    ty, receipt = raw.recv()
    assert ty == SEND_RECEIPT and receipt[2] == [0]
    assert receive_all(consumer, 1)[0].data() == b"hello-raw"


def test_send_over_max_message_size_gets_send_error(pulsar_broker_factory, client_factory, raw_factory, topic):
    broker = pulsar_broker_factory(maxMessageSize=16 * 1024)
    consumer = client_factory(broker.service_url).subscribe(topic, "sub")
    raw = raw_factory(broker.service_url)
    assert raw.connect()[3][0] == 16 * 1024
    raw.create_producer(topic)
    # Within the frame limit (max + 10 KiB padding) but over maxMessageSize.
    raw.send(send_frame(1, 0, b"x" * (20 * 1024)))
    ty, err = raw.recv()
    assert ty == SEND_ERROR, ty
    assert err[2] == [0] and err[3] == [SERVER_ERROR_NOT_ALLOWED]
    # The connection stays usable.
    raw.send(send_frame(1, 1, b"small"))
    ty, receipt = raw.recv()
    assert ty == SEND_RECEIPT and receipt[2] == [1]
    assert [m.data() for m in receive_all(consumer, 2, timeout_ms=1000)] == [b"small"]


def test_send_with_bad_checksum_gets_checksum_error(pulsar_broker, client, raw_factory, topic):
    consumer = client.subscribe(topic, "sub")
    raw = raw_factory(pulsar_broker.service_url)
    raw.connect()
    raw.create_producer(topic)
    raw.send(send_frame(1, 0, b"corrupt", checksum=0xDEADBEEF))
    ty, err = raw.recv()
    assert ty == SEND_ERROR and err[3] == [SERVER_ERROR_CHECKSUM]
    assert_no_more(consumer)


def test_frame_over_limit_closes_only_that_connection(pulsar_broker_factory, client_factory, raw_factory, topic):
    broker = pulsar_broker_factory(maxMessageSize=16 * 1024)
    client = client_factory(broker.service_url)
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    raw = raw_factory(broker.service_url)
    raw.connect()
    raw.create_producer(topic)
    raw.send(send_frame(1, 0, b"x" * (40 * 1024)))  # over max + padding
    assert raw.is_closed()
    producer.send(b"still-fine")
    assert receive_all(consumer, 1)[0].data() == b"still-fine"


@pytest.mark.parametrize(
    "frames",
    [
        pytest.param([simple_frame(base(PRODUCER, fb(1, "t") + fv(2, 1) + fv(3, 1)))], id="command-before-connect"),
        pytest.param(["CONNECT", send_frame(7, 0, b"x")], id="send-for-unknown-producer"),
        pytest.param(["CONNECT", simple_frame(base(CONNECT, fb(1, "again") + fv(4, 20)))], id="second-connect"),
        pytest.param(["CONNECT", simple_frame(fv(1, 9999))], id="unknown-command-type"),
        pytest.param(["CONNECT", simple_frame(base(PRODUCER, fv(2, 1)))], id="missing-required-field"),
        pytest.param(["CONNECT", simple_frame(fv(1, PRODUCER))], id="command-without-body"),
    ],
)
def test_out_of_state_or_invalid_commands_close_the_connection(pulsar_broker, client, raw_factory, topic, frames):
    producer = client.create_producer(topic)
    consumer = client.subscribe(topic, "sub")
    raw = raw_factory(pulsar_broker.service_url)
    for f in frames:
        if f == "CONNECT":
            raw.connect()
        else:
            raw.send(f)
    assert raw.is_closed()
    producer.send(b"unaffected")
    assert receive_all(consumer, 1)[0].data() == b"unaffected"


def test_get_schema(pulsar_broker, client, raw_factory, topic):
    producer = client.create_producer(topic, schema=StringSchema())
    producer.send("typed")
    raw = raw_factory(pulsar_broker.service_url)
    raw.connect()
    raw.send(simple_frame(base(GET_SCHEMA, fv(1, 42) + fb(2, topic))))
    ty, resp = raw.recv()
    assert ty == GET_SCHEMA_RESPONSE
    assert resp[1] == [42]
    assert 2 not in resp, f"unexpected error {resp}"
    schema = parse(resp[4][0])
    assert schema[4] == [1]  # SchemaType STRING
    assert 5 in resp  # schema_version
    # A topic without a schema answers with an error code, not silence.
    no_schema = topic + "-none"
    client.create_producer(no_schema).send(b"x")
    raw.send(simple_frame(base(GET_SCHEMA, fv(1, 43) + fb(2, no_schema))))
    ty, resp = raw.recv()
    assert ty == GET_SCHEMA_RESPONSE and resp[1] == [43] and 2 in resp


def test_lookup_of_invalid_topic_fails_fast(client):
    for bad in ("persistent://public/default/", "persistent://only-tenant/x", "bogus://a/b/c"):
        with pytest.raises(pulsar.PulsarException):
            client.create_producer(bad)


def test_auto_topic_creation_disabled(pulsar_broker_factory, client_factory, topic):
    broker = pulsar_broker_factory(allowAutoTopicCreation=False)
    client = client_factory(broker.service_url)
    with pytest.raises(pulsar.PulsarException):
        client.create_producer(topic)
    with pytest.raises(pulsar.PulsarException):
        client.subscribe(topic, "sub")


def test_other_clients_survive_many_bad_connections(pulsar_broker, raw_factory, topic):
    client = new_client(pulsar_broker.service_url)
    try:
        consumer = client.subscribe(topic, "sub")
        producer = client.create_producer(topic)
        for i in range(50):
            raw = raw_factory(pulsar_broker.service_url)
            raw.send(bytes([i]) * 64)
        for i in range(10):
            producer.send(f"ok{i}".encode())
        assert [m.data() for m in receive_all(consumer, 10)] == [f"ok{i}".encode() for i in range(10)]
    finally:
        client.close()


def test_get_schema_by_version_after_the_schema_was_deleted(pulsar_broker, client, raw_factory, topic):
    """As Pulsar's getSchema(version): a version from before the topic's schema was deleted is
    gone too (the Go client's TestProducerWithSchemaAndConsumerSchemaNotFound)."""
    import urllib.request

    client.create_producer(topic, schema=StringSchema()).send("typed")
    raw = raw_factory(pulsar_broker.service_url)
    raw.connect()
    raw.send(simple_frame(base(GET_SCHEMA, fv(1, 50) + fb(2, topic))))
    _, resp = raw.recv()
    version = resp[5][0]
    raw.send(simple_frame(base(GET_SCHEMA, fv(1, 51) + fb(2, topic) + fb(3, version))))
    _, resp = raw.recv()
    assert resp[1] == [51] and 2 not in resp, f"the version is served before the delete: {resp}"
    name = topic.removeprefix("persistent://")
    req = urllib.request.Request(f"{pulsar_broker.admin_url}/admin/v2/schemas/{name}/schema", method="DELETE")
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status in (200, 204)
    raw.send(simple_frame(base(GET_SCHEMA, fv(1, 52) + fb(2, topic) + fb(3, version))))
    _, resp = raw.recv()
    assert resp[1] == [52] and 2 in resp, f"a deleted schema's version is still served: {resp}"


def test_producer_initial_subscription_keeps_what_is_published_before_anyone_subscribes(
    pulsar_broker, client, raw_factory, topic
):
    """CommandProducer.initial_subscription_name (the Go and Java clients' dead-letter producers
    set it): the subscription is made at the earliest position before the producer is ready, as
    Pulsar's handleProducer, so a consumer that comes later gets what was published meanwhile."""
    raw = raw_factory(pulsar_broker.service_url)
    raw.connect()
    raw.send(simple_frame(base(PRODUCER, fb(1, topic) + fv(2, 1) + fv(3, 1) + fb(13, "init-sub"))))
    ty, body = raw.recv()
    assert ty == PRODUCER_SUCCESS, (ty, body)
    raw.send(send_frame(1, 0, b"before-anyone", checksum=None))
    assert raw.recv()[0] == SEND_RECEIPT
    # Subscribing later at the default position (Latest) still finds the message.
    consumer = client.subscribe(topic, "init-sub")
    assert consumer.receive(timeout_millis=5000).data() == b"before-anyone"


@pytest.mark.parametrize("domain", ["persistent", "non-persistent"])
def test_active_consumer_change_follows_the_subscribe_success(pulsar_broker, raw_factory, domain, topic):
    """A Failover consumer's first ACTIVE_CONSUMER_CHANGE comes after its SUBSCRIBE's SUCCESS, as
    Pulsar sends it: the Go client drops a notice for a consumer it has not registered yet
    (TestPartitionTopic_ActiveConsumerChanged)."""
    t = topic.replace("persistent://", f"{domain}://", 1)
    raw = raw_factory(pulsar_broker.service_url)
    raw.connect()
    failover = 2
    raw.send(simple_frame(base(SUBSCRIBE, fb(1, t) + fb(2, "fo") + fv(3, failover) + fv(4, 7) + fv(5, 9))))
    assert raw.recv()[0] == SUCCESS, "the first answer to SUBSCRIBE is its SUCCESS"
    if domain == "persistent":
        # (A non-persistent dispatcher sends its first consumer no notice, on Pulsar too.)
        assert raw.recv()[0] == ACTIVE_CONSUMER_CHANGE
