"""``pulsar-rs admin`` topic commands beyond the basics, against the test's broker with the
official ``pulsar-client``: peek-messages / examine-messages / get-message-by-id (the broker's
``position/{n}``, ``examinemessage`` and ``ledger/{l}/entry/{e}`` answers, batches split by
``pulsar_rs.Admin``), ``unsubscribe -f``, topic-level policies (``topics set-retention ...`` and
the ``topicPolicies`` group), ``namespaces topics``, ``topics lookup`` / ``compact`` /
``compaction-status``, ``partitioned-stats-internal`` and ``brokers healthcheck``."""

from __future__ import annotations

import json
import subprocess
import sys

import pulsar
import pytest

from conftest import receive_all
from pulsar_rs import Admin, AdminError
from test_admin_cli import backlog, rows


@pytest.fixture
def cli(pulsar_broker):
    """Runs ``pulsar-rs admin ARGS`` against the test's broker; returns the finished process."""

    def run(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "pulsar_rs.cli", "admin", "--admin-url", pulsar_broker.admin_url, *args]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        if ok:
            assert p.returncode == 0, (args, p.stdout, p.stderr)
        return p

    return run


def _id(msg_id: pulsar.MessageId) -> str:
    return f"{msg_id.ledger_id()}:{msg_id.entry_id()}"


def test_peek_messages_batched_with_properties(cli, client, topic):
    cli("topics", "create", topic)
    cli("topics", "create-subscription", topic, "-s", "audit", "-m", "earliest")
    producer = client.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=100)
    for i in range(3):
        producer.send_async(f"v{i}".encode(), None, properties={"n": str(i), "kind": "test"}, partition_key=f"k{i}")
    producer.flush()
    producer.close()

    got = json.loads(cli("--json", "topics", "peek-messages", topic, "-s", "audit", "-n", "3").stdout)
    assert [m["payload"] for m in got] == ["v0", "v1", "v2"]
    assert [m["properties"] for m in got] == [{"kind": "test", "n": str(i)} for i in range(3)]
    assert [m["key"] for m in got] == ["k0", "k1", "k2"]
    # One batch: the entry's id with each message's batch index.
    entry = got[0]["messageId"].rsplit(":", 1)[0]
    assert [m["messageId"] for m in got] == [f"{entry}:{i}" for i in range(3)]
    assert all(m["publishTime"] > 0 for m in got)

    table = cli("topics", "peek-messages", topic, "-s", "audit", "-n", "2").stdout.splitlines()
    header = table[0].split()
    assert header[0] == "MESSAGEID" and "PAYLOAD" in header and "PROPERTIES.N" in header
    assert [line.split()[-1] for line in table[1:]] == ["v0", "v1"]
    last = rows(cli("topics", "last-message-id", topic).stdout)
    assert f"{last['ledgerId']}:{last['entryId']}:{last['batchIndex']}" == got[2]["messageId"]
    # Peeking consumes nothing.
    assert backlog(cli, topic, "audit") == 1


def test_peek_examine_and_get_by_id_unbatched(cli, client, topic, pulsar_broker):
    cli("topics", "create", topic)
    cli("topics", "create-subscription", topic, "-s", "s", "-m", "earliest")
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"m{i}".encode(), properties={"i": str(i)}) for i in range(4)]
    producer.close()
    consumer = client.subscribe(topic, "s")
    first = consumer.receive(timeout_millis=5000)
    consumer.acknowledge(first)  # the backlog now starts at m1
    consumer.close()

    peeked = Admin(pulsar_broker.admin_url).topics.peek_messages(topic, "s", count=10)
    assert [(m["messageId"], m["data"], m["properties"]) for m in peeked] == [
        (_id(ids[i]), f"m{i}".encode(), {"i": str(i)}) for i in range(1, 4)
    ]

    latest = json.loads(cli("--json", "topics", "examine-messages", topic).stdout)
    assert (latest["messageId"], latest["payload"]) == (_id(ids[3]), "m3")
    second = json.loads(cli("--json", "topics", "examine-message", topic, "-i", "earliest", "-m", "2").stdout)
    assert (second["messageId"], second["payload"]) == (_id(ids[1]), "m1")
    table = rows(cli("topics", "examine-messages", topic, "-i", "earliest").stdout)
    assert table["messageId"] == _id(ids[0]) and table["payload"] == "m0" and table["properties.i"] == "0"

    ledger, entry = str(ids[2].ledger_id()), str(ids[2].entry_id())
    by_id = json.loads(cli("--json", "topics", "get-message-by-id", topic, "-l", ledger, "-e", entry).stdout)
    assert [(m["messageId"], m["payload"]) for m in by_id] == [(_id(ids[2]), "m2")]

    last = json.loads(cli("--json", "topics", "last-message-id", topic).stdout)
    assert last == {"ledgerId": ids[3].ledger_id(), "entryId": ids[3].entry_id(), "partitionIndex": -1}

    missing = cli("topics", "get-message-by-id", topic, "-l", ledger, "-e", "99", ok=False)
    assert missing.returncode == 1 and missing.stderr.startswith("pulsar-rs admin: 404 ")
    past = cli("topics", "examine-messages", topic, "-m", "9", ok=False)
    assert past.stderr == "pulsar-rs admin: 404 Message not found\n"


def test_peek_refusals(cli, client, topic):
    cli("topics", "create-partitioned-topic", topic, "-p", "2")
    parted = cli("topics", "peek-messages", topic, "-s", "x", ok=False)
    assert parted.stderr == "pulsar-rs admin: 405 Peek messages on a partitioned topic is not allowed\n"
    single = topic + "-single"
    cli("topics", "create", single)
    cli("topics", "create-subscription", single, "-s", "s")
    empty = cli("topics", "peek-messages", single, "-s", "s", ok=False)
    assert empty.stderr == "pulsar-rs admin: 404 Message not found\n"
    # A missing subscription is created at the earliest message (Pulsar's getSubscriptionReference).
    nosub = cli("topics", "peek-messages", single, "-s", "nope", ok=False)
    assert nosub.stderr == "pulsar-rs admin: 404 Message not found\n"
    assert "nope" in cli("topics", "subscriptions", single).stdout.split()
    assert cli("topics", "examine-messages", single, ok=False).stderr.startswith("pulsar-rs admin: 412 ")


def test_unsubscribe_force_disconnects_consumers(cli, client, topic):
    cli("topics", "create", topic)
    consumer = client.subscribe(topic, "busy", receiver_queue_size=1)
    produce = client.create_producer(topic, batching_enabled=False)
    for i in range(5):
        produce.send(f"old{i}".encode())
    assert backlog(cli, topic, "busy") == 5
    refused = cli("topics", "unsubscribe", topic, "-s", "busy", ok=False)
    assert refused.stderr == "pulsar-rs admin: 412 Subscription has active connected consumers\n"
    assert backlog(cli, topic, "busy") == 5
    cli("topics", "unsubscribe", topic, "-s", "busy", "-f")
    # The subscription and its backlog are gone. As with Pulsar, the disconnected consumer
    # reconnects and subscribes again, which creates the subscription anew at its initial
    # position (latest): whichever came first, no backlog is left.
    subs = json.loads(cli("--json", "topics", "subscriptions", topic).stdout)
    assert subs == [] or backlog(cli, topic, "busy") == 0, subs
    produce.close()
    consumer.close()


@pytest.mark.parametrize("group", ["topics", "topicPolicies"])
def test_topic_level_policies(cli, topic, group, pulsar_broker):
    cli("topics", "create", topic)
    admin = Admin(pulsar_broker.admin_url)
    cli(group, "set-retention", topic, "-t", "2h", "-s", "1G")
    assert rows(cli(group, "get-retention", topic).stdout) == {
        "retentionTimeInMinutes": "120",
        "retentionSizeInMB": "1024",
    }
    assert admin.topics.get_policy(topic, "retention") == {"retentionTimeInMinutes": 120, "retentionSizeInMB": 1024}
    # The namespace's stays unset: the policy is the topic's own.
    assert admin.namespaces.get_policy("public/default", "retention") is None
    cli(group, "remove-retention", topic)
    assert cli(group, "get-retention", topic).stdout == "(not set)\n"
    assert cli("--json", group, "get-retention", topic).stdout == "null\n"

    cli(group, "set-message-ttl", topic, "-t", "2h")
    assert cli(group, "get-message-ttl", topic).stdout == "7200\n"
    cli(group, "set-backlog-quota", topic, "-lt", "1h", "-p", "producer_exception", "-t", "message_age")
    quotas = json.loads(cli("--json", group, "get-backlog-quotas", topic).stdout)
    assert quotas["message_age"]["limitTime"] == 3600 and quotas["message_age"]["policy"] == "producer_exception"
    cli(group, "remove-backlog-quota", topic, "-t", "message_age")
    assert json.loads(cli("--json", group, "get-backlog-quotas", topic).stdout) == {}
    cli(group, "set-publish-rate", topic, "-m", "100", "-b", "4096")
    assert rows(cli(group, "get-publish-rate", topic).stdout)["publishThrottlingRateInMsg"] == "100"
    cli(group, "set-dispatch-rate", topic, "-md", "50", "-bd", "-1", "-dt", "2")
    assert json.loads(cli("--json", group, "get-dispatch-rate", topic).stdout)["ratePeriodInSecond"] == 2
    cli(group, "set-subscription-dispatch-rate", topic, "-md", "7")
    assert admin.topics.get_policy(topic, "subscriptionDispatchRate")["dispatchThrottlingRateInMsg"] == 7
    cli(group, "set-compaction-threshold", topic, "-t", "10M")
    assert cli(group, "get-compaction-threshold", topic).stdout == f"{10 << 20}\n"
    cli(group, "set-inactive-topic-policies", topic, "-e", "-t", "1h", "-m", "delete_when_no_subscriptions")
    assert rows(cli(group, "get-inactive-topic-policies", topic).stdout)["maxInactiveDurationSeconds"] == "3600"
    missing = cli(group, "get-retention", topic + "-nope", ok=False)
    assert missing.stderr.startswith("pulsar-rs admin: 404 ")


def test_topic_level_deduplication_takes_effect(cli, client, topic):
    cli("topics", "create", topic)
    cli("topics", "set-deduplication", topic, "--enable")
    assert cli("topics", "get-deduplication", topic).stdout == "true\n"
    assert cli("topics", "get-deduplication-enabled", topic).stdout == "true\n"
    consumer = client.subscribe(topic, "s")
    producer = client.create_producer(topic, producer_name="dedup-p", batching_enabled=False)
    for seq in (1, 2, 2, 1, 3):
        producer.send(f"seq{seq}".encode(), sequence_id=seq)
    got = [m.data().decode() for m in receive_all(consumer, 5, timeout_ms=1500)]
    assert got == ["seq1", "seq2", "seq3"]
    cli("topics", "disable-deduplication", topic)
    assert cli("topics", "get-deduplication", topic).stdout == "false\n"
    producer.close()
    consumer.close()


def test_namespace_topics_lookup_compaction_health(cli, client, topic):
    cli("topics", "create", topic)
    client.create_producer(topic).send(b"x")
    assert topic in cli("namespaces", "topics", "public/default").stdout.split()
    lookup = json.loads(cli("--json", "topics", "lookup", topic).stdout)
    assert lookup["brokerUrl"].startswith("pulsar://")
    assert cli("topics", "compaction-status", topic).stdout.split("\n")[0].split() == ["status", "NOT_RUN"]
    cli("topics", "compact", topic)
    status = rows(cli("topics", "compaction-status", topic, "-w").stdout)
    assert status["status"] == "SUCCESS", status
    assert cli("brokers", "healthcheck").stdout == "ok\n"


def test_admin_client_errors_for_messages(pulsar_broker, topic):
    admin = Admin(pulsar_broker.admin_url)
    admin.topics.create(topic)
    with pytest.raises(AdminError) as e:
        admin.topics.peek_messages(topic, "nope")
    # Pulsar creates the missing subscription; the empty topic has nothing to peek.
    assert (e.value.status, e.value.reason) == (404, "Message not found")


def test_partitioned_stats_internal(cli, client, topic):
    cli("topics", "create-partitioned-topic", topic, "-p", "2")
    client.create_producer(f"{topic}-partition-0").send(b"one")
    doc = json.loads(cli("--json", "topics", "partitioned-stats-internal", topic).stdout)
    assert doc["metadata"]["partitions"] == 2
    assert [doc["partitions"][f"{topic}-partition-{i}"]["numberOfEntries"] for i in range(2)] == [1, 0]
    p = cli("topics", "partitioned-stats-internal", topic + "-plain", ok=False)
    assert p.returncode == 1 and p.stderr.startswith("pulsar-rs admin: 404 "), p.stderr
