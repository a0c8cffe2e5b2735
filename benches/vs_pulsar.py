"""pulsar-rs against Apache Pulsar itself, in one run, driven by Pulsar's own ``pulsar-perf``.

Brokers (a fresh process and an empty data directory for every run):

  pulsar-rs          pulsar-rs durable, default config (``journalSyncData = true``): the venv's
                     ``pulsar-rs standalone``, or ``pulsar-rs-server`` from ``--rs-server-bin``
  pulsar             Apache Pulsar 4.0.8 standalone as shipped (its bookie: ``journalSyncData=false``),
                     started by ``tools/pulsar_reference``
  pulsar-sync        the same with ``journalSyncData=true`` (each journal write is fsynced before
                     the bookie acknowledges it, as pulsar-rs does): the like-for-like one

Workloads, all with the same ``bin/pulsar-perf`` of the 4.0.8 distribution against every broker
(127.0.0.1 only; consumer started and subscribed first, ``-sp Earliest``, Exclusive, receiver
queue 1000; producer ``-r 10000000`` = unthrottled, ``-o 1000`` outstanding by default):

  W1     100 B, ``-db`` (batching off), 1 producer + 1 consumer
  W2     100 B, batched with pulsar-perf's defaults (1 ms, 1000 messages, 128 KiB)
  W3     1 KiB, batched, 4 topics, one producer and one consumer each (4 P + 4 C)
  LAT    100 B, ``-db``, ``-r 10000`` (fixed rate), 1 P + 1 C: publish latency percentiles

Recorded per run: produce msg/s (pulsar-perf's aggregated figure), consume msg/s (messages the
consumer received while the producer ran, divided by the producer's own duration), publish
latency percentiles (pulsar-perf's aggregated latency, ms), the broker's CPU seconds (utime +
stime of every process in the broker's process group, from /proc/<pid>/stat, from just before the
producer starts to just after it exits) per message (published + received), and its peak RSS
(VmHWM summed over the group). Medians over ``--runs``. Everything goes to JSON; a table with the
ratios pulsar-rs / Pulsar is printed. Nothing of this runs in CI.

    python benches/vs_pulsar.py --runs 3 --duration 10 --out benches/out/vs_pulsar.json
    python benches/vs_pulsar.py --quick      # 1 run x 5 s of each: a few minutes
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

#: pulsar-perf refuses ``-r 0`` ("rate must be positive"); a rate no broker here reaches.
UNTHROTTLED = 10_000_000
BROKERS = ("pulsar-rs", "pulsar", "pulsar-sync")
WORKLOADS = {
    "W1": dict(size=100, topics=1, batching=False, rate=UNTHROTTLED),
    "W2": dict(size=100, topics=1, batching=True, rate=UNTHROTTLED),
    "W3": dict(size=1024, topics=4, batching=True, rate=UNTHROTTLED),
    "LAT": dict(size=100, topics=1, batching=False, rate=10_000),
}
LAT_KEYS = {"mean": "mean", "med": "p50", "95pct": "p95", "99pct": "p99", "99.9pct": "p999", "Max": "max"}


def log(*a: object) -> None:
    print(*a, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def group_pids(pgid: int) -> list[int]:
    """Every process whose process group is `pgid` (the broker was started in its own session)."""
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


def group_hwm_mb(pgid: int) -> float:
    kb = 0
    for pid in group_pids(pgid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    kb += int(line.split()[1])
    return kb / 1024


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
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=20)
        shutil.rmtree(self.dir, ignore_errors=True)


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
    raise SystemExit(f"unknown broker {kind}")


def parse_latency(text: str) -> dict:
    out = {}
    for k, v in re.findall(r"(mean|med|95pct|99pct|99\.9pct|Max):\s*([\d.,]+)", text):
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
        hwm = group_hwm_mb(broker.pgid)
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


def table(med: dict, brokers: list[str], workloads: list[str]) -> str:
    rows = [
        ("produce msg/s", "pub_msg_s", ["W1", "W2", "W3"]),
        ("consume msg/s", "cons_msg_s", ["W1", "W2", "W3"]),
        ("publish p50 ms", "pub_p50_ms", ["W1", "W2", "W3", "LAT"]),
        ("publish p99 ms", "pub_p99_ms", ["W1", "W2", "W3", "LAT"]),
        ("broker CPU us/msg", "broker_us_per_msg", ["W1", "W2", "W3", "LAT"]),
        ("broker peak RSS MB", "broker_peak_rss_mb", ["W1", "W2", "W3", "LAT"]),
    ]
    others = [b for b in brokers if b != "pulsar-rs"]
    head = ["workload", "metric", *brokers, *(f"pulsar-rs / {b}" for b in others if "pulsar-rs" in brokers)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for wl in workloads:
        for label, key, wls in rows:
            if wl not in wls:
                continue
            vals = [med.get(f"{b}/{wl}", {}).get(key) for b in brokers]
            rs = med.get(f"pulsar-rs/{wl}", {}).get(key)
            rats = [ratio(rs, med.get(f"{b}/{wl}", {}).get(key)) for b in others] if "pulsar-rs" in brokers else []
            lines.append("| " + " | ".join([wl, label, *(fmt(v) for v in vals), *rats]) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10, help="seconds of each pulsar-perf produce run")
    ap.add_argument("--quick", action="store_true", help="--runs 1 --duration 5")
    ap.add_argument("--brokers", default=",".join(BROKERS))
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--rs-server-bin", help="run pulsar-rs-server (e.g. target/release) instead of the venv's CLI")
    ap.add_argument("--out", default=str(HERE / "out" / "vs_pulsar.json"))
    a = ap.parse_args()
    if a.quick:
        a.runs, a.duration = 1, 5
    home = ensure_distribution()
    brokers, workloads = a.brokers.split(","), a.workloads.split(",")
    started = datetime.now(UTC).isoformat(timespec="seconds")
    rows: dict[str, list[dict]] = {}
    cmds: dict[str, list[str]] = {}
    for i in range(a.runs):
        for kind in brokers:
            for wl in workloads:
                w = WORKLOADS[wl]
                work = Path(tempfile.mkdtemp(prefix="vs-pulsar-perf-", dir=os.environ.get("BENCH_TMP")))
                la0 = loadavg()
                broker = start_broker(kind, a.rs_server_bin)
                try:
                    r = run_one(home, broker, w, f"{wl.lower()}-{i}", a.duration, work)
                    cmds.setdefault(kind, broker.cmd)
                finally:
                    broker.close()
                if "error" in r or not r.get("sent"):
                    r["kept_output"] = str(work)  # pulsar-perf's output, for the reader
                else:
                    shutil.rmtree(work, ignore_errors=True)
                r.update(round=i, loadavg_before=la0, loadavg_after=loadavg())
                log(kind, wl, json.dumps(r)[:600])
                rows.setdefault(f"{kind}/{wl}", []).append(r)
    med = {k: median_of(v) for k, v in rows.items()}
    sample = {
        wl: perf_cmd(Path("$PULSAR_HOME"), "produce", "pulsar://127.0.0.1:PORT", w, "TOPIC", a.duration)
        for wl, w in WORKLOADS.items()
    }
    out = {
        "started_utc": started,
        "finished_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "args": vars(a),
        "nproc": os.cpu_count(),
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
    print(table(med, brokers, workloads))


if __name__ == "__main__":
    main()
