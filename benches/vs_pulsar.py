"""pulsar-rs against Apache Pulsar itself and pulsar-lite, in one run, driven by Pulsar's own
``pulsar-perf`` and by the independent Rust load generator (``../shared/loadgen``).

Brokers (a fresh process and an empty data directory for every round; within a round one process
serves every run, each on topics of its own):

  pulsar-rs          pulsar-rs durable, default config (``journalSyncData = true``): the venv's
                     ``pulsar-rs standalone``, or ``pulsar-rs-server`` from ``--rs-server-bin``
  pulsar             Apache Pulsar 4.0.8 standalone as shipped (its bookie: ``journalSyncData=false``),
                     started by ``tools/pulsar_reference``
  pulsar-sync        the same with ``journalSyncData=true`` (each journal write is fsynced before
                     the bookie acknowledges it, as pulsar-rs does): the like-for-like one
  pulsar-lite        pulsar-lite 0.2.0's binary (``pip install pulsar-lite``), which never fsyncs

Workloads, each with both drivers (127.0.0.1 only; consumer subscribed first, Earliest, Exclusive,
receiver queue 1000; producer at most 1000 messages outstanding):

  W1     100 B, batching off, 1 producer + 1 consumer, unthrottled
  W2     100 B, batched (pulsar-perf's defaults: 1 ms, 1000 messages, 128 KiB; loadgen: 100 per
         batch, 1 ms), 1 P + 1 C, unthrottled
  W3     1 KiB, batched, 4 topics, one producer and one consumer each (4 P + 4 C), unthrottled
  LAT    100 B, batching off, 10 000 msg/s, 1 P + 1 C: publish latency percentiles
  CATCHUP  a backlog of ``--catchup`` 1 KiB messages (pulsar-perf produce, batched) read from the
         start by ``pulsar-perf consume -m N``: msg/s and MB/s of the read, broker CPU per message
  IDLE   ``--idle-topics`` topics with one message and a durable subscription each (the official
         Python client), then no client: RSS per topic and idle CPU

Recorded per run: produce and consume msg/s, publish latency percentiles (ms), the broker's CPU
seconds (utime + stime of every process in the broker's process group, /proc/<pid>/stat) per
message (published + received), and at the end of each round the group's peak RSS (VmHWM).
pulsar-perf's figures are taken over the producer's own sending span (see ``run_one``);
loadgen's are its own (receipted / time to the last receipt). Medians over ``--runs``; JSON with
every run; a markdown table with the ratios pulsar-rs / each other broker is printed. Nothing of
this runs in CI.

    python benches/vs_pulsar.py --runs 3 --duration 10 --loadgen /path/to/pulsar-loadgen \\
        --out benches/out/vs_pulsar.json
    python benches/vs_pulsar.py --quick --loadgen /path/to/pulsar-loadgen   # 1 round x 5 s
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tools"))
from pulsar_reference import PulsarStandalone, ensure_distribution  # noqa: E402

sys.path.insert(0, str(HERE))
from peer_runs import (  # noqa: E402
    LiteBroker,
    catchup_one,
    free_port,
    group_cpu_s,
    group_status_mb,
    idle_one,
    loadgen_one,
    log,
    record_header,
    stop_group,
)

#: pulsar-perf refuses ``-r 0`` ("rate must be positive"); a rate no broker here reaches.
UNTHROTTLED = 10_000_000
BROKERS = ("pulsar-rs", "pulsar", "pulsar-sync", "pulsar-lite")
DRIVERS = ("perf", "loadgen")
WORKLOADS = {
    "W1": dict(size=100, topics=1, batching=False, rate=UNTHROTTLED),
    "W2": dict(size=100, topics=1, batching=True, rate=UNTHROTTLED),
    "W3": dict(size=1024, topics=4, batching=True, rate=UNTHROTTLED),
    "LAT": dict(size=100, topics=1, batching=False, rate=10_000),
}
LAT_KEYS = {"mean": "mean", "med": "p50", "95pct": "p95", "99pct": "p99", "99.9pct": "p999", "Max": "max"}
#: One field of pulsar-perf's latency line (``mean: 4.2 ms - med: 3.7 - 95pct: ... - 99pct: ... -
#: 99.9pct: ... - 99.99pct: ... - 99.999pct: ... - Max: ...``). A name only where one starts:
#: "99pct" is also the tail of "99.99pct" and "99.999pct", and matched anywhere (before
#: 2026-12-08) it made every p99 read here the 99.999th percentile.
PERF_LATENCY_FIELD = re.compile(r"(?<![\w.])(mean|med|95pct|99pct|99\.9pct|Max):\s*([\d.,]+)")


class RsBroker:
    """pulsar-rs, durable by default, on 127.0.0.1 in its own session with a fresh data dir."""

    def __init__(self, server_bin: str | None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="vs-pulsar-rs-", dir=os.environ.get("BENCH_TMP")))
        self.port, admin = free_port(), free_port()
        self.service_url = f"pulsar://127.0.0.1:{self.port}"
        self.admin_url = f"http://127.0.0.1:{admin}"
        if server_bin:
            (self.dir / "broker.toml").write_text("")  # the default config: journalSyncData = true
            cmd = [server_bin, "--config", str(self.dir / "broker.toml")]
        else:
            cmd = [str(Path(sys.executable).parent / "pulsar-rs"), "standalone"]
        cmd += ["--data-dir", str(self.dir / "data"), "--port", str(self.port), "--admin-port", str(admin)]
        self.cmd = cmd
        out = (self.dir / "broker.log").open("wb")
        self.proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, "RUST_LOG": "warn"}
        )
        out.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"pulsar-rs exited: {(self.dir / 'broker.log').read_text()[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return
            time.sleep(0.1)
        raise RuntimeError("pulsar-rs did not listen within 60 s")

    @property
    def pgid(self) -> int:
        return self.proc.pid

    def close(self) -> None:
        stop_group(self.proc, self.dir)


class JavaBroker:
    """Apache Pulsar 4.0.8 standalone (tools/pulsar_reference), with `settings` on top."""

    def __init__(self, settings: dict) -> None:
        self.ref = PulsarStandalone(settings).start()
        self.service_url, self.admin_url = self.ref.service_url, self.ref.admin_url
        self.cmd = ["bin/pulsar", "standalone", json.dumps(settings)]

    @property
    def pgid(self) -> int:
        assert self.ref._proc is not None
        return self.ref._proc.pid

    def close(self) -> None:
        self.ref.cleanup()


def start_broker(kind: str, rs_server_bin: str | None):
    if kind == "pulsar-rs":
        return RsBroker(rs_server_bin)
    if kind == "pulsar":
        return JavaBroker({})
    if kind == "pulsar-sync":
        return JavaBroker({"journalSyncData": True})
    if kind == "pulsar-lite":
        return LiteBroker()
    raise SystemExit(f"unknown broker {kind}")


def parse_latency(text: str) -> dict:
    out = {}
    for k, v in PERF_LATENCY_FIELD.findall(text):
        if k in LAT_KEYS:
            out[f"pub_{LAT_KEYS[k]}_ms"] = float(v.replace(",", ""))
    return out


def perf_cmd(home: Path, sub: str, url: str, w: dict, topic: str, duration: int) -> list[str]:
    cmd = [str(home / "bin" / "pulsar-perf"), sub, "-u", url, "-t", str(w["topics"]), "-i", "1"]
    if sub == "produce":
        cmd += ["-s", str(w["size"]), "-r", str(w["rate"]), "-time", str(duration)]
        if not w["batching"]:
            cmd.append("-db")
    else:
        cmd += ["-ss", "sub", "-sp", "Earliest", "-time", str(duration + 120)]
    return [*cmd, topic]


def log_time(line: str) -> float:
    """The epoch seconds of a pulsar-perf log line (``2026-11-26T19:48:00,635+0000 [...]``)."""
    return datetime.strptime(line.split(" ", 1)[0], "%Y-%m-%dT%H:%M:%S,%f%z").timestamp()


class CpuSampler(threading.Thread):
    """Samples the broker group's CPU seconds every 0.1 s, stamped with the wall clock."""

    def __init__(self, pgid: int) -> None:
        super().__init__(daemon=True)
        self.pgid, self.samples, self.stop = pgid, [], threading.Event()

    def run(self) -> None:
        while True:
            self.samples.append((time.time(), group_cpu_s(self.pgid)))
            if self.stop.wait(0.1):
                return

    def at(self, t: float) -> float:
        return min(self.samples, key=lambda s: abs(s[0] - t))[1]


def run_one(home: Path, broker, w: dict, topic: str, duration: int, work: Path) -> dict:
    """One pulsar-perf consume + produce run. pulsar-perf's aggregated msg/s divides by its whole
    life (JVM start and a ~5 s close included), so rates are taken between the producer's
    "Created N producers" and "DONE (reached the maximum duration" log lines instead: produce
    msg/s = records sent / that span; consume msg/s = records the consumer received by then / that
    span (nothing was published before the span began); broker CPU = the group's CPU time over
    that span (0.1 s samples)."""
    env = {**os.environ, "PULSAR_PERFTEST_CONF": str(work / "client.conf")}
    (work / "client.conf").write_text(f"webServiceUrl={broker.admin_url}/\nbrokerServiceUrl={broker.service_url}/\n")
    ccmd = perf_cmd(home, "consume", broker.service_url, w, topic, duration)
    pcmd = perf_cmd(home, "produce", broker.service_url, w, topic, duration)
    cons_out, prod_out = work / "consume.out", work / "produce.out"
    with cons_out.open("wb") as f:
        cons = subprocess.Popen(ccmd, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    sampler = CpuSampler(broker.pgid)
    try:
        deadline = time.monotonic() + 90
        while "Start receiving from" not in cons_out.read_text(errors="replace"):
            if cons.poll() is not None or time.monotonic() > deadline:
                return {"error": "consumer did not start: " + cons_out.read_text(errors="replace")[-1500:]}
            time.sleep(0.2)
        sampler.start()
        ru0 = children_cpu_s()
        with prod_out.open("wb") as f:
            prod = subprocess.Popen(pcmd, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        # The consumer's own interval lines come every 10 s whatever -i says: it is stopped (SIGINT;
        # its shutdown hook prints the total received) the moment the producer logs DONE, so its
        # total is what it received while the producer sent.
        deadline = time.monotonic() + duration + 90
        while "DONE (reached the maximum duration" not in prod_out.read_text(errors="replace"):
            if prod.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(cons.pid, signal.SIGINT)
        try:
            prod.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(prod.pid, signal.SIGKILL)
            prod.wait()
            return {"error": "producer did not exit: " + prod_out.read_text(errors="replace")[-1500:]}
        ru1 = children_cpu_s()
        hwm = group_status_mb(broker.pgid, "VmHWM")
    finally:
        sampler.stop.set()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(cons.pid, signal.SIGINT)  # its shutdown hook prints the aggregated stats
        try:
            cons.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(cons.pid, signal.SIGKILL)
            cons.wait()
    ru2 = children_cpu_s()
    p, c = prod_out.read_text(errors="replace"), cons_out.read_text(errors="replace")
    ps = re.search(r"Aggregated throughput stats --- ([\d,]+) records sent", p)
    pl = re.search(r"Aggregated latency stats --- (.*)", p)
    created = [ln for ln in p.splitlines() if re.search(r"PerformanceProducer - Created \d+ producers", ln)]
    done = [ln for ln in p.splitlines() if "DONE (reached the maximum duration" in ln]
    if not ps or not created or not done:
        return {"error": "no aggregated stats or start/end lines", "produce_tail": p[-1500:]}
    sent = int(ps.group(1).replace(",", ""))
    t0, t1 = log_time(created[-1]), log_time(done[-1])
    span = t1 - t0
    cs = re.search(r"Aggregated throughput stats --- ([\d,]+) records received", c)
    cons_rate = int(cs.group(1).replace(",", "")) / span if cs else None
    cpu = sampler.at(t1) - sampler.at(t0)
    msgs = sent + (cons_rate or 0) * span  # what the broker took in and handed out over the span
    r = {
        "sent": sent,
        "pub_msg_s": sent / span,
        "cons_msg_s": cons_rate,
        "produce_span_s": span,
        "broker_cpu_s": cpu,
        "broker_us_per_msg": 1e6 * cpu / msgs if msgs else None,
        "broker_cpu_util": cpu / span,
        "broker_peak_rss_mb": hwm,
        # pulsar-perf's own CPU (JVM start and close included): the producer's life, the consumer's life
        "producer_cpu_s": ru1 - ru0,
        "consumer_cpu_s": ru2 - ru1,
        "errors_in_output": len(re.findall(r"\bERROR\b", p + c)),
    }
    r.update(parse_latency(pl.group(1) if pl else ""))
    return r


def children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def median_of(runs: list[dict]) -> dict:
    ok = [r for r in runs if "error" not in r]
    keys = [k for k in (ok[0] if ok else {}) if isinstance(ok[0][k], (int, float))]
    med = {k: statistics.median(r[k] for r in ok if isinstance(r.get(k), (int, float))) for k in keys}
    med["runs"] = len(ok)
    return med


def fmt(v: float | None, unit: str = "") -> str:
    if v is None:
        return "-"
    if abs(v) >= 1000:
        return f"{v:,.0f}".replace(",", " ") + unit
    return f"{v:.3g}{unit}"


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a and b else "-"


ROWS = [
    ("produce msg/s", "pub_msg_s", ("W1", "W2", "W3")),
    ("consume msg/s", "cons_msg_s", ("W1", "W2", "W3", "LAT")),
    ("publish p50 ms", "pub_p50_ms", ("W1", "W2", "W3", "LAT")),
    ("publish p99 ms", "pub_p99_ms", ("W1", "W2", "W3", "LAT")),
    ("broker CPU us/msg", "broker_us_per_msg", ("W1", "W2", "W3", "LAT", "CATCHUP")),
    ("catch-up msg/s", "catchup_msg_s", ("CATCHUP",)),
    ("catch-up MB/s", "catchup_mb_s", ("CATCHUP",)),
    ("RSS MB before topics", "rss_before_mb", ("IDLE",)),
    ("RSS MB with the idle topics", "rss_after_mb", ("IDLE",)),
    ("RSS KB per idle topic", "rss_kb_per_topic", ("IDLE",)),
    ("idle CPU %", "idle_cpu_pct", ("IDLE",)),
    ("peak RSS MB over the round", "round_peak_rss_mb", ("ROUND",)),
]


def table(med: dict, brokers: list[str], rows: list[str]) -> str:
    """Markdown: one line per (row key, metric), a column per broker, then pulsar-rs / each other."""
    others = [b for b in brokers if b != "pulsar-rs"]
    head = ["run", "metric", *brokers, *(f"pulsar-rs / {b}" for b in others if "pulsar-rs" in brokers)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in rows:
        wl = key.split(" ", 1)[0]
        for label, field, wls in ROWS:
            if wl not in wls:
                continue
            vals = [med.get(f"{b}/{key}", {}).get(field) for b in brokers]
            if all(v is None for v in vals):
                continue
            rs = med.get(f"pulsar-rs/{key}", {}).get(field)
            rats = [ratio(rs, med.get(f"{b}/{key}", {}).get(field)) for b in others] if "pulsar-rs" in brokers else []
            lines.append("| " + " | ".join([key, label, *(fmt(v) for v in vals), *rats]) + " |")
    return "\n".join(lines)


def one_round(a: argparse.Namespace, home: Path, kind: str, i: int, rows: dict, cmds: dict) -> None:
    """One broker process for the whole round: the idle topics first, then every workload with
    every driver on topics of its own, then the catch-up read; its peak RSS over all of it last."""
    la0 = loadavg()
    broker = start_broker(kind, a.rs_server_bin)
    cmds.setdefault(kind, broker.cmd)

    def record(key: str, r: dict, work: Path | None = None) -> None:
        if work is not None:
            if "error" in r:
                r["kept_output"] = str(work)  # the tools' output, for the reader
            else:
                shutil.rmtree(work, ignore_errors=True)
        r.update(round=i, loadavg=loadavg())
        log(kind, key, json.dumps(r)[:600])
        rows.setdefault(f"{kind}/{key}", []).append(r)

    try:
        # Idle topics first, on the fresh broker: its RSS before them is its RSS at rest.
        if a.idle_topics:
            record("IDLE python", idle_one(broker, a.idle_topics, f"idle-{i}"))
        for wl in a.workloads.split(","):
            for driver in a.drivers.split(","):
                w = WORKLOADS[wl]
                topic = f"{wl.lower()}-{driver}-{i}"
                work = Path(tempfile.mkdtemp(prefix="vs-pulsar-run-", dir=os.environ.get("BENCH_TMP")))
                if driver == "perf":
                    r = run_one(home, broker, w, topic, a.duration, work)
                else:
                    r = loadgen_one(a.loadgen, broker, w, topic, a.duration)
                record(f"{wl} {driver}", r, work)
        perf_reads = [r for k, v in rows.items() if k.startswith(f"{kind}/") and k.endswith(" perf") for r in v[-1:]]
        if a.catchup and any(r.get("cons_msg_s") == 0 for r in perf_reads):
            # pulsar-lite: pulsar-perf's (the Java client's) consumer receives nothing from it.
            record("CATCHUP perf", {"error": "pulsar-perf's consumer received nothing from this broker this round"})
        elif a.catchup:
            work = Path(tempfile.mkdtemp(prefix="vs-pulsar-catchup-", dir=os.environ.get("BENCH_TMP")))
            record("CATCHUP perf", catchup_one(home, broker, f"catchup-{i}", a.catchup, 1024, work), work)
        record("ROUND", {"round_peak_rss_mb": group_status_mb(broker.pgid, "VmHWM"), "loadavg_before": la0})
    finally:
        broker.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10, help="seconds of each produce run")
    ap.add_argument("--quick", action="store_true", help="--runs 1 --duration 5, a small backlog and 100 idle topics")
    ap.add_argument("--brokers", default=",".join(BROKERS))
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--drivers", default=",".join(DRIVERS), help="pulsar-perf (perf) and/or the load generator")
    ap.add_argument("--loadgen", help="the pulsar-loadgen binary (../shared/loadgen); needed for driver loadgen")
    ap.add_argument("--catchup", type=int, default=500_000, help="backlog of 1 KiB messages to read (0: skip)")
    ap.add_argument("--idle-topics", type=int, default=1000, help="idle topics to make and watch (0: skip)")
    ap.add_argument("--rs-server-bin", help="run pulsar-rs-server (e.g. target/release) instead of the venv's CLI")
    ap.add_argument("--out", default=str(HERE / "out" / "vs_pulsar.json"))
    a = ap.parse_args()
    if a.quick:
        a.runs, a.duration, a.catchup, a.idle_topics = 1, 5, min(a.catchup, 100_000), min(a.idle_topics, 100)
    if "loadgen" in a.drivers.split(",") and not a.loadgen:
        raise SystemExit("--loadgen BIN is needed for driver loadgen (or --drivers perf)")
    home = ensure_distribution()
    brokers = a.brokers.split(",")
    started = datetime.now(UTC).isoformat(timespec="seconds")
    rows: dict[str, list[dict]] = {}
    cmds: dict[str, list[str]] = {}
    for i in range(a.runs):
        # Brokers take turns in a different order each round, so a drift of the machine over the
        # run does not always land on the same one.
        order = brokers[i % len(brokers) :] + brokers[: i % len(brokers)]
        for kind in order:
            one_round(a, home, kind, i, rows, cmds)
    med = {k: median_of(v) for k, v in rows.items()}
    sample = {
        wl: perf_cmd(Path("$PULSAR_HOME"), "produce", "pulsar://127.0.0.1:PORT", w, "TOPIC", a.duration)
        for wl, w in WORKLOADS.items()
    }
    out = {
        **record_header(started, a),
        "broker_commands": cmds,
        "pulsar_perf_produce": sample,
        "pulsar_perf_consume": perf_cmd(
            Path("$PULSAR_HOME"), "consume", "pulsar://127.0.0.1:PORT", WORKLOADS["W1"], "TOPIC", a.duration
        ),
        "runs": rows,
        "medians": med,
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1))
    keys = [f"{wl} {d}" for wl in a.workloads.split(",") for d in a.drivers.split(",")]
    keys += ["CATCHUP perf"] * bool(a.catchup) + ["IDLE python"] * bool(a.idle_topics) + ["ROUND"]
    print(table(med, brokers, keys))


if __name__ == "__main__":
    main()
