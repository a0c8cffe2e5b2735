"""How long ``pulsar_rs.Broker()`` takes to return, on a fresh data directory each time.

``Broker()`` returns once the broker is serving (tests/interop/test_interop_basic.py checks that it
accepts a connection and a send at once); this measures the time it takes, which the README quotes
("start one in-process in about a millisecond"). Run it from an environment where the package is
installed:

    python benches/start_to_ready.py --runs 20
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import pulsar_rs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    timings = []
    with tempfile.TemporaryDirectory(prefix="start-to-ready-") as tmp:
        for i in range(args.runs):
            t0 = time.perf_counter()
            broker = pulsar_rs.Broker(data_dir=Path(tmp) / f"d{i}")
            timings.append((time.perf_counter() - t0) * 1e3)
            broker.stop()
    print(
        f"Broker() start-to-ready over {args.runs} runs: min {min(timings):.2f} ms, "
        f"median {statistics.median(timings):.2f} ms, max {max(timings):.2f} ms"
    )


if __name__ == "__main__":
    main()
