"""Harnesses for tests that need more than one in-process broker: :class:`PulsarCluster` (ZooKeeper,
BookKeeper bookies and several pulsar-rs brokers, each a process of its own), and its parts,
:class:`~.bookkeeper.BookKeeperCluster` and :class:`~.process.PulsarRsBroker`; and
:class:`ReplicatedClusters` (clusters that geo-replicate to each other). The bookies and
ZooKeeper come from the pinned Apache Pulsar distribution (:mod:`.distribution`: needs ``java``,
and ``mvn`` for the one download). The pytest plugin's ``pulsar_cluster`` fixtures use them."""

from .bookkeeper import BookKeeperCluster
from .cluster import PulsarCluster
from .distribution import PULSAR_VERSION, PulsarReferenceError, available
from .geo import ReplicatedClusters
from .process import PulsarRsBroker, wait_for_cluster

__all__ = [
    "PULSAR_VERSION",
    "BookKeeperCluster",
    "PulsarCluster",
    "PulsarReferenceError",
    "PulsarRsBroker",
    "ReplicatedClusters",
    "available",
    "wait_for_cluster",
]
