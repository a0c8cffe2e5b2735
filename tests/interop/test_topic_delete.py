"""Deleting a topic that clients are using, as Pulsar's ``deleteTopic`` and
``deletePartitionedTopic`` do: refused with 412 while producers or consumers are connected (the
topic untouched, its clients still served), unless ``force``, which closes them and deletes it.

tests/differential/test_diff_admin.py compares the same answers with Apache Pulsar's; these run
without it, in the quick loop, with the official client.
"""

from __future__ import annotations

import pulsar
import pytest

from conftest import admin
from pulsar_rs import Admin, AdminError


def _path(topic: str) -> str:
    return "/admin/v2/persistent/" + topic.split("://", 1)[1]


def test_a_topic_in_use_is_deleted_only_by_force(pulsar_broker, client, topic: str) -> None:
    url, path = pulsar_broker.admin_url, _path(topic)
    producer = client.create_producer(topic)
    consumer = client.subscribe(topic, "s")
    producer.send(b"kept")
    assert admin(url, "DELETE", path) == (412, {"reason": "Topic has 2 connected producers/consumers"})
    # Nothing was touched: the message is delivered and the producer still publishes.
    assert consumer.receive(timeout_millis=5000).data() == b"kept"
    producer.send(b"after")
    assert consumer.receive(timeout_millis=5000).data() == b"after"
    consumer.close()
    assert admin(url, "DELETE", path) == (412, {"reason": "Topic has 1 connected producers/consumers"})
    with pytest.raises(AdminError):
        Admin(url).topics.delete(topic)

    Admin(url).topics.delete(topic, force=True)
    # The broker closed the producer; the client reconnects and the topic is auto-created anew,
    # empty: the two messages and the subscription went with the delete.
    producer.send(b"new")
    stats = admin(url, "GET", path + "/stats")[1]
    assert isinstance(stats, dict)
    assert stats["subscriptions"] == {}
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert reader.read_next(timeout_millis=5000).data() == b"new"
    with pytest.raises(pulsar.Timeout):
        reader.read_next(timeout_millis=300)
    reader.close()
    producer.close()
    # With no client left, no force is needed.
    assert admin(url, "DELETE", path)[0] == 204
    assert admin(url, "GET", path + "/stats")[0] == 404


def test_a_partitioned_topic_in_use_is_deleted_only_by_force(pulsar_broker, client, topic: str) -> None:
    url, path = pulsar_broker.admin_url, _path(topic)
    assert admin(url, "PUT", path + "/partitions", 2)[0] == 204
    consumer = client.subscribe(f"{topic}-partition-1", "s")
    assert admin(url, "DELETE", path + "/partitions") == (
        412,
        {"reason": "Topic has active producers/subscriptions"},
    )
    # Refused before anything was deleted: the metadata and both partitions stay.
    assert admin(url, "GET", path + "/partitions")[1]["partitions"] == 2
    assert sorted(admin(url, "GET", path.rsplit("/", 1)[0])[1]) == [f"{topic}-partition-0", f"{topic}-partition-1"]

    assert admin(url, "GET", path.rsplit("/", 1)[0] + "/partitioned")[1] == [topic]

    Admin(url).topics.delete_partitioned_topic(topic, force=True)
    assert admin(url, "GET", path.rsplit("/", 1)[0] + "/partitioned")[1] == []
    consumer.close()
