"""Broker RSS with N idle topics loaded (issue 14.5: 100 000 idle topics in <= 1 GB).

For each N: ``fill_topics`` writes a data directory offline (N topics ``public/default/rec-*``,
each with one 100-byte entry and a durable subscription ``sub``); ``pulsar-rs-server`` starts on
it (topics load lazily), then every topic is loaded through the admin API (``GET .../stats``, which
loads the topic, its managed ledger and its cursor as a first lookup does), no client stays
connected, and after a few idle seconds the broker's RSS is read from ``/proc/PID/status``.
Also reported: RSS right after start (nothing loaded yet), and the per-topic slope.

    cargo build --release -p pulsar-rs-server && cargo build --release -p pulsar-rs-broker --example fill_topics
    python benches/idle_topics.py --counts 1000,10000,100000 --out benches/out/idle_topics.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def one(bin_dir: Path, n: int, idle_s: float) -> dict:
    work = Path(tempfile.mkdtemp(prefix="idle-", dir=os.environ.get("BENCH_TMP")))
    try:
        data = work / "data"
        t0 = time.time()
        subprocess.run([str(bin_dir / "examples" / "fill_topics"), str(data), str(n), "1", "100"], check=True)
        fill_s = time.time() - t0
        log = open(work / "broker.log", "w")  # noqa: SIM115 - closed below
        proc = subprocess.Popen(
            [str(bin_dir / "pulsar-rs-server"), "--data-dir", str(data), "--port", "0", "--admin-port", "0"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "RUST_LOG": "warn"},
        )
        try:
            admin = None
            deadline = time.time() + 60
            while time.time() < deadline and admin is None:
                for line in (work / "broker.log").read_text().splitlines():
                    if line.startswith("READY "):
                        admin = line.split()[2]
                time.sleep(0.05)
            if admin is None:
                raise RuntimeError(f"broker did not start, see {work}/broker.log")
            time.sleep(1)
            rss_start = rss_mb(proc.pid)

            def load(i: int) -> int:
                url = f"{admin}/admin/v2/persistent/public/default/rec-{i:05}/stats"
                with urllib.request.urlopen(url, timeout=60) as r:
                    return r.status

            t1 = time.time()
            with ThreadPoolExecutor(8) as pool:
                statuses = list(pool.map(load, range(n)))
            load_s = time.time() - t1
            if any(s != 200 for s in statuses):
                raise RuntimeError("a topic did not load")
            time.sleep(idle_s)
            rss_loaded = rss_mb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            log.close()
        return {
            "topics": n,
            "fill_s": round(fill_s, 2),
            "load_s": round(load_s, 2),
            "rss_start_mb": round(rss_start, 1),
            "rss_loaded_mb": round(rss_loaded, 1),
            "kib_per_topic": round((rss_loaded - rss_start) * 1024 / n, 2),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", default=str(HERE.parent / "target" / "release"))
    ap.add_argument("--counts", default="1000,10000")
    ap.add_argument("--idle", type=float, default=5.0, help="idle seconds before reading RSS")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    results = []
    for n in (int(c) for c in args.counts.split(",")):
        r = one(Path(args.bin_dir), n, args.idle)
        print(json.dumps(r), flush=True)
        results.append(r)
    if args.out:
        Path(args.out).write_text(json.dumps({"loadavg": os.getloadavg(), "runs": results}, indent=2))


if __name__ == "__main__":
    main()
