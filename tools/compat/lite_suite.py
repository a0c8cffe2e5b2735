#!/usr/bin/env python3
"""pulsar-lite's Python test suite (github.com/ascentstream/pulsar-lite, `tests/`) run unchanged
against `pulsar-rs standalone` and against Apache Pulsar 4.0.8 standalone (tools/pulsar_reference).

The suite is not kept in this repository: pass the `tests/` directory of any checkout of
ascentstream/pulsar-lite with --suite; it is copied under --out and run from there. The suite uses
the official `pulsar-client` Python client and finds its broker through environment variables
(tests/conftest.py): PULSAR_LITE_BROKER_URL, PULSAR_LITE_LOG_FILE, PULSAR_LITE_DB_PATH,
PULSAR_LITE_METADATA_FILE and PULSAR_LITE_CONFIG_FILE (a TOML file it reads a few timings and
`default_partitions` from). The runner sets all of them for the broker it started on 127.0.0.1 with
ephemeral ports; PULSAR_LITE_BINARY stays unset.

Tests that read pulsar-lite's own files (its log lines, its metadata JSON), start pulsar-lite's own
binary, or test its packaging cannot run against another broker: they are deselected, each with the
reason in EXCLUDED (and in tools/compat/README.md).

Usage: lite_suite.py --suite PATH/TO/pulsar-lite/tests --broker pulsar-rs|pulsar|both [--out DIR]
                     [--pulsar-rs BIN] [-k EXPR] [--timeout 120] [--rerun-failures K]
Prints each test's outcome and, per broker, "lite suite (BROKER): P passed, F failed of N"
(N counts tests that ran and did not skip themselves; excluded tests are not in N).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BROKERS = ("pulsar-rs", "pulsar")

# Node-id prefixes never run here, with the reason (README.md lists them too).
EXCLUDED: dict[str, str] = {
    "persist/": (
        "every test starts pulsar-lite's own binary (PULSAR_LITE_BINARY --addr --db-path --log-level) "
        "on a port of its own, some restart it; without that binary each skips itself"
    ),
    "test_connection_management.py::test_keepalive_timeout_is_logged_when_client_stops_responding": (
        "waits for pulsar-lite's log lines 'liveness check timed out' and 'Closing connection'"
    ),
    "test_metadata_persistence.py::": "reads pulsar-lite's metadata file (<db>.metadata.json)",
    "test_python_wheel_tag.py::": "tests pulsar-lite's wheel build (python/setup.py), not a broker",
    "perf/": "unit tests of pulsar-lite's perf scripts (docker image, git metadata), not a broker",
}


def log(msg: str = "") -> None:
    print(msg, flush=True)


@dataclass
class Outcome:
    nodeid: str
    outcome: str  # passed | failed | skipped
    seconds: float
    message: str


class RsBroker:
    """`pulsar-rs standalone` on 127.0.0.1, ephemeral ports, fresh data dir, in its own session."""

    name = "pulsar-rs"

    def __init__(self, binary: str, workdir: Path) -> None:
        self.log_path = workdir / "broker.log"
        cmd = [binary, "standalone", "--data-dir", str(workdir / "data"), "--port", "0", "--admin-port", "0"]
        with self.log_path.open("wb") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            # `READY pulsar://127.0.0.1:P http://127.0.0.1:A data_dir=D` once both ports are bound.
            m = re.search(r"^READY (pulsar://\S+) (http://\S+)", self.log_path.read_text(errors="replace"), re.M)
            if m:
                self.service_url, self.admin_url = m.group(1), m.group(2)
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"pulsar-rs exited {self.proc.returncode}:\n{self.log_path.read_text()[-3000:]}")
            time.sleep(0.1)
        self.close()
        raise RuntimeError("pulsar-rs printed no READY line within 60 s")

    def close(self) -> None:
        if self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)


class JavaBroker:
    """Apache Pulsar standalone as released (tools/pulsar_reference: 127.0.0.1, ephemeral ports)."""

    name = "pulsar"

    def __init__(self, workdir: Path) -> None:
        sys.path.insert(0, str(ROOT / "tools"))
        from pulsar_reference import PULSAR_VERSION, PulsarStandalone

        self.version = PULSAR_VERSION
        self.ref = PulsarStandalone().start()
        self.service_url, self.admin_url = self.ref.service_url, self.ref.admin_url
        self.log_path = workdir / "broker.log"
        self._workdir = workdir

    def close(self) -> None:
        self.ref.stop()
        with contextlib.suppress(OSError):
            shutil.copyfile(self.ref.log_path, self.log_path)
        self.ref.cleanup()


def suite_env(broker: RsBroker | JavaBroker, workdir: Path) -> dict[str, str]:
    # The suite reads keep-alive timings (only for the excluded keep-alive test) and
    # default_partitions (> 0 makes some tests skip themselves) from this file. Both brokers
    # auto-create non-partitioned topics (Pulsar's allowAutoTopicCreationType=non-partitioned)
    # and send pings every 30 s (keepAliveIntervalSeconds).
    timing = workdir / "pulsar-lite.toml"
    timing.write_text("keep_alive_interval_secs = 30\ndefault_partitions = 0\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PULSAR_LITE_")}
    env.update(
        PULSAR_LITE_BROKER_URL=broker.service_url,
        PULSAR_LITE_LOG_FILE=str(broker.log_path),
        # Neither file exists: only excluded tests read them.
        PULSAR_LITE_DB_PATH=str(workdir / "no-such-pulsar-lite.db"),
        PULSAR_LITE_METADATA_FILE=str(workdir / "no-such-pulsar-lite.metadata.json"),
        PULSAR_LITE_CONFIG_FILE=str(timing),
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def run_pytest(
    suite: Path, env: dict[str, str], xml: Path, selection: Sequence[str], keyword: str | None, timeout: int
) -> None:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(suite), "-rA", "-q"]
    cmd += ["--timeout", str(timeout), "--junitxml", str(xml), "-o", "junit_family=xunit2"]
    cmd += [f"--deselect={prefix}" for prefix in EXCLUDED]
    if keyword:
        cmd += ["-k", keyword]
    cmd += list(selection) or ["."]
    with (xml.with_suffix(".out")).open("w") as out:
        subprocess.run(cmd, cwd=suite, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)


def junit_outcomes(xml: Path) -> list[Outcome]:
    if not xml.is_file():
        return []
    results = []
    for case in ET.parse(xml).getroot().iter("testcase"):
        module = case.get("classname", "")
        nodeid = f"{module.replace('.', '/')}.py::{case.get('name')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
                message = (child.get("message") or "") + "\n" + (child.text or "")
            elif child.tag == "skipped":
                outcome, message = "skipped", child.get("message") or ""
        results.append(Outcome(nodeid, outcome, float(case.get("time", "0")), message.strip()))
    return results


def first_line(message: str) -> str:
    lines = [line for line in message.splitlines() if line.strip()]
    return lines[0][:160] if lines else ""


@contextlib.contextmanager
def started(kind: str, workdir: Path, rs_binary: str) -> Iterator[RsBroker | JavaBroker]:
    broker: RsBroker | JavaBroker = RsBroker(rs_binary, workdir) if kind == "pulsar-rs" else JavaBroker(workdir)
    try:
        yield broker
    finally:
        broker.close()


def run_broker(kind: str, suite: Path, out: Path, args: argparse.Namespace) -> dict[str, object]:
    workdir = out / kind
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    log(f"== {kind}: starting the broker")
    t0 = time.monotonic()
    with started(kind, workdir, args.pulsar_rs) as broker:
        log(f"   {broker.service_url} {broker.admin_url} (log: {broker.log_path})")
        env = suite_env(broker, workdir)
        xml = workdir / "junit.xml"
        run_pytest(suite, env, xml, args.tests, args.k, args.timeout)
        results = junit_outcomes(xml)
        failed = [r.nodeid for r in results if r.outcome == "failed"]
        rerun: dict[str, list[str]] = {t: [] for t in failed}
        for i in range(args.rerun_failures if failed else 0):
            log(f"   rerun {i + 1}/{args.rerun_failures} of the {len(failed)} failed test(s)")
            xml2 = workdir / f"junit-rerun{i + 1}.xml"
            run_pytest(suite, env, xml2, failed, None, args.timeout)
            for r in junit_outcomes(xml2):
                rerun[r.nodeid].append(r.outcome)
    log(f"   done in {time.monotonic() - t0:.0f} s")
    if not results:
        log(f"   pytest wrote no results: see {xml.with_suffix('.out')}")

    with (workdir / "failures.txt").open("w") as fh:
        for r in results:
            if r.outcome == "failed":
                fh.write(f"=== {r.nodeid}\n{r.message}\n\n")
    for r in results:
        again = rerun.get(r.nodeid)
        extra = f"  (reruns: {again.count('passed')}/{len(again)} passed)" if again else ""
        why = f"  -- {first_line(r.message)}" if r.outcome != "passed" else ""
        log(f"   {r.outcome.upper():7} {r.nodeid} [{r.seconds:.1f} s]{extra}{why}")
    ran = [r for r in results if r.outcome != "skipped"]
    passed = sum(r.outcome == "passed" for r in ran)
    skipped = len(results) - len(ran)
    summary = f"lite suite ({kind}): {passed} passed, {len(ran) - passed} failed of {len(ran)}"
    m = re.search(r"(\d+) deselected", xml.with_suffix(".out").read_text(errors="replace"))
    log(f"   deselected (EXCLUDED, -k): {m.group(1) if m else 0} tests; skipped by the suite itself: {skipped}")
    return {
        "broker": kind,
        "summary": summary,
        "outcomes": {r.nodeid: r.outcome for r in results},
        "messages": {r.nodeid: first_line(r.message) for r in results if r.outcome != "passed"},
        "rerun": rerun,
    }


def default_rs_binary() -> str:
    beside = Path(sys.executable).parent / "pulsar-rs"
    return str(beside) if beside.exists() else (shutil.which("pulsar-rs") or "pulsar-rs")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", required=True, type=Path, help="pulsar-lite's tests/ directory")
    ap.add_argument("--broker", choices=(*BROKERS, "both"), default="both")
    ap.add_argument("--out", type=Path, help="where everything goes (default: a new temp dir)")
    ap.add_argument("--pulsar-rs", default=default_rs_binary(), help="the pulsar-rs command")
    ap.add_argument("-k", help="pytest -k expression (only matching tests)")
    ap.add_argument("--timeout", type=int, default=120, help="pytest-timeout per test, seconds")
    ap.add_argument(
        "--rerun-failures", type=int, default=0, metavar="K", help="run each failed test K more times (flakiness)"
    )
    ap.add_argument("tests", nargs="*", help="node ids relative to the suite (default: all)")
    args = ap.parse_args()

    if not (args.suite / "conftest.py").is_file():
        ap.error(f"{args.suite} has no conftest.py: pass pulsar-lite's tests/ directory")
    out: Path = args.out or Path(tempfile.mkdtemp(prefix="lite-suite-"))
    out.mkdir(parents=True, exist_ok=True)
    suite = out / "tests"
    shutil.rmtree(suite, ignore_errors=True)
    shutil.copytree(args.suite, suite, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    log(f"suite copied to {suite}; excluded (deselected):")
    for prefix, why in EXCLUDED.items():
        log(f"   {prefix}: {why}")

    kinds = BROKERS if args.broker == "both" else (args.broker,)
    reports = [run_broker(kind, suite, out, args) for kind in kinds]
    (out / "summary.json").write_text(json.dumps(reports, indent=2) + "\n")

    if len(reports) == 2:
        rs, java = (r["outcomes"] for r in reports)
        assert isinstance(rs, dict) and isinstance(java, dict)
        differ = sorted(t for t in rs.keys() | java.keys() if rs.get(t) != java.get(t) or rs.get(t) == "failed")
        log("\nfailed on either broker (pulsar-rs / pulsar):")
        for t in differ:
            log(f"   {rs.get(t, '-'):7} / {java.get(t, '-'):7}  {t}")
    log("")
    for r in reports:
        log(str(r["summary"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
