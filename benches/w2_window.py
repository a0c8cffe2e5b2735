"""W2 (100 B x 100 batched, 1 producer + 1 consumer) against the producer's in-flight window.

A producer with W messages in flight can publish at most W / RTT messages per second, where RTT
is the SEND -> SEND_RECEIPT round trip. On a durable broker the receipt waits for the journal's
``fdatasync``, so the durable rate is bounded by the window and the disk's sync latency, not by the
broker's CPU. This run shows that bound: W2 on a durable and a non-durable broker at several
windows (pulsar-perf's default ``--max-outstanding`` is 1000, as is ``pulsar-rs-perf``'s
``--max-inflight``), each with the measured publish latency and the bound ``W / mean latency``,
plus the disk's ``write+fdatasync`` latency from ``pulsar-rs-probe`` in the same run.

    cargo build --release -p pulsar-rs-server -p pulsar-rs-perf
    python benches/w2_window.py --runs 3 --duration 4 --out benches/out/w2_window.json
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

from compare import Broker, log, perf  # noqa: E402 - sibling bench module


def probe_disk(bin_dir: Path) -> dict:
    """``pulsar-rs-probe disk`` in the directory brokers use (its JSON, or the error)."""
    where = Path(os.environ.get("BENCH_TMP", "/tmp"))
    p = subprocess.run(
        [str(bin_dir / "pulsar-rs-probe"), "disk", "--dir", str(where), "--seconds", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError:
        return {"error": (p.stdout + p.stderr)[-500:]}


def one(bin_dir: Path, kind: str, window: int, duration: float) -> dict:
    broker = Broker(kind, bin_dir)
    try:
        r = perf(bin_dir, broker.url, size=100, batch=100, duration=duration, max_inflight=window)
        cpu = broker.stats()["cpu_s"]
    finally:
        broker.stop()
    if "error" in r:
        return r
    pub, con = r["publish"], r["consume"]
    mean_ms = pub["latency_ms"]["mean"]
    return {
        "publish_msg_s": pub["msg_per_s"],
        "consume_msg_s": con["msg_per_s"],
        "publish_p50_ms": pub["latency_ms"]["p50"],
        "publish_mean_ms": mean_ms,
        "bound_msg_s": window / (mean_ms / 1000) if mean_ms else None,
        "broker_cpu_us_per_msg": 1e6 * cpu / max(1, pub["messages"] + con["messages"]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", default=str(HERE.parent / "target" / "release"))
    ap.add_argument("--windows", default="1000,4000,16000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=float, default=4.0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    bin_dir = Path(args.bin_dir)
    windows = [int(w) for w in args.windows.split(",")]
    out: dict = {"loadavg_before": os.getloadavg(), "disk": probe_disk(bin_dir), "runs": {}}
    for _ in range(args.runs):
        # Alternate kinds and windows within each round so drift in the box's load hits all alike.
        for window in windows:
            for kind in ("rs-durable", "rs-nondurable"):
                r = one(bin_dir, kind, window, args.duration)
                log(kind, window, r)
                out["runs"].setdefault(f"{kind}/{window}", []).append(r)
    out["loadavg_after"] = os.getloadavg()
    print(f"{'broker/window':24} {'publish msg/s':>14} {'consume msg/s':>14} {'p50 ms':>7} {'W/mean':>12}")
    out["medians"] = {}
    for key, runs in out["runs"].items():
        ok = [r for r in runs if "error" not in r]
        if not ok:
            print(f"{key:24} failed: {runs[0]}")
            continue
        med = {k: statistics.median(r[k] for r in ok if r[k] is not None) for k in ok[0]}
        out["medians"][key] = med
        print(
            f"{key:24} {med['publish_msg_s']:14,.0f} {med['consume_msg_s']:14,.0f} "
            f"{med['publish_p50_ms']:7.2f} {med['bound_msg_s']:12,.0f}"
        )
    print("disk:", json.dumps(out["disk"]))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
