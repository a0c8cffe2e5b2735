"""Differential: the admin REST API as an operator sees it (status codes, bodies, JSON field names)."""

from __future__ import annotations

import html
import json
import time
from typing import Any

import pulsar

from .diffkit import Target, compare


def _shape(value: Any) -> Any:
    """A JSON value's shape: field names and JSON types, recursively (lists by their first element)."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if value is None:
        return "null"
    return type(value).__name__


def test_clusters_and_tenant_lifecycle(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        tenant = t.namespace.split("/")[1] + "-tenant"
        info = {"adminRoles": ["admin"], "allowedClusters": ["standalone"]}
        out: list[Any] = [t.rest("GET", "/admin/v2/clusters")]
        out.append(t.rest("PUT", f"/admin/v2/tenants/{tenant}", info)[0])
        out.append(t.rest("PUT", f"/admin/v2/tenants/{tenant}", info)[0])  # exists: 409
        status, body = t.rest("GET", f"/admin/v2/tenants/{tenant}")
        out.append((status, body))
        out.append(tenant in t.rest("GET", "/admin/v2/tenants")[1])
        out.append(t.rest("PUT", f"/admin/v2/namespaces/{tenant}/ns1")[0])
        out.append(t.rest("GET", f"/admin/v2/namespaces/{tenant}"))
        out.append(t.rest("DELETE", f"/admin/v2/tenants/{tenant}")[0])  # not empty: 409
        out.append(t.rest("DELETE", f"/admin/v2/namespaces/{tenant}/ns1")[0])
        out.append(t.rest("DELETE", f"/admin/v2/tenants/{tenant}")[0])
        out.append(t.rest("GET", f"/admin/v2/tenants/{tenant}")[0])  # gone: 404
        out.append(t.rest("DELETE", f"/admin/v2/tenants/{tenant}")[0])
        return out

    compare(pair, scenario)


def test_namespace_create_twice_and_missing(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        ns = t.namespace
        return [
            t.rest("PUT", f"/admin/v2/namespaces/{ns}")[0],  # exists: 409
            t.rest("GET", f"/admin/v2/namespaces/{ns}-missing/retention")[0],
            t.rest("DELETE", f"/admin/v2/namespaces/{ns}-missing")[0],
            t.rest("GET", f"/admin/v2/persistent/{ns}"),
        ]

    compare(pair, scenario)


def test_namespace_policies_round_trip(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        ns = t.namespace
        out: list[Any] = []
        for path, body in [
            ("retention", {"retentionTimeInMinutes": 60, "retentionSizeInMB": 100}),
            ("messageTTL", 120),
            ("deduplication", True),
            (
                "backlogQuota?backlogQuotaType=destination_storage",
                {"limitSize": 1048576, "policy": "producer_exception"},
            ),
        ]:
            out.append((path, t.rest("POST", f"/admin/v2/namespaces/{ns}/{path}", body)[0]))
        out.append(t.rest("GET", f"/admin/v2/namespaces/{ns}/retention"))
        out.append(t.rest("GET", f"/admin/v2/namespaces/{ns}/messageTTL"))
        out.append(t.rest("GET", f"/admin/v2/namespaces/{ns}/deduplication"))
        status, quotas = t.rest("GET", f"/admin/v2/namespaces/{ns}/backlogQuotaMap")
        out.append((status, {k: (v.get("limitSize"), v.get("policy")) for k, v in quotas.items()}))
        out.append(t.rest("POST", f"/admin/v2/namespaces/{ns}/messageTTL", -5)[0])  # invalid: 412
        return out

    compare(pair, scenario)


def test_partitioned_topic_lifecycle(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        base = f"/admin/v2/persistent/{t.namespace}"
        return [
            t.rest("PUT", f"{base}/orders/partitions", 3)[0],
            t.rest("PUT", f"{base}/orders/partitions", 3)[0],  # exists: 409
            t.rest("GET", f"{base}/orders/partitions"),
            t.rest("GET", f"{base}/missing/partitions"),  # never created: 0 partitions
            t.rest("PUT", f"{base}/zero/partitions", 0)[0],
            t.rest("POST", f"{base}/orders/partitions", 5)[0],  # grow
            t.rest("GET", f"{base}/orders/partitions"),
            t.rest("POST", f"{base}/orders/partitions", 2)[0],  # shrink: refused
            sorted(t.rest("GET", f"{base}/partitioned")[1]),
            t.rest("PUT", f"{base}/plain")[0],
            t.rest("PUT", f"{base}/plain")[0],  # exists: 409
            sorted(t.rest("GET", f"{base}")[1]),
            t.rest("DELETE", f"{base}/orders/partitions")[0],
            t.rest("DELETE", f"{base}/plain")[0],
            t.rest("DELETE", f"{base}/plain")[0],  # gone: 404
        ]

    compare(pair, scenario)


def test_persistence_policies(pair: tuple[Target, Target]) -> None:
    """The ``persistence`` policy over REST, namespace and topic level: unset, set, read, Pulsar's
    400s for quorums out of bounds or out of order, removed."""

    def scenario(t: Target) -> list[Any]:
        ns = f"/admin/v2/namespaces/{t.namespace}/persistence"
        topic = f"/admin/v2/persistent/{t.namespace}/kept"
        assert t.rest("PUT", topic)[0] == 204
        body = {"bookkeeperEnsemble": 3, "bookkeeperWriteQuorum": 2, "bookkeeperAckQuorum": 2}
        out: list[Any] = [t.rest("GET", ns), t.rest("POST", ns, body)[0], t.rest("GET", ns)]
        for e, qw, qa in [(2, 3, 2), (3, 2, 3), (0, 0, 0), (6, 2, 2), (3, 6, 2), (3, 2, 0), (-1, 2, 2)]:
            bad = {"bookkeeperEnsemble": e, "bookkeeperWriteQuorum": qw, "bookkeeperAckQuorum": qa}
            out.append(t.rest("POST", ns, bad))
        out.append(t.rest("POST", ns, {"bookkeeperEnsemble": 1})[0])  # the others default to 2
        out += [t.rest("DELETE", ns)[0], t.rest("GET", ns)]
        out += [
            t.rest("GET", f"{topic}/persistence"),
            t.rest("POST", f"{topic}/persistence", body)[0],
            t.rest("GET", f"{topic}/persistence"),
            t.rest("POST", f"{topic}/persistence", {**body, "bookkeeperAckQuorum": 3}),
            t.rest("DELETE", f"{topic}/persistence")[0],
        ]
        return out

    compare(pair, scenario)


def test_delete_topics_in_use(pair: tuple[Target, Target]) -> None:
    """A topic (and a partitioned topic) with clients connected: refused without ``force``, with
    Pulsar's status and reason; deleted with it."""

    def scenario(t: Target) -> list[Any]:
        base = f"/admin/v2/persistent/{t.namespace}"
        client = t.client()
        producer = client.create_producer(t.topic("busy"))
        consumer = client.subscribe(t.topic("busy"), "s")
        assert t.rest("PUT", f"{base}/parted/partitions", 2)[0] == 204
        on_partition = client.subscribe(t.topic("parted-partition-0"), "s")
        out: list[Any] = [
            t.rest("DELETE", f"{base}/busy"),  # a producer and a consumer: 412
            t.rest("DELETE", f"{base}/parted/partitions"),  # a consumer on a partition: 412
            t.rest("GET", f"{base}/parted/partitions")[1],  # still there
        ]
        consumer.close()
        out.append(t.rest("DELETE", f"{base}/busy"))  # the producer alone still counts
        out.append(t.rest("DELETE", f"{base}/parted/partitions?force=true")[0])
        out.append(t.rest("GET", f"{base}/parted/partitions")[1])
        out.append(t.rest("DELETE", f"{base}/busy?force=true")[0])
        producer.close()
        on_partition.close()
        return out

    compare(pair, scenario)


def _topic_with_traffic(t: Target, stem: str) -> str:
    topic = t.topic(stem)
    client = t.client()
    consumer = client.subscribe(topic, "sub-a")
    producer = client.create_producer(topic, producer_name=f"{stem}-producer")
    for i in range(5):
        producer.send(f"m{i}".encode())
    consumer.acknowledge(consumer.receive(timeout_millis=5000))
    return topic


#: Topic stats fields of PIP-431 (Apache Pulsar 4.1), which this broker reports and 4.0 has not.
PIP_431 = {"topicCreationTimeStamp", "lastPublishTimeStamp"}


def test_topic_stats_shape(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> Any:
        topic = _topic_with_traffic(t, "stats")
        status, stats = t.rest("GET", f"/admin/v2/persistent/{topic.split('://')[1]}/stats")
        sub = stats["subscriptions"]["sub-a"]
        return {
            "status": status,
            # PIP-431's timestamps (Pulsar 4.1) are newer than the 4.0 reference.
            "top": sorted(set(stats) - PIP_431),
            "subscription": sorted(sub),
            "consumer": sorted(sub["consumers"][0]),
            "publisher": sorted(stats["publishers"][0]),
            "counts": (stats["msgInCounter"], sub["msgBacklog"], sub["type"], stats["publishers"][0]["producerName"]),
        }

    compare(pair, scenario)


def test_internal_stats_shape(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> Any:
        topic = _topic_with_traffic(t, "internal")
        status, stats = t.rest("GET", f"/admin/v2/persistent/{topic.split('://')[1]}/internalStats")
        cursor = stats["cursors"]["sub-a"]
        # The one field pulsar-rs adds, a documented improvement (README, storage guarantees):
        # `corruptEntries` lists the entries journal recovery found damaged ("ledger:entry"),
        # which Pulsar (its storage on BookKeeper) has no equivalent of. Allowed, nothing else.
        extras = stats.get("corruptEntries", [])
        assert t.name == "pulsar-rs" or "corruptEntries" not in stats
        return {
            "status": status,
            "extras": isinstance(extras, list) and all(isinstance(p, str) for p in extras),
            "top": _shape({k: v for k, v in stats.items() if k not in ("cursors", "ledgers", "corruptEntries")}),
            "ledger": _shape(stats["ledgers"][0]) if stats["ledgers"] else None,
            "cursor": sorted(cursor),
            "entries": stats["numberOfEntries"],
        }

    compare(pair, scenario)


def test_partitioned_internal_stats(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> Any:
        base = f"/admin/v2/persistent/{t.namespace}"
        out: list[Any] = [t.rest("PUT", f"{base}/parted/partitions", 2)[0], t.rest("PUT", f"{base}/plain")[0]]
        t.client().create_producer(t.topic("parted-partition-1")).send(b"one")
        status, stats = t.rest("GET", f"{base}/parted/partitioned-internalStats")
        out.append(
            {
                "status": status,
                "top": sorted(stats),
                "metadata": stats["metadata"],
                "partitions": sorted(stats["partitions"]),
                "entries": [stats["partitions"][p]["numberOfEntries"] for p in sorted(stats["partitions"])],
            }
        )
        out.append(t.rest("GET", f"{base}/plain/partitioned-internalStats"))
        out.append(t.rest("GET", f"{base}/plain/partitioned-stats"))
        return out

    compare(pair, scenario)


def _wait_backlog(t: Target, base: str, sub: str, expected: int) -> None:
    deadline = time.monotonic() + 10
    while t.rest("GET", f"{base}/stats")[1]["subscriptions"][sub]["msgBacklog"] != expected:
        assert time.monotonic() < deadline, f"{t.name}: backlog of {sub} never reached {expected}"
        time.sleep(0.1)  # polling the broker's stats: no event to wait on over REST


def test_subscription_admin_operations(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        topic = _topic_with_traffic(t, "subops")
        base = f"/admin/v2/persistent/{topic.split('://')[1]}"
        _wait_backlog(t, base, "sub-a", 4)  # the client's ack is flushed asynchronously
        out: list[Any] = [
            t.rest("PUT", f"{base}/subscription/sub-b", {"entryId": -1, "ledgerId": -1})[0],  # latest
            t.rest("PUT", f"{base}/subscription/sub-b", {"entryId": -1, "ledgerId": -1})[0],  # exists: 409
            sorted(t.rest("GET", f"{base}/subscriptions")[1]),
            t.rest("POST", f"{base}/subscription/sub-a/skip/2")[0],
            t.rest("GET", f"{base}/stats")[1]["subscriptions"]["sub-a"]["msgBacklog"],
            t.rest("POST", f"{base}/subscription/sub-a/skip_all")[0],
            t.rest("GET", f"{base}/stats")[1]["subscriptions"]["sub-a"]["msgBacklog"],
            t.rest("POST", f"{base}/subscription/missing/skip_all")[0],
            t.rest("DELETE", f"{base}/subscription/sub-b")[0],
            t.rest("DELETE", f"{base}/subscription/sub-a")[0],  # has a consumer: 412
        ]
        return out

    compare(pair, scenario)


def owned(t: Target, ns: str, topics: list[str]) -> list[str]:
    """The bundles of `ns` the (only) broker owns, as `pulsar-admin brokers namespaces` lists them,
    `topics` (local names) loaded. Apache Pulsar also owns the bundle of the namespace's
    `__change_events` system topic, which its topic policies service reads once a topic of the
    namespace loads; pulsar-rs keeps topic policies elsewhere (README), so that bundle counts only
    when one of `topics` is in it too."""
    status, brokers = t.rest("GET", "/admin/v2/brokers/standalone")
    assert status == 200 and len(brokers) == 1, brokers
    status, bundles = t.rest("GET", f"/admin/v2/brokers/standalone/{brokers[0]}/ownedNamespaces")
    assert status == 200, bundles

    def bundle(local: str) -> str:
        return f"{ns}/" + t.rest("GET", f"/lookup/v2/topic/persistent/{ns}/{local}/bundle")[1]

    policies = bundle("__change_events")
    held = {bundle(local) for local in topics}
    return sorted(b for b in bundles if b.startswith(ns + "/") and (b != policies or b in held))


def test_namespace_bundles(pair: tuple[Target, Target]) -> None:
    """A namespace's bundles as `namespaces create [--bundles N]`, `namespaces bundles`,
    `namespaces policies`, `topics bundle-range` and `namespaces unload --bundle` see them: the
    default count (`defaultNumberOfNamespaceBundles`), a count or boundaries given at creation,
    refused boundaries, and unloading one bundle (its topics only) or one that does not exist."""

    def scenario(t: Target) -> list[Any]:
        base = t.namespace
        out: list[Any] = [t.rest("GET", f"/admin/v2/namespaces/{base}/bundles")]
        out.append(t.rest("GET", f"/admin/v2/namespaces/{base}")[1]["bundles"])
        for i in range(6):
            out.append(t.rest("GET", f"/lookup/v2/topic/persistent/{base}/t{i}/bundle"))
        given: list[Any] = [
            {"bundles": {"numBundles": 8}},
            {"bundles": {"boundaries": ["0x00000000", "0x80000000", "0xffffffff"], "numBundles": 2}},
            {"bundles": {"boundaries": ["0x00000000", "0x10", "0x80000000", "0xffffffff"]}},
            {"bundles": {"boundaries": ["0x00000000", "0x80000000"], "numBundles": 1}},
            {"bundles": {"boundaries": ["0x00000000", "0x80000000", "0x80000000", "0xffffffff"]}},
            {"bundles": {"numBundles": 0}},
            {"bundles": {"numBundles": -3}},
        ]
        for k, body in enumerate(given):
            ns = f"{base}-b{k}"
            status, text = t.rest("PUT", f"/admin/v2/namespaces/{ns}", body)
            out.append((k, status, text))
            if status == 204:
                out.append(t.rest("GET", f"/admin/v2/namespaces/{ns}/bundles"))
                out.append(t.rest("GET", f"/lookup/v2/topic/persistent/{ns}/x/bundle"))
                if k == 0:
                    # `brokers namespaces`: the broker owns the bundle a producer's lookup
                    # landed on, not the namespace's others.
                    t.client().create_producer(f"persistent://{ns}/x")
                    out.append(owned(t, ns, ["x"]))
        # Unloading one bundle unloads the topics in it, not the others: their producers
        # reconnect (a new `connectedSince`), the others' stay.
        c = t.client()
        names = [f"u{i}" for i in range(8)]
        producers = {n: c.create_producer(f"persistent://{base}/{n}") for n in names}

        def since(n: str) -> Any:
            return t.rest("GET", f"/admin/v2/persistent/{base}/{n}/stats")[1]["publishers"][0]["connectedSince"]

        ranges = {n: t.rest("GET", f"/lookup/v2/topic/persistent/{base}/{n}/bundle")[1] for n in names}
        before = {n: since(n) for n in names}
        one = ranges[names[0]]
        time.sleep(1.1)  # `connectedSince` counts milliseconds: a reconnection shows
        out.append(t.rest("PUT", f"/admin/v2/namespaces/{base}/{one}/unload"))
        for p in producers.values():
            p.send(b"after")  # each reconnects where its bundle is served now
        out.append(sorted((since(n) != before[n], ranges[n] == one) for n in names))
        # Each receipted message is stored once, those sent across the unload included.
        reader = c.create_reader(f"persistent://{base}/{names[0]}", pulsar.MessageId.earliest)
        got = []
        while reader.has_message_available():
            got.append(reader.read_next(timeout_millis=5000).data())
        out.append(got)
        out.append(owned(t, base, names))
        out.append(t.rest("PUT", f"/admin/v2/namespaces/{base}/0x00000000_0x00000010/unload"))
        # Not a range: Pulsar's unexpected-error 500, pulsar-rs's 412 (README).
        out.append(t.rest("PUT", f"/admin/v2/namespaces/{base}/notarange/unload")[0] >= 400)
        return out

    compare(pair, scenario)


def test_bundle_split(pair: tuple[Target, Target]) -> None:
    """`pulsar-admin namespaces split-bundle`: halving a bundle (the last one too, whose upper end
    is included), between the middle topics, at given positions, with too few topics (left
    whole), and the refusals (an unknown algorithm, positions missing, a bundle that is not one);
    the topics of a split bundle stay connected and land in the halves."""

    def scenario(t: Target) -> list[Any]:
        ns = t.namespace
        base = f"/admin/v2/namespaces/{ns}"
        c = t.client()
        names = [f"s{i}" for i in range(12)]
        producers = {n: c.create_producer(f"persistent://{ns}/{n}") for n in names}

        def ranges() -> dict[str, Any]:
            return {n: t.rest("GET", f"/lookup/v2/topic/persistent/{ns}/{n}/bundle")[1] for n in names}

        def since() -> dict[str, Any]:
            return {
                n: t.rest("GET", f"/admin/v2/persistent/{ns}/{n}/stats")[1]["publishers"][0]["connectedSince"]
                for n in names
            }

        before = since()
        out: list[Any] = [t.rest("GET", f"{base}/bundles")]
        out.append(t.rest("PUT", f"{base}/0x00000000_0x40000000/split"))
        out.append(t.rest("PUT", f"{base}/0xc0000000_0xffffffff/split?splitAlgorithmName=range_equally_divide"))
        out.append(t.rest("GET", f"{base}/bundles"))
        # Topic counts and positions: only where pulsar-rs and Pulsar see the same topics (Pulsar
        # also counts its `__change_events` topic, pulsar-rs keeps topic policies elsewhere).
        here = ranges()
        system = t.rest("GET", f"/lookup/v2/topic/persistent/{ns}/__change_events/bundle")[1]
        crowded = sorted(r for r in set(here.values()) if r != system and list(here.values()).count(r) >= 2)
        if crowded:
            r = crowded[0]
            out.append(("count", r, t.rest("PUT", f"{base}/{r}/split?splitAlgorithmName=topic_count_equally_divide")))
        out.append(t.rest("GET", f"{base}/bundles"))
        # At given positions (one outside the bundle, ignored), in the most crowded bundle left.
        here = ranges()
        counts = {r: list(here.values()).count(r) for r in set(here.values()) if r != system}
        r = max(sorted(counts), key=lambda k: counts[k])
        lo, hi = (int(x, 16) for x in r.split("_"))
        at = [lo + (hi - lo) // 3, lo + 2 * (hi - lo) // 3, hi + 5]
        out.append(("positions", r, counts[r]))
        out.append(t.rest("PUT", f"{base}/{r}/split?splitAlgorithmName=specified_positions_divide", at))
        out.append(t.rest("GET", f"{base}/bundles"))
        # Pulsar's list names flow_or_qps_equally_divide too, which pulsar-rs does not split by
        # (README): the refusal is compared up to the list.
        status, body = t.rest("PUT", f"{base}/0x00000000_0x20000000/split?splitAlgorithmName=nope")
        out.append((status, body["reason"].split(", supported")[0]))
        out.append(t.rest("PUT", f"{base}/0x00000000_0x20000000/split?splitAlgorithmName=specified_positions_divide"))
        out.append(t.rest("PUT", f"{base}/0x00000000_0x30000000/split"))
        for p in producers.values():
            p.send(b"after the split")
        out.append(since() == before)
        out.append(sorted(ranges().items()))
        return out

    compare(pair, scenario)


def test_schema_admin_calls(pair: tuple[Target, Target]) -> None:
    """`pulsar-admin schemas upload / compatibility / get / delete` over REST: a compatible and an
    incompatible change under the namespace's strategy (BACKWARD, then ALWAYS_INCOMPATIBLE), an
    unreadable schema, a missing topic's schema."""

    def avro(*fields: tuple[str, str]) -> dict[str, Any]:
        definition = {"type": "record", "name": "R", "fields": [{"name": n, "type": t} for n, t in fields]}
        return {"type": "AVRO", "schema": json.dumps(definition), "properties": {}}

    v1 = avro(("a", "string"))
    v2 = avro(("a", "string"), ("b", ["null", "string"]))
    v3 = {
        **v2,
        "schema": json.dumps(
            {
                **json.loads(v2["schema"]),
                "fields": [{"name": "a", "type": "string"}, {"name": "b", "type": ["null", "string"], "default": None}],
            }
        ),
    }
    incompatible = avro(("a", "int"))
    bad = {"type": "AVRO", "schema": "{not json", "properties": {}}

    def why(answer: tuple[int, Any]) -> tuple[int, Any]:
        """(status, body) with a refusal's text cut to what both brokers say: Pulsar answers some
        as its unexpected-error page (`Message: ...` and a stack trace) or as Jetty's error
        document (`message`, HTML-escaped), and prints a schema pretty where pulsar-rs prints it
        as given; the text before the first schema is compared."""
        status, body = answer
        if status < 400 or not isinstance(body, dict):
            return answer
        text = html.unescape(str(body.get("reason") or body.get("message")))
        text = text.split("Message: ", 1)[-1].split("\n", 1)[0]
        return status, text

    def verdict(answer: tuple[int, Any]) -> tuple[Any, Any]:
        """A compatibility test's answer: a refusal's status is left out (Pulsar answers its
        unexpected-error 500, pulsar-rs 409 or 422: README), its text is compared."""
        status, text = why(answer)
        return ("refused" if status >= 400 else status), text

    def scenario(t: Target) -> list[Any]:
        ns = t.namespace
        base = f"/admin/v2/schemas/{ns}/sch"
        out: list[Any] = [t.rest("GET", f"{base}/schema")]
        out.append(t.rest("POST", f"{base}/compatibility", v1))
        out.append(t.rest("POST", f"{base}/schema", v1))
        for body in (v2, incompatible, bad):
            out.append(verdict(t.rest("POST", f"{base}/compatibility", body)))
        out.append(why(t.rest("POST", f"{base}/schema", incompatible)))
        out.append(why(t.rest("POST", f"{base}/schema", bad)))
        strategy = f"/admin/v2/namespaces/{ns}/schemaCompatibilityStrategy"
        out.append(t.rest("PUT", strategy, "ALWAYS_INCOMPATIBLE"))
        out.append(verdict(t.rest("POST", f"{base}/compatibility", v2)))
        out.append(why(t.rest("POST", f"{base}/schema", v2)))
        out.append(t.rest("PUT", strategy, "BACKWARD"))
        out.append(verdict(t.rest("POST", f"{base}/compatibility", v2)))
        out.append(t.rest("POST", f"{base}/compatibility", v3))
        out.append(t.rest("POST", f"{base}/schema", v3))
        out.append(t.rest("DELETE", f"{base}/schema"))
        out.append(t.rest("GET", f"{base}/schema"))
        return out

    compare(pair, scenario)


def test_refusal_texts(pair: tuple[Target, Target]) -> None:
    """Status and reason of refusals an operator meets: a missing subscription (skip, expire,
    reset-cursor, peek, clear-backlog), a negative TTL or retention, a missing topic's stats."""

    def scenario(t: Target) -> list[Any]:
        ns = t.namespace
        c = t.client()
        c.create_producer(f"persistent://{ns}/r").send(b"x")
        base = f"/admin/v2/persistent/{ns}/r"
        calls: list[tuple[str, str, Any]] = [
            ("POST", f"{base}/subscription/nobody/skip/1", None),
            ("POST", f"{base}/subscription/nobody/expireMessages/10", None),
            ("POST", f"{base}/subscription/nobody/resetcursor/0", None),
            ("GET", f"{base}/subscription/nobody/position/1", None),
            ("POST", f"{base}/subscription/nobody/skip_all", None),
            ("DELETE", f"{base}/subscription/nobody", None),
            ("POST", f"/admin/v2/namespaces/{ns}/messageTTL", -5),
            ("POST", f"{base}/messageTTL?messageTTL=-5", None),
            ("POST", f"/admin/v2/namespaces/{ns}/retention", {"retentionTimeInMinutes": -2, "retentionSizeInMB": 1}),
            ("GET", f"/admin/v2/persistent/{ns}/missing/stats", None),
            ("GET", f"/admin/v2/persistent/{ns}/missing/internalStats", None),
            ("DELETE", f"/admin/v2/persistent/{ns}/missing", None),
            ("PUT", f"/admin/v2/persistent/{ns}/r/partitions", 2),
            ("GET", f"/admin/v2/namespaces/{ns}-missing/messageTTL", None),
        ]
        return [t.rest(method, path, body) for method, path, body in calls]

    compare(pair, scenario)
