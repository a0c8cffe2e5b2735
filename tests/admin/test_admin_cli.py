"""``pulsar-rs admin`` run as a subprocess against a broker on ephemeral ports, with the official
``pulsar-client`` producing and consuming: the subscription commands move the backlog as
pulsar-admin's do (skip, clear-backlog, reset-cursor by time and by message id, expire-messages,
create-subscription, unsubscribe), partitioned topics grow and report summed stats, namespace
policies round-trip, and the output is a readable table by default and the broker's JSON with
``--json``; refusals are one line on stderr with the status and Pulsar's reason, exit code 1."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pulsar
import pytest

from conftest import assert_no_more, receive_all


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


def rows(out: str) -> dict[str, str]:
    """A ``key  value`` table as a dict."""
    table = {}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        table[key] = value.strip()
    return table


def backlog(cli, topic: str, sub: str) -> int:
    """The subscription's backlog, read from the readable stats table."""
    return int(rows(cli("topics", "stats", topic).stdout)[f"subscriptions.{sub}.msgBacklog"])


def produce(client, topic: str, values: list[str]) -> list[pulsar.MessageId]:
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(v.encode()) for v in values]
    producer.close()
    return ids


#: Seconds between the two groups of messages the time-based tests publish.
GAP_S = 3


def since(t0: float) -> str:
    """A relative time (whole seconds, as pulsar-admin's) reaching back 1 to 2 s before ``t0``:
    the CLI may take up to a second to start and send it (on a loaded machine) and the cut still
    falls before ``t0``, yet after the earlier group, ``GAP_S`` before ``t0``."""
    return f"{int(time.time() - t0) + 2}s"


def values(messages) -> list[str]:
    return [m.data().decode() for m in messages]


def test_skip_and_clear_backlog(cli, client, topic):
    cli("topics", "create", topic)
    cli("topics", "create-subscription", topic, "-s", "sub", "-m", "earliest")
    produce(client, topic, [f"m{i}" for i in range(10)])
    assert backlog(cli, topic, "sub") == 10
    cli("topics", "skip", topic, "-s", "sub", "-n", "3")
    assert backlog(cli, topic, "sub") == 7
    consumer = client.subscribe(topic, "sub")
    got = receive_all(consumer, 2, ack=True)
    assert values(got) == ["m3", "m4"]
    consumer.close()
    assert backlog(cli, topic, "sub") == 5
    cli("topics", "clear-backlog", topic, "-s", "sub")
    assert backlog(cli, topic, "sub") == 0
    produce(client, topic, ["a", "b"])
    cli("topics", "skip-all", topic, "-s", "sub")
    assert backlog(cli, topic, "sub") == 0
    produce(client, topic, ["after"])
    consumer = client.subscribe(topic, "sub")
    assert values(receive_all(consumer, 1)) == ["after"]
    assert_no_more(consumer)


@pytest.mark.slow  # about 5 s here (README, 'Tests')
def test_reset_cursor_by_message_id_and_by_time(cli, client, topic):
    consumer = client.subscribe(topic, "sub")
    old = produce(client, topic, ["a0", "a1", "a2"])
    # The client stamps publish times with its own (real) clock: a real gap separates the two
    # groups, which the relative reset-cursor time falls between.
    time.sleep(GAP_S)
    t_new = time.time()
    produce(client, topic, ["b0", "b1"])
    assert values(receive_all(consumer, 5)) == ["a0", "a1", "a2", "b0", "b1"]
    consumer.close()
    assert backlog(cli, topic, "sub") == 0

    # By message id: the next message delivered is that one.
    mid = f"{old[1].ledger_id()}:{old[1].entry_id()}"
    cli("topics", "reset-cursor", topic, "-s", "sub", "-m", mid)
    assert backlog(cli, topic, "sub") == 4
    consumer = client.subscribe(topic, "sub")
    assert values(receive_all(consumer, 4)) == ["a1", "a2", "b0", "b1"]
    assert_no_more(consumer)
    consumer.close()
    # Excluded: the one after it.
    cli("topics", "reset-cursor", topic, "-s", "sub", "-m", mid, "-e")
    assert backlog(cli, topic, "sub") == 3

    # By time, relative to now: back to just before the second group.
    cli("topics", "reset-cursor", topic, "-s", "sub", "-t", since(t_new))
    assert backlog(cli, topic, "sub") == 2
    consumer = client.subscribe(topic, "sub")
    assert values(receive_all(consumer, 2)) == ["b0", "b1"]
    assert_no_more(consumer)
    consumer.close()
    cli("topics", "reset-cursor", topic, "-s", "sub", "-t", "1h")
    assert backlog(cli, topic, "sub") == 5


@pytest.mark.slow  # about 5 s here (README, 'Tests')
def test_expire_messages(cli, client, topic):
    cli("topics", "create", topic)
    cli("topics", "create-subscription", topic, "-s", "one", "-m", "earliest")
    cli("topics", "create-subscription", topic, "-s", "two", "-m", "earliest")
    cli("topics", "create-subscription", topic, "-s", "late")  # latest: sees only what follows
    produce(client, topic, ["old0", "old1", "old2"])
    # The client stamps publish times with its own (real) clock: a real gap separates the two
    # groups, which the relative expiry time falls between.
    time.sleep(GAP_S)
    t_new = time.time()
    produce(client, topic, ["new0", "new1"])
    assert [backlog(cli, topic, s) for s in ("one", "two", "late")] == [5, 5, 5]
    # Older than just before the second group: the first group only.
    cli("topics", "expire-messages", topic, "-s", "one", "-t", since(t_new))
    assert [backlog(cli, topic, s) for s in ("one", "two")] == [2, 5]
    cli("topics", "expire-messages-all-subscriptions", topic, "-t", since(t_new))
    assert [backlog(cli, topic, s) for s in ("one", "two", "late")] == [2, 2, 2]
    consumer = client.subscribe(topic, "one")
    assert values(receive_all(consumer, 2)) == ["new0", "new1"]
    assert_no_more(consumer)
    consumer.close()
    # A caught-up subscription: Pulsar's 409 (the check is not issued), on one line.
    caught_up = cli("topics", "expire-messages", topic, "-s", "one", "-t", "1s", ok=False)
    assert caught_up.returncode == 1 and caught_up.stderr.startswith("pulsar-rs admin: 409 Expire message")
    assert caught_up.stderr.count("\n") == 1


def test_expire_messages_to_a_position(cli, client, topic):
    cli("topics", "create", topic)
    cli("topics", "create-subscription", topic, "-s", "one", "-m", "earliest")
    cli("topics", "create-subscription", topic, "-s", "two", "-m", "earliest")
    ids = produce(client, topic, ["m0", "m1", "m2", "m3"])
    at = f"{ids[1].ledger_id()}:{ids[1].entry_id()}"
    cli("topics", "expire-messages", topic, "-s", "one", "--position", at)
    cli("topics", "expire-messages", topic, "-s", "two", "-p", at, "-e")
    assert [backlog(cli, topic, s) for s in ("one", "two")] == [2, 1]
    both = cli("topics", "expire-messages", topic, "-s", "one", "-p", at, "-t", "1s", ok=False)
    assert both.returncode == 2


def test_subscriptions_and_unsubscribe(cli, client, topic):
    cli("topics", "create", topic)
    produce(client, topic, ["before"])
    cli("topics", "create-subscription", topic, "-s", "s1")
    cli("topics", "create-subscription", topic, "-s", "s2", "-m", "earliest")
    assert cli("topics", "subscriptions", topic).stdout.split() == ["s1", "s2"]
    assert [backlog(cli, topic, "s1"), backlog(cli, topic, "s2")] == [0, 1]
    again = cli("topics", "create-subscription", topic, "-s", "s1", ok=False)
    assert again.returncode == 1
    assert again.stderr == "pulsar-rs admin: 409 Subscription already exists for topic\n"
    consumer = client.subscribe(topic, "s2")
    busy = cli("topics", "unsubscribe", topic, "-s", "s2", ok=False)
    assert busy.stderr == "pulsar-rs admin: 412 Subscription has active connected consumers\n", busy.stderr
    consumer.close()
    cli("topics", "unsubscribe", topic, "-s", "s2")
    assert json.loads(cli("--json", "topics", "subscriptions", topic).stdout) == ["s1"]
    missing = cli("topics", "skip", topic, "-s", "nope", "-n", "1", ok=False)
    assert missing.returncode == 1 and missing.stderr.startswith("pulsar-rs admin: 404 ")
    assert missing.stderr.count("\n") == 1 and missing.stdout == ""


def test_replicated_subscription_status(cli, topic):
    """pulsar-admin's ``set-`` / ``get-replicated-subscription-status``, on every partition."""
    cli("topics", "create-partitioned-topic", topic, "-p", "2")
    cli("topics", "create-subscription", topic, "-s", "s")
    get = ("--json", "topics", "get-replicated-subscription-status", topic, "-s", "s")
    partitions = [f"{topic}-partition-{i}" for i in range(2)]
    assert json.loads(cli(*get).stdout) == dict.fromkeys(partitions, False)
    cli("topics", "set-replicated-subscription-status", topic, "-s", "s", "--enable")
    assert json.loads(cli(*get).stdout) == dict.fromkeys(partitions, True)
    cli("topics", "set-replicated-subscription-status", topic, "-s", "s", "-d")
    assert json.loads(cli(*get).stdout) == dict.fromkeys(partitions, False)
    missing = cli("topics", "set-replicated-subscription-status", topic, "-s", "nope", "-e", ok=False)
    assert missing.stderr.startswith("pulsar-rs admin: 404 "), missing.stderr


def test_partitioned_topics(cli, client, topic):
    cli("topics", "create-partitioned-topic", topic, "-p", "2")
    assert rows(cli("topics", "get-partitioned-topic-metadata", topic).stdout) == {
        "partitions": "2",
        "deleted": "false",
    }
    cli("topics", "update-partitioned-topic", topic, "-p", "3")
    meta = json.loads(cli("--json", "topics", "get-partitioned-topic-metadata", topic).stdout)
    assert meta == {"partitions": 3, "deleted": False}
    shrink = cli("topics", "update-partitioned-topic", topic, "-p", "2", ok=False)
    assert shrink.returncode == 1
    assert shrink.stderr == ("pulsar-rs admin: 422 Desired partitions 2 can't be less than the current partitions 3.\n")
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(9):
        producer.send(f"m{i}".encode(), partition_key=f"k{i}")
    producer.close()

    stats = json.loads(cli("--json", "topics", "partitioned-stats", topic, "--per-partition").stdout)
    assert stats["metadata"] == {"partitions": 3, "deleted": False}
    assert stats["msgInCounter"] == 9
    assert stats["subscriptions"]["sub"]["msgBacklog"] == 9
    assert set(stats["partitions"]) == {f"{topic}-partition-{i}" for i in range(3)}
    assert sum(p["msgInCounter"] for p in stats["partitions"].values()) == 9
    table = rows(cli("topics", "partitioned-stats", topic).stdout)
    assert table["msgInCounter"] == "9" and table["metadata.partitions"] == "3"
    assert table["subscriptions.sub.msgBacklog"] == "9"
    assert not any(k.startswith("partitions.") for k in table)

    # The subscription commands act on every partition.
    cli("topics", "skip", topic, "-s", "sub", "-n", "1")
    assert json.loads(cli("--json", "topics", "partitioned-stats", topic).stdout)["subscriptions"]["sub"][
        "msgBacklog"
    ] == (9 - sum(1 for p in stats["partitions"].values() if p["msgInCounter"] > 0))
    cli("topics", "clear-backlog", topic, "-s", "sub")
    assert (
        json.loads(cli("--json", "topics", "partitioned-stats", topic).stdout)["subscriptions"]["sub"]["msgBacklog"]
        == 0
    )
    consumer.close()
    plain = cli("topics", "partitioned-stats", "persistent://public/default/not-partitioned", ok=False)
    assert plain.returncode == 1 and plain.stderr.startswith("pulsar-rs admin: 404 ")


def test_readable_tables_and_json(cli, client, topic):
    cli("topics", "create", topic)
    cli("topics", "create-subscription", topic, "-s", "sub", "-m", "earliest")
    produce(client, topic, ["x", "y"])
    out = cli("topics", "stats", topic).stdout
    lines = out.splitlines()
    # Aligned: every value starts in the same column.
    columns = {len(line) - len(line.split(maxsplit=1)[1]) for line in lines if len(line.split(maxsplit=1)) == 2}
    assert len(columns) == 1, out
    table = rows(out)
    assert table["msgInCounter"] == "2"
    assert table["subscriptions.sub.msgBacklog"] == "2"
    assert table["subscriptions.sub.isDurable"] == "true"
    raw = json.loads(cli("--json", "topics", "stats", topic).stdout)
    assert raw["msgInCounter"] == 2 and raw["subscriptions"]["sub"]["msgBacklog"] == 2

    internal = rows(cli("topics", "internal-stats", topic).stdout)
    assert internal["numberOfEntries"] == "2" and "cursors.sub.markDeletePosition" in internal
    assert json.loads(cli("--json", "topics", "stats-internal", topic).stdout)["numberOfEntries"] == 2

    assert topic in cli("topics", "list", "public/default").stdout.splitlines()
    assert cli("tenants", "list").stdout.splitlines() == ["public", "pulsar"]

    cli("topics", "grant-permission", topic, "--role", "app", "--actions", "produce,consume")
    assert rows(cli("topics", "permissions", topic).stdout) == {"app": "consume, produce"}
    assert json.loads(cli("--json", "topics", "permissions", topic).stdout) == {"app": ["consume", "produce"]}
    cli("topics", "revoke-permission", topic, "--role", "app")
    assert cli("topics", "permissions", topic).stdout.strip() == "(empty)"


#: (policy, set flags, readable get, JSON get)
POLICIES = [
    (
        "retention",
        ["-t", "3h", "-s", "1G"],
        {"retentionTimeInMinutes": "180", "retentionSizeInMB": "1024"},
        {"retentionTimeInMinutes": 180, "retentionSizeInMB": 1024},
    ),
    ("message-ttl", ["-ttl", "2m"], {"120": ""}, 120),
    ("deduplication", ["--enable"], {"true": ""}, True),
    (
        "publish-rate",
        ["-m", "100", "-b", "2048"],
        {"publishThrottlingRateInMsg": "100", "publishThrottlingRateInByte": "2048"},
        {"publishThrottlingRateInMsg": 100, "publishThrottlingRateInByte": 2048},
    ),
    (
        "dispatch-rate",
        ["-md", "50", "-dt", "2"],
        {
            "dispatchThrottlingRateInMsg": "50",
            "dispatchThrottlingRateInByte": "-1",
            "relativeToPublishRate": "false",
            "ratePeriodInSecond": "2",
        },
        None,
    ),
    (
        "subscription-dispatch-rate",
        ["-bd", "1024"],
        {
            "dispatchThrottlingRateInMsg": "-1",
            "dispatchThrottlingRateInByte": "1024",
            "relativeToPublishRate": "false",
            "ratePeriodInSecond": "1",
        },
        None,
    ),
    ("compaction-threshold", ["-t", "10M"], {str(10 << 20): ""}, 10 << 20),
    (
        "persistence",
        ["-e", "3", "-w", "3", "-a", "2"],
        {
            "bookkeeperEnsemble": "3",
            "bookkeeperWriteQuorum": "3",
            "bookkeeperAckQuorum": "2",
            "managedLedgerMaxMarkDeleteRate": "0.0",
        },
        {
            "bookkeeperEnsemble": 3,
            "bookkeeperWriteQuorum": 3,
            "bookkeeperAckQuorum": 2,
            "managedLedgerMaxMarkDeleteRate": 0.0,
        },
    ),
    (
        "inactive-topic-policies",
        ["-e", "-t", "1h", "-m", "delete_when_subscriptions_caught_up"],
        {
            "inactiveTopicDeleteMode": "delete_when_subscriptions_caught_up",
            "maxInactiveDurationSeconds": "3600",
            "deleteWhileInactive": "true",
        },
        None,
    ),
]


@pytest.mark.parametrize("policy,flags,table,doc", POLICIES, ids=[p[0] for p in POLICIES])
def test_namespace_policy_round_trip(cli, policy, flags, table, doc):
    cli("tenants", "create", "acme")
    cli("namespaces", "create", "acme/ns")
    assert cli("namespaces", f"get-{policy}", "acme/ns").stdout == "(not set)\n"
    assert cli("--json", "namespaces", f"get-{policy}", "acme/ns").stdout == "null\n"
    cli("namespaces", f"set-{policy}", "acme/ns", *flags)
    assert rows(cli("namespaces", f"get-{policy}", "acme/ns").stdout) == table
    if doc is not None:
        assert json.loads(cli("--json", "namespaces", f"get-{policy}", "acme/ns").stdout) == doc
    cli("namespaces", f"remove-{policy}", "acme/ns")
    assert cli("namespaces", f"get-{policy}", "acme/ns").stdout == "(not set)\n"
    missing = cli("namespaces", f"get-{policy}", "acme/missing", ok=False)
    assert missing.returncode == 1 and missing.stderr.startswith("pulsar-rs admin: 404 ")


def test_backlog_quotas(cli):
    cli("namespaces", "set-backlog-quota", "public/default", "-l", "10M", "-p", "producer_request_hold")
    age = ["-lt", "1h", "-p", "producer_exception", "-t", "message_age"]
    cli("namespaces", "set-backlog-quota", "public/default", *age)
    table = rows(cli("namespaces", "get-backlog-quotas", "public/default").stdout)
    assert table["destination_storage.limitSize"] == str(10 << 20)
    assert table["destination_storage.policy"] == "producer_request_hold"
    assert table["message_age.limitTime"] == "3600"
    cli("namespaces", "remove-backlog-quota", "public/default", "-bqt", "message_age")
    quotas = json.loads(cli("--json", "namespaces", "get-backlog-quotas", "public/default").stdout)
    assert set(quotas) == {"destination_storage"}
    bad = cli("namespaces", "set-backlog-quota", "public/default", "-p", "producer_exception", ok=False)
    assert bad.returncode == 1 and "needs --limit" in bad.stderr


def test_tenants_and_clusters(cli):
    cli("clusters", "create", "east", "--url", "http://east:8080", "--broker-url", "pulsar://east:6650")
    # Pulsar's ClusterData defaults are shown beside what was given (checked against 4.0.8).
    defaults = {"brokerClientTlsEnabled": False, "brokerClientTlsTrustStoreType": "JKS"}
    got = json.loads(cli("--json", "clusters", "get", "east").stdout)
    assert got | {"serviceUrl": "http://east:8080", "brokerServiceUrl": "pulsar://east:6650", **defaults} == got
    assert rows(cli("clusters", "get", "east").stdout)["brokerServiceUrl"] == "pulsar://east:6650"
    cli("clusters", "update", "east", "--url", "http://east2:8080")
    got = json.loads(cli("--json", "clusters", "get", "east").stdout)
    assert got["serviceUrl"] == "http://east2:8080" and "brokerServiceUrl" not in got, got
    assert cli("clusters", "list").stdout.split() == ["east", "standalone"]
    cli("tenants", "create", "acme", "-r", "ops,dev", "-c", "standalone")
    cli("tenants", "update", "acme", "-c", "standalone,east")  # roles kept
    assert json.loads(cli("--json", "tenants", "get", "acme").stdout) == {
        "adminRoles": ["dev", "ops"],
        "allowedClusters": ["east", "standalone"],
    }
    cli("tenants", "update", "acme", "-r", "ops", "-c", "standalone")
    assert rows(cli("tenants", "get", "acme").stdout) == {"adminRoles": "ops", "allowedClusters": "standalone"}
    # Pulsar deletes a cluster whatever tenants list it (only v1 namespaces count as its use).
    cli("tenants", "update", "acme", "-c", "standalone,east")
    cli("clusters", "delete", "east")
    assert cli("clusters", "list").stdout.split() == ["standalone"]


def test_subscription_permissions_and_auth_mode(cli):
    ns = "public/default"
    cli("namespaces", "grant-subscription-permission", ns, "-s", "audit", "--roles", "dave,erin")
    assert json.loads(cli("--json", "namespaces", "subscription-permission", ns).stdout) == {"audit": ["dave", "erin"]}
    cli("namespaces", "revoke-subscription-permission", ns, "-s", "audit", "--role", "erin")
    doc = json.loads(cli("--json", "namespaces", "policies", ns).stdout)
    assert doc["auth_policies"]["subscription_auth_roles"] == {"audit": ["dave"]}
    assert cli("namespaces", "get-subscription-auth-mode", ns).stdout.strip() == "None"
    cli("namespaces", "set-subscription-auth-mode", ns, "-m", "Prefix")
    assert cli("namespaces", "get-subscription-auth-mode", ns).stdout.strip() == "Prefix"
    assert json.loads(cli("--json", "namespaces", "policies", ns).stdout)["subscription_auth_mode"] == "Prefix"
