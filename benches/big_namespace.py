"""Admin work over a namespace with many partitions that exist (issue 37.2): memory and time.

``fill_partitioned`` writes a data directory offline (``persistent://public/default/big`` with N
partitions, every one stored with a durable subscription ``sub``); ``pulsar-rs-server`` starts
on it (topics load lazily) and is asked, one call after the other, what an operator asks of a big
namespace: the topic list, the partitioned topic's stats (summed, then per partition), its
internal stats, a namespace unload, the summed stats again (every partition loaded again), and a
forced namespace delete (``forceDeleteNamespaceAllowed``). For each call: HTTP status, response
size, seconds, and the broker's RSS before, at the end, and its peak during the call (sampled
every 20 ms from ``/proc``, summed over the broker's process group). A call abandoned by its
client after a second is also measured, on a broker that has loaded nothing: the broker's CPU
seconds in the 5 s after the client left (work that stops when the client leaves costs next to
nothing).

With ``--pulsar-partitions M`` the same sequence also runs against Apache Pulsar 4.0.8
(``tools/pulsar_reference``) and against pulsar-rs, both with M partitions: Pulsar's made by REST
(``PUT .../partitions`` creates them all, then ``PUT .../subscription/sub`` on the partitioned
topic creates the subscription on each), pulsar-rs's by ``fill_partitioned``.

    cargo build --release -p pulsar-rs-server && cargo build --release -p pulsar-rs-broker --example fill_partitioned
    python benches/big_namespace.py --partitions 100000 [--pulsar-partitions 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Self

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import vs_pulsar  # noqa: E402
from tools import pulsar_reference  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
BASE = "/admin/v2/persistent/public/default/big"


def rss_mb(pgid: int) -> float:
    kb = 0
    for pid in vs_pulsar.group_pids(pgid):
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    kb += int(line.split()[1])
        except OSError:
            pass
    return kb / 1024


def cpu_s(pgid: int) -> float:
    return vs_pulsar.group_cpu_s(pgid)


class Peak:
    """The broker's peak RSS while a call runs."""

    def __init__(self, pgid: int) -> None:
        self.pgid, self.peak, self._stop = pgid, rss_mb(pgid), threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, rss_mb(self.pgid))

    def __enter__(self) -> Self:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()


def call(pgid: int, admin: str, method: str, path: str, timeout: float = 900) -> dict:
    before = rss_mb(pgid)
    c0 = cpu_s(pgid)
    t0 = time.monotonic()
    with Peak(pgid) as peak:
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
        "cpu_s": round(cpu_s(pgid) - c0, 2),
        "rss_before_mb": round(before, 1),
        "rss_after_mb": round(rss_mb(pgid), 1),
        "rss_peak_mb": round(peak.peak, 1),
    }


def abandoned(pgid: int, admin: str, path: str, after_s: float = 1.0, watch_s: float = 5.0) -> dict:
    """Sends GET `path`, closes the socket after `after_s`, then counts the broker's CPU."""
    u = urllib.parse.urlsplit(admin)
    s = socket.create_connection((u.hostname, u.port))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: {u.netloc}\r\n\r\n".encode())
    time.sleep(after_s)
    s.close()
    c0 = cpu_s(pgid)
    time.sleep(watch_s)
    return {
        "call": f"GET {path} (client gone after {after_s} s)",
        "cpu_s_after_client_left": round(cpu_s(pgid) - c0, 2),
        "watch_s": watch_s,
    }


def sequence(pgid: int, admin: str) -> list[dict]:
    rows = []
    for method, path in [
        ("GET", "/admin/v2/persistent/public/default"),
        ("GET", f"{BASE}/partitioned-stats?perPartition=false"),
        ("GET", f"{BASE}/partitioned-stats"),
        ("GET", f"{BASE}/partitioned-internalStats"),
        ("GET", "/admin/v2/persistent/public/default"),
        ("PUT", "/admin/v2/namespaces/public/default/unload"),
        ("GET", f"{BASE}/partitioned-stats?perPartition=false"),
        ("DELETE", "/admin/v2/namespaces/public/default?force=true"),
    ]:
        rows.append(call(pgid, admin, method, path))
        print(json.dumps(rows[-1]), flush=True)
    return rows


class RsBroker:
    """pulsar-rs-server on a copy of a filled data directory, in its own process group."""

    def __init__(self, bin_dir: Path, filled: Path, work: Path) -> None:
        self.work = work / "rs"
        shutil.rmtree(self.work, ignore_errors=True)
        self.work.mkdir()
        data = self.work / "data"
        subprocess.run(["cp", "-a", str(filled), str(data)], check=True)
        conf = self.work / "broker.conf"
        conf.write_text("forceDeleteNamespaceAllowed=true\n")
        log = open(self.work / "broker.log", "w")  # noqa: SIM115 - the broker's, closed with it
        cmd = [str(bin_dir / "pulsar-rs-server"), "--config", str(conf), "--data-dir", str(data)]
        self.proc = subprocess.Popen(
            [*cmd, "--port", "0", "--admin-port", "0"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "RUST_LOG": "warn"},
            start_new_session=True,
        )
        deadline = time.time() + 120
        while time.time() < deadline:
            for line in (self.work / "broker.log").read_text().splitlines():
                if line.startswith("READY "):
                    self.admin = line.split()[2]
                    return
            time.sleep(0.05)
        self.close()
        raise RuntimeError(f"broker did not start, see {self.work}/broker.log")

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.work, ignore_errors=True)


def fill(bin_dir: Path, work: Path, n: int) -> Path:
    filled = work / f"filled-{n}"
    t0 = time.time()
    subprocess.run([str(bin_dir / "examples" / "fill_partitioned"), str(filled), str(n)], check=True)
    print(f"filled {n} partitions in {time.time() - t0:.1f} s", flush=True)
    return filled


def run_rs(bin_dir: Path, work: Path, n: int) -> list[dict]:
    filled = fill(bin_dir, work, n)
    rows: list[dict] = []
    # The abandoned call first, on a broker that has loaded nothing yet.
    b = RsBroker(bin_dir, filled, work)
    try:
        rows.append({"call": "start", "rss_after_mb": round(rss_mb(b.proc.pid), 1)})
        rows.append(abandoned(b.proc.pid, b.admin, f"{BASE}/partitioned-stats"))
        print(json.dumps(rows[-1]), flush=True)
        rows.append(call(b.proc.pid, b.admin, "GET", f"{BASE}/partitioned-stats"))
    finally:
        b.close()
    b = RsBroker(bin_dir, filled, work)
    try:
        rows.append({"call": "start", "rss_after_mb": round(rss_mb(b.proc.pid), 1)})
        rows += sequence(b.proc.pid, b.admin)
    finally:
        b.close()
        shutil.rmtree(filled, ignore_errors=True)
    return [{"broker": "pulsar-rs", "partitions": n, **r} for r in rows]


def run_pulsar(n: int) -> list[dict]:
    rows: list[dict] = []
    settings = {"forceDeleteNamespaceAllowed": "true"}

    def made(p: pulsar_reference.PulsarStandalone) -> int:
        assert p._proc is not None
        pgid = p._proc.pid
        for method, path in [("PUT", f"{BASE}/partitions"), ("PUT", f"{BASE}/subscription/sub")]:
            body = str(n).encode() if path.endswith("partitions") else b"{}"
            req = urllib.request.Request(
                p.admin_url + path, data=body, method=method, headers={"Content-Type": "application/json"}
            )
            t0 = time.monotonic()
            with urllib.request.urlopen(req, timeout=1800) as r:
                print(f"pulsar {method} {path}: {r.status} in {time.monotonic() - t0:.1f} s", flush=True)
        return pgid

    with pulsar_reference.PulsarStandalone(settings) as p:
        pgid = made(p)
        # The subscription call loaded every partition: unload them, so the abandoned call starts
        # from a broker that has loaded nothing, as pulsar-rs's does.
        call(pgid, p.admin_url, "PUT", "/admin/v2/namespaces/public/default/unload")
        rows.append({"call": "start", "rss_after_mb": round(rss_mb(pgid), 1)})
        rows.append(abandoned(pgid, p.admin_url, f"{BASE}/partitioned-stats"))
        print(json.dumps(rows[-1]), flush=True)
        rows.append(call(pgid, p.admin_url, "GET", f"{BASE}/partitioned-stats"))
        call(pgid, p.admin_url, "PUT", "/admin/v2/namespaces/public/default/unload")
        rows.append({"call": "start", "rss_after_mb": round(rss_mb(pgid), 1)})
        rows += sequence(pgid, p.admin_url)
    return [{"broker": "pulsar", "partitions": n, **r} for r in rows]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--pulsar-partitions", type=int, default=0, help="also compare with Apache Pulsar at this size")
    ap.add_argument("--bin", default=str(HERE.parent / "target" / "release"))
    ap.add_argument("--out", default=str(HERE / "out" / "big_namespace.json"))
    a = ap.parse_args()
    bin_dir = Path(a.bin)
    work = Path(tempfile.mkdtemp(prefix="bigns-", dir=os.environ.get("BENCH_TMP")))
    rows: list[dict] = []
    runs: list[Callable[[], list[dict]]] = [lambda: run_rs(bin_dir, work, a.partitions)]
    if a.pulsar_partitions:
        runs += [lambda: run_rs(bin_dir, work, a.pulsar_partitions), lambda: run_pulsar(a.pulsar_partitions)]
    try:
        for run in runs:
            rows += run()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"args": vars(a), "rows": rows}, indent=1))
    for r in rows:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
