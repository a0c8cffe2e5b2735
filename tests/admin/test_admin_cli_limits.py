"""``pulsar-rs admin``'s limit commands (pulsar-admin's names and flags) round-trip through the
broker and take effect: ``namespaces set-/get-/remove-max-*`` and ``topics`` / ``topicPolicies``
``set-/get-/remove-max-*``; a refused value is one line on stderr with Pulsar's status."""

from __future__ import annotations

import subprocess
import sys

import pulsar
import pytest

from conftest import new_client

NS = "public/default"


@pytest.fixture
def cli(pulsar_broker):
    def run(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "pulsar_rs.cli", "admin", "--admin-url", pulsar_broker.admin_url, *args]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        if ok:
            assert p.returncode == 0, (args, p.stdout, p.stderr)
        return p

    return run


@pytest.mark.parametrize(
    ("name", "flag"),
    [
        ("max-producers-per-topic", "-p"),
        ("max-consumers-per-topic", "--max-consumers-per-topic"),
        ("max-consumers-per-subscription", "-c"),
        ("max-subscriptions-per-topic", "-m"),
        ("max-topics-per-namespace", "-t"),
    ],
)
def test_namespace_limit_commands(cli, name: str, flag: str) -> None:
    cli("namespaces", f"set-{name}", NS, flag, "7")
    assert cli("namespaces", f"get-{name}", NS).stdout.strip() == "7"
    cli("namespaces", f"remove-{name}", NS)
    unset = "0" if name == "max-topics-per-namespace" else "(not set)"
    assert cli("namespaces", f"get-{name}", NS).stdout.strip() == unset
    p = cli("namespaces", f"set-{name}", NS, flag, "-1", ok=False)
    assert p.returncode == 1 and p.stderr.startswith("pulsar-rs admin: 412 "), p.stderr


@pytest.mark.parametrize("group", ["topics", "topicPolicies"])
@pytest.mark.parametrize(
    ("name", "flag"),
    [
        ("max-producers", "-p"),
        ("max-consumers", "-c"),
        ("max-consumers-per-subscription", "--max-consumers-per-subscription"),
        ("max-subscriptions-per-topic", "-s"),
        ("max-message-size", "-m"),
    ],
)
def test_topic_limit_commands(cli, topic: str, group: str, name: str, flag: str) -> None:
    cli("topics", "create", topic)
    cli(group, f"set-{name}", topic, flag, "4096")
    assert cli(group, f"get-{name}", topic).stdout.strip() == "4096"
    cli(group, f"remove-{name}", topic)
    assert cli(group, f"get-{name}", topic).stdout.strip() == "(not set)"


def test_a_limit_set_by_the_cli_applies(cli, pulsar_broker, topic: str) -> None:
    cli("topics", "create", topic)
    cli("topics", "set-max-producers", topic, "--max-producers", "1")
    c = new_client(pulsar_broker.service_url)
    try:
        c.create_producer(topic)
        with pytest.raises(pulsar.ProducerBusy):
            c.create_producer(topic)
    finally:
        c.close()
