"""The Spark jobs on a real Spark standalone cluster: a master and one worker started from the
installed pyspark (``spark-class ...deploy.master.Master`` / ``...deploy.worker.Worker`` on
127.0.0.1, free ports chosen at run time), the command run against ``spark://127.0.0.1:PORT`` in a
subprocess, both processes stopped at the end."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
pyspark = pytest.importorskip("pyspark")
import pyarrow.parquet as pq  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "spark"))

from pulsar_rs_spark import synthetic  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"process exited with {proc.returncode}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.3)  # poll: a Spark process starts listening
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


def test_jobs_run_on_a_standalone_cluster(tmp_path: Path) -> None:
    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable, SPARK_LOG_DIR=str(tmp_path))
    mport, mweb, wport, wweb = (free_port() for _ in range(4))
    master_url = f"spark://127.0.0.1:{mport}"
    log = (tmp_path / "cluster.log").open("w")
    master = subprocess.Popen(
        [
            *(str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"),
            "--port",
            str(mport),
            "--webui-port",
            str(mweb),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    worker = None
    try:
        wait_port(mport, master)
        worker = subprocess.Popen(
            [
                str(spark_class),
                "org.apache.spark.deploy.worker.Worker",
                master_url,
                "--host",
                "127.0.0.1",
                "--port",
                str(wport),
                "--webui-port",
                str(wweb),
                "--cores",
                "1",
                "--memory",
                "1g",
                "--work-dir",
                str(tmp_path / "work"),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        wait_port(wweb, worker)
        inp, out = tmp_path / "in", tmp_path / "out"
        for i in range(3):
            synthetic.generate(
                inp,
                topics=20,
                entries=2000 * (i + 1),
                snapshot_ms=1_700_000_000_000 + 60_000 * i,
                seed=i,
                quota_bytes=1_000_000,
            )
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "pulsar_rs_spark",
                "--master",
                master_url,
                "--input",
                str(inp),
                "--output",
                str(out),
                "--shuffle-partitions",
                "4",
            ],
            env=dict(env, PYTHONPATH=str(ROOT / "spark")),
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        assert "total:" in run.stdout, run.stdout
        backlog = pq.read_table(out / "backlog").to_pylist()
        assert len(backlog) == 40 and all(r["matches_broker"] for r in backlog)
        summary = pq.read_table(out / "trend_summary").to_pylist()
        assert len(summary) == 20 and all(r["snapshots"] == 3 for r in summary)
        assert (out / "trend_backlog.svg").read_text().startswith("<svg")
        # The application ran on the cluster: the master logged it and the worker launched an executor.
        text = (tmp_path / "cluster.log").read_text()
        assert "Registering app pulsar_rs backlog analytics" in text and "Launching executor" in text
    finally:
        for p in (worker, master):
            if p is not None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
        log.close()
