"""Output of ``pulsar-rs export`` / ``standalone``: a progress line (topics done, rows/s) on a
terminal and silence in pipes, periodic snapshots (``--every``) in distinct ``snapshot_ms``
directories, and log lines as text or JSON (``--log-format json``, the broker's tracing too).
"""

from __future__ import annotations

import io
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pulsar
import pytest

from pulsar_rs import Broker, _native
from pulsar_rs.progress import ExportProgress, parse_duration

pytestmark = pytest.mark.timeout(120)
CLI = [sys.executable, "-m", "pulsar_rs.cli"]
EVERY_3_JSON = ["--every", "200ms", "--count", "3", "--log-format", "json"]


def make_data_dir(data: Path, topics: int) -> None:
    """A stopped broker's data directory with ``topics`` topics of 3 messages each."""
    with Broker(data_dir=data) as broker:
        client = pulsar.Client(broker.service_url, operation_timeout_seconds=10)
        try:
            for i in range(topics):
                producer = client.create_producer(f"persistent://public/default/t{i}", batching_enabled=False)
                for j in range(3):
                    producer.send(f"m{j}".encode())
                producer.close()
        finally:
            client.close()


def run_in_pty(args: list[str]) -> tuple[int, str, str]:
    """Runs ``args`` with stderr on a pseudo-terminal; returns (exit code, stdout, terminal output)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=slave, text=False)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    out = proc.stdout.read().decode()
    proc.stdout.close()
    os.close(master)
    return proc.wait(timeout=30), out, b"".join(chunks).decode(errors="replace")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("export-output") / "data"
    make_data_dir(data, 40)  # more than one progress chunk (32 topics)
    return data


def test_progress_on_a_terminal(data_dir: Path, tmp_path: Path) -> None:
    code, out, tty = run_in_pty([*CLI, "export", "--data-dir", str(data_dir), "--out", str(tmp_path / "o")])
    assert code == 0, tty
    assert json.loads(out)["tables"]["topics"] == 40
    assert "export: 0/40 topics" in tty or "export: 32/40 topics" in tty, tty
    assert "export: 40/40 topics" in tty and "rows/s" in tty, tty
    assert "\r\x1b[K" in tty  # rewritten in place
    assert "export: 40 topics" in tty  # summary line


def test_quiet_in_pipes(data_dir: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [*CLI, "export", "--data-dir", str(data_dir), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert json.loads(result.stdout)["tables"]["entries"] == 120


def test_progress_reports_and_throttles() -> None:
    now = [0.0]
    stream = io.StringIO()
    p = ExportProgress(stream, enabled=True, min_interval=1.0, clock=lambda: now[0])
    p(0, 64, 0)
    now[0] = 0.5
    p(32, 64, 500)  # within min_interval: not drawn
    now[0] = 0.6
    p(64, 64, 1200)  # the last one of the phase is always drawn
    p.finish("done")
    lines = stream.getvalue().split("\r\x1b[K")[1:]
    assert lines == [
        "export: 0/64 topics, 0 rows, 0 rows/s",
        "export: 64/64 topics, 1.2 k rows, 2.0 k rows/s",
        "done\n",
    ]
    quiet = io.StringIO()
    q = ExportProgress(quiet)  # StringIO is not a terminal
    q(1, 1, 10)
    q.finish("done")
    assert quiet.getvalue() == ""


def test_progress_callback_sees_every_topic_and_can_stop(data_dir: Path) -> None:
    import pyarrow as pa

    seen: list[tuple[int, int, int]] = []
    tables = _native.export_data_dir(data_dir, lambda *a: seen.append(a))
    assert seen[0] == (0, 40, 0)
    assert seen[-1][:2] == (40, 40)
    assert seen[-1][2] == sum(s.num_rows for s in tables.values())
    assert [d for d, _, _ in seen] == sorted(d for d, _, _ in seen)
    # Chunks are built on several threads but concatenated in order: rows stay sorted by topic.
    names = pa.table(tables["topics"]).column("topic").to_pylist()
    assert len(names) == 40 and names == sorted(names)

    def stop(done: int, total: int, rows: int) -> None:
        if done > 0:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _native.export_data_dir(data_dir, stop)
    # The data directory was closed: it opens again.
    assert _native.export_data_dir(data_dir)["topics"].num_rows == 40


def test_every_writes_distinct_snapshots_with_json_logs(data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    result = subprocess.run(
        [*CLI, "export", "--data-dir", str(data_dir), "--out", str(out), "--broker-id", "b1", *EVERY_3_JSON],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    logs = [json.loads(line) for line in result.stderr.splitlines()]
    assert [entry["fields"]["message"] for entry in logs] == ["snapshot written"] * 3
    assert all(entry["level"] == "INFO" and entry["target"] == "pulsar_rs.cli" for entry in logs)
    stamps = [entry["fields"]["snapshot_ms"] for entry in logs]
    assert stamps == sorted(set(stamps))
    assert logs[0]["fields"]["rows"]["topics"] == 40
    dirs = sorted(p.name for p in (out / "topics" / "broker=b1").iterdir())
    assert dirs == [f"snapshot_ms={s}" for s in stamps]
    assert len(list((out / "_manifests" / "broker=b1").iterdir())) == 3


def test_bad_duration_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration("soon")
    assert parse_duration("5m") == 300 and parse_duration("500ms") == 0.5 and parse_duration("2") == 2
    result = subprocess.run(
        [*CLI, "export", "--data-dir", str(tmp_path), "--out", str(tmp_path / "o"), "--every", "0s"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "duration must be positive" in result.stderr


def test_standalone_json_logs_and_live_snapshots(tmp_path: Path) -> None:
    out = tmp_path / "snapshots"
    live = ["--log-format", "json", "--export-every", "300ms", "--export-out", str(out)]
    proc = subprocess.Popen(
        [*CLI, "standalone", "--data-dir", str(tmp_path / "data"), "--port", "0", "--admin-port", "0", *live],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready = proc.stdout.readline()
        assert ready.startswith("READY pulsar://"), ready
        deadline = time.monotonic() + 30
        manifests = out / "_manifests"
        while not (manifests.exists() and len(list(manifests.rglob("*.json"))) >= 2):
            assert time.monotonic() < deadline, "no periodic live snapshots"
            time.sleep(0.1)  # poll: a separate standalone process exports on a real-time schedule
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    lines = [line for line in err.splitlines() if line.startswith("{")]
    entries = [json.loads(line) for line in lines]
    broker = [e for e in entries if e.get("target", "").startswith("pulsar_rs_server")]
    assert any(e["fields"]["message"] == "pulsar_rs broker listening" for e in broker), err
    snapshots = [e for e in entries if e["fields"].get("message") == "snapshot written"]
    assert len(snapshots) >= 2 and all(e["fields"]["manifest"].endswith(".json") for e in snapshots)
    assert json.loads(Path(snapshots[0]["fields"]["manifest"]).read_text())["source"] == "live"
