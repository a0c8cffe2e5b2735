"""Exactly once into a topic's Iceberg table across crashes: a standalone broker (a process, with
``icebergCatalogUri`` in its ``broker.conf``) commits a topic to its table every second while it
is produced to, and is SIGKILLed at a random moment, four times (each restart on the same data
directory and catalog, a commit possibly half done: files written, catalog not swapped, or the
swap done and the table cursor not moved). At the end the table holds every receipted message
exactly once (pyiceberg's read)."""

from __future__ import annotations

import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pulsar
import pytest

from conftest import admin

pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")

pytestmark = pytest.mark.slow

ROUNDS = 4
PER_ROUND = 4_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(data: Path, conf: Path, port: int) -> tuple[subprocess.Popen, str, str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pulsar_rs.cli",
            "standalone",
            "--config",
            str(conf),
            "--data-dir",
            str(data),
            "--port",
            str(port),
            "--admin-port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PULSAR_RS_LOG": "warn"},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.match(r"READY (pulsar://\S+) (http://\S+) data_dir=(.*)$", line.strip())
    if not m:
        proc.kill()
        pytest.fail(f"standalone did not print READY, got {line!r}")
    return proc, m.group(1), m.group(2)


def committed(catalog) -> list[int]:
    """The message numbers the table holds (each message's payload is its number)."""
    t = catalog.load_table(("public", "default", "crash-orders")).scan(selected_fields=("__value",)).to_arrow()
    return [int(v) for v in t.column("__value").to_pylist()]


def test_sigkill_during_commits_loses_and_duplicates_nothing(tmp_path) -> None:
    root = tmp_path / "iceberg"
    conf = tmp_path / "broker.conf"
    conf.write_text(f"icebergCatalogUri=sqlite:///{root / 'catalog.db'}\n")
    data = tmp_path / "data"
    port = free_port()
    topic = "persistent://public/default/crash-orders"
    rng = random.Random(57)
    receipted: set[int] = set()
    for round_ in range(ROUNDS):
        proc, url, admin_url = start(data, conf, port)
        try:
            if round_ == 0:
                code, body = admin(
                    admin_url,
                    "POST",
                    "/admin/v2/namespaces/public/default/icebergTable",
                    {"enabled": True, "commitIntervalSeconds": 1},
                )
                assert code == 204, (code, body)
            client = pulsar.Client(url, operation_timeout_seconds=10)
            producer = client.create_producer(topic, batching_max_messages=100, block_if_queue_full=True)

            def cb(i: int):
                def done(res, _mid) -> None:
                    if res == pulsar.Result.Ok:
                        receipted.add(i)

                return done

            base = round_ * PER_ROUND
            for i in range(base, base + PER_ROUND):
                producer.send_async(str(i).encode(), cb(i), properties={"i": str(i)})
                if i % 1000 == 999:
                    time.sleep(0.3)  # reason: spread the round over several commit intervals
            producer.flush()
            # Kill at a random moment of the commits that follow.
            time.sleep(rng.uniform(0.2, 1.8))  # reason: a random point in the 1 s commit cycle
            client.close()
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            if proc.stdout is not None:
                proc.stdout.close()
    assert len(receipted) == ROUNDS * PER_ROUND
    proc, url, admin_url = start(data, conf, port)
    try:
        catalog = pyiceberg_sql.SqlCatalog(
            "pulsar", uri=f"sqlite:///{root / 'catalog.db'}", warehouse=f"file://{root / 'warehouse'}"
        )
        # A client loads the topic; the broker then commits what the crashes left.
        client = pulsar.Client(url)
        client.create_producer(topic)
        deadline = time.monotonic() + 90
        rows: list[int] = []
        while time.monotonic() < deadline:
            rows = committed(catalog)
            if len(rows) >= len(receipted):
                break
            time.sleep(0.5)  # reason: wait for the next commit (commitIntervalSeconds=1)
        time.sleep(2.5)  # reason: two more commits must add nothing
        rows = committed(catalog)
        assert len(rows) == len(set(rows)), f"{len(rows) - len(set(rows))} rows committed twice"
        assert receipted <= set(rows), f"{len(receipted - set(rows))} receipted messages missing"
        client.close()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()
