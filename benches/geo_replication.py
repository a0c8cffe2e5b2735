"""Geo-replication beside Apache Pulsar: two clusters on this machine (pulsar-rs standalones, then
Apache Pulsar 4.0.8 standalones as ``tools/pulsar_reference`` ships them), a namespace replicated
between them, and two measurements from east to west:

* **lag** at a fixed rate: ``--rate`` msg/s of 100 B unbatched messages on east for ``--duration``
  seconds, a consumer on west; lag = west's receive time - the message's publish time (one clock:
  the same machine). p50 / p99 / max in ms.
* **throughput**: ``--count`` messages of 100 B, batched, published on east as fast as the client
  goes, no consumer; the time from the first send until west's topic stats count them all
  (``msgInCounter``): replicated msg/s.

Each pair is fresh (empty data directories); the brokers' CPU (utime + stime of both process groups)
per replicated message is reported with each. JSON to ``--out``; the table goes in
``benches/RESULTS.md``.

    python benches/geo_replication.py --out benches/out/geo_replication.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pulsar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools.pulsar_reference import PulsarStandalone

from pulsar_rs.testing.process import PulsarRsBroker

TICKS = os.sysconf("SC_CLK_TCK")


def request(method: str, url: str, body: object | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        raw = r.read()
        return json.loads(raw) if raw else None


def group_cpu_s(pid: int) -> float:
    """utime + stime of every process in ``pid``'s process group (the broker, or Pulsar's JVM)."""
    total = 0
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pid:
            total += int(fields[11]) + int(fields[12])
    return total / TICKS


class Side:
    """One cluster: its admin URL, service URL and process group."""

    def __init__(self, name: str, admin: str, service: str, pgid: int) -> None:
        self.name, self.admin, self.service, self.pgid = name, admin, service, pgid


def set_up(east: Side, west: Side) -> None:
    for here, other in ((east, west), (west, east)):
        try:
            request(
                "PUT",
                f"{here.admin}/admin/v2/clusters/{other.name}",
                {"serviceUrl": other.admin, "brokerServiceUrl": other.service},
            )
        except urllib.error.HTTPError as e:
            if e.code != 409:
                raise
        request("PUT", f"{here.admin}/admin/v2/tenants/geo", {"adminRoles": [], "allowedClusters": ["east", "west"]})
        request("PUT", f"{here.admin}/admin/v2/namespaces/geo/ns")
        request("POST", f"{here.admin}/admin/v2/namespaces/geo/ns/replication", ["east", "west"])


def lag(east: Side, west: Side, rate: int, duration: float) -> dict[str, float]:
    topic = "persistent://geo/ns/lag"
    ce, cw = pulsar.Client(east.service), pulsar.Client(west.service)
    try:
        lags: list[float] = []
        consumer = cw.subscribe(
            topic,
            "lag",
            message_listener=lambda c, m: (lags.append(time.time() * 1000 - m.publish_timestamp()), c.acknowledge(m)),
        )
        p = ce.create_producer(topic, batching_enabled=False)
        p.send(b"warm-up")
        time.sleep(3)
        lags.clear()
        n = int(rate * duration)
        start = time.monotonic()
        for i in range(n):
            target = start + i / rate
            if (wait := target - time.monotonic()) > 0:
                time.sleep(wait)
            p.send_async(b"x" * 100, None)
        p.flush()
        deadline = time.monotonic() + 60
        while len(lags) < n and time.monotonic() < deadline:
            time.sleep(0.1)
        consumer.close()
        q = sorted(lags)
        return {
            "sent": n,
            "received": len(q),
            "p50_ms": q[len(q) // 2],
            "p99_ms": q[int(len(q) * 0.99)],
            "max_ms": q[-1],
            "mean_ms": statistics.fmean(q),
        }
    finally:
        ce.close()
        cw.close()


def throughput(east: Side, west: Side, count: int) -> dict[str, float]:
    topic = "persistent://geo/ns/throughput"
    local = topic.removeprefix("persistent://")
    ce, cw = pulsar.Client(east.service), pulsar.Client(west.service)
    try:
        # Both sides load the topic first (west's subscription keeps what arrives).
        cw.subscribe(topic, "keep").close()
        p = ce.create_producer(topic, batching_enabled=True, batching_max_messages=1000, block_if_queue_full=True)
        time.sleep(2)
        cpu0 = group_cpu_s(east.pgid) + group_cpu_s(west.pgid)
        start = time.monotonic()
        for _ in range(count):
            p.send_async(b"y" * 100, None)
        p.flush()
        published = time.monotonic() - start
        while request("GET", f"{west.admin}/admin/v2/persistent/{local}/stats")["msgInCounter"] < count:
            time.sleep(0.05)
            if time.monotonic() - start > 600:
                raise RuntimeError("west never got every message")
        elapsed = time.monotonic() - start
        cpu = group_cpu_s(east.pgid) + group_cpu_s(west.pgid) - cpu0
        return {
            "count": count,
            "published_s": published,
            "replicated_s": elapsed,
            "replicated_msg_per_s": count / elapsed,
            "brokers_cpu_us_per_msg": cpu * 1e6 / count,
        }
    finally:
        ce.close()
        cw.close()


def run_pair(kind: str, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    if kind == "pulsar-rs":
        a = PulsarRsBroker(work, "east", {"clusterName": "east"})
        b = PulsarRsBroker(work, "west", {"clusterName": "west"})
        sides = (Side("east", a.http, a.url, a.proc.pid), Side("west", b.http, b.url, b.proc.pid))
        stop = [a.kill, b.kill]
    else:
        pa = PulsarStandalone({"clusterName": "east"}).start()
        pb = PulsarStandalone({"clusterName": "west"}).start()
        sides = (
            Side("east", pa.admin_url, pa.service_url, pa._proc.pid),  # type: ignore[union-attr]
            Side("west", pb.admin_url, pb.service_url, pb._proc.pid),  # type: ignore[union-attr]
        )
        stop = [pa.stop, pb.stop, pa.cleanup, pb.cleanup]
    try:
        set_up(*sides)
        return {
            "lag": lag(*sides, args.rate, args.duration),
            "throughput": throughput(*sides, args.count),
        }
    finally:
        for s in stop:
            s()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=int, default=2000)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--count", type=int, default=200_000)
    ap.add_argument("--pairs", default="pulsar-rs,pulsar")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "args": vars(args) | {"out": str(args.out)},
    }
    for kind in args.pairs.split(","):
        with tempfile.TemporaryDirectory(prefix=f"geo-{kind}-") as work:
            results[kind] = run_pair(kind, Path(work), args)
            print(kind, json.dumps(results[kind]), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
