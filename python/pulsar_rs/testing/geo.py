"""Clusters that replicate to each other, on one machine, for tests: each cluster one
``pulsar-rs standalone`` process (its own metadata and storage, ephemeral ports, named by
``clusterName``), set up as a Pulsar operator sets up clusters with independent metadata stores:
every cluster registers the others, the tenant allows them all and the namespace lists them all as
its replication clusters.

    with ReplicatedClusters(["east", "west"]) as geo:
        east, west = geo.brokers["east"], geo.brokers["west"]
        pulsar.Client(east.url).create_producer("persistent://geo/ns/t").send(b"hi")
        # ... a consumer on west.url receives it

The pytest plugin's ``pulsar_geo_clusters`` fixture makes one with two clusters.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from .process import PulsarRsBroker


def _call(method: str, url: str, body: object | None = None) -> None:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30):
            return
    except urllib.error.HTTPError as e:
        with e:
            raise RuntimeError(f"{method} {url}: {e.code} {e.read().decode(errors='replace')}") from None


class ReplicatedClusters:
    """One pulsar-rs standalone per name in ``clusters``, and ``namespace`` (``tenant/ns``)
    replicated between all of them; ``settings`` are broker settings given to each."""

    def __init__(
        self,
        clusters: Sequence[str] = ("east", "west"),
        namespace: str = "geo/ns",
        work: Path | None = None,
        **settings: object,
    ) -> None:
        if len(set(clusters)) < 2:
            raise ValueError("geo-replication needs at least two clusters of different names")
        self.clusters = list(clusters)
        self.namespace = namespace
        self._own_work = work is None
        self.work = Path(tempfile.mkdtemp(prefix="pulsar-rs-geo-")) if work is None else work
        self._settings: Mapping[str, object] = settings
        #: Cluster name → its broker (``.url``, ``.http``).
        self.brokers: dict[str, PulsarRsBroker] = {}

    def start(self) -> Self:
        try:
            for name in self.clusters:
                self.brokers[name] = PulsarRsBroker(self.work, name, {**self._settings, "clusterName": name})
            tenant = self.namespace.split("/", 1)[0]
            for here in self.brokers.values():
                for name, other in self.brokers.items():
                    _call("PUT", f"{here.http}/admin/v2/clusters/{name}", self.cluster_data(other))
                _call(
                    "PUT",
                    f"{here.http}/admin/v2/tenants/{tenant}",
                    {"adminRoles": [], "allowedClusters": self.clusters},
                )
                _call("PUT", f"{here.http}/admin/v2/namespaces/{self.namespace}")
                _call("POST", f"{here.http}/admin/v2/namespaces/{self.namespace}/replication", self.clusters)
        except BaseException:
            self.stop()
            raise
        return self

    @staticmethod
    def cluster_data(broker: PulsarRsBroker) -> dict[str, str]:
        """The cluster record (``ClusterData``) other clusters keep of ``broker``'s cluster."""
        return {"serviceUrl": broker.http, "brokerServiceUrl": broker.url}

    def stop(self) -> None:
        for b in self.brokers.values():
            b.kill()
        if self._own_work:
            shutil.rmtree(self.work, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
