"""Both load generators against our broker and pulsar-lite, in one run (issue 14.4).

For each round (``--runs``), each broker and each workload, a fresh broker process serves one
run of ``pulsar-rs-perf`` and then a fresh one serves one run of the independent
``pulsar-loadgen`` (../shared/loadgen, on the ``pulsar`` crate). Reported: publish / consume
msg/s (loadgen counts unique messages only), publish p99, and the broker's CPU time per message
(published + received), from /proc/<pid>/stat over the run. Medians over the rounds.

Each loadgen run also counts the broker's **wake-ups** (voluntary context switches, summed over
its threads from /proc/<pid>/task/*/status across the load generator's whole run), per message.
``pulsar-rs-probe wake`` measures, once at the start, the CPU time one wake-up across CPUs costs
on this machine; ``wake_floor_us_per_msg`` is the product, the part of the broker's CPU per
message that its wake-ups alone account for (issue 14).

Brokers: ``rs`` (target/release/pulsar-rs-server, default config: durable), ``rs-gw1`` (the
same with ``journalMaxGroupWaitMSec = 1``), ``rs-nopre`` (``journalPreAllocSizeMB = 0``: no
journal preallocation), ``rs-agw0`` (``journalAdaptiveGroupWaitMicros = 0``: no adaptive group
wait), ``rs-io2`` (``numIOThreads = 2``), ``rs-buffered`` (``journalDirectWrites = false``),
``rs-base`` (the default config, run from the build in ``--base-bin-dir``: an A/B of two builds
in one run), ``rs-nondurable``, ``rs-hwm4m`` (a 4 MiB outbound high water mark,
PULSAR_RS_OUTBOUND_HIGH_WATER_MARK), ``lite``.

    python benches/indep.py --runs 3 --duration 3 --loadgen /tmp/loadgen/release/pulsar-loadgen \\
        --out benches/out/indep.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from compare import Broker, brief, log, perf  # noqa: E402

WORKLOADS = {
    # W0: one producer waiting for each receipt before the next send: the publish latency of a
    # durable round, nothing else (journal preallocation, issue 14).
    "W0": dict(topics=1, size=100, batch=1, max_inflight=1),
    "W1": dict(topics=1, size=100, batch=1),
    "W2": dict(topics=1, size=100, batch=100),
    "W3": dict(topics=4, size=1024, batch=100),
}


def loadgen(binary: str, b: Broker, name: str, duration: int, w: dict, rate: int = 0, wake_us: float = 0.0) -> dict:
    """One loadgen run; `wake_us` (CPU µs per wake-up, `pulsar-rs-probe wake`) adds the CPU the
    broker's wake-ups account for, `wake_floor_us_per_msg`."""
    cmd = [binary, "--url", b.url, "--topic-prefix", name, "--topics", str(w["topics"])]
    cmd += ["--size", str(max(w["size"], 32)), "--batch", str(w["batch"])]
    cmd += ["--duration", str(duration), "--max-pending", str(w.get("max_inflight", 1000)), "--drain", "15"]
    cmd += ["--broker-pid", str(b.proc.pid), "--rate", str(rate), "--consume"]
    log("   $", " ".join(cmd))
    wakes0 = wake_ups(b.proc.pid)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    wakes = wake_ups(b.proc.pid) - wakes0
    try:
        r = json.loads(p.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return {"error": p.stderr[-1000:]}
    msgs = (r.get("published") or 0) + (r.get("received") or 0)
    lat = r.get("pub_lat_ms") or {}
    return {
        "pub_msg_s": r.get("pub_msg_s"),
        "cons_msg_s": r.get("cons_msg_s"),
        "pub_p50_ms": lat.get("p50"),
        "pub_p99_ms": lat.get("p99"),
        "dups": r.get("duplicates"),
        "ok": r.get("ok"),
        "broker_cpu_s": r.get("broker_cpu_s"),
        "client_cpu_s": r.get("client_cpu_s"),
        "broker_us_per_msg": 1e6 * r["broker_cpu_s"] / msgs if msgs and r.get("broker_cpu_s") else None,
        "wakes_per_msg": wakes / msgs if msgs else None,
        "wake_floor_us_per_msg": wake_us * wakes / msgs if msgs and wake_us else None,
    }


def wake_ups(pid: int) -> int:
    """Voluntary context switches of every thread of `pid` so far (threads that ended are lost:
    a broker's threads live as long as it does)."""
    total = 0
    for t in Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (t / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    total += int(line.split()[1])
        except OSError:
            continue  # the thread ended meanwhile
    return total


def own(bin_dir: Path, b: Broker, name: str, duration: int, w: dict) -> dict:
    r = brief(
        perf(bin_dir, b.url, duration=duration, topic_prefix=name, producers=w["topics"], consumers=w["topics"], **w)
    )
    cpu = b.stats()["cpu_s"]
    msgs = (r.get("published") or 0) + (r.get("received") or 0)
    r["broker_cpu_s"] = cpu
    r["broker_us_per_msg"] = 1e6 * cpu / msgs if msgs else None
    return r


def start(kind: str, bin_dir: Path, base_dir: Path | None = None) -> Broker:
    if kind == "rs-hwm4m":
        os.environ["PULSAR_RS_OUTBOUND_HIGH_WATER_MARK"] = str(4 << 20)
    try:
        if kind in ("lite", "rs-nondurable"):
            return Broker(kind, bin_dir)
        if kind == "rs-gw1":
            return Broker("rs-durable-gw1", bin_dir)
        if kind == "rs-nopre":
            return Broker("rs-durable-nopre", bin_dir)
        if kind == "rs-agw0":
            return Broker("rs-durable-agw0", bin_dir)
        if kind == "rs-io2":
            return Broker("rs-durable-io2", bin_dir)
        if kind == "rs-buffered":
            return Broker("rs-durable-buffered", bin_dir)
        if kind == "rs-base":
            if base_dir is None:
                raise SystemExit("broker rs-base needs --base-bin-dir")
            return Broker("rs-durable", base_dir)
        return Broker("rs-durable", bin_dir)
    finally:
        os.environ.pop("PULSAR_RS_OUTBOUND_HIGH_WATER_MARK", None)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=3)
    ap.add_argument("--brokers", default="rs,rs-hwm4m,lite")
    ap.add_argument("--workloads", default="W1,W2,W3")
    ap.add_argument("--tools", default="perf,loadgen", help="pulsar-rs-perf (perf) and/or loadgen")
    ap.add_argument("--loadgen", required=True)
    ap.add_argument("--bin-dir", default=str(HERE.parent / "target" / "release"))
    ap.add_argument("--base-bin-dir", help="the other build, for broker rs-base")
    ap.add_argument("--steady-rate", type=int, default=10_000, help="W1 loadgen --rate run (0: skip)")
    ap.add_argument("--steady-duration", type=int, default=0, help="seconds of the steady run (0: --duration)")
    ap.add_argument("--out", default=str(HERE / "out" / "indep.json"))
    a = ap.parse_args()
    bin_dir = Path(a.bin_dir)
    base_dir = Path(a.base_bin_dir) if a.base_bin_dir else None
    rows: dict = {}
    probe = json.loads(
        subprocess.run(
            [str(bin_dir / "pulsar-rs-probe"), "wake"], capture_output=True, text=True, check=True, timeout=300
        ).stdout
    )
    wake_us = (probe.get("wake_across_cpus") or probe["wake_on_one_cpu"])["cpu_us_per_wake"]
    log("wake-up cost", json.dumps(probe))
    for i in range(a.runs):
        for kind in a.brokers.split(","):
            for wl in a.workloads.split(","):
                w = WORKLOADS[wl]
                for tool in a.tools.split(","):
                    b = start(kind, bin_dir, base_dir)
                    try:
                        name = f"{wl.lower()}-{tool}-{i}"
                        r = (
                            own(bin_dir, b, name, a.duration, w)
                            if tool == "perf"
                            else loadgen(a.loadgen, b, name, a.duration, w, wake_us=wake_us)
                        )
                    finally:
                        b.stop()
                    log(kind, wl, tool, json.dumps(r))
                    rows.setdefault(f"{kind}/{wl}/{tool}", []).append(r)
            if a.steady_rate and kind != "lite":
                b = start(kind, bin_dir, base_dir)
                try:
                    secs = a.steady_duration or a.duration
                    r = loadgen(a.loadgen, b, f"steady-{i}", secs, WORKLOADS["W1"], a.steady_rate, wake_us)
                finally:
                    b.stop()
                log(kind, "W1@rate", json.dumps(r))
                rows.setdefault(f"{kind}/W1@{a.steady_rate}/loadgen", []).append(r)
    med = {}
    for k, runs in rows.items():
        ok = [r for r in runs if "error" not in r]
        med[k] = {
            f: statistics.median([r[f] for r in ok if isinstance(r.get(f), (int, float))])
            for f in (ok[0] if ok else {})
            if any(isinstance(r.get(f), (int, float)) for r in ok)
        }
        med[k]["runs"] = len(ok)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"wake_probe": probe, "runs": rows, "medians": med}, indent=1))
    for k, m in med.items():
        print(k, json.dumps({f: (round(v, 3) if isinstance(v, float) else v) for f, v in m.items()}))


if __name__ == "__main__":
    main()
