"""Scale benchmark of the snapshot export and the PySpark backlog jobs (issue 6).

For each size (default 1 M and 10 M entries over 10 000 topics):

1. **Real data directory**: an in-process ``pulsar_rs.Broker`` (``journalSyncData=False``) gets the
   entries from ``pulsar-rs-perf`` (the Rust protocol load generator of ``rust/perf``: unbatched
   100-byte messages, one producer per topic) and one ``backlog`` subscription per topic (created
   before publishing, never reads). ``--catchup`` adds a ``catchup`` subscription that reads about
   half of all messages; off by default because with 1000+ topics the broker's workers then spin
   after the consumers disconnect and ``Broker.stop()`` never returns.
   Python's ``ManagedLedger`` opens one storage per instance and recovers the whole journal on
   every open, so writing 10 000 ledgers through it is quadratic; the broker path is linear.
2. **Export rate**: ``pulsar_rs.export.write_snapshot`` live (running broker) and offline (data
   directory of the stopped broker); rows/s over all six tables.
3. **Spark job time**: ``pulsar_rs_spark.cli.run`` (all three jobs, Parquet + report.html) on the
   offline export, and on a synthetic export of the same size with keys and ack holes
   (``pulsar_rs_spark.synthetic.generate``), since perf's messages carry no keys.

Run: ``python benches/spark_scale.py --sizes 1000000,10000000 --topics 10000 --work /tmp/spark-scale``
(needs ``pulsar_rs``, ``pyarrow``, ``pyspark``; ``--perf`` names the pulsar-rs-perf binary, built
with ``cargo build --release -p pulsar-rs-perf``). Prints one JSON line per measurement and a
Markdown table to paste into benches/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "spark"))


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def perf(binary: str, url: str, **flags: Any) -> dict[str, Any]:
    cmd = [binary, "--url", url]
    for k, v in flags.items():
        flag = "--" + k.replace("_", "-")
        cmd += [flag] if v is True else [flag, str(v)]
    t = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    result = json.loads(out.stdout[out.stdout.index("{") :])
    result["_wall_s"] = time.perf_counter() - t
    result["_cmd"] = " ".join(cmd)
    return result


def make_data_dir(data: Path, entries: int, topics: int, perf_bin: str, catchup: bool) -> dict[str, Any]:
    """Fills ``data`` through a real broker; returns timings and perf's reports."""
    import pulsar_rs

    info: dict[str, Any] = {}
    common = {"topics": topics, "topic_prefix": "scale", "connections": 8, "threads": 2}
    with pulsar_rs.Broker(data_dir=data, journalSyncData=False) as broker:
        url = broker.service_url
        t = time.perf_counter()
        perf(
            perf_bin,
            url,
            producers=0,
            consumers=topics,
            subscription="backlog",
            no_flow=True,
            duration=1,
            drain_timeout=1,
            **common,
        )
        info["subscribe_s"] = time.perf_counter() - t
        p = perf(
            perf_bin,
            url,
            producers=topics,
            consumers=0,
            size=100,
            batch=1,
            max_messages=entries,
            duration=3600,
            max_inflight=100,
            **common,
        )
        info["produce"] = {k: p.get(k) for k in ("_wall_s", "_cmd")} | {"published": p.get("published", p)}
        if catchup:
            c = perf(
                perf_bin,
                url,
                producers=0,
                consumers=topics,
                subscription="catchup",
                earliest=True,
                expect=entries // 2,
                duration=3600,
                drain_timeout=5,
                **common,
            )
            info["catchup"] = {k: c.get(k) for k in ("_wall_s", "_cmd")}
        # Live export while the broker runs.
        from pulsar_rs import export

        t = time.perf_counter()
        manifest = json.loads(export.write_snapshot(broker, data.parent / "export-live", broker_id="live").read_text())
        info["live_export_s"] = time.perf_counter() - t
        info["live_rows"] = manifest["tables"]
    return info


def offline_export(data: Path, out: Path) -> dict[str, Any]:
    """One offline export (Rust -> Arrow -> Parquet) of the stopped broker's data directory."""
    from pulsar_rs import export

    t = time.perf_counter()
    manifest = json.loads(export.write_snapshot(data, out, broker_id="offline").read_text())
    return {"parquet_s": time.perf_counter() - t, "rows": manifest["tables"]}


def spark_time(spark: Any, inp: Path, out: Path, quota: int) -> dict[str, Any]:
    from pulsar_rs_spark import cli

    t = time.perf_counter()
    res = cli.run(spark, str(inp), str(out), snapshot="latest", quota_bytes=quota, top_n=10)
    wall = time.perf_counter() - t
    mism = res.frames["backlog"].where("NOT matches_broker").count()
    subs = res.frames["backlog"].count()
    res.unpersist()
    return {
        "wall_s": wall,
        "timings": {k: round(v, 2) for k, v in res.timings.items()},
        "subscriptions": subs,
        "mismatches": mism,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000000,10000000", help="comma-separated entry counts")
    ap.add_argument("--topics", type=int, default=10_000)
    ap.add_argument("--work", type=Path, default=Path("/tmp/spark-scale"))
    ap.add_argument("--perf", default=os.environ.get("PULSAR_RS_PERF", "target/release/pulsar-rs-perf"))
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--driver-memory", default="8g")
    ap.add_argument("--skip-broker", action="store_true", help="only the synthetic export + Spark")
    ap.add_argument("--keep", action="store_true", help="keep the data directories and exports")
    ap.add_argument(
        "--catchup",
        action="store_true",
        help="also run the catch-up consumers (off by default: with 1000+ topics the broker's workers then spin "
        "and Broker.stop() hangs, reported to the lead)",
    )
    args = ap.parse_args()

    from pulsar_rs_spark import cli, synthetic

    spark = cli.spark_session(
        args.master, app_name="spark_scale", shuffle_partitions=8, driver_memory=args.driver_memory
    )
    spark.sparkContext.setLogLevel("ERROR")
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        work = args.work / f"n{size}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        rec: dict[str, Any] = {"entries": size, "topics": args.topics}
        if not args.skip_broker:
            t = time.perf_counter()
            rec["fill"] = make_data_dir(work / "data", size, args.topics, args.perf, args.catchup)
            rec["fill_s"] = time.perf_counter() - t
            rec["data_dir_bytes"] = du(work / "data")
            rec["offline"] = off = offline_export(work / "data", work / "export")
            rows = sum(off["rows"].values())
            rec["offline_rows_per_s"] = rows / off["parquet_s"]
            live_rows = sum(rec["fill"]["live_rows"].values())
            rec["live_rows_per_s"] = live_rows / rec["fill"]["live_export_s"]
            rec["export_bytes"] = du(work / "export")
            rec["spark_real"] = spark_time(spark, work / "export", work / "results-real", quota=1 << 20)
            print(json.dumps(rec), flush=True)
            if not args.keep:
                shutil.rmtree(work / "data", ignore_errors=True)
        t = time.perf_counter()
        rec["synthetic_rows"] = synthetic.generate(
            work / "synthetic", topics=args.topics, entries=size, subscriptions_per_topic=2, keys=1000, seed=1
        )
        rec["synthetic_gen_s"] = time.perf_counter() - t
        rec["spark_synthetic"] = spark_time(spark, work / "synthetic", work / "results-synthetic", quota=1 << 20)
        print(json.dumps(rec), flush=True)
        with (args.work / "results.jsonl").open("a") as f:
            f.write(json.dumps(rec) + "\n")
        results.append(rec)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    spark.stop()
    print(
        "\n| entries | topics | offline export rows/s | live export rows/s | Spark on real export s "
        "| Spark on synthetic s |"
    )
    print("|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['entries']:,} | {r['topics']:,} | {r.get('offline_rows_per_s', 0):,.0f} | "
            f"{r.get('live_rows_per_s', 0):,.0f} | {r.get('spark_real', {}).get('wall_s', 0):.1f} | "
            f"{r['spark_synthetic']['wall_s']:.1f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
