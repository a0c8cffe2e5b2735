"""Journal preallocation A/B: alternating pairs of fresh brokers, with and without it.

Each pair runs the default durable broker (``rs``, ``journalPreAllocSizeMB = 16``) and the same
with ``journalPreAllocSizeMB = 0`` (``rs-nopre``) back to back, so the VM's drift hits both
alike. Workloads (``pulsar-rs-perf``, 100 B unbatched): W0 = one SEND in flight (the durable
round trip), W1 = 1 000 in flight (saturated). Reports medians of publish msg/s, p50 and p99.

    python benches/prealloc_ab.py --pairs 7 --duration 4 --out benches/out/prealloc-ab.json
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

WORKLOADS = {"W0": 1, "W1": 1000}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--duration", type=int, default=4)
    ap.add_argument("--bin-dir", default=str(HERE.parent / "target" / "release"))
    ap.add_argument("--out", default=str(HERE / "out" / "prealloc-ab.json"))
    a = ap.parse_args()
    bin_dir = Path(a.bin_dir)
    runs: dict[str, list[dict]] = {}
    for i in range(a.pairs):
        for wl, inflight in WORKLOADS.items():
            for kind in ("rs-durable", "rs-durable-nopre"):
                b = Broker(kind, bin_dir)
                try:
                    r = brief(
                        perf(
                            bin_dir,
                            b.url,
                            duration=a.duration,
                            size=100,
                            batch=1,
                            max_inflight=inflight,
                            topic_prefix=f"ab-{wl}-{i}",
                        )
                    )
                finally:
                    b.stop()
                log(kind, wl, json.dumps(r))
                runs.setdefault(f"{kind}/{wl}", []).append(r)
    med = {
        k: {
            f: statistics.median(r[f] for r in v if r.get(f) is not None)
            for f in ("pub_msg_s", "pub_p50_ms", "pub_p99_ms")
        }
        for k, v in runs.items()
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"runs": runs, "medians": med}, indent=1))
    for k, m in med.items():
        print(k, json.dumps({f: round(x, 3) for f, x in m.items()}))


if __name__ == "__main__":
    main()
