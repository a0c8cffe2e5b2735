"""Soak under hostile clients (issue 37, item 4): pulsar-rs and Apache Pulsar side by side.

One broker at a time (pulsar-rs: ``pulsar-rs-server`` from ``--rs-server-bin``, durable defaults;
Apache Pulsar 4.0.8 standalone as ``tools/pulsar_reference`` runs it) goes through phases of
hostile load while a **well-behaved client** (the official Python client: one producer and one
consumer on their own topic) sends one message every 20 ms and measures the time until it is
received. Per phase: the well-behaved client's end-to-end latency p50/p99 and how many of its
messages arrived, and the broker's resident memory (current and the phase's peak, summed over its
process group). Phases:

* ``baseline``: nothing else.
* ``idle``: ``--idle`` raw TCP connections that CONNECT and then stay silent (answering no PING;
  the broker may drop them after its keep-alive, as Pulsar does).
* ``slow-readers``: 50 raw consumers (Shared, one subscription each) that grant 1 000 permits and
  never read their socket, on a topic a raw producer fills with 1 KiB messages.
* ``flood``: one raw connection sends 1 KiB SENDs as fast as its socket takes them and never reads
  its receipts.
* ``sub-storm``: ``--subs`` subscriptions created on one topic, one SUBSCRIBE after the other.
* ``topic-storm``: a namespace limited to 500 topics (``maxTopicsPerNamespace``), then ``--topics``
  topic creations by REST: how many were refused, and how fast.

Usage: ``python benches/hostile_soak.py --rs-server-bin target/release/pulsar-rs-server [--quick]``;
results to ``benches/out/hostile_soak.json`` and a table on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import statistics
import struct
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benches")]

import peer_runs  # noqa: E402
import pulsar  # noqa: E402
import vs_pulsar  # noqa: E402
from tools import pulsar_reference  # noqa: E402

import raw_protocol as rp  # noqa: E402

SUBSCRIBE, FLOW, SUCCESS = 4, 11, 13


def log(*a: object) -> None:
    print(*a, file=sys.stderr, flush=True)


def group_rss_mb(pgid: int) -> float:
    kb = 0
    for pid in peer_runs.group_pids(pgid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    kb += int(line.split()[1])
    return kb / 1024


def rest(admin: str, method: str, path: str, body: Any = None) -> int:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(admin + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


class Probe:
    """The well-behaved client: one message every 20 ms, end-to-end latency of each."""

    def __init__(self, service_url: str) -> None:
        self.client = pulsar.Client(service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        topic = f"persistent://public/default/probe-{time.monotonic_ns()}"
        self.consumer = self.client.subscribe(topic, "probe")
        self.producer = self.client.create_producer(topic, batching_enabled=False, send_timeout_millis=60_000)
        self.lat_ms: list[float] = []
        self.sent = 0
        self._stop = threading.Event()
        self._sender = threading.Thread(target=self._send, daemon=True)
        self._receiver = threading.Thread(target=self._receive, daemon=True)
        self._sender.start()
        self._receiver.start()

    def _send(self) -> None:
        while not self._stop.is_set():
            self.producer.send_async(struct.pack(">d", time.monotonic()), lambda *_: None)
            self.sent += 1
            time.sleep(0.02)

    def _receive(self) -> None:
        while not self._stop.is_set():
            try:
                m = self.consumer.receive(timeout_millis=200)
            except Exception:
                continue
            self.lat_ms.append((time.monotonic() - struct.unpack(">d", m.data())[0]) * 1000)
            self.consumer.acknowledge(m)

    def take(self) -> tuple[list[float], int]:
        lat, sent = self.lat_ms, self.sent
        self.lat_ms, self.sent = [], 0
        return lat, sent

    def close(self) -> None:
        self._stop.set()
        self._sender.join()
        self._receiver.join()
        with contextlib.suppress(Exception):
            self.client.close()


def owned_topic(admin: str, stem: str) -> str:
    """A new topic, created by REST first: Apache Pulsar serves a raw connection (which does no
    LOOKUP) only for topics whose namespace bundle this broker already owns."""
    topic = f"persistent://public/default/{stem}-{time.monotonic_ns()}"
    rest(admin, "PUT", "/admin/v2/" + topic.replace("://", "/"))
    return topic


def raw_connect(service_url: str) -> rp.Raw:
    r = rp.Raw(service_url)
    r.connect()
    return r


def phase_idle(url: str, admin: str, n: int, stop: threading.Event) -> dict:
    conns, failed = [], 0
    for _ in range(n):
        try:
            conns.append(raw_connect(url))
        except Exception:
            failed += 1
    stop.wait()
    for c in conns:
        c.close()
    return {"connected": len(conns), "failed": failed}


def phase_slow_readers(url: str, admin: str, _n: int, stop: threading.Event) -> dict:
    topic = owned_topic(admin, "slow")
    readers = []
    for i in range(50):
        r = raw_connect(url)
        sub = rp.fb(1, topic) + rp.fb(2, f"s{i}") + rp.fv(3, 1) + rp.fv(4, 1) + rp.fv(5, 1)
        r.send(rp.simple_frame(rp.base(SUBSCRIBE, sub)))
        r.recv()
        r.send(rp.simple_frame(rp.base(FLOW, rp.fv(1, 1) + rp.fv(2, 1000))))
        readers.append(r)  # never read again
    prod = raw_connect(url)
    prod.create_producer(topic)
    sent = 0
    prod.sock.settimeout(None)
    payload = b"x" * 1024
    reader = threading.Thread(target=_drain, args=(prod, stop), daemon=True)
    reader.start()
    while not stop.is_set():
        prod.send(rp.send_frame(1, sent, payload))
        sent += 1
        if sent % 100 == 0:
            time.sleep(0.02)  # ~5 000 msg/s
    for r in readers:
        r.close()
    prod.close()
    return {"published": sent}


def _drain(raw: rp.Raw, stop: threading.Event) -> None:
    with contextlib.suppress(Exception):
        raw.sock.settimeout(0.5)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                if not raw.sock.recv(1 << 16):
                    return


def phase_flood(url: str, admin: str, _n: int, stop: threading.Event) -> dict:
    topic = owned_topic(admin, "flood")
    r = raw_connect(url)
    r.create_producer(topic)
    r.sock.settimeout(1.0)
    payload = b"y" * 1024
    sent = 0
    while not stop.is_set():
        try:
            r.send(rp.send_frame(1, sent, payload))  # receipts never read
            sent += 1
        except TimeoutError:
            continue  # the broker stopped reading us: backpressure
        except OSError:
            break
    r.close()
    return {"sent": sent}


def phase_sub_storm(url: str, admin: str, n: int, stop: threading.Event) -> dict:
    topic = owned_topic(admin, "storm")
    r = raw_connect(url)
    r.sock.settimeout(30)
    t0, ok = time.monotonic(), 0
    for i in range(n):
        if stop.is_set():
            break
        cmd = rp.fb(1, topic) + rp.fb(2, f"sub-{i}") + rp.fv(3, 1) + rp.fv(4, i + 1) + rp.fv(5, i + 1)
        r.send(rp.simple_frame(rp.base(SUBSCRIBE, cmd)))
        ty, _ = r.recv()
        ok += ty == SUCCESS
    took = time.monotonic() - t0
    stop.wait()
    r.close()
    return {"subscriptions": ok, "seconds": round(took, 2)}


def phase_topic_storm(url: str, admin: str, n: int, stop: threading.Event) -> dict:
    ns = f"public/storm-{time.monotonic_ns()}"
    rest(admin, "PUT", f"/admin/v2/namespaces/{ns}")
    rest(admin, "POST", f"/admin/v2/namespaces/{ns}/maxTopicsPerNamespace", 500)
    t0, codes = time.monotonic(), {}
    for i in range(n):
        if stop.is_set():
            break
        c = rest(admin, "PUT", f"/admin/v2/persistent/{ns}/t{i}")
        codes[c] = codes.get(c, 0) + 1
    took = time.monotonic() - t0
    stop.wait()
    return {"statuses": {str(k): v for k, v in sorted(codes.items())}, "seconds": round(took, 2)}


PHASES = {
    "baseline": None,
    "idle": phase_idle,
    "slow-readers": phase_slow_readers,
    "flood": phase_flood,
    "sub-storm": phase_sub_storm,
    "topic-storm": phase_topic_storm,
}


def run_broker(name: str, url: str, admin: str, pgid: int, args: argparse.Namespace) -> list[dict]:
    probe = Probe(url)
    time.sleep(2)
    probe.take()
    rows = []
    for phase, fn in PHASES.items():
        if phase not in args.phases:
            continue
        stop = threading.Event()
        result: dict = {}
        n = {"idle": args.idle, "sub-storm": args.subs, "topic-storm": args.topics}.get(phase, 0)
        worker = None
        if fn is not None:

            def work(fn=fn, n=n, stop=stop, result=result) -> None:
                try:
                    result.update(fn(url, admin, n, stop))
                except Exception as e:  # recorded, not fatal: the broker's answer is the finding
                    result["error"] = repr(e)

            worker = threading.Thread(target=work, daemon=True)
            worker.start()
        peak, end = 0.0, time.monotonic() + args.phase_s
        while time.monotonic() < end:
            peak = max(peak, group_rss_mb(pgid))
            time.sleep(0.25)
        rss_end = group_rss_mb(pgid)
        stop.set()
        if worker:
            worker.join(timeout=60)
        lat, sent = probe.take()
        row = {
            "broker": name,
            "phase": phase,
            "probe_sent": sent,
            "probe_received": len(lat),
            "p50_ms": round(statistics.median(lat), 2) if lat else None,
            "p99_ms": round(statistics.quantiles(lat, n=100)[98], 2) if len(lat) > 1 else None,
            "rss_mb": round(rss_end, 1),
            "peak_rss_mb": round(peak, 1),
            **result,
        }
        log(json.dumps(row))
        rows.append(row)
        time.sleep(2)
    probe.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rs-server-bin", required=True)
    ap.add_argument("--brokers", default="pulsar-rs,pulsar")
    ap.add_argument("--phase-s", type=float, default=20.0)
    ap.add_argument("--idle", type=int, default=10_000)
    ap.add_argument("--subs", type=int, default=2_000)
    ap.add_argument("--topics", type=int, default=2_000)
    ap.add_argument("--quick", action="store_true", help="short phases, 1 000 idle connections")
    ap.add_argument(
        "--phases",
        type=lambda v: v.split(","),
        default=list(PHASES),
        help=f"the phases to run, comma-separated (default all: {','.join(PHASES)})",
    )
    ap.add_argument("--out", default=str(ROOT / "benches" / "out" / "hostile_soak.json"))
    args = ap.parse_args()
    if args.quick:
        args.phase_s, args.idle, args.subs, args.topics = 8.0, 1_000, 300, 700
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(args.idle * 2 + 1000, soft)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)))
    rows: list[dict] = []
    for name in args.brokers.split(","):
        if name == "pulsar-rs":
            b = vs_pulsar.RsBroker(args.rs_server_bin)
            try:
                rows += run_broker(name, b.service_url, b.admin_url, b.proc.pid, args)
            finally:
                b.close()
        elif name == "pulsar":
            with pulsar_reference.PulsarStandalone() as p:
                assert p._proc is not None
                rows += run_broker(name, p.service_url, p.admin_url, p._proc.pid, args)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))
    print("| broker | phase | probe recv/sent | p50 ms | p99 ms | RSS MB (peak) | phase result |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        extra = {
            k: v
            for k, v in r.items()
            if k not in {"broker", "phase", "probe_sent", "probe_received", "p50_ms", "p99_ms", "rss_mb", "peak_rss_mb"}
        }
        print(
            f"| {r['broker']} | {r['phase']} | {r['probe_received']}/{r['probe_sent']} | {r['p50_ms']} | "
            f"{r['p99_ms']} | {r['rss_mb']} ({r['peak_rss_mb']}) | {json.dumps(extra)} |"
        )


if __name__ == "__main__":
    main()
