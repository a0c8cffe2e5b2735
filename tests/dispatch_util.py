"""Helpers for the dispatch suites: Pulsar's Murmur3 routing rules, recomputed in Python so the
tests can predict which consumer owns a key or a failover topic."""

from __future__ import annotations

import json
import urllib.request


def murmur3_32(data: bytes, seed: int = 0) -> int:
    c1, c2, mask = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF
    h = seed
    n = len(data) // 4 * 4
    for i in range(0, n, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        k = (k * c2) & mask
        h ^= k
        h = ((h << 13) | (h >> 19)) & mask
        h = (h * 5 + 0xE6546B64) & mask
    tail = data[n:]
    if tail:
        k = int.from_bytes(tail, "little")
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        k = (k * c2) & mask
        h ^= k
    h ^= len(data) & mask
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    h ^= h >> 16
    return h


def key_hash(data: bytes) -> int:
    return murmur3_32(data) & 0x7FFFFFFF


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
