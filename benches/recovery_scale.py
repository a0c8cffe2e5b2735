"""Recovery at scale (issue 13 item 6): restart time, first-lookup latency, offline export.

Fills a data directory with ``--topics`` topics (each with a durable subscription ``sub`` at the
first entry and ``--entries`` entries of ``--size`` bytes, appended round-robin so every journal
segment interleaves all topics), then for each server binary given:

* time from process start to the broker listening (the ``READY`` line, then a TCP connect);
* for ``--lookups`` random topics, the time from the official client's subscribe (lookup,
  topic load, subscription) to the first message received, checking it is that topic's first entry;
* stops the broker (SIGTERM) and times the offline ``pulsar-rs export`` of the whole directory.

Prints one JSON object per measurement and a summary; exits non-zero if anything served is wrong.
Command used for benches/RESULTS.md::

    cargo build --release -p pulsar-rs-server && cargo build --release -p pulsar-rs-broker --example fill_topics
    python benches/recovery_scale.py --topics 10000 --entries 100 --size 4096 --work /tmp/recovery-scale \\
        --server target/release/pulsar-rs-server --old-server /work/main/target/release/pulsar-rs-server
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def fill(args: argparse.Namespace, data: Path) -> None:
    if data.exists():
        shutil.rmtree(data)
    t0 = time.perf_counter()
    cmd = [str(args.fill), str(data), str(args.topics), str(args.entries), str(args.size)]
    subprocess.run(cmd, check=True)
    report("fill", seconds=round(time.perf_counter() - t0, 2), bytes=du(data))


def report(what: str, **fields: object) -> None:
    print(json.dumps({"measure": what, **fields}), flush=True)


def start(server: Path, data: Path) -> tuple[subprocess.Popen, str, float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [str(server), "--data-dir", str(data), "--bind", "127.0.0.1", "--port", "0", "--admin-port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "RUST_LOG": "warn"},
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("READY "):
            url = line.split()[1]
            break
    else:
        raise SystemExit(f"{server} exited before listening (code {proc.wait()})")
    host, port = url.removeprefix("pulsar://").split(":")
    with socket.create_connection((host, int(port)), timeout=10):
        pass
    return proc, url, time.perf_counter() - t0


def lookups(url: str, args: argparse.Namespace, rng: random.Random) -> list[float]:
    import pulsar

    client = pulsar.Client(url, operation_timeout_seconds=60, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    times = []
    try:
        for t in rng.sample(range(args.topics), min(args.lookups, args.topics)):
            topic = f"persistent://public/default/rec-{t:05}"
            t0 = time.perf_counter()
            consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
            msg = consumer.receive(timeout_millis=30_000)
            times.append(time.perf_counter() - t0)
            want = f"rec-{t:05}-{0:08}-".encode()[: args.size]
            if not msg.data().startswith(want):
                raise SystemExit(f"{topic}: first message is {msg.data()[:32]!r}, expected {want!r}")
            consumer.close()
    finally:
        client.close()
    return times


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)


def export(args: argparse.Namespace, data: Path, out: Path) -> tuple[float, dict]:
    if out.exists():
        shutil.rmtree(out)
    t0 = time.perf_counter()
    res = subprocess.run(
        [str(args.export), "export", "--data-dir", str(data), "--out", str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
    took = time.perf_counter() - t0
    manifest = json.loads(res.stdout[res.stdout.index("{") :])
    return took, manifest["tables"]


def run_server(name: str, server: Path, args: argparse.Namespace, data: Path) -> dict:
    proc, url, ready = start(server, data)
    try:
        times = lookups(url, args, random.Random(args.seed))
    finally:
        stop(proc)
    result = {
        "server": name,
        "listening_s": round(ready, 3),
        "lookup_first_s": round(times[0], 4),
        "lookup_median_s": round(statistics.median(times), 4),
        "lookup_max_s": round(max(times), 4),
        "lookups": len(times),
    }
    report("restart", **result)
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--topics", type=int, default=10_000)
    p.add_argument("--entries", type=int, default=100, help="entries per topic")
    p.add_argument("--size", type=int, default=4096, help="bytes per entry")
    p.add_argument("--lookups", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--work", type=Path, default=Path("/tmp/recovery-scale"))
    p.add_argument("--server", type=Path, default=ROOT / "target/release/pulsar-rs-server")
    p.add_argument("--old-server", type=Path, default=None, help="a build to compare with (runs first)")
    p.add_argument("--fill", type=Path, default=ROOT / "target/release/examples/fill_topics")
    p.add_argument("--export", type=Path, default=Path(sys.executable).parent / "pulsar-rs")
    p.add_argument("--skip-fill", action="store_true", help="reuse the data directory in --work")
    args = p.parse_args()
    data = args.work / "data"
    if not args.skip_fill:
        fill(args, data)
    results = []
    if args.old_server is not None:
        results.append(run_server("old", args.old_server, args, data))
    # Twice: the first start after the old build (which does not index) scans and indexes the
    # segments it finds unindexed; the second is a restart after a clean shutdown.
    results.append(run_server("new", args.server, args, data))
    results.append(run_server("new-again", args.server, args, data))
    took, tables = export(args, data, args.work / "export")
    report("export", seconds=round(took, 2), tables=tables)
    if tables.get("topics") != args.topics:
        raise SystemExit(f"export saw {tables.get('topics')} topics, expected {args.topics}")
    report("summary", bytes=du(data), topics=args.topics, restarts=results, export_s=round(took, 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
