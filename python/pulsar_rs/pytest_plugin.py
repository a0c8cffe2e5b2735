"""pytest plugin: a fresh in-process broker per test.

Enabled with ``pytest -p pulsar_rs.pytest_plugin`` or automatically through the ``pytest11``
entry point of the package. Fixtures:

* ``pulsar_broker``: a running :class:`pulsar_rs.Broker` on ephemeral ports and a temporary data
  directory, stopped and removed after the test.
* ``pulsar_broker_factory``: call it with settings (Pulsar's key names) to start more brokers;
  all are stopped after the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from . import Broker


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
