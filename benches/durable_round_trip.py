"""Durable publish latency with one message in flight, against the disk's own ``fdatasync``
(issue 56, "tails": within 1.2x the probe's p50 and 1.5x its p99), pulsar-rs and Apache Pulsar
4.0.8 with its journal fsynced, in one run.

A producer that waits for each receipt before it sends the next message measures the broker's
durable round trip: the SEND's way in, the journal write and its ``fdatasync``, the receipt's
way out. The floor under it is ``pulsar-rs-probe round-trip`` (``rust/perf/src/round_trip.rs``):
the same request / answer over loopback between two blocking threads, the server writing each
request as one 4 KiB block over a preallocated file (``O_DIRECT``) and ``fdatasync``ing it
before it answers, with nothing else in between; and its parts, loopback alone and the write +
sync alone. Each round, on the file system the brokers' data directories are on (``BENCH_TMP``
or the system temp directory):

* the probe, ``--probe-seconds`` per measurement, before each broker's runs (so that it sees the
  machine as they do);
* each broker in turn (the order alternates by round), started fresh on an empty data directory:
  ``pulsar-rs`` (the venv's ``pulsar-rs standalone`` or ``--rs-server-bin``, durable defaults)
  and ``pulsar-sync`` (Apache Pulsar 4.0.8 standalone by tools/pulsar_reference with
  ``journalSyncData=true``), one producer of 100 B unbatched messages, one in flight, no
  consumer, for ``--duration`` seconds, by each driver: the independent load generator
  (``../shared/loadgen``, ``--max-pending 1``) and Pulsar's ``pulsar-perf produce -o 1``.

Reported: publish latency p50 / p99 per broker and driver, the probe's, and the ratios broker /
durable floor (medians over ``--rounds``). JSON with every run: ``--out``. Nothing of this runs
in CI.

    cargo build --release -p pulsar-rs-perf --bin pulsar-rs-probe
    python benches/durable_round_trip.py --rounds 3 --duration 10 \\
        --loadgen /path/to/pulsar-loadgen --out benches/out/durable_round_trip.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from peer_runs import loadgen_one, log, record_header  # noqa: E402
from vs_pulsar import JavaBroker, RsBroker, ensure_distribution, parse_latency  # noqa: E402

BROKERS = ("pulsar-rs", "pulsar-sync")
DRIVERS = ("loadgen", "perf")
#: The load generator's workload: 100 B unbatched, one SEND in flight, no consumer.
ONE_IN_FLIGHT = dict(size=100, topics=1, batching=False, rate=0, max_pending=1, consume=False)
#: The probe's measurements, each a latency summary in ms.
PROBE_PARTS = ("durable_ms", "loopback_ms", "sync_alone_ms")


def probe(binary: str, where: Path, seconds: float) -> dict:
    """``pulsar-rs-probe round-trip`` in `where`: its JSON (loopback, durable, sync alone)."""
    cmd = [binary, "round-trip", "--dir", str(where), "--seconds", str(seconds)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=10 * seconds + 120, check=True)
    return json.loads(p.stdout)


def perf_run(home: Path, broker: object, topic: str, duration: int, work: Path) -> dict:
    """``pulsar-perf produce -o 1``: one 100 B unbatched message outstanding, no consumer."""
    env = {**os.environ, "PULSAR_PERFTEST_CONF": str(work / "client.conf")}
    (work / "client.conf").write_text(
        f"webServiceUrl={broker.admin_url}/\nbrokerServiceUrl={broker.service_url}/\n"  # type: ignore[attr-defined]
    )
    cmd = [str(home / "bin" / "pulsar-perf"), "produce", "-u", broker.service_url, "-t", "1", "-i", "1"]  # type: ignore[attr-defined]
    cmd += ["-s", "100", "-r", "10000000", "-db", "-o", "1", "-time", str(duration), topic]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=duration + 180)
    out = p.stdout + p.stderr
    sent = re.search(r"Aggregated throughput stats --- ([\d,]+) records sent --- ([\d.,]+) msg/s", out)
    lat = re.search(r"Aggregated latency stats --- (.*)", out)
    if not sent or not lat:
        return {"error": "pulsar-perf: " + out[-1500:]}
    return {
        "sent": int(sent.group(1).replace(",", "")),
        "pub_msg_s": float(sent.group(2).replace(",", "")),
        **parse_latency(lat.group(1)),
    }


def start(kind: str, rs_server_bin: str | None) -> object:
    if kind == "pulsar-rs":
        return RsBroker(rs_server_bin)
    if kind == "pulsar-sync":
        return JavaBroker({"journalSyncData": True})
    raise SystemExit(f"unknown broker {kind}")


def median(values: list[float | None]) -> float | None:
    vs = [v for v in values if isinstance(v, (int, float))]
    return statistics.median(vs) if vs else None


def fmt(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.3g}" if v < 100 else f"{v:,.0f}".replace(",", " ")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10, help="seconds of each producer run")
    ap.add_argument("--probe-seconds", type=float, default=3.0)
    ap.add_argument("--probe-bin", default=str(HERE.parent / "target" / "release" / "pulsar-rs-probe"))
    ap.add_argument("--brokers", default=",".join(BROKERS))
    ap.add_argument("--drivers", default=",".join(DRIVERS))
    ap.add_argument("--loadgen", help="the pulsar-loadgen binary (../shared/loadgen); needed for driver loadgen")
    ap.add_argument("--rs-server-bin", help="run pulsar-rs-server instead of the venv's `pulsar-rs standalone`")
    ap.add_argument("--out", default=str(HERE / "out" / "durable_round_trip.json"))
    a = ap.parse_args()
    drivers, brokers = a.drivers.split(","), a.brokers.split(",")
    if "loadgen" in drivers and not a.loadgen:
        raise SystemExit("--loadgen BIN is needed for driver loadgen (or --drivers perf)")
    home = ensure_distribution()
    where = Path(os.environ.get("BENCH_TMP") or tempfile.gettempdir())
    started = datetime.now(UTC).isoformat(timespec="seconds")
    probes: list[dict] = []
    runs: dict[str, list[dict]] = {}
    for i in range(a.rounds):
        order = brokers[i % len(brokers) :] + brokers[: i % len(brokers)]
        for kind in order:
            p = probe(a.probe_bin, where, a.probe_seconds)
            probes.append(p)
            log(f"round {i} probe: " + ", ".join(f"{k} p50 {p[k]['p50']} p99 {p[k]['p99']}" for k in PROBE_PARTS))
            broker = start(kind, a.rs_server_bin)
            try:
                for d in drivers:
                    topic = f"rt-{i}-{d}"
                    with tempfile.TemporaryDirectory(dir=where) as work:
                        r = (
                            loadgen_one(a.loadgen, broker, ONE_IN_FLIGHT, topic, a.duration)
                            if d == "loadgen"
                            else perf_run(home, broker, f"persistent://public/default/{topic}", a.duration, Path(work))
                        )
                    r["round"] = i
                    runs.setdefault(f"{kind} {d}", []).append(r)
                    log(f"round {i} {kind} {d}: {r}")
            finally:
                broker.close()  # type: ignore[attr-defined]
    med = {
        name: {k: median([r.get(k) for r in rs if "error" not in r]) for k in ("pub_msg_s", "pub_p50_ms", "pub_p99_ms")}
        for name, rs in runs.items()
    }
    floor = {part: {q: median([p[part][q] for p in probes]) for q in ("p50", "p99")} for part in PROBE_PARTS}
    out = {**record_header(started, a), "probe_dir": str(where), "probes": probes, "runs": runs}
    out |= {"medians": med, "probe_medians": floor}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1))
    d = floor["durable_ms"]
    print("| run | msg/s | p50 ms | p99 ms | p50 / floor p50 | p99 / floor p99 |")
    print("|---|---|---|---|---|---|")
    for part, f in floor.items():
        print(f"| probe {part.removesuffix('_ms')} | - | {fmt(f['p50'])} | {fmt(f['p99'])} | - | - |")
    for name, m in med.items():
        r50 = m["pub_p50_ms"] / d["p50"] if m["pub_p50_ms"] and d["p50"] else None
        r99 = m["pub_p99_ms"] / d["p99"] if m["pub_p99_ms"] and d["p99"] else None
        print(
            f"| {name} | {fmt(m['pub_msg_s'])} | {fmt(m['pub_p50_ms'])} | {fmt(m['pub_p99_ms'])} "
            f"| {fmt(r50)}x | {fmt(r99)}x |"
        )


if __name__ == "__main__":
    main()
