"""A whole pulsar-rs cluster on one machine, for tests: ZooKeeper, BookKeeper bookies (from the
pinned Apache Pulsar distribution, see :mod:`.distribution`) and pulsar-rs brokers, each its own
process on 127.0.0.1 with ephemeral ports, in one cluster as Pulsar runs one (metadata in
ZooKeeper, topics on the bookies, bundles owned by the brokers, lookups that redirect).

    with PulsarCluster(brokers=3) as cluster:
        client = pulsar.Client(cluster.service_url)   # every broker's address
        cluster.brokers[0].kill()                      # the others take its bundles over

The pytest plugin's ``pulsar_cluster`` and ``pulsar_cluster_factory`` fixtures make these.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Self

from .bookkeeper import BookKeeperCluster
from .distribution import PulsarReferenceError, available
from .process import PulsarRsBroker, wait_for_cluster


class PulsarCluster:
    """``brokers`` pulsar-rs brokers on ``bookies`` bookies and one ZooKeeper; ``settings`` are
    broker settings (Pulsar's key names) given to every broker. Ledgers are written to
    ``min(2, bookies)`` bookies (ensemble, write and ack quorum) unless ``settings`` say otherwise."""

    def __init__(self, work: Path | None = None, *, brokers: int = 3, bookies: int = 3, **settings: object) -> None:
        if brokers < 1 or bookies < 1:
            raise ValueError("a cluster needs at least one broker and one bookie")
        self._own_work = work is None
        self.work = Path(tempfile.mkdtemp(prefix="pulsar-rs-cluster-")) if work is None else work
        self._n_brokers = brokers
        self._n_bookies = bookies
        self._settings = settings
        #: ZooKeeper and the bookies (``bk.metadata_store_url``, ``bk.bookkeeper_uri``).
        self.bk: BookKeeperCluster | None = None
        #: The brokers, in start order (``url``, ``http``, ``broker_id``, ``kill()``, ``stop()``).
        self.brokers: list[PulsarRsBroker] = []

    def start(self) -> Self:
        why = available()
        if why is not None:
            raise PulsarReferenceError(f"a cluster runs ZooKeeper and bookies from Apache Pulsar, but {why}")
        try:
            self.bk = BookKeeperCluster(bookies=self._n_bookies).start()
            quorum = min(2, self._n_bookies)
            conf: dict[str, object] = {
                "metadataStoreUrl": self.bk.metadata_store_url,
                "managedLedgerDefaultEnsembleSize": quorum,
                "managedLedgerDefaultWriteQuorum": quorum,
                "managedLedgerDefaultAckQuorum": quorum,
                **self._settings,
            }
            for i in range(self._n_brokers):
                self.brokers.append(PulsarRsBroker(self.work, f"broker{i}", conf))
            wait_for_cluster(self.brokers)
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def service_url(self) -> str:
        """``pulsar://host:port,host:port,...``: a client looks topics up through any live broker."""
        return "pulsar://" + ",".join(b.url.removeprefix("pulsar://") for b in self.brokers)

    @property
    def admin_url(self) -> str:
        """The first broker's admin URL (any broker answers, redirecting to a topic's owner)."""
        return self.brokers[0].http

    def stop(self) -> None:
        """Stops the brokers (in order, releasing their bundles), then the bookies and ZooKeeper,
        and removes what they wrote when the cluster made its own directory."""
        for b in self.brokers:
            b.stop()
        if self.bk is not None:
            self.bk.cleanup()
        if self._own_work:
            shutil.rmtree(self.work, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
