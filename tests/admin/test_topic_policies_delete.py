"""PIP-422 (Pulsar 4.1): ``DELETE /admin/v2/persistent/{tenant}/{ns}/{topic}/policies``
(``pulsar-admin topicPolicies delete T``, ``pulsar_rs.Admin.topics.delete_topic_policies``):
every policy set on a topic forgotten at once, local and global (``-g`` / ``?isGlobal=true``),
the namespace's then applying again; the topic's properties stay; a topic that does not exist
(any more) is answered 204 too. The limit that comes back is seen by the official client.
"""

from __future__ import annotations

import subprocess
import sys

import pulsar
import pytest

from conftest import admin, new_client
from pulsar_rs import Admin


def _rest(topic: str) -> str:
    return "/admin/v2/persistent/" + topic.removeprefix("persistent://")


def _cli(broker, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pulsar_rs.cli", "admin", "--admin-url", broker.admin_url, *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p


def _policies(url: str, topic: str) -> dict:
    names = ("maxProducers", "messageTTL", "retention", "compactionThreshold")
    return {n: admin(url, "GET", f"{_rest(topic)}/{n}")[1] for n in names}


def _set_all(url: str, topic: str) -> None:
    for path, body in (
        ("maxProducers", 1),
        ("retention", {"retentionTimeInMinutes": 60, "retentionSizeInMB": 10}),
        ("compactionThreshold", 1000),
    ):
        assert admin(url, "POST", f"{_rest(topic)}/{path}", body)[0] == 204, path
    assert admin(url, "POST", f"{_rest(topic)}/messageTTL?messageTTL=30")[0] == 204


def test_every_policy_goes_the_properties_stay(pulsar_broker, topic):
    url = pulsar_broker.admin_url
    assert admin(url, "PUT", _rest(topic), {"owner": "team-a"})[0] == 204
    _set_all(url, topic)
    assert all(v is not None for v in _policies(url, topic).values()), _policies(url, topic)
    client = new_client(pulsar_broker.service_url)
    try:
        first = client.create_producer(topic)
        with pytest.raises(pulsar.ProducerBusy):
            client.create_producer(topic)  # the topic's maxProducers=1
        Admin(url).topics.delete_topic_policies(topic)
        assert _policies(url, topic) == dict.fromkeys(_policies(url, topic))  # all unset
        second = client.create_producer(topic)  # the namespace's (no) limit applies again
        second.send(b"x")
        first.close()
    finally:
        client.close()
    assert admin(url, "GET", f"{_rest(topic)}/properties") == (200, {"owner": "team-a"})


def test_the_cli_and_the_global_flag(pulsar_broker, topic):
    url = pulsar_broker.admin_url
    assert admin(url, "PUT", _rest(topic))[0] == 204
    _set_all(url, topic)
    _cli(pulsar_broker, "topicPolicies", "delete", topic)
    assert set(_policies(url, topic).values()) == {None}
    _set_all(url, topic)
    _cli(pulsar_broker, "topicPolicies", "delete", "-g", topic)
    assert set(_policies(url, topic).values()) == {None}
    # Partitioned: the partitioned topic's policies are its partitions'.
    assert admin(url, "PUT", f"{_rest(topic)}-p/partitions", 2)[0] == 204
    _set_all(url, topic + "-p")
    assert admin(url, "DELETE", f"{_rest(topic)}-p/policies?isGlobal=true")[0] == 204
    assert set(_policies(url, topic + "-p").values()) == {None}


def test_a_topic_that_does_not_exist_is_answered_204(pulsar_broker, topic):
    assert admin(pulsar_broker.admin_url, "DELETE", f"{_rest(topic)}/policies")[0] == 204
