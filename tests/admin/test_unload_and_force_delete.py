"""Unloading (pulsar-admin's ``topics unload`` and ``namespaces unload`` on a broker on its own)
and the forced namespace delete (``namespaces delete --force``, behind Pulsar's
``forceDeleteNamespaceAllowed``), with the official client connected: an unloaded topic's
producers and consumers are closed by the broker and reconnect (their ``connectedSince`` moves
on), nothing sent before or after is lost; a forced delete removes the topics with the
namespace."""

from __future__ import annotations

import time

import pulsar
import pytest

from conftest import receive_all
from pulsar_rs import Admin, AdminError
from pulsar_rs.cli import main


def _since(admin: Admin, topic: str) -> tuple[str, str]:
    """The connectedSince of the topic's one producer and of its subscription's one consumer."""
    s = admin.topics.stats(topic)
    return s["publishers"][0]["connectedSince"], s["subscriptions"]["sub"]["consumers"][0]["connectedSince"]


def _reconnected(admin: Admin, topic: str, before: tuple[str, str]) -> None:
    """Waits (the client reconnects after a back-off) until both clients are connected again."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            now = _since(admin, topic)
            if now[0] != before[0] and now[1] != before[1]:
                return
        except (IndexError, KeyError):
            pass  # not reconnected yet
        time.sleep(0.1)  # poll: the client reconnects after its own real-time back-off
    raise AssertionError(f"{topic}: the clients were not closed and reconnected ({before})")


@pytest.mark.parametrize("scope", ["topic", "partitioned", "namespace"])
def test_unload_closes_the_clients_which_reconnect_without_loss(pulsar_broker, client, scope: str) -> None:
    admin = Admin(pulsar_broker.admin_url)
    admin.namespaces.create(f"public/unload-{scope}")
    base = f"persistent://public/unload-{scope}/t"
    if scope == "partitioned":
        admin.topics.create(base, partitions=2)
        topics = [f"{base}-partition-0", f"{base}-partition-1"]
    else:
        topics = [base]
    pairs = [(client.create_producer(t), client.subscribe(t, "sub")) for t in topics]
    for p, _ in pairs:
        p.send(b"before")
    before = [_since(admin, t) for t in topics]
    time.sleep(0.01)  # connectedSince has millisecond resolution
    if scope == "namespace":
        admin.namespaces.unload(f"public/unload-{scope}")
    else:
        admin.topics.unload(base)
    for t, b in zip(topics, before, strict=True):
        _reconnected(admin, t, b)
    for p, c in pairs:
        p.send(b"after")
        assert [m.data() for m in receive_all(c, 2)] == [b"before", b"after"]


def test_unload_of_a_topic_that_does_not_exist_is_404(pulsar_broker) -> None:
    admin = Admin(pulsar_broker.admin_url)
    with pytest.raises(AdminError) as e:
        admin.topics.unload("persistent://public/default/never-made")
    assert e.value.status == 404


def test_forced_namespace_delete_is_refused_unless_allowed(pulsar_broker, client) -> None:
    admin = Admin(pulsar_broker.admin_url)
    admin.namespaces.create("public/keep")
    client.create_producer("persistent://public/keep/t").send(b"x")
    with pytest.raises(AdminError) as e:
        admin.namespaces.delete("public/keep", force=True)
    assert (e.value.status, e.value.reason) == (405, "Broker doesn't allow forced deletion of namespaces")
    assert admin.topics.list("public/keep") == ["persistent://public/keep/t"]


def test_forced_namespace_delete_deletes_its_topics(pulsar_broker_factory) -> None:
    b = pulsar_broker_factory(forceDeleteNamespaceAllowed=True)
    admin = Admin(b.admin_url)
    admin.namespaces.create("public/gone")
    admin.topics.create("persistent://public/gone/p", partitions=3)
    c = pulsar.Client(b.service_url, operation_timeout_seconds=5)
    try:
        producer = c.create_producer("persistent://public/gone/t")
        producer.send(b"x")
        c.subscribe("persistent://public/gone/p", "sub")
        with pytest.raises(AdminError) as e:  # without force: Pulsar's 409
            admin.namespaces.delete("public/gone")
        assert e.value.status == 409
        admin.namespaces.delete("public/gone", force=True)
        assert "public/gone" not in admin.namespaces.list("public")
        with pytest.raises(AdminError) as e:
            admin.topics.stats("persistent://public/gone/t")
        assert e.value.status == 404
        # Made again, the namespace is empty: the topics went with it.
        admin.namespaces.create("public/gone")
        assert admin.topics.list("public/gone") == []
        assert admin.topics.list_partitioned("public/gone") == []
    finally:
        c.close()


def test_the_cli_unloads_and_force_deletes(pulsar_broker_factory, capsys) -> None:
    b = pulsar_broker_factory(forceDeleteNamespaceAllowed=True)
    url = ["admin", "--admin-url", b.admin_url]
    assert main([*url, "namespaces", "create", "public/cli"]) == 0
    assert main([*url, "topics", "create", "persistent://public/cli/t"]) == 0
    assert main([*url, "topics", "unload", "persistent://public/cli/t"]) == 0
    assert main([*url, "topics", "unload", "persistent://public/cli/none"]) == 1
    assert "404" in capsys.readouterr().err
    assert main([*url, "namespaces", "delete", "public/cli"]) == 1
    assert "409" in capsys.readouterr().err
    assert main([*url, "namespaces", "delete", "public/cli", "--force"]) == 0
    assert main([*url, "namespaces", "list", "public"]) == 0
    assert "public/cli" not in capsys.readouterr().out.split()


def test_non_persistent_topic_delete_and_unload(pulsar_broker, client) -> None:
    """A non-persistent topic exists while loaded: deleting it is refused while clients are
    connected (412), forced it closes them; unloading closes them too, and they come back to a
    new topic of that name."""
    admin = Admin(pulsar_broker.admin_url)
    topic = "non-persistent://public/default/np-gone"
    producer = client.create_producer(topic)
    consumer = client.subscribe(topic, "sub")
    with pytest.raises(AdminError) as e:
        admin.topics.delete(topic)
    assert (e.value.status, e.value.reason) == (412, "Topic has 2 connected producers/consumers")

    admin.topics.unload(topic)
    deadline = time.monotonic() + 20
    while True:  # both clients reconnect to a new topic of that name
        try:
            st = admin.topics.stats(topic)
            if len(st["publishers"]) == 1 and len(st["subscriptions"]["sub"]["consumers"]) == 1:
                break
        except (AdminError, KeyError):
            pass  # not back yet
        assert time.monotonic() < deadline, "the clients did not come back after the unload"
        time.sleep(0.1)  # poll: the clients reconnect after their own real-time back-off
    producer.send(b"after")
    assert consumer.receive(timeout_millis=5000).data() == b"after"

    admin.topics.delete(topic, force=True)
    assert topic not in admin.namespaces.topics("public/default")
    with pytest.raises(AdminError) as e:
        admin.topics.delete("non-persistent://public/default/never-made")
    assert e.value.status == 404
