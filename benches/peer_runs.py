"""The runs of ``vs_pulsar.py`` that pulsar-perf alone does not give: the independent Rust load
generator, a catch-up read of a backlog, and idle topics; and pulsar-lite as a broker.

Every function takes a started broker (``.service_url``, ``.pgid``: the process group whose CPU
and memory are the broker's) and measures the broker's CPU over the span it names.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

#: How long the idle broker is watched after its topics went quiet.
IDLE_WATCH_S = 10


def log(*a: object) -> None:
    import sys

    print(*a, file=sys.stderr, flush=True)


def record_header(started_utc: str, args: object) -> dict[str, Any]:
    """What every bench's JSON opens with: when it ran, its arguments, the machine's cores."""
    from datetime import UTC, datetime

    return {
        "started_utc": started_utc,
        "finished_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "args": vars(args),
        "nproc": os.cpu_count(),
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def group_pids(pgid: int) -> list[int]:
    """Every process whose process group is `pgid` (each broker is started in its own session)."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int((d / "stat").read_text().rsplit(")", 1)[1].split()[2]) == pgid:
                pids.append(int(d.name))
    return pids


def group_cpu_s(pgid: int) -> float:
    total = 0
    for pid in group_pids(pgid):
        with contextlib.suppress(OSError, IndexError):
            f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(f[11]) + int(f[12])
    return total / os.sysconf("SC_CLK_TCK")


def group_status_mb(pgid: int, field: str) -> float:
    """A /proc/PID/status memory field (``VmRSS``, ``VmHWM``) summed over the group, in MB."""
    kb = 0
    for pid in group_pids(pgid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith(field + ":"):
                    kb += int(line.split()[1])
    return kb / 1024


def stop_group(proc: subprocess.Popen[bytes], data_dir: Path) -> None:
    """Stops a broker started in its own session (SIGTERM, then SIGKILL after 20 s) and removes
    its directory."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=20)
    shutil.rmtree(data_dir, ignore_errors=True)


class LiteBroker:
    """pulsar-lite 0.2.0's bundled binary (``pip install pulsar-lite``) on 127.0.0.1 with a fresh
    database, in its own session. It has no admin HTTP port."""

    def __init__(self) -> None:
        import pulsar_lite.binary_finder as bf  # type: ignore[import-not-found]

        self.dir = Path(tempfile.mkdtemp(prefix="vs-pulsar-lite-", dir=os.environ.get("BENCH_TMP")))
        self.port = free_port()
        self.service_url = f"pulsar://127.0.0.1:{self.port}"
        self.admin_url = f"http://127.0.0.1:{free_port()}"  # nothing listens: pulsar-lite has no REST
        self.cmd = [bf.find_pulsar_lite_binary(), "--addr", f"127.0.0.1:{self.port}", "--db-path"]
        self.cmd += [str(self.dir / "db"), "--log-level", "warn"]
        out = (self.dir / "broker.log").open("wb")
        # Without --config it reads ./pulsar-lite.toml: run it in its own directory.
        self.proc = subprocess.Popen(
            self.cmd, stdout=out, stderr=subprocess.STDOUT, cwd=self.dir, start_new_session=True
        )
        out.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"pulsar-lite exited: {(self.dir / 'broker.log').read_text()[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return
            time.sleep(0.1)  # polling the port until the broker listens
        raise RuntimeError("pulsar-lite did not listen within 30 s")

    @property
    def pgid(self) -> int:
        return self.proc.pid

    def close(self) -> None:
        stop_group(self.proc, self.dir)


def loadgen_one(binary: str, broker: Any, w: dict, topic_prefix: str, duration: int) -> dict:
    """One run of the independent load generator (../shared/loadgen: the streamnative Rust client),
    consumer subscribed first (``w``: ``size``, ``topics``, ``batching``, ``rate``, and optionally
    ``max_pending``, default 1000, and ``consume``, default true). Rates and latencies are its
    own (``pub_msg_s`` = receipted / time to the last receipt; ``cons_msg_s`` = unique messages
    received / time to the last); broker CPU is the group's over the load generator's whole life,
    per message published + received."""
    cmd = [binary, "--url", broker.service_url, "--topic-prefix", topic_prefix, "--topics", str(w["topics"])]
    cmd += ["--size", str(max(w["size"], 32)), "--batch", str(100 if w["batching"] else 1)]
    rate = 0 if w["rate"] >= 1_000_000 else w["rate"]
    cmd += ["--duration", str(duration), "--max-pending", str(w.get("max_pending", 1000)), "--drain", "30"]
    cmd += ["--rate", str(rate)] + ["--consume"] * w.get("consume", True)
    cpu0 = group_cpu_s(broker.pgid)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 150)
    cpu = group_cpu_s(broker.pgid) - cpu0
    try:
        r = json.loads(p.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return {"error": "loadgen: " + p.stderr[-1500:]}
    msgs = (r.get("published") or 0) + (r.get("received") or 0)
    lat = r.get("pub_lat_ms") or {}
    return {
        "sent": r.get("published"),
        "received": r.get("received"),
        "pub_msg_s": r.get("pub_msg_s"),
        "cons_msg_s": r.get("cons_msg_s"),
        "pub_p50_ms": lat.get("p50"),
        "pub_p99_ms": lat.get("p99"),
        "duplicates": r.get("duplicates"),
        "missing": r.get("missing"),
        "ok": r.get("ok"),
        "broker_cpu_s": cpu,
        "broker_us_per_msg": 1e6 * cpu / msgs if msgs else None,
        "client_cpu_s": r.get("client_cpu_s"),
    }


def quiet_logger() -> Any:
    """The Python client's logger at errors only (its INFO lines would drown the run's log)."""
    import pulsar

    return pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)


def create_subscription(service_url: str, topic: str, sub: str = "sub") -> None:
    """A durable subscription at the topic's start, made with the official Python client (the
    one call that works on all three brokers: pulsar-lite has no REST)."""
    import pulsar

    client = pulsar.Client(service_url, operation_timeout_seconds=30, logger=quiet_logger())
    try:
        client.subscribe(topic, sub, initial_position=pulsar.InitialPosition.Earliest).close()
    finally:
        client.close()


def _log_epoch(line: str) -> float:
    from datetime import datetime

    return datetime.strptime(line.split(" ", 1)[0], "%Y-%m-%dT%H:%M:%S,%f%z").timestamp()


def catchup_one(home: Path, broker: Any, topic: str, messages: int, size: int, work: Path) -> dict:
    """A backlog of `messages` x `size` B (pulsar-perf produce with its batching defaults, a
    durable subscription waiting), then ``pulsar-perf consume -m N`` reads it from the start.
    Catch-up msg/s = N / (its "Start receiving" to its "DONE" line); broker CPU over that span."""
    env = {**os.environ, "PULSAR_PERFTEST_CONF": str(work / "client.conf")}
    (work / "client.conf").write_text(f"webServiceUrl={broker.admin_url}/\nbrokerServiceUrl={broker.service_url}/\n")
    create_subscription(broker.service_url, topic)
    perf = str(home / "bin" / "pulsar-perf")
    fill = [perf, "produce", "-u", broker.service_url, "-s", str(size), "-r", "10000000", "-m", str(messages)]
    fill += ["-i", "1", topic]
    p = subprocess.run(fill, capture_output=True, text=True, env=env, timeout=600)
    sent = re.search(r"Aggregated throughput stats --- ([\d,]+) records sent", p.stdout + p.stderr)
    if not sent or int(sent.group(1).replace(",", "")) < messages:
        return {"error": "backlog fill: " + (p.stdout + p.stderr)[-1500:]}
    out = work / "catchup.out"
    read = [perf, "consume", "-u", broker.service_url, "-ss", "sub", "-sp", "Earliest", "-m", str(messages)]
    read += ["-q", "1000", "-i", "1", topic]
    samples: list[tuple[float, float]] = []
    with out.open("wb") as f:
        c = subprocess.Popen(read, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    # A generous bound (1 000 msg/s at least): a broker whose reads stall is reported, not waited on.
    limit = 60 + messages / 1000
    deadline = time.monotonic() + limit
    while c.poll() is None and time.monotonic() < deadline:
        samples.append((time.time(), group_cpu_s(broker.pgid)))
        time.sleep(0.1)  # CPU samples every 0.1 s while the consumer reads
    if c.poll() is None:
        os.killpg(c.pid, signal.SIGKILL)
        c.wait()
        return {
            "error": f"catch-up consumer did not finish in {limit:.0f} s: " + out.read_text(errors="replace")[-1500:]
        }
    text = out.read_text(errors="replace")
    start = [ln for ln in text.splitlines() if "Start receiving from" in ln]
    done = [ln for ln in text.splitlines() if "------------------- DONE" in ln]
    if not start or not done:
        return {"error": "no start/DONE lines: " + text[-1500:]}
    t0, t1 = _log_epoch(start[-1]), _log_epoch(done[-1])

    def cpu_at(t: float) -> float:
        return min(samples, key=lambda s: abs(s[0] - t))[1]

    span = t1 - t0
    cpu = cpu_at(t1) - cpu_at(t0)
    return {
        "backlog": messages,
        "catchup_s": span,
        "catchup_msg_s": messages / span,
        "catchup_mb_s": messages * size / span / 1e6,
        "broker_cpu_s": cpu,
        "broker_us_per_msg": 1e6 * cpu / messages,
    }


def idle_one(broker: Any, topics: int, prefix: str) -> dict:
    """`topics` topics, each with one message and a durable subscription, made with the official
    Python client and then left alone (no client connected): the broker's RSS before and after,
    and its CPU over ``IDLE_WATCH_S`` seconds of idleness."""
    import pulsar

    time.sleep(2)  # a broker just started settles (start-up allocations, JIT) before its RSS is read
    rss0 = group_status_mb(broker.pgid, "VmRSS")
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=30, logger=quiet_logger())
    try:
        for i in range(topics):
            t = f"persistent://public/default/{prefix}-{i}"
            consumer = client.subscribe(t, "sub")
            producer = client.create_producer(t)
            producer.send(b"idle")
            producer.close()
            consumer.close()
    finally:
        client.close()
    time.sleep(3)  # the broker settles (client connections closed, caches at rest) before it is watched
    rss1 = group_status_mb(broker.pgid, "VmRSS")
    cpu0 = group_cpu_s(broker.pgid)
    time.sleep(IDLE_WATCH_S)  # a real-time window: the broker's own timers run while it is watched
    cpu = group_cpu_s(broker.pgid) - cpu0
    return {
        "idle_topics": topics,
        "rss_before_mb": rss0,
        "rss_after_mb": rss1,
        "rss_kb_per_topic": 1024 * (rss1 - rss0) / topics,
        "idle_cpu_pct": 100 * cpu / IDLE_WATCH_S,
    }
