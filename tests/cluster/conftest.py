"""The cluster tests' shared fixture: three bookies and their ZooKeeper from the pinned Apache
Pulsar distribution, one set per test module (a module may define its own ``bookies``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository's tools/
from tools.pulsar_reference import PulsarReferenceError
from tools.pulsar_reference.bookkeeper import BookKeeperCluster


@pytest.fixture(scope="module")
def bookies() -> Iterator[BookKeeperCluster]:
    try:
        cluster = BookKeeperCluster(bookies=3).start()
    except PulsarReferenceError as e:
        pytest.fail(str(e))
    yield cluster
    cluster.cleanup()
