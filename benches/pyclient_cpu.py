"""Broker CPU per message vs the official Python client's CPU per message (issue 14, goal b).

Starts one pulsar_rs broker (``compare.Broker``), runs ``pyclient_perf.py`` (official
``pulsar-client``: one producer + one consumer in one process) against it, and compares the CPU
time (utime + stime) both processes spent: the broker's from ``/proc/<pid>/stat`` before and
after, the client's from ``os.wait4``'s rusage (the whole child process). Per message = CPU
seconds / messages published (each is also consumed once). Medians of ``--runs``.

    python benches/pyclient_cpu.py --bin-dir target/release --runs 3 --duration 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from compare import Broker, proc_cpu_s  # noqa: E402


def one_run(bin_dir: Path, kind: str, size: int, batch: int, duration: float) -> dict:
    b = Broker(kind, bin_dir)
    try:
        cmd = [sys.executable, str(HERE / "pyclient_perf.py"), "--url", b.url]
        cmd += ["--size", str(size), "--batch", str(batch), "--duration", str(duration)]
        broker0 = proc_cpu_s(b.proc.pid)
        t0 = time.time()
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        out = child.stdout.read()
        _, status, ru = os.wait4(child.pid, 0)
        wall = time.time() - t0
        broker_cpu = proc_cpu_s(b.proc.pid) - broker0
    finally:
        b.stop()
    if status != 0:
        raise RuntimeError(f"pyclient_perf.py failed: status {status}")
    r = json.loads(out)
    msgs = r["publish"]["messages"]
    client_cpu = ru.ru_utime + ru.ru_stime
    return {
        "messages": msgs,
        "wall_s": wall,
        "broker_cpu_s": broker_cpu,
        "client_cpu_s": client_cpu,
        "broker_us_per_msg": broker_cpu / msgs * 1e6,
        "client_us_per_msg": client_cpu / msgs * 1e6,
        "broker_over_client": broker_cpu / client_cpu,
        "load_avg": os.getloadavg(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release"))
    ap.add_argument("--brokers", default="rs-durable,rs-nondurable")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=float, default=5.0)
    args = ap.parse_args()
    bin_dir = Path(args.bin_dir).resolve()
    cases = {"100B_unbatched": (100, 1), "100B_batched": (100, 100)}
    results: dict = {}
    for kind in filter(None, args.brokers.split(",")):
        for name, (size, batch) in cases.items():
            runs = [one_run(bin_dir, kind, size, batch, args.duration) for _ in range(args.runs)]
            results[f"{kind}/{name}"] = {
                "runs": runs,
                "median_broker_us_per_msg": statistics.median(r["broker_us_per_msg"] for r in runs),
                "median_client_us_per_msg": statistics.median(r["client_us_per_msg"] for r in runs),
                "median_broker_over_client": statistics.median(r["broker_over_client"] for r in runs),
            }
            print(
                json.dumps(
                    {k: v for k, v in results[f"{kind}/{name}"].items() if k != "runs"} | {"case": f"{kind}/{name}"}
                ),
                flush=True,
            )
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
