"""Automatic bundle splitting (Pulsar's ``loadBalancerAutoBundleSplitEnabled``): a bundle with more
topics than ``loadBalancerNamespaceBundleMaxTopics`` is split by its owner at the next check
(``loadBalancerSplitIntervalMinutes``, one minute: the shortest Pulsar allows), its halves unloaded
(``loadBalancerAutoUnloadSplitBundlesEnabled``) and served again after a lookup, nothing lost."""

from __future__ import annotations

import time

import pulsar
import pytest

from pulsar_rs import Admin
from pulsar_rs.testing import available

if (why := available()) is not None:
    pytest.skip(f"no BookKeeper here: {why}", allow_module_level=True)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_a_bundle_over_its_topic_limit_is_split_and_its_topics_served_again(pulsar_cluster_factory):
    cluster = pulsar_cluster_factory(
        brokers=2,
        bookies=2,
        defaultNumberOfNamespaceBundles=1,
        loadBalancerNamespaceBundleMaxTopics=2,
    )
    admin = Admin(cluster.admin_url)
    admin.namespaces.create("public/split")
    assert admin.namespaces.bundles("public/split")["numBundles"] == 1
    topics = [f"persistent://public/split/t-{i}" for i in range(6)]
    client = pulsar.Client(cluster.service_url, operation_timeout_seconds=45)
    try:
        consumers = {t: client.subscribe(t, "s") for t in topics}
        producers = {t: client.create_producer(t) for t in topics}
        for t in topics:
            producers[t].send(b"before")
        deadline = time.monotonic() + 150
        while admin.namespaces.bundles("public/split")["numBundles"] < 2:
            assert time.monotonic() < deadline, "no split within 150 s"
            time.sleep(2)  # the split happens on the broker's own schedule (a minute): polled
        # The same producers and consumers carry on through the unload (they look up again).
        for t in topics:
            producers[t].send(b"after")
        for t in topics:
            got = [consumers[t].receive(timeout_millis=30_000).data() for _ in range(2)]
            assert got == [b"before", b"after"], (t, got)
    finally:
        client.close()
