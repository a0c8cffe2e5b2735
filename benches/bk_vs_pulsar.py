"""pulsar-rs against Apache Pulsar, both keeping their topics on the same Apache BookKeeper bookies.

One ``BookKeeperCluster`` (``python/pulsar_rs/testing/bookkeeper.py``: ZooKeeper and 3 bookies of the
pinned Apache Pulsar 4.0.8 distribution, journal fsynced as BookKeeper ships it; each bookie
``--bookie-heap-mb`` of heap, default 1024: at the tests' 128 MiB the bookies run out of heap under
the unthrottled 1 KiB load) and on it, for the whole run, two brokers with the same managed-ledger
replication (``--ensemble E,Qw,Qa``, default 2,2,2 = Pulsar's shipped ``broker.conf``):

  pulsar-rs   ``python -m pulsar_rs.cli standalone --config C`` with ``metadataStoreUrl=zk:...`` and
              the managedLedgerDefault{EnsembleSize,WriteQuorum,AckQuorum} (README, "Running on
              BookKeeper"): every managed ledger on the bookies in Pulsar's formats
  pulsar      ``bin/pulsar broker`` (``cluster.start_pulsar_broker``), same ZooKeeper, same bookies

Workloads, the same ``pulsar-rs perf produce`` (1 producer + 1 consumer per topic, Exclusive,
receiver queue 1000, 1000 messages in flight) against each broker, on distinct topics, alternating
(rs first in even rounds, Pulsar first in odd ones), after one short discarded warm-up run per broker:

  FIX100    100 B unbatched at a fixed 2 000 msg/s: the publish latency of a modest steady load
  FIX1K     1 KiB batched (50 per batch) at a fixed 20 000 msg/s
  MAX100    100 B unbatched, unthrottled
  MAX1K     1 KiB batched (50 per batch), unthrottled

Recorded per run: publish msg/s (receipted messages / time to the last receipt), consume msg/s,
publish latency p50 / p99 (ms, send to receipt), send errors, messages published but not received
by the consumer, and the broker's CPU seconds (utime + stime of its process group, from
/proc/<pid>/stat, around the perf command: the JVM for Pulsar, the Python process running the Rust
broker for pulsar-rs) per message (published + received). Medians over ``--runs``; the ratio is
pulsar-rs / Pulsar. Everything goes to JSON; a Markdown table is printed. Nothing of this runs in CI.

    python benches/bk_vs_pulsar.py --runs 3 --duration 15 --out benches/out/bk_vs_pulsar.json
    python benches/bk_vs_pulsar.py --quick      # 1 round x 5 s of each
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))
from tools.pulsar_reference import PulsarReferenceError, available  # noqa: E402
from vs_pulsar import fmt, group_cpu_s, group_hwm_mb, loadavg, log, ratio  # noqa: E402

from pulsar_rs.testing.bookkeeper import BookKeeperCluster  # noqa: E402
from pulsar_rs.testing.process import PulsarRsBroker  # noqa: E402

BROKERS = ("pulsar-rs", "pulsar")
WORKLOADS = {
    "FIX100": dict(size=100, batch=1, rate=2_000),
    "FIX1K": dict(size=1024, batch=50, rate=20_000),
    "MAX100": dict(size=100, batch=1, rate=0),
    "MAX1K": dict(size=1024, batch=50, rate=0),
}


class RsBroker(PulsarRsBroker):
    """``pulsar-rs standalone`` on the bookies, in its own session, with a data directory of its own
    (which holds nothing of the topics: they are on the bookies)."""

    def __init__(self, bk: BookKeeperCluster, ensemble: tuple[int, int, int], work: Path) -> None:
        e, qw, qa = ensemble
        # Its own cluster's metadata under a chroot of the same ZooKeeper (the bookies' `/ledgers`
        # named explicitly), so the two brokers are two clusters sharing one BookKeeper, each owning
        # every bundle of its own `public/default`: on one metadata root they would form one
        # cluster and each refuse the topics whose bundles the other owns.
        conf = {
            "metadataStoreUrl": f"{bk.metadata_store_url}/pulsar-rs",
            "bookkeeperMetadataServiceUri": f"zk+hierarchical://{bk.zk_servers}/ledgers",
            "managedLedgerDefaultEnsembleSize": e,
            "managedLedgerDefaultWriteQuorum": qw,
            "managedLedgerDefaultAckQuorum": qa,
        }
        bk.create_znode("/pulsar-rs")
        super().__init__(work, "pulsar-rs", conf)
        self.service_url = self.url

    @property
    def pgid(self) -> int:
        return self.proc.pid

    def errors_logged(self) -> list[str]:
        return [ln for ln in self.log().splitlines() if re.search(r"\b(ERROR|WARN)\b", ln)]

    def close(self) -> None:
        self.stop()


def perf_args(w: dict, topic_prefix: str, duration: float) -> list[str]:
    return [
        "--topic-prefix",
        topic_prefix,
        "--size",
        str(w["size"]),
        "--batch",
        str(w["batch"]),
        "--rate",
        str(w["rate"]),
        "--duration",
        str(duration),
        "--num-consumers",
        "1",
    ]


def pulsar_lookup(admin_url: str, topic: str) -> None:
    """Has the broker at ``admin_url`` take ownership of the topic's bundle: ``pulsar-rs perf`` sends
    no LOOKUP (it connects to the broker directly), and a broker of a cluster (Apache Pulsar, or
    pulsar-rs with a metadata store) serves only the bundles it owns (ServiceNotReady "Namespace
    bundle ... not served by this instance" otherwise)."""
    url = f"{admin_url}/lookup/v2/topic/persistent/public/default/{topic}"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(url, timeout=60) as r:
                r.read()
            return
        except OSError:  # the web service may come up after the binary port
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def run_one(url: str, pgid: int, w: dict, topic_prefix: str, duration: float) -> dict:
    """One ``pulsar-rs perf produce --json`` (1 P + 1 C on topic ``<topic_prefix>-0``) against
    ``url``; the broker group's CPU seconds around it."""
    cmd = [
        sys.executable,
        "-m",
        "pulsar_rs.cli",
        "perf",
        "produce",
        "--url",
        url,
        *perf_args(w, topic_prefix, duration),
    ]
    cpu0, t0 = group_cpu_s(pgid), time.monotonic()
    p = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=duration + 180, check=False)
    cpu, wall = group_cpu_s(pgid) - cpu0, time.monotonic() - t0
    start = re.search(r"^\{", p.stdout, re.M)  # the summary follows the per-second lines
    try:
        out = json.loads(p.stdout[start.start() :] if start else p.stdout)
    except json.JSONDecodeError:
        return {"error": f"perf exited {p.returncode}: {p.stdout[-1000:]} {p.stderr[-2000:]}"}
    pub, con = out["publish"], out["consume"]
    lat = pub.get("latency_ms") or {}
    msgs = pub["messages"] + con["messages"]
    r = {
        "published": pub["messages"],
        "received": con["messages"],
        "not_received": pub["messages"] - con["messages"],
        "send_errors": pub["send_errors"],
        "perf_errors": out["errors"],
        "pub_msg_s": pub["msg_per_s"],
        "cons_msg_s": con["msg_per_s"],
        "pub_p50_ms": lat.get("p50"),
        "pub_p99_ms": lat.get("p99"),
        "pub_max_ms": lat.get("max"),
        "e2e_p50_ms": (con.get("e2e_latency_ms") or {}).get("p50"),
        "publish_s": pub["duration_s"],
        "setup_s": out["setup_s"],
        "perf_wall_s": wall,
        "broker_cpu_s": cpu,
        "broker_us_per_msg": 1e6 * cpu / msgs if msgs else None,
        "perf_exit": p.returncode,
    }
    if p.returncode != 0 or out["errors"] or pub["send_errors"]:
        r["perf_stderr"] = p.stderr[-2000:]
    return r


def median_of(runs: list[dict]) -> dict:
    ok = [r for r in runs if "error" not in r]
    med: dict = {"runs": len(ok)}
    for k in ok[0] if ok else {}:
        vals = [r[k] for r in ok if isinstance(r.get(k), (int, float)) and not isinstance(r.get(k), bool)]
        if vals:
            med[k] = statistics.median(vals)
    return med


ROWS = (
    ("publish msg/s", "pub_msg_s"),
    ("publish p50 ms", "pub_p50_ms"),
    ("publish p99 ms", "pub_p99_ms"),
    ("consume msg/s", "cons_msg_s"),
    ("broker CPU µs/msg", "broker_us_per_msg"),
)


def table(med: dict, workloads: list[str]) -> str:
    head = ["workload", "metric", *BROKERS, "pulsar-rs / Pulsar"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for wl in workloads:
        w = WORKLOADS[wl]
        desc = f"{wl} {w['size']} B, batch {w['batch']}, " + (f"{w['rate']} msg/s" if w["rate"] else "max")
        for label, key in ROWS:
            vals = [med.get(f"{b}/{wl}", {}).get(key) for b in BROKERS]
            lines.append("| " + " | ".join([desc, label, *(fmt(v) for v in vals), ratio(vals[0], vals[1])]) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=float, default=15, help="seconds of publishing in each run")
    ap.add_argument("--quick", action="store_true", help="--runs 1 --duration 5")
    ap.add_argument("--ensemble", default="2,2,2", help="E,Qw,Qa of both brokers' managed ledgers")
    ap.add_argument(
        "--bookie-heap-mb", type=int, default=1024, help="each bookie's -Xmx and MaxDirectMemorySize (tests: 128)"
    )
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--out", default=str(HERE / "out" / "bk_vs_pulsar.json"))
    ap.add_argument("--keep", action="store_true", help="keep the cluster's directory (logs) afterwards")
    a = ap.parse_args()
    if a.quick:
        a.runs, a.duration = 1, 5
    if (why := available()) is not None:
        raise SystemExit(f"no Apache Pulsar distribution here: {why}")
    ensemble = tuple(int(x) for x in a.ensemble.split(","))
    assert len(ensemble) == 3, "--ensemble E,Qw,Qa"
    workloads = a.workloads.split(",")
    started = datetime.now(UTC).isoformat(timespec="seconds")
    work = Path(tempfile.mkdtemp(prefix="bk-vs-pulsar-", dir=os.environ.get("BENCH_TMP")))
    rows: dict[str, list[dict]] = {}

    warm: dict = {}
    rss: dict = {}
    rs_log_lines: list[str] = []

    def save() -> dict:
        """Writes everything known so far (after every run: a run cut short keeps its figures)."""
        med = {k: median_of(v) for k, v in rows.items()}
        out = {
            "started_utc": started,
            "finished_utc": datetime.now(UTC).isoformat(timespec="seconds"),
            "args": vars(a),
            "nproc": os.cpu_count(),
            "ensemble": {"E": ensemble[0], "Qw": ensemble[1], "Qa": ensemble[2]},
            "bookies": 3,
            "bookie_heap_mb": a.bookie_heap_mb,
            "perf_command": ["pulsar-rs", "perf", "produce", "--url", "URL", "--json", "..."],
            "workload_args": {wl: perf_args(w, "PREFIX", a.duration) for wl, w in WORKLOADS.items()},
            "broker_peak_rss_mb": rss,
            "pulsar_rs_warn_error_log_lines": rs_log_lines[:50],
            "pulsar_rs_warn_error_log_count": len(rs_log_lines),
            "warmup": warm,
            "runs": rows,
            "medians": med,
        }
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(out, indent=1))
        return med

    t_start = time.monotonic()
    bk = BookKeeperCluster(bookies=3, bookie_heap_mb=a.bookie_heap_mb)
    rs = None
    try:
        bk.start()
        log(f"bookkeeper up in {time.monotonic() - t_start:.0f} s: {bk.metadata_store_url}, {list(bk.bookies)}")
        java = bk.start_pulsar_broker(ensemble=ensemble)  # type: ignore[arg-type]
        assert java._proc is not None
        rs = RsBroker(bk, ensemble, work)  # type: ignore[arg-type]
        targets = {"pulsar-rs": (rs.service_url, rs.pgid), "pulsar": (java.service_url, java._proc.pid)}

        def run(b: str, w: dict, prefix: str, duration: float) -> dict:
            # ZooKeeper, a bookie or a broker gone (something else on the machine killed it, or it
            # crashed) makes every later figure meaningless: stop with what is known.
            gone = [n for n, p in [("zookeeper", bk._zk), *bk.bookies.items()] if p is None or p.poll() is not None]
            gone += [
                n for n, p in [("pulsar-rs", rs.proc), ("pulsar", java._proc)] if p is None or p.poll() is not None
            ]
            if gone:
                raise RuntimeError(f"processes gone before {b} {prefix}: {gone}")
            # A broker with a metadata store serves only the bundles it owns: the lookup places it.
            pulsar_lookup(java.admin_url if b == "pulsar" else rs.http, f"{prefix}-0")
            return run_one(*targets[b], w, prefix, duration)

        log(f"brokers up at {time.monotonic() - t_start:.0f} s: {targets}")
        for b in BROKERS:  # topic creation, ledger creation, JIT: not measured
            warm[b] = run(b, WORKLOADS["FIX1K"], f"{b}-warmup", 3)
            log("warm-up", b, json.dumps(warm[b])[:400])
        for i in range(a.runs):
            order = BROKERS if i % 2 == 0 else BROKERS[::-1]
            for wl in workloads:
                for b in order:
                    la0 = loadavg()
                    r = run(b, WORKLOADS[wl], f"{b}-{wl.lower()}-{i}", a.duration)
                    r.update(round=i, loadavg_before=la0, loadavg_after=loadavg())
                    log(b, wl, i, json.dumps(r)[:500])
                    rows.setdefault(f"{b}/{wl}", []).append(r)
                    save()
        rss.update({"pulsar-rs": group_hwm_mb(rs.pgid), "pulsar": group_hwm_mb(java._proc.pid)})
        rs_log_lines.extend(rs.errors_logged())
    finally:
        if rs is not None:
            rs.close()
        bk.stop()
        if a.keep:
            log(f"kept {bk.dir} and {work}")
        else:
            bk.cleanup()
            shutil.rmtree(work, ignore_errors=True)
    med = save()
    print(table(med, workloads))
    bad = {
        k: [(r.get("send_errors"), r.get("not_received"), r.get("perf_errors"), r.get("error")) for r in v]
        for k, v in rows.items()
        if any(r.get("error") or r.get("send_errors") or r.get("perf_errors") or r.get("not_received") for r in v)
    }
    if bad:
        print("\nruns with errors or unreceived messages (send_errors, not_received, perf errors, error):")
        for k, v in bad.items():
            print(f"  {k}: {v}")


if __name__ == "__main__":
    # SIGTERM runs the cleanup (the JVMs die with this process anyway, PR_SET_PDEATHSIG).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        main()
    except PulsarReferenceError as e:
        raise SystemExit(str(e)) from e
