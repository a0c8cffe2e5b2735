"""Two builds of ``pulsar-rs-server`` side by side: alternating pairs of fresh brokers, one of
each, so the machine's drift hits both alike.

``--a`` and ``--b`` are directories holding a ``pulsar-rs-server`` each (e.g. a clean clone's
``target/release`` before a change, and this tree's after it); the load generator is
``pulsar-rs-perf`` from ``--perf-dir``. Workloads (100 B, one producer and one consumer):
W0 = unbatched, one SEND in flight (the durable round trip); W1 = unbatched, 1 000 in flight;
W2 = batched by 100, 1 000 in flight. Each run: a fresh broker on an empty data directory
(durable defaults). Reported per build and workload: medians of publish msg/s, p50 and p99, and
the broker's CPU per message published + received (utime + stime over the run).

    python benches/binary_ab.py --a /tmp/clone/target/release --b target/release --pairs 3 \\
        --out benches/out/binary_ab.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from compare import Broker, brief, log, perf  # noqa: E402

#: (messages per batch, SENDs in flight).
WORKLOADS = {"W0": (1, 1), "W1": (1, 1000), "W2": (100, 1000)}
FIGURES = ("pub_msg_s", "pub_p50_ms", "pub_p99_ms", "broker_us_per_msg")


def one(server_dir: Path, perf_dir: Path, workload: str, duration: int, tag: str) -> dict:
    batch, inflight = WORKLOADS[workload]
    b = Broker("rs-durable", server_dir)
    try:
        r = brief(
            perf(
                perf_dir,
                b.url,
                duration=duration,
                size=100,
                batch=batch,
                max_inflight=inflight,
                topic_prefix=f"ab-{tag}",
            )
        )
        cpu = b.stats()["cpu_s"]
    finally:
        b.stop()
    msgs = (r.get("published") or 0) + (r.get("received") or 0)
    r["broker_us_per_msg"] = 1e6 * cpu / msgs if msgs else None
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="directory of build A's pulsar-rs-server")
    ap.add_argument("--b", required=True, help="directory of build B's pulsar-rs-server")
    ap.add_argument("--perf-dir", default=str(HERE.parent / "target" / "release"))
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--out", default=str(HERE / "out" / "binary_ab.json"))
    a = ap.parse_args()
    builds = {"A": Path(a.a).resolve(), "B": Path(a.b).resolve()}
    runs: dict[str, list[dict]] = {}
    for i in range(a.pairs):
        for wl in a.workloads.split(","):
            # The order alternates by pair.
            for name in ("A", "B") if i % 2 == 0 else ("B", "A"):
                r = one(builds[name], Path(a.perf_dir).resolve(), wl, a.duration, f"{wl}-{i}")
                log(name, wl, json.dumps(r))
                runs.setdefault(f"{name} {wl}", []).append(r)
    med = {
        k: {f: statistics.median(x[f] for x in v if x.get(f) is not None) for f in FIGURES}
        for k, v in runs.items()
        if all(any(x.get(f) is not None for x in v) for f in FIGURES)
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"args": vars(a), "runs": runs, "medians": med}, indent=1))
    print("| build workload | publish msg/s | p50 ms | p99 ms | broker µs/msg |")
    print("|---|---|---|---|---|")
    for k, m in sorted(med.items(), key=lambda kv: (kv[0].split()[1], kv[0])):
        p50, p99, cpu = m["pub_p50_ms"], m["pub_p99_ms"], m["broker_us_per_msg"]
        print(f"| {k} | {m['pub_msg_s']:.0f} | {p50:.3g} | {p99:.3g} | {cpu:.3g} |")


if __name__ == "__main__":
    main()
