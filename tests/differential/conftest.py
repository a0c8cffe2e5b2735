"""Differential tests: one scenario, one client, run against Apache Pulsar and against pulsar-rs.

Apache Pulsar (the pinned release of ``tools/pulsar_reference``) starts once per session; pulsar-rs
starts once per session too, in-process, on its defaults (they mirror Pulsar's ``standalone.conf``).
Each test gets its own namespace on both brokers, so policies set by one test never leak into another.

A scenario is a function of a :class:`Target` that returns what a client or an operator observes
(plain data: which consumer got which message, error types, status codes, JSON field names). The test
asserts the two observations are equal; Pulsar's is the expected value. A divergence that stays is
marked ``xfail(strict=True)`` with its reason, so the day it is fixed the mark must go.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pulsar = pytest.importorskip("pulsar")

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tools import pulsar_reference  # noqa: E402

from .diffkit import Target  # noqa: E402

pytestmark = [pytest.mark.differential, pytest.mark.slow]

_ids = itertools.count()


@pytest.fixture(scope="session")
def apache_pulsar() -> Iterator[pulsar_reference.PulsarStandalone]:
    reason = pulsar_reference.available()
    if reason:
        pytest.skip(f"Apache Pulsar reference unavailable: {reason}")
    ref = pulsar_reference.PulsarStandalone(
        {
            # Both brokers check backlog quotas and expiry every second, so scenarios need not wait.
            "backlogQuotaCheckIntervalInSeconds": 1,
            "messageExpiryCheckIntervalInMinutes": 1,
            "brokerDeleteInactiveTopicsEnabled": False,
        }
    )
    ref.start()
    yield ref
    ref.cleanup()


#: ``PULSAR_RS_DIFF_SELF=1`` runs every scenario against Apache Pulsar twice (two namespaces) instead:
#: a scenario that does not observe the same thing twice on Pulsar is not deterministic enough to compare.
SELF_CHECK = os.environ.get("PULSAR_RS_DIFF_SELF") == "1"


@pytest.fixture(scope="session")
def pulsar_rs_broker(apache_pulsar: pulsar_reference.PulsarStandalone) -> Iterator[Any]:
    if SELF_CHECK:
        yield apache_pulsar
        return
    from pulsar_rs import Broker

    with Broker(backlogQuotaCheckIntervalInSeconds=1, brokerDeleteInactiveTopicsEnabled=False) as b:
        yield b


@pytest.fixture
def pair(
    request: pytest.FixtureRequest, apache_pulsar: pulsar_reference.PulsarStandalone, pulsar_rs_broker: Any
) -> Iterator[tuple[Target, Target]]:
    """(Apache Pulsar, pulsar-rs), each with a fresh namespace ``public/<test>-<n>``."""
    ns = f"public/{request.node.name.replace('_', '-').replace('[', '-').replace(']', '')[:40]}-{next(_ids)}"
    ref = Target("pulsar", apache_pulsar.service_url, apache_pulsar.admin_url, ns)
    rs = Target(
        "pulsar-rs", pulsar_rs_broker.service_url, pulsar_rs_broker.admin_url, ns + ("-self" if SELF_CHECK else "")
    )
    for t in (ref, rs):
        status, body = t.rest("PUT", f"/admin/v2/namespaces/{t.namespace}")
        assert status == 204, f"{t.name}: creating {t.namespace}: {status} {body}"
    yield ref, rs
    for t in (ref, rs):
        t.close_clients()
