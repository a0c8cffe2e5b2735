"""Tiered storage speed: offload MB/s and catch-up read MB/s from offloaded data, pulsar-rs beside
Apache Pulsar 4.0.8 (its own jcloud offloader, driver ``S3``) on the same S3 endpoint (S3Proxy on
127.0.0.1, a local directory behind it), each broker fresh, one at a time (issue 54).

For each broker: publish ``--mb`` MB of 1 KiB messages (batched, 100 per entry, so ledgers of
``--entries-per-ledger`` entries roll over), then

* **offload**: ``PUT .../offload`` up to the current ledger, timed until ``GET .../offload`` says
  ``SUCCESS``; MB/s over the offloaded ledgers' size (``internalStats``);
* **catch-up read**: the topic unloaded (its cache dropped), a reader from the earliest message
  reads everything with the official Python client; both brokers read offloaded ledgers from the
  bucket (``tiered-storage-first``, the default of both). MB/s over the payload bytes. The Python
  client's own ceiling may bound this figure for both (it is reported with the client's CPU time).

    python benches/offload.py --mb 256 --out benches/out/offload.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulsar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
from tools.pulsar_reference import PulsarStandalone  # noqa: E402

from fixtures.pulsar_offloaders import OFFLOADER_ENV, offloader_settings  # noqa: E402
from fixtures.s3proxy import S3Proxy  # noqa: E402
from pulsar_rs.testing.process import PulsarRsBroker  # noqa: E402

TOPIC = "persistent://public/default/offload-bench"


def rest(http: str, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        f"{http}{path}", data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=300) as r:
        raw = r.read()
    return json.loads(raw) if raw else None


def admin_path() -> str:
    return "/admin/v2/persistent/" + TOPIC.removeprefix("persistent://")


def publish(url: str, n: int) -> None:
    c = pulsar.Client(url, operation_timeout_seconds=120)
    p = c.create_producer(
        TOPIC,
        batching_enabled=True,
        batching_max_messages=100,
        batching_max_publish_delay_ms=5,
        block_if_queue_full=True,  # else a full queue drops messages
    )
    payload = b"x" * 1024
    for _ in range(n):
        p.send_async(payload, None)
    p.flush()
    c.close()


def run(name: str, url: str, http: str, n: int, offload_log: Callable[[], str]) -> dict[str, Any]:
    # A durable subscription keeps every ledger (standalone retention is 0).
    c = pulsar.Client(url, operation_timeout_seconds=120)
    c.subscribe(TOPIC, "hold").close()
    c.close()
    publish(url, n)
    ledgers = rest(http, "GET", f"{admin_path()}/internalStats")["ledgers"]
    current = ledgers[-1]["ledgerId"]
    size = sum(x["size"] for x in ledgers[:-1])
    t0 = time.monotonic()
    rest(http, "PUT", f"{admin_path()}/offload", {"ledgerId": current, "entryId": 0, "partitionIndex": -1})
    while True:
        status = rest(http, "GET", f"{admin_path()}/offload")
        if status["status"] != "RUNNING":
            break
        time.sleep(0.05)  # poll: the offload runs in the broker
    offload_s = time.monotonic() - t0
    assert status["status"] == "SUCCESS", status
    stats = rest(http, "GET", f"{admin_path()}/internalStats")
    assert all(x["offloaded"] for x in stats["ledgers"][:-1]), stats["ledgers"]
    rest(http, "PUT", f"{admin_path()}/unload")
    c = pulsar.Client(url, operation_timeout_seconds=120)
    reader = c.create_reader(TOPIC, pulsar.MessageId.earliest, receiver_queue_size=5000)
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    got = 0
    read_bytes = 0
    while got < n:
        m = reader.read_next(timeout_millis=120_000)
        got += 1
        read_bytes += len(m.data())
    read_s = time.monotonic() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    c.close()
    client_cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
    from_tier = offload_log()
    return {
        "broker": name,
        "messages": n,
        "offloaded_ledgers": len(ledgers) - 1,
        "offloaded_mb": round(size / 1e6, 1),
        "offload_s": round(offload_s, 2),
        "offload_mb_s": round(size / 1e6 / offload_s, 1),
        "read_mb": round(read_bytes / 1e6, 1),
        "read_s": round(read_s, 2),
        "read_mb_s": round(read_bytes / 1e6 / read_s, 1),
        "reader_client_cpu_s": round(client_cpu, 2),
        "read_from_tier_logged": from_tier,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=256, help="payload MB published (1 KiB messages)")
    ap.add_argument("--entries-per-ledger", type=int, default=200)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    n = args.mb * 1024
    results = []
    with S3Proxy() as s3:
        common = {
            "managedLedgerMaxEntriesPerLedger": args.entries_per_ledger,
            "managedLedgerMinLedgerRolloverTimeMinutes": 0,
            "managedLedgerOffloadDriver": "S3",
            "managedLedgerOffloadServiceEndpoint": s3.endpoint,
        }
        s3.create_bucket("bench-rs")
        with tempfile.TemporaryDirectory() as work:
            b = PulsarRsBroker(Path(work), "rs", {**common, "managedLedgerOffloadBucket": "bench-rs"})
            try:
                results.append(
                    run("pulsar-rs", b.url, b.http, n, lambda: "opened ledger from the offload driver" in b.log())
                )
            finally:
                b.kill()
        s3.create_bucket("bench-pulsar")
        os.environ.update(OFFLOADER_ENV)  # Pulsar's S3 driver refuses to start without credentials
        work = Path(tempfile.mkdtemp(prefix="pulsar-offload-bench-"))
        settings = {**common, **offloader_settings(s3.endpoint, "bench-pulsar", work / "nar")}
        with PulsarStandalone(settings) as p:
            results.append(
                run(
                    "apache-pulsar-4.0.8",
                    p.service_url,
                    p.admin_url,
                    n,
                    lambda: "from offload driver" in p.log_path.read_text(errors="replace"),
                )
            )
    rs, ap_ = results
    summary = {
        "results": results,
        "offload_ratio": round(rs["offload_mb_s"] / ap_["offload_mb_s"], 2),
        "read_ratio": round(rs["read_mb_s"] / ap_["read_mb_s"], 2),
    }
    print(json.dumps(summary, indent=2))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
