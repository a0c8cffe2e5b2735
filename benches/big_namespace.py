"""Admin work over a namespace with 100 000 partitions that exist (issue 37.2): memory and time.

``fill_partitioned`` writes a data directory offline (``persistent://public/default/big`` with N
partitions, every one stored with a durable subscription ``sub``); ``pulsar-rs-server`` starts
on it (topics load lazily) and is asked, one call after the other, what an operator asks of a big
namespace: the topic list, the partitioned topic's stats (summed, then per partition), its
internal stats, a namespace unload, and a forced namespace delete. For each call: HTTP status,
response size, seconds, and the broker's RSS before, at the end, and its peak during the call
(sampled every 20 ms from ``/proc/PID/status``). A call abandoned by its client after a second
is also measured: the broker's CPU seconds in the 5 s after the client left, against the same
call run to completion (work that stops when the client leaves costs next to nothing).

    cargo build --release -p pulsar-rs-server && cargo build --release -p pulsar-rs-broker --example fill_partitioned
    python benches/big_namespace.py --partitions 100000 --out benches/out/big_namespace.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Self

HERE = Path(__file__).resolve().parent
TICK = os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class Peak:
    """The broker's peak RSS while a call runs."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, rss_mb(pid), threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, rss_mb(self.pid))

    def __enter__(self) -> Self:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()


def call(pid: int, admin: str, method: str, path: str, timeout: float = 600) -> dict:
    before = rss_mb(pid)
    t0 = time.monotonic()
    with Peak(pid) as peak:
        req = urllib.request.Request(admin + path, method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                status, body = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, body = e.code, e.read()
    seconds = time.monotonic() - t0
    return {
        "call": f"{method} {path}",
        "status": status,
        "bytes": len(body),
        "seconds": round(seconds, 2),
        "rss_before_mb": round(before, 1),
        "rss_after_mb": round(rss_mb(pid), 1),
        "rss_peak_mb": round(peak.peak, 1),
    }


def abandoned(pid: int, admin: str, path: str, after_s: float = 1.0, watch_s: float = 5.0) -> dict:
    """Sends GET `path`, closes the socket after `after_s`, then counts the broker's CPU."""
    u = urllib.parse.urlsplit(admin)
    s = socket.create_connection((u.hostname, u.port))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: {u.netloc}\r\n\r\n".encode())
    time.sleep(after_s)
    s.close()
    c0 = cpu_s(pid)
    time.sleep(watch_s)
    return {
        "call": f"GET {path} (client gone after {after_s} s)",
        "cpu_s_after_client_left": round(cpu_s(pid) - c0, 2),
        "watch_s": watch_s,
    }


def start(bin_dir: Path, data: Path, work: Path) -> tuple[subprocess.Popen, str]:
    log = open(work / "broker.log", "w")  # noqa: SIM115 - the broker's, closed with it
    proc = subprocess.Popen(
        [str(bin_dir / "pulsar-rs-server"), "--data-dir", str(data), "--port", "0", "--admin-port", "0"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "RUST_LOG": "warn"},
    )
    deadline = time.time() + 120
    while time.time() < deadline:
        for line in (work / "broker.log").read_text().splitlines():
            if line.startswith("READY "):
                return proc, line.split()[2]
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"broker did not start, see {work}/broker.log")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--bin", default=str(HERE.parent / "target" / "release"))
    ap.add_argument("--out", default=str(HERE / "out" / "big_namespace.json"))
    a = ap.parse_args()
    bin_dir = Path(a.bin)
    work = Path(tempfile.mkdtemp(prefix="bigns-", dir=os.environ.get("BENCH_TMP")))
    rows = []
    try:
        filled = work / "filled"
        t0 = time.time()
        subprocess.run([str(bin_dir / "examples" / "fill_partitioned"), str(filled), str(a.partitions)], check=True)
        print(f"filled in {time.time() - t0:.1f} s")
        base = "/admin/v2/persistent/public/default/big"

        # The abandoned call first, on a broker that has loaded nothing yet.
        data = work / "data"
        shutil.copytree(filled, data)
        proc, admin = start(bin_dir, data, work)
        try:
            rows.append({"call": "start", "rss_after_mb": round(rss_mb(proc.pid), 1)})
            rows.append(abandoned(proc.pid, admin, f"{base}/partitioned-stats"))
            c0 = cpu_s(proc.pid)
            row = call(proc.pid, admin, "GET", f"{base}/partitioned-stats")
            row["cpu_s"] = round(cpu_s(proc.pid) - c0, 2)
            rows.append(row)
        finally:
            stop(proc)
        shutil.rmtree(data)

        shutil.copytree(filled, data)
        proc, admin = start(bin_dir, data, work)
        try:
            rows.append({"call": "start", "rss_after_mb": round(rss_mb(proc.pid), 1)})
            for method, path in [
                ("GET", "/admin/v2/persistent/public/default"),
                ("GET", f"{base}/partitioned-stats?perPartition=false"),
                ("GET", f"{base}/partitioned-stats"),
                ("GET", f"{base}/partitioned-internalStats"),
                ("GET", "/admin/v2/persistent/public/default"),
                ("PUT", "/admin/v2/namespaces/public/default/unload"),
                ("DELETE", "/admin/v2/namespaces/public/default?force=true"),
            ]:
                rows.append(call(proc.pid, admin, method, path))
                print(json.dumps(rows[-1]))
        finally:
            stop(proc)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for r in rows:
        print(json.dumps(r))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"partitions": a.partitions, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
