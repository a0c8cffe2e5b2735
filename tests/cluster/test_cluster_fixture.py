"""The pytest plugin's cluster fixtures (``pulsar_cluster_factory``, ``pulsar_cluster``) as a user's
own test uses them: ZooKeeper, bookies and pulsar-rs brokers started for the test, one cluster a
client reaches through any broker, everything stopped after."""

from __future__ import annotations

import json
import urllib.request

import pulsar
import pytest

from cluster_util import lookup
from pulsar_rs.testing import available

if (why := available()) is not None:
    pytest.skip(f"no BookKeeper here: {why}", allow_module_level=True)

pytestmark = [pytest.mark.slow]


def test_a_users_cluster_serves_a_partitioned_topic_through_every_broker(pulsar_cluster_factory):
    cluster = pulsar_cluster_factory(brokers=2, bookies=2)
    assert len(cluster.brokers) == 2
    assert cluster.service_url.count(",") == 1
    topic = "persistent://public/default/fixture-topic"
    req = urllib.request.Request(
        f"{cluster.admin_url}/admin/v2/persistent/public/default/fixture-topic/partitions",
        data=b"4",
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 204
    # Every broker sends a lookup to the same owner, partition by partition.
    for i in range(4):
        owners = {lookup(b, f"{topic}-partition-{i}") for b in cluster.brokers}
        assert len(owners) == 1, owners
    client = pulsar.Client(cluster.service_url, operation_timeout_seconds=45)
    try:
        consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        producer = client.create_producer(topic)
        sent = [f"m{i}".encode() for i in range(40)]
        for m in sent:
            producer.send(m, partition_key=m.decode())
        got = []
        for _ in sent:
            msg = consumer.receive(timeout_millis=20_000)
            got.append(msg.data())
            consumer.acknowledge(msg)
        assert sorted(got) == sorted(sent)
    finally:
        client.close()
    # Both brokers know each other (the cluster's own view).
    with urllib.request.urlopen(f"{cluster.admin_url}/admin/v2/brokers/standalone", timeout=30) as r:
        assert sorted(json.loads(r.read())) == sorted(b.broker_id for b in cluster.brokers)
    # Stopping it stops every process it started (the fixture would, after the test).
    cluster.stop()
    assert all(b.proc.poll() is not None for b in cluster.brokers)
    assert cluster.bk is not None and not cluster.bk.bookies
