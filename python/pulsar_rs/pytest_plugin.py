"""pytest plugin: a fresh in-process broker per test.

Enabled with ``pytest -p pulsar_rs.pytest_plugin`` or automatically through the ``pytest11``
entry point of the package. Fixtures:

* ``pulsar_broker``: a running :class:`pulsar_rs.Broker` on ephemeral ports and a temporary data
  directory, stopped and removed after the test.
* ``pulsar_broker_factory``: call it with settings (Pulsar's key names) to start more brokers;
  all are stopped after the test.
* ``pulsar_cluster``: a :class:`pulsar_rs.testing.PulsarCluster` of three brokers on ZooKeeper and
  three bookies, shared by the tests of a module (starting one takes tens of seconds).
* ``pulsar_cluster_factory``: call it with ``brokers=``, ``bookies=`` and broker settings for a
  cluster of the test's own, stopped after it.
* ``pulsar_geo_clusters``: a :class:`pulsar_rs.testing.ReplicatedClusters`: two clusters, ``east``
  and ``west`` (one standalone process each), with ``geo/ns`` replicated between them.

The clusters need ``java`` (17+) and, for the one download of Apache Pulsar's ZooKeeper and
BookKeeper, ``mvn``; without them the fixture fails naming what is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from . import Broker
from .testing import PulsarCluster, ReplicatedClusters


@pytest.fixture
def pulsar_broker_factory() -> Iterator[Callable[..., Broker]]:
    started: list[Broker] = []

    def start(**settings: Any) -> Broker:
        broker = Broker(**settings)
        started.append(broker)
        return broker

    yield start
    for b in reversed(started):
        b.cleanup()


@pytest.fixture
def pulsar_broker(pulsar_broker_factory: Callable[..., Broker]) -> Broker:
    return pulsar_broker_factory()


@pytest.fixture
def pulsar_cluster_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., PulsarCluster]]:
    started: list[PulsarCluster] = []

    def start(brokers: int = 3, bookies: int = 3, **settings: Any) -> PulsarCluster:
        cluster = PulsarCluster(tmp_path_factory.mktemp("pulsar-cluster"), brokers=brokers, bookies=bookies, **settings)
        started.append(cluster)
        return cluster.start()

    yield start
    for c in reversed(started):
        c.stop()


@pytest.fixture(scope="module")
def pulsar_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PulsarCluster]:
    with PulsarCluster(tmp_path_factory.mktemp("pulsar-cluster")) as cluster:
        yield cluster


@pytest.fixture
def pulsar_geo_clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplicatedClusters]:
    with ReplicatedClusters(work=tmp_path_factory.mktemp("pulsar-geo")) as geo:
        yield geo
