"""Scale benchmark of the trend jobs (issue 15.4): 100 snapshots x 10 000 topics.

1. **Data**: ``--snapshots`` snapshots, one minute apart, of ``--topics`` topics in the export layout
   (spark/SCHEMA.md, the Arrow schemas of ``pulsar_rs_spark.schema``, one Parquet file per table
   and snapshot, written by ``pulsar_rs_spark.synthetic.write_tables`` with a manifest each). The
   rows are **synthetic**, generated with numpy: the trend jobs read only the ``topics`` and
   ``subscriptions`` tables, and a real 100-snapshot export of 10 000 topics would need a broker
   under load for 100 periods. Each topic stores ``rate x t + accel x t^2 / 2`` bytes (log-normal
   rates, 10 % of the topics accelerating), half the topics have a backlog quota, and each has
   ``--subs`` durable subscriptions consuming at their own rate (so backlogs grow, shrink or stay
   at 0); the ``entries``, ``ledgers``, ``ack_ranges`` and ``consumers`` tables are empty.
2. **Spark**: ``python -m pulsar_rs_spark --jobs trends`` (``trend_topics`` + ``trend_summary`` as
   Parquet, the SVG charts and ``report.html``) on ``--master`` (default ``local[2]``) in a child
   process; wall time (JVM start included), the CLI's own ``total`` (jobs only), input rows/s, and
   the peak RSS of the child's whole process tree (Python driver + JVM), sampled every 50 ms.
3. **Peer / limit**: the same ``trend_summary`` computed with pyarrow + numpy in one process (read
   the two tables, slowest subscription, inflow, time to breach, least-squares slopes, rank; no
   pandas, which is not installed here), and the bare pyarrow read of the columns used: the
   "physical-ish" limit of scanning this data. The pyarrow summary is checked against Spark's
   (same topics; counts, maxima and slopes within 1e-6 relative; Spark's ranks sort the slopes).

Run (2026-11-23 figures in benches/RESULTS.md)::

    python benches/spark_trends_scale.py --snapshots 100 --topics 10000 --repeat 3 --work /tmp/trends-scale

Prints one JSON line per measurement and a summary with medians. ``--keep`` keeps the data.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "spark"))

INTERVAL_MS = 60_000
BASE_MS = 1_700_000_000_000
QUOTA = 1 << 30


def report(what: str, **fields: Any) -> None:
    print(json.dumps({"measure": what, **fields}), flush=True)


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def generate(out: Path, snapshots: int, topics: int, subs: int, seed: int) -> dict[str, int]:
    """Writes the snapshots; returns the row counts of the two tables the trend jobs read."""
    import numpy as np
    import pyarrow as pa
    from pulsar_rs_spark.synthetic import write_tables

    rng = np.random.default_rng(seed)
    names = pa.array([f"persistent://public/default/trend-{t:06d}" for t in range(topics)])
    rate = rng.lognormal(mean=8.0, sigma=1.5, size=topics)  # bytes/s, median ≈ 3 KB/s
    accel = np.where(rng.random(topics) < 0.1, rate / 3000.0, 0.0)  # bytes/s² for 10 % of the topics
    quota = np.where(rng.random(topics) < 0.5, QUOTA, -1).astype(np.int64)
    drain = rate[None, :] * rng.uniform(0.5, 1.3, size=(subs, topics))  # each subscription's read rate
    sub_names = pa.array([f"sub-{s}" for s in range(subs)])
    entry = 1024.0
    counts = {"topics": 0, "subscriptions": 0}
    for i in range(snapshots):
        t = i * INTERVAL_MS / 1000.0 + 3600.0  # one hour of history before the first snapshot
        size = (rate * t + accel * t * t / 2).astype(np.int64)
        entries = (size / entry).astype(np.int64)
        topics_t = {
            "topic": names,
            "partition": np.full(topics, -1, np.int32),
            "entries": entries,
            "size_bytes": size,
            "ledgers": (entries // 50_000 + 1).astype(np.int32),
            "last_confirmed_ledger": np.arange(topics, dtype=np.int64) * 1_000_000 + entries // 50_000,
            "last_confirmed_entry": entries % 50_000 - 1,
            "subscriptions": np.full(topics, subs, np.int32),
            "producers": np.ones(topics, np.int32),
            "msg_rate_in": rate / entry,
            "backlog_quota_limit_bytes": quota,
            "backlog_quota_limit_seconds": np.full(topics, -1, np.int64),
            "compacted_ledger_id": pa.nulls(topics, pa.int64()),
            "compaction_horizon_ledger": pa.nulls(topics, pa.int64()),
            "compaction_horizon_entry": pa.nulls(topics, pa.int64()),
            "compacted_entries": np.zeros(topics, np.int64),
        }
        consumed = np.minimum(size[None, :], (drain * t).astype(np.int64))  # (subs, topics)
        backlog = (size[None, :] - consumed).ravel()
        backlog_entries = (backlog / entry).astype(np.int64)
        n = subs * topics
        acked = (consumed.ravel() / entry).astype(np.int64)
        subs_t = {
            "topic": pa.concat_arrays([names] * subs),
            "subscription": pa.DictionaryArray.from_arrays(
                np.repeat(np.arange(subs, dtype=np.int32), topics), sub_names
            ).cast(pa.string()),
            "durable": np.ones(n, bool),
            "type": pa.nulls(n, pa.string()),
            "mark_delete_ledger": np.tile(np.arange(topics, dtype=np.int64) * 1_000_000, subs),
            "mark_delete_entry": acked - 1,
            "read_ledger": np.tile(np.arange(topics, dtype=np.int64) * 1_000_000, subs),
            "read_entry": acked,
            "backlog_entries": backlog_entries,
            "backlog_size_bytes": backlog,
            "acked_entries": acked,
            "ack_ranges": np.zeros(n, np.int64),
            "oldest_unacked_publish_ms": pa.array(
                np.where(backlog > 0, BASE_MS + i * INTERVAL_MS - 1000, 0), mask=backlog <= 0, type=pa.int64()
            ),
            "consumers": np.ones(n, np.int32),
            "unacked_messages": np.zeros(n, np.int64),
        }
        tables = {"topics": pa.table(topics_t), "subscriptions": pa.table(subs_t)}
        write_tables(out, tables, broker="bench", snapshot_ms=BASE_MS + i * INTERVAL_MS, source="synthetic")
        counts["topics"] += topics
        counts["subscriptions"] += n
    return counts


def tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants (Linux /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{d}/statm") as f:
                rss[int(d)] = int(f.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo.extend(children.get(p, []))
    return total


def run_spark(data: Path, out: Path, master: str, partitions: int, driver_memory: str) -> dict[str, Any]:
    if out.exists():
        shutil.rmtree(out)
    cmd = [
        sys.executable,
        "-m",
        "pulsar_rs_spark",
        "--master",
        master,
        "--input",
        str(data),
        "--output",
        str(out),
        "--jobs",
        "trends",
        "--shuffle-partitions",
        str(partitions),
        "--driver-memory",
        driver_memory,
    ]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "spark") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], tree_rss(proc.pid))
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - t0
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"spark job failed ({proc.returncode}):\n{stderr[-3000:]}")
    total = next(float(line.split()[1]) for line in stdout.splitlines() if line.startswith("total:"))
    return {"wall_s": wall, "jobs_s": total, "peak_rss_bytes": peak[0], "cmd": " ".join(cmd)}


def arrow_summary(data: Path) -> tuple[dict[str, Any], float, float]:
    """``trend_summary`` with pyarrow + numpy; returns (columns, seconds to read, seconds in all)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    t0 = time.perf_counter()
    topics = ds.dataset(data / "topics", format="parquet", partitioning="hive").to_table(
        columns=["broker", "snapshot_ms", "topic", "size_bytes", "backlog_quota_limit_bytes"]
    )
    subs = ds.dataset(data / "subscriptions", format="parquet", partitioning="hive").to_table(
        columns=["broker", "snapshot_ms", "topic", "durable", "backlog_size_bytes"]
    )
    read = time.perf_counter() - t0
    key = ["broker", "snapshot_ms", "topic"]
    slowest = subs.filter(pc.field("durable")).group_by(key).aggregate([("backlog_size_bytes", "max")])
    t = topics.join(slowest, keys=key, join_type="left outer")
    t = t.sort_by([("broker", "ascending"), ("topic", "ascending"), ("snapshot_ms", "ascending")])
    ms = t["snapshot_ms"].to_numpy().astype(np.float64)
    size = t["size_bytes"].to_numpy().astype(np.float64)
    backlog = t["backlog_size_bytes_max"].fill_null(0).to_numpy().astype(np.float64)
    limit = t["backlog_quota_limit_bytes"].to_numpy().astype(np.float64)
    name = pc.binary_join_element_wise(t["broker"].cast(pa.string()), t["topic"], "\x00").to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(np.r_[True, name[1:] != name[:-1]])
    same = np.r_[False, name[1:] == name[:-1]]  # row i has a previous snapshot of its topic
    dt = np.r_[np.nan, np.diff(ms)]
    inflow = np.where(same & (dt > 0), np.r_[np.nan, np.diff(size)] * 1000.0 / np.where(dt > 0, dt, 1), np.nan)
    headroom = np.where(limit >= 0, limit - backlog, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        ttb = np.where(headroom <= 0, 0.0, np.where(inflow > 0, headroom / inflow, np.nan))
    ttb = np.where(np.isnan(headroom), np.nan, ttb)
    x = (ms - ms.min()) / 1000.0  # slopes do not change with a shift; this keeps the sums exact

    def slope(y: Any) -> Any:
        ok = ~np.isnan(y)
        xo, yo = np.where(ok, x, 0.0), np.where(ok, y, 0.0)
        n, sx, sy = (np.add.reduceat(v, starts) for v in (ok.astype(np.float64), xo, yo))
        sxy, sxx = np.add.reduceat(xo * yo, starts), np.add.reduceat(xo * xo, starts)
        den = n * sxx - sx * sx
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den != 0, (n * sxy - sx * sy) / den, np.nan)

    ttb_slope = slope(ttb)
    order = np.lexsort((starts, np.where(np.isnan(ttb_slope), np.inf, ttb_slope)))
    rank = np.full(len(starts), np.nan)
    rank[order] = np.arange(1, len(starts) + 1)
    out = {
        "broker": t["broker"].cast(pa.string()).take(pa.array(starts)).to_pylist(),
        "topic": t["topic"].take(pa.array(starts)).to_pylist(),
        "snapshots": np.diff(np.r_[starts, len(name)]),
        "max_backlog_bytes": np.maximum.reduceat(backlog, starts),
        "backlog_slope_bytes_per_s": slope(backlog),
        "ttb_slope": ttb_slope,
        "ttb_shrink_rank": np.where(ttb_slope < 0, rank, np.nan),
    }
    return out, read, time.perf_counter() - t0


def check(summary: Any, spark_out: Path) -> int:
    """Compares the pyarrow summary with Spark's; returns the number of topics compared."""
    import numpy as np
    import pyarrow.parquet as pq

    sp = pq.read_table(spark_out / "trend_summary").sort_by([("broker", "ascending"), ("topic", "ascending")])
    if sp["topic"].to_pylist() != summary["topic"] or sp["broker"].to_pylist() != summary["broker"]:
        raise SystemExit("pyarrow and Spark summaries cover different topics")
    # Ranks: same topics ranked, and Spark's order sorts the slopes computed here (topics with a
    # steady inflow all have a slope of -1 up to rounding, so the exact order among them is noise).
    # A slope that is 0 exactly (time to breach stuck at 0, over quota) may come out as -1e-15 on
    # either side, so only topics with a clearly negative slope must be ranked by both.
    a = sp["ttb_shrink_rank"].to_numpy(zero_copy_only=False).astype(float)
    slopes = np.asarray(summary["ttb_slope"], dtype=float)
    clear = ~(np.abs(slopes) < 1e-6)
    if not (np.isnan(a) == np.isnan(np.asarray(summary["ttb_shrink_rank"], dtype=float)))[clear].all():
        raise SystemExit("pyarrow and Spark rank different topics")
    ranked = np.asarray(summary["ttb_slope"], dtype=float)[~np.isnan(a)][np.argsort(a[~np.isnan(a)])]
    if not (np.diff(ranked) >= -1e-6 * np.abs(ranked[1:]) - 1e-9).all():
        raise SystemExit("Spark's ttb_shrink_rank does not sort the slopes")
    for col in ("snapshots", "max_backlog_bytes", "backlog_slope_bytes_per_s", "ttb_slope"):
        a = sp[col].to_numpy(zero_copy_only=False).astype(float)
        b = np.asarray(summary[col], dtype=float)
        same = (np.isnan(a) & np.isnan(b)) | np.isclose(a, b, rtol=1e-6, atol=1e-9)
        if not same.all():
            raise SystemExit(f"{col} differs for {int((~same).sum())} topics")
    return len(sp)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--snapshots", type=int, default=100)
    p.add_argument("--topics", type=int, default=10_000)
    p.add_argument("--subs", type=int, default=2, help="durable subscriptions per topic")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--shuffle-partitions", type=int, default=8)
    p.add_argument("--driver-memory", default="2g")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--work", type=Path, default=Path("/tmp/trends-scale"))
    p.add_argument("--keep", action="store_true", help="keep the generated data and results")
    args = p.parse_args()
    data, out = args.work / "export", args.work / "out"
    if args.work.exists():
        shutil.rmtree(args.work)
    t0 = time.perf_counter()
    rows = generate(data, args.snapshots, args.topics, args.subs, args.seed)
    nrows = rows["topics"] + rows["subscriptions"]
    report("generate", seconds=round(time.perf_counter() - t0, 2), rows=rows, bytes=du(data))
    try:
        sparks, pandas_all, pandas_read = [], [], []
        for _ in range(args.repeat):
            r = run_spark(data, out, args.master, args.shuffle_partitions, args.driver_memory)
            report("spark", **{k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()})
            sparks.append(r)
            summary, read, total = arrow_summary(data)
            report("pyarrow", read_s=round(read, 3), total_s=round(total, 3))
            pandas_all.append(total)
            pandas_read.append(read)
        compared = check(summary, out)
        wall = statistics.median(r["wall_s"] for r in sparks)
        jobs = statistics.median(r["jobs_s"] for r in sparks)
        pd_total, pd_read = statistics.median(pandas_all), statistics.median(pandas_read)
        report(
            "summary",
            snapshots=args.snapshots,
            topics=args.topics,
            input_rows=nrows,
            master=args.master,
            runs=args.repeat,
            spark_wall_s=round(wall, 2),
            spark_jobs_s=round(jobs, 2),
            spark_rows_per_s=round(nrows / jobs),
            spark_peak_rss_mb=round(max(r["peak_rss_bytes"] for r in sparks) / 2**20),
            pyarrow_numpy_s=round(pd_total, 2),
            pyarrow_read_s=round(pd_read, 2),
            spark_vs_pyarrow_numpy=round(jobs / pd_total, 1),
            spark_vs_read=round(jobs / pd_read, 1),
            summaries_agree_topics=compared,
            load=os.getloadavg(),
        )
    finally:
        if not args.keep:
            shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
