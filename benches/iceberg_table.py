"""Topic tables (the ``icebergTable`` policy): what committing a topic to its Iceberg table costs
and gives, in one run on this machine. For each of ``--runs`` rounds and each mode (``off``: no
policy; ``on``: the namespace's policy, ``commitIntervalSeconds=1``), a fresh in-process broker
takes ``--messages`` JSON-schema messages (batched, ~120 B each) from the official client:

* publish rate (msg/s) and publish p99 (ms, send to receipt) with the policy off vs on: the cost
  to the publish path;
* with the policy on: the time from the last receipt until the table holds every row; and the
  catch-up rate (rows/s): a second topic produced with its own policy off, then switched on,
  until its table holds every row (the committer's rate, not the producer's);
* Parquet bytes per message (the table's data files) against the topic's stored bytes per message;
* a pyiceberg query (rows of one key, summed) over the table against the same over an Arrow
  export of the topic (``pulsar_rs.export``'s entries table has no values: the export side reads
  the payloads with the reader API), both timed.

``python benches/iceberg_table.py --runs 3 --messages 200000 --out benches/out/iceberg_table.json``
Medians printed as a table; every run in the JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pulsar
from pulsar.schema import Double, Integer, JsonSchema, Record, String
from pyiceberg.catalog.sql import SqlCatalog

from pulsar_rs import Admin, Broker


class Order(Record):
    id = Integer()
    customer = String()
    amount = Double()


def wait_for_rows(catalog: SqlCatalog, table: str, rows: int) -> None:
    """Returns once ``public.default.<table>`` holds ``rows`` rows."""
    while True:
        try:
            held = catalog.load_table(("public", "default", table)).scan(selected_fields=("id",)).to_arrow().num_rows
        except Exception:  # the table does not exist before its first commit
            held = 0
        if held >= rows:
            return
        time.sleep(0.05)  # reason: poll the catalog for the last commit


def one_run(mode: str, messages: int, root: Path) -> dict[str, Any]:
    settings: dict[str, Any] = {"data_dir": str(root / "data")}
    if mode == "on":
        settings["icebergCatalogUri"] = f"sqlite:///{root / 'iceberg' / 'catalog.db'}"
    with Broker(**settings) as broker:
        if mode == "on":
            Admin(broker.admin_url).namespaces.set_iceberg_table("public/default", commit_interval_seconds=1)
        client = pulsar.Client(broker.service_url)
        topic = "persistent://public/default/bench-orders"
        producer = client.create_producer(
            topic,
            schema=JsonSchema(Order),
            batching_max_messages=1000,
            block_if_queue_full=True,
            max_pending_messages=20000,
        )
        latencies: list[float] = []
        lock = threading.Lock()

        def cb(t0: float):
            def done(res, _mid) -> None:
                if res == pulsar.Result.Ok:
                    with lock:
                        latencies.append(time.perf_counter() - t0)

            return done

        start = time.perf_counter()
        for i in range(messages):
            producer.send_async(
                Order(id=i, customer=f"c{i % 1000}", amount=i * 0.5),
                cb(time.perf_counter()),
                partition_key=f"c{i % 1000}",
            )
        producer.flush()
        published = time.perf_counter()
        out: dict[str, Any] = {
            "mode": mode,
            "publish_msg_per_s": messages / (published - start),
            "publish_p99_ms": statistics.quantiles(latencies, n=100)[98] * 1000,
        }
        stats = Admin(broker.admin_url).topics.stats(topic)
        out["stored_bytes_per_msg"] = stats["storageSize"] / messages
        if mode == "on":
            catalog = SqlCatalog(
                "pulsar",
                uri=f"sqlite:///{root / 'iceberg' / 'catalog.db'}",
                warehouse=f"file://{root / 'iceberg' / 'warehouse'}",
            )
            wait_for_rows(catalog, "bench-orders", messages)
            done = time.perf_counter()
            out["table_lag_after_last_receipt_s"] = done - published
            files = list((root / "iceberg" / "warehouse").rglob("*.parquet"))
            out["parquet_bytes_per_msg"] = sum(f.stat().st_size for f in files) / messages
            table = catalog.load_table(("public", "default", "bench-orders"))
            t0 = time.perf_counter()
            hot = table.scan(row_filter="customer == 'c7'", selected_fields=("amount",)).to_arrow()
            out["query_table_s"] = time.perf_counter() - t0
            out["query_rows"] = hot.num_rows
            # Catch-up: a topic produced with its own policy off, then switched on: how fast the
            # committer turns a backlog into rows (not bounded by the producer).
            admin = Admin(broker.admin_url)
            backlog = "persistent://public/default/bench-catchup"
            client.create_producer(backlog).close()
            admin.topics.set_iceberg_table(backlog, enabled=False)
            p2 = client.create_producer(
                backlog, schema=JsonSchema(Order), batching_max_messages=1000, block_if_queue_full=True
            )
            for i in range(messages):
                p2.send_async(Order(id=i, customer=f"c{i % 1000}", amount=i * 0.5), None)
            p2.flush()
            t0 = time.perf_counter()
            admin.topics.set_iceberg_table(backlog, enabled=True, commit_interval_seconds=1)
            wait_for_rows(catalog, "bench-catchup", messages)
            out["catchup_rows_per_s"] = messages / (time.perf_counter() - t0)
            reader = client.create_reader(topic, pulsar.MessageId.earliest, schema=JsonSchema(Order))
            t0 = time.perf_counter()
            total, n = 0.0, 0
            for _ in range(messages):
                m = reader.read_next(timeout_millis=10_000)
                v = m.value()
                if v.customer == "c7":
                    total += v.amount
                    n += 1
            out["query_reader_s"] = time.perf_counter() - t0
            assert n == hot.num_rows and abs(total - sum(hot.column("amount").to_pylist())) < 1e-6
        client.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--messages", type=int, default=200_000)
    p.add_argument("--out", type=Path, default=Path("benches/out/iceberg_table.json"))
    a = p.parse_args()
    runs = []
    for r in range(a.runs):
        for mode in ("off", "on") if r % 2 == 0 else ("on", "off"):
            with tempfile.TemporaryDirectory() as d:
                runs.append(one_run(mode, a.messages, Path(d)))
                print(json.dumps(runs[-1]))
    medians: dict[str, dict[str, float]] = {}
    for mode in ("off", "on"):
        mine = [x for x in runs if x["mode"] == mode]
        medians[mode] = {k: statistics.median(x[k] for x in mine) for k in mine[0] if k != "mode"}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"runs": runs, "medians": medians}, indent=2))
    print(json.dumps(medians, indent=2))


if __name__ == "__main__":
    main()
