"""Apache Pulsar 4.0.8's own admin command set against pulsar-rs: every command of docs/admin.md's table
(their ``get-`` / ``remove-`` variants, and ``topicPolicies`` beside ``topics``), run by the
distribution's ``bin/pulsar-shell``, which executes a file of commands in one JVM (``pulsar-admin``
starts a JVM per call, far too slow for the ~400 calls here).

Each command's own output is checked: a value set is read back by its ``get-``, a list holds what was
created and not what was deleted, a document carries its fields, a ``remove-`` makes the ``get-``
answer ``null``, a refused call prints Pulsar's reason. pulsar-shell's exit status says nothing (0
whatever the commands did), so its output is split on the ``[i/N] Executing ...`` line it prints
before each command and each command is judged by its own part; a failure names the command and
shows that part. What pulsar-admin prints was taken from the same script run against Apache Pulsar
4.0.8 standalone (``tools/pulsar_reference``); the few commands where pulsar-rs still answers
otherwise are listed in the README ("Where pulsar-rs differs"), not asserted here.

Three runs of the shell: the second needs the ledger id the first printed (``get-message-by-id``,
``reset-cursor -m``), runs after the broker's clock moved two hours (message expiry by age) and while
a consumer of this process holds two topics (the refusals without ``-f``); the third deletes the
namespace and the tenant once that consumer is gone.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pulsar  # type: ignore[import-untyped]
import pytest

from pulsar_rs import Broker, ManualClock

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tools import pulsar_reference

pytestmark = pytest.mark.slow

NS = "pa/ns"
T = f"persistent://{NS}"
PLAIN = f"{T}/plain"  # messages, subscriptions, cursors
PARTED = f"{T}/parted"  # a partitioned topic, 2 then 3 partitions
POL = f"{T}/pol"  # topic-level policies
SCH = f"{T}/sch"  # schemas
TERM = f"{T}/term"  # terminated; expiry over all its subscriptions
PTERM = f"{T}/pterm"  # a partitioned topic, terminated
HELD = f"{T}/held"  # a consumer of this process is connected during the second run
PHELD = f"{T}/pheld"  # the same, partitioned
BUNDLE = "0x00000000_0xffffffff"

Check = Callable[[str], object]


@dataclass(frozen=True)
class Step:
    """One line of a pulsar-shell script and the check of its output. ``raw``: the check sees the
    JVM's log lines too (``client produce`` reports its count in one)."""

    line: str
    check: Check
    raw: bool = False


def a(line: str, check: Check) -> Step:
    return Step(f"admin {line}", check)


# --- what an output must be -------------------------------------------------------------------------

_LOG_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S* \[[^\]]*\] (TRACE|DEBUG|INFO|WARN|ERROR) .*"
    r"|[A-Z][a-z]{2} \d{1,2}, \d{4} \d{1,2}:\d\d:\d\d [AP]M \S+ \S+|(INFO|WARNING): .*)$"
)


def clean(out: str) -> str:
    """The command's own output: the JVM's log lines (log4j, java.util.logging) taken out."""
    return "\n".join(line for line in out.splitlines() if not _LOG_LINE.match(line)).strip()


def _no_error(out: str) -> None:
    assert not any(s in out for s in ("Reason:", "Exception", "Usage:", "Unmatched argument")), "a refusal"


def empty(out: str) -> None:
    """An action that worked: pulsar-admin prints nothing."""
    assert out == "", "expected no output (pulsar-admin prints nothing when an action worked)"


def text(expected: str) -> Check:
    def check(out: str) -> None:
        assert out == expected, f"expected {expected!r}"

    return check


def matches(pattern: str) -> Check:
    def check(out: str) -> None:
        assert re.fullmatch(pattern, out), f"expected a match of {pattern!r}"

    return check


def doc(out: str) -> Any:
    _no_error(out)
    return json.loads(out)


def equals(expected: object) -> Check:
    """The JSON printed equals ``expected`` (``None``: pulsar-admin prints ``null`` for a policy not set)."""

    def check(out: str) -> None:
        got = doc(out)
        assert got == expected, f"expected {expected!r}, got {got!r}"

    return check


def json_where(what: str, predicate: Callable[[Any], bool]) -> Check:
    def check(out: str) -> None:
        got = doc(out)
        assert predicate(got), f"expected {what}, got {json.dumps(got)[:1500]}"

    return check


def names(*, exactly: Iterable[str] | None = None, include: Iterable[str] = (), exclude: Iterable[str] = ()) -> Check:
    """A list of names, one a line."""

    def check(out: str) -> None:
        _no_error(out)
        got = set(out.split())
        if exactly is not None:
            assert got == set(exactly), f"expected exactly {sorted(exactly)}"
        assert set(include) <= got, f"missing {sorted(set(include) - got)}"
        assert not set(exclude) & got, f"should not list {sorted(set(exclude) & got)}"

    return check


def refused(reason: str) -> Check:
    """A refusal: pulsar-admin prints the broker's reason after ``Reason:``."""

    def check(out: str) -> None:
        assert "Reason:" in out and reason in out.split("Reason:", 1)[1], f"expected a refusal, reason {reason!r}"

    return check


def contains(*parts: str) -> Check:
    def check(out: str) -> None:
        missing = [p for p in parts if p not in out]
        assert not missing, f"expected the output to contain {missing}"

    return check


_MAP_LINE = re.compile(r"^(\S+) {2,}(.+)$")


def printed_map(out: str) -> dict[str, str]:
    """A map as pulsar-admin prints it: ``key    value`` lines (the value Java's ``toString``), nothing
    when it is empty."""
    _no_error(out)
    got = {}
    for line in out.splitlines():
        m = _MAP_LINE.match(line)
        assert m, f"not a `key    value` line: {line!r}"
        got[m.group(1)] = m.group(2)
    return got


def map_keys(include: Iterable[str]) -> Check:
    """A printed map with these keys among its keys (``brokers namespaces``: bundle -> ownership)."""

    def check(out: str) -> None:
        missing = set(include) - set(printed_map(out))
        assert not missing, f"expected the keys {sorted(missing)}"

    return check


def role_map(expected: dict[str, set[str]]) -> Check:
    """Permissions: ``role    [action, action]`` (a Java set: any order)."""

    def check(out: str) -> None:
        got = {k: set(v.strip("[]").split(", ")) for k, v in printed_map(out).items()}
        assert got == expected, f"expected {expected}, got {got}"

    return check


def quota(size: int, time: int, policy: str) -> dict[str, object]:
    return {"limitSize": str(size), "limitTime": str(time), "policy": policy}


def quotas(expected: dict[str, dict[str, object]]) -> Check:
    """``get-backlog-quotas``: ``type    BacklogQuotaImpl(limit=.., limitSize=.., limitTime=.., policy=..)``."""

    def check(out: str) -> None:
        got = {}
        for kind, value in printed_map(out).items():
            m = re.fullmatch(r"BacklogQuotaImpl\((.*)\)", value)
            assert m, f"not a BacklogQuotaImpl: {value!r}"
            fields = dict(kv.split("=", 1) for kv in m.group(1).split(", "))
            got[kind] = {k: fields[k] for k in ("limitSize", "limitTime", "policy")}
        assert got == expected, f"expected {expected}, got {got}"

    return check


def backlogs(expected: dict[str, int]) -> Check:
    """``topics stats``: these subscriptions with these ``msgBacklog``s (others may be there too)."""

    def check(out: str) -> None:
        subs = doc(out)["subscriptions"]
        got = {s: subs[s]["msgBacklog"] if s in subs else "<missing>" for s in expected}
        assert got == expected, f"expected the backlogs {expected}, got {got}"

    return check


def messages(*expected: tuple[str, str]) -> Check:
    """Messages as pulsar-admin prints them (``Message ID: L:E``, then a hex dump holding the payload):
    ``expected`` is (id, payload) in order; an id ``L:*`` matches any ledger."""

    def check(out: str) -> None:
        _no_error(out)
        ids = re.findall(r"^Message ID: (\S+)$", out, re.MULTILINE)
        payloads = re.findall(r"^\|[0-9a-f]{8}\| [0-9a-f ]{47} \|(.*?) *\|$", out, re.MULTILINE)
        got = list(zip(ids, payloads, strict=False))
        assert len(got) == len(expected) and all(
            re.fullmatch(i.replace("*", r"\d+"), gi) and p == gp for (i, p), (gi, gp) in zip(expected, got, strict=True)
        ), f"expected the messages {list(expected)}, got {got}"

    return check


def schema_versions(*fields: list[str]) -> Check:
    """``schemas get -a``: one JSON document a version (no list around them), each an Avro record with
    these field names."""

    def check(out: str) -> None:
        _no_error(out)
        decoder, docs, at = json.JSONDecoder(), [], 0
        while at < len(out):
            d, at = decoder.raw_decode(out, at)
            docs.append(d)
            at = len(out) - len(out[at:].lstrip())
        got = [[f["name"] for f in json.loads(d["schemaDefinition"])["fields"]] for d in docs]
        assert got == list(fields), f"expected versions with the fields {list(fields)}, got {got}"

    return check


def schema_info(fields: list[str]) -> Check:
    """``schemas get -v N``: the version's SchemaInfo (no version field), an Avro record."""
    return json_where(
        f"AVRO with the fields {fields}",
        lambda d: d["type"] == "AVRO" and [f["name"] for f in d["schema"]["fields"]] == fields,
    )


def schema(version: int, fields: list[str]) -> Check:
    return json_where(
        f"version {version}, AVRO with the fields {fields}",
        lambda d: (
            d["version"] == version
            and d["schemaInfo"]["type"] == "AVRO"
            and [f["name"] for f in d["schemaInfo"]["schema"]["fields"]] == fields
        ),
    )


# --- the commands ----------------------------------------------------------------------------------


def ns_policy(cmd: str, set_args: str, value: object, unset: object = None) -> list[Step]:
    """``namespaces get-X`` (not set), ``set-X``, ``get-X`` (the value), ``remove-X``, ``get-X`` (not set)."""
    return [
        a(f"namespaces get-{cmd} {NS}", equals(unset)),
        a(f"namespaces set-{cmd} {NS} {set_args}", empty),
        a(f"namespaces get-{cmd} {NS}", equals(value)),
        a(f"namespaces remove-{cmd} {NS}", empty),
        a(f"namespaces get-{cmd} {NS}", equals(unset)),
    ]


def topic_policy(
    cmd: str, set_a: str, value_a: object, set_b: str, value_b: object, policies_cmd: str | None = None
) -> list[Step]:
    """A topic-level policy through ``topics`` and ``topicPolicies`` (``policies_cmd``: its name there
    when it differs): each group's set, get and remove, each value read back through both groups."""
    pc = policies_cmd or cmd
    return [
        a(f"topics get-{cmd} {POL}", equals(None)),
        a(f"topics set-{cmd} {POL} {set_a}", empty),
        a(f"topics get-{cmd} {POL}", equals(value_a)),
        a(f"topicPolicies get-{pc} {POL}", equals(value_a)),
        a(f"topics remove-{cmd} {POL}", empty),
        a(f"topicPolicies get-{pc} {POL}", equals(None)),
        a(f"topicPolicies set-{pc} {POL} {set_b}", empty),
        a(f"topicPolicies get-{pc} {POL}", equals(value_b)),
        a(f"topics get-{cmd} {POL}", equals(value_b)),
        a(f"topicPolicies remove-{pc} {POL}", empty),
        a(f"topics get-{cmd} {POL}", equals(None)),
    ]


def publish_rate(msgs: int, byts: int) -> dict[str, object]:
    return {"publishThrottlingRateInMsg": msgs, "publishThrottlingRateInByte": byts}


def dispatch_rate(msgs: int, byts: int, period: int, relative: bool = False) -> dict[str, object]:
    return {
        "dispatchThrottlingRateInMsg": msgs,
        "dispatchThrottlingRateInByte": byts,
        "relativeToPublishRate": relative,
        "ratePeriodInSecond": period,
    }


def inactive(mode: str, seconds: int, delete: bool) -> dict[str, object]:
    return {"inactiveTopicDeleteMode": mode, "maxInactiveDurationSeconds": seconds, "deleteWhileInactive": delete}


def clusters_tenants_brokers(broker_id: str) -> list[Step]:
    return [
        a("clusters list", names(include=["standalone"])),
        a(
            "clusters get standalone",
            json_where(
                "the broker's URLs", lambda d: d["serviceUrl"] == f"http://{broker_id}" and "brokerServiceUrl" in d
            ),
        ),
        a("clusters create c2 --url http://127.0.0.1:1 --broker-url pulsar://127.0.0.1:2", empty),
        a(
            "clusters get c2",
            json_where(
                "the URLs given",
                lambda d: (d["serviceUrl"], d["brokerServiceUrl"]) == ("http://127.0.0.1:1", "pulsar://127.0.0.1:2"),
            ),
        ),
        a("clusters update c2 --url http://127.0.0.1:3 --broker-url pulsar://127.0.0.1:4", empty),
        a(
            "clusters get c2",
            json_where(
                "the URLs updated",
                lambda d: (d["serviceUrl"], d["brokerServiceUrl"]) == ("http://127.0.0.1:3", "pulsar://127.0.0.1:4"),
            ),
        ),
        a("clusters create c2 --url http://127.0.0.1:1", refused("Cluster already exists")),
        a("clusters list", names(exactly=["standalone", "c2"])),
        a("tenants create pa -r ops -c standalone", empty),
        a("tenants get pa", equals({"adminRoles": ["ops"], "allowedClusters": ["standalone"]})),
        a("tenants update pa -r ops,dev", empty),
        a(
            "tenants get pa",
            json_where(
                "admin roles ops, dev and the cluster kept",
                lambda d: set(d["adminRoles"]) == {"ops", "dev"} and d["allowedClusters"] == ["standalone"],
            ),
        ),
        a("tenants create pa", refused("Tenant already exist")),
        a("tenants create pb", empty),
        a("tenants list", names(exactly=["pa", "pb", "public", "pulsar"])),
        a("tenants delete pb", empty),
        a("tenants get pb", refused("Tenant does not exist")),
        a("tenants list", names(exactly=["pa", "public", "pulsar"])),
        a("clusters delete c2", empty),
        a("clusters get c2", refused("Cluster does not exist")),
        a("clusters list", names(exactly=["standalone"])),
        a("brokers healthcheck", text("ok")),
        a("brokers list standalone", names(exactly=[broker_id])),
        a("brokers leader-broker", json_where(f"brokerId {broker_id}", lambda d: d["brokerId"] == broker_id)),
    ]


def namespaces() -> list[Step]:
    return [
        # one bundle, as a pulsar-rs broker on its own has (Pulsar's standalone makes 4 by default)
        a(f"namespaces create {NS} -b 1", empty),
        a(f"namespaces create {NS}", refused("Namespace already exists")),
        a("namespaces create pa/gone", empty),
        a("namespaces list pa", names(exactly=[NS, "pa/gone"])),
        a("namespaces delete pa/gone", empty),
        a("namespaces list pa", names(exactly=[NS])),
        a(
            f"namespaces policies {NS}",
            json_where(
                "Pulsar's Policies document",
                lambda d: (
                    d["bundles"] == {"boundaries": ["0x00000000", "0xffffffff"], "numBundles": 1}
                    and d["auth_policies"]["namespace_auth"] == {}
                    and d["replication_clusters"] == ["standalone"]
                    and d["schema_compatibility_strategy"] == "UNDEFINED"
                ),
            ),
        ),
        a(f"namespaces bundles {NS}", equals({"boundaries": ["0x00000000", "0xffffffff"], "numBundles": 1})),
        a(f"namespaces permissions {NS}", role_map({})),
        a(f"namespaces grant-permission {NS} --role app --actions produce,consume", empty),
        a(f"namespaces permissions {NS}", role_map({"app": {"produce", "consume"}})),
        a(f"namespaces revoke-permission {NS} --role app", empty),
        a(f"namespaces permissions {NS}", role_map({})),
        a(f"namespaces subscription-permission {NS}", role_map({})),
        a(f"namespaces grant-subscription-permission {NS} -s sub1 -rs r1,r2", empty),
        a(f"namespaces subscription-permission {NS}", role_map({"sub1": {"r1", "r2"}})),
        a(f"namespaces revoke-subscription-permission {NS} -s sub1 -r r1", empty),
        a(f"namespaces subscription-permission {NS}", role_map({"sub1": {"r2"}})),
        a(f"namespaces get-subscription-auth-mode {NS}", equals("None")),
        a(f"namespaces set-subscription-auth-mode {NS} -m Prefix", empty),
        a(f"namespaces get-subscription-auth-mode {NS}", equals("Prefix")),
        a(f"namespaces set-subscription-auth-mode {NS} -m None", empty),
        a(f"namespaces get-subscription-auth-mode {NS}", equals("None")),
        *ns_policy("retention", "-t 3h -s 10G", {"retentionTimeInMinutes": 180, "retentionSizeInMB": 10240}),
        *ns_policy("message-ttl", "-ttl 2h", 7200),
        *ns_policy("deduplication", "--enable", True),
        *ns_policy("publish-rate", "-m 10 -b 1024", publish_rate(10, 1024)),
        *ns_policy("dispatch-rate", "-md 100 -bd 2048 -dt 2", dispatch_rate(100, 2048, 2)),
        *ns_policy("subscription-dispatch-rate", "-md 50 -bd 4096 -dt 3 -rp", dispatch_rate(50, 4096, 3, True)),
        *ns_policy("compaction-threshold", "-t 10M", 10 * 1024 * 1024),
        *ns_policy(
            "inactive-topic-policies",
            "-e -t 1h -m delete_when_no_subscriptions",
            inactive("delete_when_no_subscriptions", 3600, True),
        ),
        *ns_policy("max-producers-per-topic", "-p 5", 5),
        *ns_policy("max-consumers-per-topic", "-c 6", 6),
        *ns_policy("max-consumers-per-subscription", "-c 7", 7),
        *ns_policy("max-subscriptions-per-topic", "-m 8", 8),
        *ns_policy("max-topics-per-namespace", "-t 100", 100, unset=0),  # Pulsar answers 0 when not set
        a(f"namespaces set-max-producers-per-topic {NS} -p -1", refused("maxProducersPerTopic must be 0 or more")),
        a(f"namespaces get-backlog-quotas {NS}", quotas({})),
        a(f"namespaces set-backlog-quota {NS} -l 10G -p producer_request_hold", empty),
        a(f"namespaces set-backlog-quota {NS} -lt 1h -p producer_exception -t message_age", empty),
        a(
            f"namespaces get-backlog-quotas {NS}",
            quotas(
                {
                    "destination_storage": quota(10 * 1024**3, -1, "producer_request_hold"),
                    "message_age": quota(-1, 3600, "producer_exception"),
                }
            ),
        ),
        a(
            f"namespaces set-retention {NS} -t 1h -s 1G",  # keeps less than the 10G quota lets pile up
            refused("Retention Quota must exceed configured backlog quota for namespace."),
        ),
        a(f"namespaces remove-backlog-quota {NS}", empty),
        a(f"namespaces get-backlog-quotas {NS}", quotas({"message_age": quota(-1, 3600, "producer_exception")})),
        a(f"namespaces remove-backlog-quota {NS} -t message_age", empty),
        a(f"namespaces get-backlog-quotas {NS}", quotas({})),
        a(f"namespaces get-schema-compatibility-strategy {NS}", text("UNDEFINED")),
        a(f"namespaces set-schema-compatibility-strategy {NS} -c BACKWARD_TRANSITIVE", empty),
        a(f"namespaces get-schema-compatibility-strategy {NS}", text("BACKWARD_TRANSITIVE")),
        a(f"namespaces get-is-allow-auto-update-schema {NS}", equals(True)),  # unset: the broker's setting
        a(f"namespaces set-is-allow-auto-update-schema {NS} -d", empty),
        a(f"namespaces get-is-allow-auto-update-schema {NS}", equals(False)),
        a(f"namespaces set-is-allow-auto-update-schema {NS} -e", empty),
        a(f"namespaces get-is-allow-auto-update-schema {NS}", equals(True)),
        a(f"namespaces get-schema-validation-enforce {NS}", equals(False)),
        a(f"namespaces set-schema-validation-enforce {NS} -e", empty),
        a(f"namespaces get-schema-validation-enforce {NS}", equals(True)),
        a(f"namespaces set-schema-validation-enforce {NS} -d", empty),
        a(f"namespaces get-schema-validation-enforce {NS}", equals(False)),
    ]


def topics(broker_id: str, service_url: str) -> list[Step]:
    partitions = [f"{PARTED}-partition-{i}" for i in range(3)]
    return [
        a(f"topics create {PLAIN}", empty),
        a(f"topics create {PLAIN}", refused("This topic already exists")),
        a(f"topics create-partitioned-topic {PARTED} -p 0", refused("Number of partitions should be more than 0")),
        a(f"topics create-partitioned-topic {PARTED} -p 2", empty),
        a(
            f"topics get-partitioned-topic-metadata {PARTED}",
            json_where("2 partitions", lambda d: d["partitions"] == 2),
        ),
        a(f"topics update-partitioned-topic {PARTED} -p 3", empty),
        a(
            f"topics get-partitioned-topic-metadata {PARTED}",
            json_where("3 partitions", lambda d: d["partitions"] == 3),
        ),
        a(
            f"topics update-partitioned-topic {PARTED} -p 2",
            refused("Desired partitions 2 can't be less than the current partitions 3."),
        ),
        a(f"topics update-partitioned-topic {PARTED} -p 0", refused("Number of partitions must be more than 0")),
        a(f"topics create {POL}", empty),
        a(f"topics create {TERM}", empty),
        a(f"topics create-partitioned-topic {PTERM} -p 2", empty),
        a(f"topics create {HELD}", empty),
        a(f"topics create-partitioned-topic {PHELD} -p 2", empty),
        a(f"topics list {NS}", names(include=[PLAIN, POL, TERM, HELD, *partitions], exclude=[PARTED, PTERM])),
        a(f"topics list-partitioned-topics {NS}", names(exactly=[PARTED, PTERM, PHELD])),
        a(f"namespaces topics {NS}", names(include=[PLAIN, POL, *partitions], exclude=[PARTED])),
        # messages and subscriptions
        Step(
            f"client produce {PLAIN} -m m0 -m m1 -m m2 -m m3 -m m4",
            contains("5 messages successfully produced"),
            raw=True,
        ),
        a(f"topics create-subscription {PLAIN} -s s1 -m earliest", empty),
        a(f"topics create-subscription {PLAIN} -s s2", empty),
        a(f"topics create-subscription {PLAIN} -s s2", refused("Subscription already exists for topic")),
        a(f"topics create-subscription {PLAIN} -s s4 -m earliest", empty),  # never moved: the others' control
        a(f"topics subscriptions {PLAIN}", names(exactly=["s1", "s2", "s4"])),
        a(
            f"topics stats {PLAIN}",
            json_where(
                "5 messages in, backlog 5 on s1 and s4, 0 on s2",
                lambda s: (
                    s["msgInCounter"] == 5
                    and {k: v["msgBacklog"] for k, v in s["subscriptions"].items()} == {"s1": 5, "s2": 0, "s4": 5}
                ),
            ),
        ),
        a(f"topics peek-messages {PLAIN} -s s1 -n 2", messages(("*:0", "m0"), ("*:1", "m1"))),
        a(f"topics examine-messages {PLAIN} -i earliest -m 2", messages(("*:1", "m1"))),
        a(f"topics examine-messages {PLAIN} -i latest -m 1", messages(("*:4", "m4"))),
        a(
            f"topics last-message-id {PLAIN}",
            json_where("entry 4 of a ledger", lambda d: d["entryId"] == 4 and d["ledgerId"] >= 0),
        ),
        a(f"topics skip {PLAIN} -s s1 -n 2", empty),
        a(f"topics stats {PLAIN}", backlogs({"s1": 3, "s4": 5})),
        a(f"topics peek-messages {PLAIN} -s s1 -n 1", messages(("*:2", "m2"))),
        a(f"topics clear-backlog {PLAIN} -s s1", empty),
        a(f"topics stats {PLAIN}", backlogs({"s1": 0, "s4": 5})),
        a(f"topics reset-cursor {PLAIN} -s s1 -t 1h", empty),
        a(f"topics stats {PLAIN}", backlogs({"s1": 5, "s4": 5})),
        a(f"topics skip {PLAIN} -s nobody -n 1", refused("ubscription nobody not found")),
        a(f"topics unsubscribe {PLAIN} -s s2", empty),
        a(f"topics subscriptions {PLAIN}", names(exactly=["s1", "s4"])),
        a(f"topics create-subscription {PLAIN} -s s3 -m earliest", empty),
        a(f"topics unsubscribe {PLAIN} -s s3 -f", empty),
        a(f"topics peek-messages {PLAIN} -s s3 -n 1", messages(("*:0", "m0"))),  # creates s3 at the earliest
        a(f"topics subscriptions {PLAIN}", names(exactly=["s1", "s3", "s4"])),
        a(f"topics unsubscribe {PLAIN} -s s3", empty),
        # permissions
        a(f"topics permissions {PLAIN}", role_map({})),
        a(f"topics grant-permission {PLAIN} -r app2 -a produce,consume", empty),
        a(f"topics permissions {PLAIN}", role_map({"app2": {"produce", "consume"}})),
        a(f"topics revoke-permission {PLAIN} -r app2", empty),
        a(f"topics permissions {PLAIN}", role_map({})),
        # where a topic lives
        a(f"topics lookup {PLAIN}", text(service_url)),
        a(f"topics bundle-range {PLAIN}", text(BUNDLE)),
        a(f"brokers namespaces standalone --url {broker_id}", map_keys(include=[f"{NS}/{BUNDLE}"])),
        a(f"namespaces unload {NS}", empty),
        a(f"topics lookup {PLAIN}", text(service_url)),
        a(f"namespaces unload {NS} -b {BUNDLE}", empty),
        a(f"topics lookup {PLAIN}", text(service_url)),
        a(f"namespaces unload {NS} -b {BUNDLE} -d {broker_id}", empty),
        a(f"topics stats {PLAIN}", backlogs({"s1": 5, "s4": 5})),  # reloaded as it was
        a(f"topics unload {PLAIN}", empty),
        # stats
        a(
            f"topics stats-internal {PLAIN}",
            json_where(
                "ledgers holding the 5 entries, the cursors s1 and s4",
                lambda d: (
                    d["numberOfEntries"] == 5
                    and sum(lg["entries"] for lg in d["ledgers"]) == 5
                    and set(d["cursors"]) == {"s1", "s4"}
                ),
            ),
        ),
        a(
            f"topics stats-internal {PLAIN} -m",
            json_where(
                "ledgers and cursors", lambda d: d["numberOfEntries"] == 5 and set(d["cursors"]) == {"s1", "s4"}
            ),
        ),
        a(f"topics partitioned-stats {PARTED}", json_where("3 partitions", lambda d: d["metadata"]["partitions"] == 3)),
        a(
            f"topics partitioned-stats {PARTED} --per-partition",
            json_where("each partition's stats", lambda d: set(d["partitions"]) == set(partitions)),
        ),
        a(
            f"topics partitioned-stats-internal {PARTED}",
            json_where(
                "each partition's internal stats",
                lambda d: d["metadata"]["partitions"] == 3 and set(d["partitions"]) == set(partitions),
            ),
        ),
        # compaction
        a(f"topics compact {PLAIN}", text(f"Topic compaction requested for {PLAIN}")),
        a(f"topics compaction-status {PLAIN} -w", text("Compaction was a success")),
        a(f"topics compaction-status {PLAIN}", text("Compaction was a success")),
        # termination (e1 and e2 expire in the second run)
        Step(f"client produce {TERM} -m t0 -m t1", contains("2 messages successfully produced"), raw=True),
        a(f"topics create-subscription {TERM} -s e1 -m earliest", empty),
        a(f"topics create-subscription {TERM} -s e2 -m earliest", empty),
        a(f"topics terminate {TERM}", matches(r"Topic successfully terminated at \d+:1:-1")),
        Step(f"client produce {TERM} -m t2", contains("TopicTerminatedException", "Topic was already terminated")),
        a(f"topics terminate {PTERM}", refused("Termination of a partitioned topic is not allowed")),
        a(
            f"topics partitioned-terminate {PTERM}",
            matches(
                "\n".join(
                    rf"Topic {re.escape(PTERM)}-partition-{i} successfully terminated at \d+:-1:-1" for i in (0, 1)
                )
            ),
        ),
    ]


def topic_policies() -> list[Step]:
    return [
        # sizes at least the standalone's default backlog quota (10G), which Pulsar makes retention exceed
        *topic_policy(
            "retention",
            "-t 1h -s 20G",
            {"retentionTimeInMinutes": 60, "retentionSizeInMB": 20480},
            "-t 2h -s -1",
            {"retentionTimeInMinutes": 120, "retentionSizeInMB": -1},
        ),
        *topic_policy("message-ttl", "-t 2h", 7200, "-t 3h", 10800),
        *topic_policy("deduplication", "-e", True, "-d", False),
        *topic_policy("publish-rate", "-m 10 -b 100", publish_rate(10, 100), "-m 20 -b 200", publish_rate(20, 200)),
        *topic_policy(
            "dispatch-rate",
            "-md 100 -bd 1000 -dt 1",
            dispatch_rate(100, 1000, 1),
            "-md 200 -bd 2000 -dt 2 -rp",
            dispatch_rate(200, 2000, 2, True),
        ),
        *topic_policy(
            "subscription-dispatch-rate",
            "-md 30 -bd 300 -dt 3",
            dispatch_rate(30, 300, 3),
            "-md 40 -bd 400 -dt 4",
            dispatch_rate(40, 400, 4),
        ),
        *topic_policy("compaction-threshold", "-t 1M", 1024 * 1024, "-t 2M", 2 * 1024 * 1024),
        *topic_policy(
            "inactive-topic-policies",
            "-e -t 30m -m delete_when_subscriptions_caught_up",
            inactive("delete_when_subscriptions_caught_up", 1800, True),
            "-d -t 60 -m delete_when_no_subscriptions",
            inactive("delete_when_no_subscriptions", 60, False),
        ),
        *topic_policy("max-producers", "-p 3", 3, "-p 13", 13),
        *topic_policy("max-consumers", "-c 4", 4, "-c 14", 14),
        *topic_policy("max-consumers-per-subscription", "-c 5", 5, "-c 15", 15),
        # 4.0.8 names it set-max-subscriptions (-m) under topics,
        # set-max-subscriptions-per-topic (-s) under topicPolicies
        *topic_policy("max-subscriptions", "-m 6", 6, "-s 16", 16, policies_cmd="max-subscriptions-per-topic"),
        *topic_policy("max-message-size", "-m 1024", 1024, "-m 2048", 2048),
        a(f"topics get-deduplication-enabled {POL}", equals(None)),
        a(f"topics enable-deduplication {POL}", empty),
        a(f"topics get-deduplication-enabled {POL}", equals(True)),
        a(f"topics disable-deduplication {POL}", empty),
        a(f"topics get-deduplication-enabled {POL}", equals(False)),
        a(f"topics get-deduplication {POL}", equals(False)),
        a(f"topics remove-deduplication {POL}", empty),
        a(f"topics get-backlog-quotas {POL}", quotas({})),
        a(f"topics set-backlog-quota {POL} -l 1G -p producer_exception", empty),
        a(
            f"topics set-retention {POL} -t 1h -s 512M",
            refused("Retention Quota must exceed configured backlog quota for topic. Please increase retention quota"),
        ),
        a(
            f"topics get-backlog-quotas {POL}",
            quotas({"destination_storage": quota(1024**3, -1, "producer_exception")}),
        ),
        a(
            f"topicPolicies get-backlog-quota {POL}",
            quotas({"destination_storage": quota(1024**3, -1, "producer_exception")}),
        ),
        a(f"topicPolicies set-backlog-quota {POL} -lt 2h -p producer_request_hold -t message_age", empty),
        a(
            f"topics get-backlog-quotas {POL}",
            quotas(
                {
                    "destination_storage": quota(1024**3, -1, "producer_exception"),
                    "message_age": quota(-1, 7200, "producer_request_hold"),
                }
            ),
        ),
        a(f"topics remove-backlog-quota {POL}", empty),
        a(f"topicPolicies get-backlog-quota {POL}", quotas({"message_age": quota(-1, 7200, "producer_request_hold")})),
        a(f"topicPolicies remove-backlog-quota {POL} -t message_age", empty),
        a(f"topics get-backlog-quotas {POL}", quotas({})),
    ]


def schemas(files: dict[str, Path]) -> list[Step]:
    return [
        a(f"schemas get {SCH}", refused("Schema not found")),
        a(f"schemas upload {SCH} -f {files['v1']}", empty),
        a(f"schemas get {SCH}", schema(0, ["a"])),
        a(f"schemas compatibility {SCH} -f {files['v2']}", empty),  # pulsar-admin prints nothing either way
        a(f"schemas upload {SCH} -f {files['v2']}", empty),
        a(f"schemas get {SCH}", schema(1, ["a", "b"])),
        a(f"schemas get {SCH} -v 0", schema_info(["a"])),
        a(f"schemas get {SCH} -a", schema_versions(["a"], ["a", "b"])),
        a(f"schemas upload {SCH} -f {files['bad']}", refused("SchemaValidationException: Unable to read schema")),
        a(f"schemas get {SCH}", schema(1, ["a", "b"])),
        a(f"schemas delete {SCH}", empty),
        a(f"schemas get {SCH}", refused("Schema not found")),
        a(f"schemas upload {SCH} -f {files['bad']}", empty),  # a new history: nothing to be compatible with
        a(f"schemas get {SCH}", schema(3, ["a"])),  # 0, 1, the deletion (2), then this one
        a(f"schemas delete {SCH} -f", empty),
        a(f"schemas get {SCH}", refused("Schema not found")),
    ]


def first_run(broker_id: str, service_url: str, files: dict[str, Path]) -> list[Step]:
    return [
        *clusters_tenants_brokers(broker_id),
        *namespaces(),
        *topics(broker_id, service_url),
        *topic_policies(),
        *schemas(files),
    ]


def second_run(ledger: int, age: str) -> list[Step]:
    """``age``: how old the messages are by the broker's clock now (older than it, they expire)."""
    return [
        a(f"topics get-message-by-id {PLAIN} -l {ledger} -e 1", messages((f"{ledger}:1", "m1"))),
        # -e: after the message (pulsar-admin sends ResetCursorData's "excluded")
        a(f"topics reset-cursor {PLAIN} -s s1 -m {ledger}:2 -e", empty),
        a(f"topics stats {PLAIN}", backlogs({"s1": 2, "s4": 5})),
        a(f"topics reset-cursor {PLAIN} -s s1 -m {ledger}:2", empty),
        a(f"topics stats {PLAIN}", backlogs({"s1": 3, "s4": 5})),
        a(f"topics peek-messages {PLAIN} -s s1 -n 1", messages((f"{ledger}:2", "m2"))),
        a(f"topics create-subscription {PLAIN} -s s5 -m {ledger}:3", empty),
        a(f"topics stats {PLAIN}", backlogs({"s1": 3, "s4": 5, "s5": 2})),
        a(f"topics expire-messages {PLAIN} -s s5 -p {ledger}:3", empty),
        a(f"topics expire-messages {PLAIN} -s s1 -t {age}", empty),
        a(f"topics expire-messages {PLAIN} -s s4 -t 0", empty),  # a TTL of 0 expires nothing: s4 keeps 5
        a(f"topics expire-messages-all-subscriptions {TERM} -t {age}", empty),
        a(f"topics set-replicated-subscription-status {PLAIN} -s s5 --enable", empty),
        a(f"topics get-replicated-subscription-status {PLAIN} -s s5", contains(PLAIN, "true")),
        a(f"topics set-replicated-subscription-status {PLAIN} -s s5 --disable", empty),
        a(f"topics get-replicated-subscription-status {PLAIN} -s s5", contains(PLAIN, "false")),
        # refusals while a consumer is connected, then the forced forms
        a(f"topics unsubscribe {HELD} -s hold", refused("Subscription has active connected consumers")),
        a(
            f"topics delete {HELD}",
            contains(f"Failed to delete topic: {HELD}", "Topic has 1 connected producers/consumers"),
        ),
        a(f"topics unsubscribe {HELD} -s hold -f", empty),
        a(f"topics delete {HELD} -f", empty),
        a(f"topics delete-partitioned-topic {PHELD}", refused("Topic has active producers/subscriptions")),
        a(f"topics delete-partitioned-topic {PHELD} -f", empty),
        a(f"topics list-partitioned-topics {NS}", names(exactly=[PARTED, PTERM])),
        # the expiries asked for above (Pulsar moves the cursors asynchronously: looked at a few calls later)
        a(f"topics stats {PLAIN}", backlogs({"s1": 0, "s4": 5, "s5": 1})),
        a(f"topics stats {TERM}", backlogs({"e1": 0, "e2": 0})),
        # a subscription on a topic that does not exist yet: the topic is auto-created with it
        a(f"topics create-subscription {T}/auto -s x", empty),
        a(f"topics subscriptions {T}/auto", names(exactly=["x"])),
        a(f"topics delete {T}/auto", empty),
        # deletions
        a(f"topics delete {PLAIN}", empty),
        a(f"topics delete {POL}", empty),
        a(f"topics list {NS}", names(include=[TERM], exclude=[PLAIN, POL])),
        a(f"topics delete-partitioned-topic {PARTED}", empty),
        a(f"topics delete-partitioned-topic {PTERM} -f", empty),
        a(f"topics list-partitioned-topics {NS}", names(exclude=[PARTED, PTERM])),
        a(f"topics get-partitioned-topic-metadata {PARTED}", refused(f"Topic {PARTED} not found")),
    ]


def third_run() -> list[Step]:
    return [
        a(f"namespaces delete {NS}", refused("Cannot delete non empty namespace")),
        a(f"namespaces delete {NS} -f", empty),
        a("namespaces list pa", names(exactly=[])),
        a("tenants delete pa", empty),
        a("tenants list", names(exactly=["public", "pulsar"])),
    ]


_AVRO_V1 = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "string"}]}
_AVRO_V2 = {
    "type": "record",
    "name": "R",
    "fields": [{"name": "a", "type": "string"}, {"name": "b", "type": ["null", "int"], "default": None}],
}
_AVRO_BAD = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}  # string to int


def schema_files(directory: Path) -> dict[str, Path]:
    """PostSchemaPayload files for ``schemas upload`` / ``compatibility``."""
    files = {}
    for name, avro in (("v1", _AVRO_V1), ("v2", _AVRO_V2), ("bad", _AVRO_BAD)):
        path = directory / f"schema-{name}.json"
        path.write_text(json.dumps({"type": "AVRO", "schema": json.dumps(avro), "properties": {}}))
        files[name] = path
    return files


# --- pulsar-shell ----------------------------------------------------------------------------------

_MARKER = re.compile(r"^\[(\d+)/(\d+)\] Executing (.*)$", re.MULTILINE)


@dataclass
class Shell:
    """``bin/pulsar-shell -np -c CONF -f SCRIPT``: one JVM runs a script of commands."""

    home: Path
    conf: Path
    workdir: Path
    runs: int = 0

    def run(self, steps: list[Step]) -> tuple[list[str], list[str]]:
        """Runs the steps in one pulsar-shell; returns each command's output and the failures."""
        self.runs += 1
        script = self.workdir / f"script-{self.runs}.txt"
        script.write_text("".join(f"{s.line}\n" for s in steps))
        env = {
            **os.environ,
            # A fresh directory each run: pulsar-shell remembers a config there that would win over -c.
            "PULSAR_EXTRA_OPTS": f"-DshellHistoryDirectory={self.workdir / f'shell-{self.runs}'}"
            " -Dorg.jline.terminal.dumb=true",
            # The client commands' log lines flushed in order with the commands' output.
            "PULSAR_LOG_IMMEDIATE_FLUSH": "true",
        }
        p = subprocess.run(
            [str(self.home / "bin" / "pulsar-shell"), "-np", "-c", str(self.conf), "-f", str(script)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,  # errors go to stderr: one stream keeps them with their command
            text=True,
            env=env,
            timeout=300,
            check=False,  # its status is 0 whatever the commands did: each output is judged instead
        )
        out = p.stdout
        (self.workdir / f"output-{self.runs}.txt").write_text(out)
        marks = list(_MARKER.finditer(out))
        assert [m.group(3) for m in marks] == [s.line for s in steps], (
            f"pulsar-shell run {self.runs} did not execute the script as written (status {p.returncode}):\n"
            f"{out[-6000:]}"
        )
        outputs = []
        for i, m in enumerate(marks):
            end = marks[i + 1].start() if i + 1 < len(marks) else out.rfind("Goodbye!")
            outputs.append(out[m.end() : end if end > m.end() else len(out)])
        failures = []
        for i, (step, part) in enumerate(zip(steps, outputs, strict=True), 1):
            try:
                step.check(part if step.raw else clean(part))
            except (AssertionError, ValueError, KeyError, TypeError) as e:
                failures.append(f"[run {self.runs}, {i}/{len(steps)}] {step.line}\n  {e}\n  output:\n{part.rstrip()}")
        return outputs, failures


def run_all(
    home: Path, admin_url: str, service_url: str, workdir: Path, make_old: Callable[[], str]
) -> tuple[int, list[str]]:
    """The three runs against the broker at these URLs; ``make_old()`` ages the messages produced so far
    and returns that age for ``expire-messages -t``. Returns the number of commands run, the failures."""
    conf = workdir / "client.conf"
    conf.write_text(f"webServiceUrl={admin_url}\nbrokerServiceUrl={service_url}\n")
    shell = Shell(home, conf, workdir)
    broker_id = urlparse(admin_url).netloc
    first = first_run(broker_id, service_url, schema_files(workdir))
    outputs, failures = shell.run(first)
    at = next(i for i, s in enumerate(first) if s.line == f"admin topics last-message-id {PLAIN}")
    ledger = json.loads(clean(outputs[at]))["ledgerId"]
    second = second_run(ledger, make_old())
    client = pulsar.Client(service_url)
    try:
        client.subscribe(HELD, "hold")
        client.subscribe(PHELD, "hold")
        failures += shell.run(second)[1]
    finally:
        client.close()
    third = third_run()
    failures += shell.run(third)[1]
    return len(first) + len(second) + len(third), failures


@pytest.fixture(scope="module")
def pulsar_home() -> Path:
    reason = pulsar_reference.available()
    if reason:
        pytest.skip(f"Apache Pulsar's distribution unavailable: {reason}")
    return pulsar_reference.ensure_distribution()


def test_pulsar_admin_command_set(
    pulsar_home: Path, pulsar_broker_factory: Callable[..., Broker], tmp_path: Path
) -> None:
    clock = ManualClock()
    broker = pulsar_broker_factory(
        clock=clock,
        forceDeleteNamespaceAllowed=True,  # namespaces delete -f
        brokerDeleteInactiveTopicsEnabled=False,  # the clock moves two hours: no topic is collected for it
    )

    def make_old() -> str:
        clock.advance(2 * 3600)
        return "1h"

    count, failures = run_all(pulsar_home, broker.admin_url, broker.service_url, tmp_path, make_old)
    assert not failures, f"{len(failures)} of {count} pulsar-admin commands answered wrongly:\n\n" + "\n\n".join(
        failures
    )
