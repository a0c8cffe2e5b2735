"""Helpers for the dispatch suites: Pulsar's routing rules over the broker's own key hash
(``pulsar_rs.key_hash``, the one implementation), so the tests can predict which consumer owns
a key or a failover topic."""

from __future__ import annotations

import json
import time
import urllib.request

from pulsar_rs import key_hash, murmur3_32

__all__ = [
    "failover_active",
    "key_hash",
    "key_slot",
    "murmur3_32",
    "sub_stats",
    "topic_stats",
    "wait_for_backlog",
]


def key_slot(key: str) -> int:
    """Key_Shared slot of a key (Pulsar 4.x: hash % 65536, 0 remapped to 1)."""
    return max(key_hash(key.encode()) % 65536, 1)


def failover_active(names: list[str], topic: str) -> str:
    """The active consumer of a non-partitioned Failover topic (consistent hash ring)."""
    ring: dict[int, str] = {}
    for name in sorted(names):
        for j in range(100):
            ring[key_hash(f"{name}{j}".encode())] = name
    h = key_hash(topic.encode())
    points = sorted(ring)
    for p in points:
        if p >= h:
            return ring[p]
    return ring[points[0]]


def topic_stats(broker, topic: str) -> dict:
    short = topic.rsplit("/", 1)[1]
    url = f"{broker.admin_url}/admin/v2/persistent/public/default/{short}/stats"
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def sub_stats(broker, topic: str, sub: str) -> dict:
    return topic_stats(broker, topic)["subscriptions"][sub]


def wait_for_backlog(broker, topic: str, sub: str, backlog: int, timeout: float = 10.0) -> None:
    """Waits until the subscription's backlog is ``backlog``: the client sends acknowledgements
    grouped (every 100 ms), so a test that needs them at the broker polls its stats for them."""
    deadline = time.monotonic() + timeout
    while (seen := sub_stats(broker, topic, sub)["msgBacklog"]) != backlog:
        assert time.monotonic() < deadline, f"backlog {seen} after {timeout} s, expected {backlog}"
        time.sleep(0.05)  # poll: the acknowledgements reach the broker asynchronously
