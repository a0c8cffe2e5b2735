"""Apache Pulsar's own ``pulsar-admin`` (the 4.0.8 distribution's ``bin/pulsar-admin``, a JVM per call)
against pulsar-rs: an operator's habits, unchanged. Each call's exit status and output are checked."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tools import pulsar_reference

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pulsar_admin() -> Path:
    reason = pulsar_reference.available()
    if reason:
        pytest.skip(f"Apache Pulsar's distribution unavailable: {reason}")
    return pulsar_reference.ensure_distribution() / "bin" / "pulsar-admin"


def test_an_operators_session(pulsar_admin: Path, pulsar_broker_factory) -> None:
    # Each pulsar-admin call starts a JVM: the session takes minutes, and the partitions it lists
    # see no traffic. Inactive topics stay (Pulsar's garbage collection would delete them after
    # 60 s, as this broker's does), so the listing does not depend on how fast the machine is.
    pulsar_broker = pulsar_broker_factory(brokerDeleteInactiveTopicsEnabled=False)

    def run(*args: str, ok: bool = True) -> str:
        p = subprocess.run(
            [str(pulsar_admin), "--admin-url", pulsar_broker.admin_url, *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert (p.returncode == 0) == ok, f"pulsar-admin {' '.join(args)}: rc={p.returncode}\n{p.stdout}{p.stderr}"
        return p.stdout + (p.stderr if not ok else "")

    assert "standalone" in run("clusters", "list")
    run("tenants", "create", "acme", "--allowed-clusters", "standalone")
    assert "acme" in run("tenants", "list").split()
    run("namespaces", "create", "acme/orders")
    assert run("namespaces", "list", "acme").split() == ["acme/orders"]

    run("topics", "create-partitioned-topic", "persistent://acme/orders/in", "-p", "3")
    meta = json.loads(run("topics", "get-partitioned-topic-metadata", "persistent://acme/orders/in"))
    assert meta["partitions"] == 3
    assert "persistent://acme/orders/in" in run("topics", "list-partitioned-topics", "acme/orders")
    stats = json.loads(run("topics", "partitioned-stats", "persistent://acme/orders/in"))
    assert stats["metadata"]["partitions"] == 3

    run("namespaces", "set-max-producers-per-topic", "acme/orders", "--max-producers-per-topic", "2")
    assert run("namespaces", "get-max-producers-per-topic", "acme/orders").strip() == "2"
    run("topics", "create", "persistent://acme/orders/plain")
    run("topicPolicies", "set-max-producers", "persistent://acme/orders/plain", "--max-producers", "1")
    assert run("topicPolicies", "get-max-producers", "persistent://acme/orders/plain").strip() == "1"
    assert json.loads(run("topics", "stats", "persistent://acme/orders/plain"))["publishers"] == []

    # Three partitions and "plain" exist: a limit of 4 refuses a fifth topic with Pulsar's message.
    run("namespaces", "set-max-topics-per-namespace", "acme/orders", "--max-topics-per-namespace", "4")
    out = run("topics", "create", "persistent://acme/orders/fifth", ok=False)
    assert "Exceed maximum number of topics in namespace." in out
    listed = run("topics", "list", "acme/orders").split()
    assert sorted(listed) == sorted(
        [f"persistent://acme/orders/in-partition-{i}" for i in range(3)] + ["persistent://acme/orders/plain"]
    )
    # Termination, printed as Pulsar's pulsar-admin prints it (an empty topic ends at L:-1).
    out = run("topics", "terminate", "persistent://acme/orders/plain")
    assert re.fullmatch(r"Topic successfully terminated at \d+:-1:-1\n", out), out
    out = run("topics", "partitioned-terminate", "persistent://acme/orders/in").splitlines()
    assert len(out) == 3 and all(" successfully terminated at " in line for line in out), out
    run("topics", "delete-partitioned-topic", "persistent://acme/orders/in")
    run("topics", "delete", "persistent://acme/orders/plain")
    run("namespaces", "delete", "acme/orders")
    run("tenants", "delete", "acme")
    assert "acme" not in run("tenants", "list").split()
