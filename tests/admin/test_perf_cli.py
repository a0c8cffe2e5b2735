"""``pulsar-rs perf produce|consume`` (the Rust load generator of ``rust/perf`` shipped in the
package): a line per second with msg/s, MB/s and latency percentiles, a summary at the end, and
figures that match what the broker counted."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request

import pytest

pytestmark = pytest.mark.timeout(120)
CLI = [sys.executable, "-m", "pulsar_rs.cli", "perf"]
LINE = re.compile(r"^\s+\d+s\s+publish\s+[\d.]+ msg/s\s+[\d.]+ MB/s\s+latency ms (p50 [\d.]+ .* max [\d.]+|-)$")
CONSUME_LINE = re.compile(r"^\s+\d+s\s+consume\s+[\d.]+ msg/s\s+[\d.]+ MB/s\s+e2e ms ")


def perf(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=90)


def in_counter(admin: str, topic: str) -> int:
    with urllib.request.urlopen(f"{admin}/admin/v2/persistent/public/default/{topic}/stats", timeout=10) as r:
        return json.loads(r.read())["msgInCounter"]


def test_produce_then_consume(pulsar_broker) -> None:
    url = pulsar_broker.service_url
    common = ["--url", url, "--topics", "2", "--topic-prefix", "perfcli"]
    produced = perf(
        "produce", *common, "--num-producers", "2", "--rate", "400", "--size", "64", "--batch-max-messages", "4",
        "--test-duration", "2.5",
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    lines = produced.stdout.splitlines()
    ticks = [line for line in lines if LINE.match(line)]
    assert len(ticks) >= 2, produced.stdout
    summary = [line for line in lines if line.startswith("Aggregated publish:")]
    assert len(summary) == 1, produced.stdout
    sent = int(re.search(r"publish: (\d+) msgs", summary[0]).group(1))
    assert 800 <= sent <= 1200, summary  # 400 msg/s for 2.5 s
    assert re.search(r"latency ms p50 [\d.]+ p95 [\d.]+ p99 [\d.]+ p999 [\d.]+ max [\d.]+", summary[0])
    assert not any(line.startswith("Aggregated consume") for line in lines)
    # The broker counted exactly what the tool reports as published.
    admin = pulsar_broker.admin_url
    assert in_counter(admin, "perfcli-0") + in_counter(admin, "perfcli-1") == sent

    consumed = perf(
        "consume", *common, "--consumers", "2", "--earliest", "--expect", str(sent),
        "--subscription-type", "shared", "--duration", "5", "--json",
    )  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    start = consumed.stdout.index("{")
    assert all(CONSUME_LINE.match(line) for line in consumed.stdout[:start].splitlines() if line.strip())
    result = json.loads(consumed.stdout[start:])
    assert result["consume"]["messages"] == sent
    assert result["publish"]["messages"] == 0 and result["config"]["producers"] == 0
    assert result["config"]["sub_type"] == "Shared"


def test_num_producers_counts_per_topic_as_pulsar_perf(pulsar_broker) -> None:
    # pulsar-perf's -n / --num-producers is per topic, one by default: every topic gets load.
    url, admin = pulsar_broker.service_url, pulsar_broker.admin_url
    run = perf("produce", "--url", url, "--topics", "3", "--topic-prefix", "perfn", "--rate", "300",
               "--test-duration", "1.5", "--json")  # fmt: skip
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout[run.stdout.index("{") :])
    assert result["config"]["producers"] == 3
    assert all(in_counter(admin, f"perfn-{i}") > 0 for i in range(3))
    run = perf("produce", "--url", url, "--topics", "2", "--topic-prefix", "perfn2", "--num-producers", "2",
               "--rate", "200", "--test-duration", "1", "--json")  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout[run.stdout.index("{") :])["config"]["producers"] == 4


def test_bad_arguments_and_help() -> None:
    bad = perf("produce", "--rate", "fast")
    assert bad.returncode == 2 and "invalid value 'fast'" in bad.stderr
    assert perf("sideways").returncode == 2
    helped = perf("produce", "--help")
    assert helped.returncode == 0 and "--rate" in helped.stdout and "--sub-type" in helped.stdout


def test_unreachable_broker_is_a_clear_error() -> None:
    failed = perf("produce", "--url", "pulsar://127.0.0.1:1", "--duration", "1")
    assert failed.returncode == 1
    assert failed.stderr.startswith("pulsar-rs perf:"), failed.stderr
