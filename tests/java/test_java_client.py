"""The official Apache Pulsar Java client and Java ``PulsarAdmin`` against pulsar_rs.

Runs the JUnit 5 suite of ``tests/java`` (a Maven project) with Maven against a broker with Pulsar's
default settings and, for ``TransactionTest``, a second one with transactions enabled, then reads
Surefire's XML reports: no failure, no error, and at least ``MIN_TESTS`` tests run (so that an empty
or partial run cannot pass). Tests the broker does not pass yet are ``@Disabled("pulsar-rs: ...")``
in the Java sources and counted as skipped. The same sources run with each client of ``CLIENTS``
(4.0.13, 4.2.4, and 5.0.1's classic API), one test item each, each on a worker of its own under
pytest-xdist (``ONE_GROUP_PER_TEST`` in tests/worker_groups.py).

In CI the suite's ``TransactionTest`` (12 tests) is left to the cluster room, which runs it on
three brokers (tests/cluster/test_cluster_transactions.py); ``PULSAR_RS_FULL_SUITES=1``
(benches/long_suites.sh) runs it here too, on one broker.

Skipped only when ``mvn`` or ``java`` is not installed. Maven's first run downloads the client and
plugins into ``~/.m2`` (about a minute on a cold cache); later runs take the compile and test time.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import pytest

JAVA_DIR = Path(__file__).resolve().parent

#: The number of JUnit tests (parameterized cases counted one by one) in tests/java, disabled ones
#: included, without ``TransactionTest``'s 12: a run that reports fewer did not run them all.
MIN_TESTS = 58

#: benches/long_suites.sh: the whole suite, ``TransactionTest`` on one broker included.
FULL = os.environ.get("PULSAR_RS_FULL_SUITES") == "1"

#: The class the short (CI) run leaves to tests/cluster, and its test count.
CLUSTER_ROOM_CLASS, CLUSTER_ROOM_TESTS = "TransactionTest", 12

#: Maven's own limit; pytest's is a little longer so that Maven is stopped by us, not by pytest-timeout.
MVN_TIMEOUT_S = 840

pytestmark = [pytest.mark.slow, pytest.mark.java, pytest.mark.timeout(MVN_TIMEOUT_S + 60)]


@dataclass
class Summary:
    tests: int = 0
    failures: int = 0
    errors: int = 0
    skipped: int = 0
    failed: list[str] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return self.tests - self.failures - self.errors - self.skipped


def read_reports(reports: Path) -> Summary:
    """Adds up Surefire's ``TEST-*.xml`` reports; ``failed`` names each failing or erroring test."""
    s = Summary()
    for path in sorted(reports.glob("TEST-*.xml")):
        suite = ET.parse(path).getroot()
        s.tests += int(suite.get("tests", 0))
        s.failures += int(suite.get("failures", 0))
        s.errors += int(suite.get("errors", 0))
        s.skipped += int(suite.get("skipped", 0))
        for case in suite.iter("testcase"):
            for kind in ("failure", "error"):
                bad = case.find(kind)
                if bad is not None:
                    message = (bad.get("message") or "").strip().splitlines()
                    first = message[0][:300] if message else bad.get("type", "")
                    s.failed.append(f"{case.get('classname')}.{case.get('name')}: {kind}: {first}")
    return s


def run_maven(
    project: Path,
    service_url: str,
    admin_url: str,
    txn_service_url: str,
    txn_admin_url: str,
    only: str | None = None,
    profile: str | None = None,
) -> subprocess.CompletedProcess:
    """``mvn test`` of ``project`` against these brokers; ``only``: Surefire's ``-Dtest`` (one class,
    or ``!Class`` for all but one); ``profile``: the pom's profile of another client (``CLIENTS``)."""
    cmd = [
        "mvn",
        "-B",
        "-q",
        "-f",
        str(project / "pom.xml"),
        "test",
        f"-Dpulsar.serviceUrl={service_url}",
        f"-Dpulsar.adminUrl={admin_url}",
        f"-Dpulsar.txnServiceUrl={txn_service_url}",
        f"-Dpulsar.txnAdminUrl={txn_admin_url}",
        *([f"-Dtest={only}"] if only else []),
        *([f"-P{profile}"] if profile else []),
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True, cwd=project
    )
    try:
        out, _ = proc.communicate(timeout=MVN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"mvn did not finish within {MVN_TIMEOUT_S} s; its output ends with:\n{out[-5000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, None)


#: The Java clients (and admin clients) the suite runs with, each with its Maven profile (pom.xml):
#: the default, the newest 4.x, and 5.0's classic API (its unshaded ``pulsar-client-original``, the
#: shaded client not being served here). Resolved from Maven Central on 2026-12-07.
CLIENTS = {"4.0.13": None, "4.2.4": "pulsar-4.2", "5.0.1": "pulsar-5.0"}


@pytest.mark.parametrize("client", list(CLIENTS))
def test_java_client_suite(client, pulsar_broker_factory, tmp_path):
    # Pulsar's default (no transactions) for every test but TransactionTest, which gets a broker
    # with the transaction coordinator (only when it runs: FULL).
    pulsar_broker = pulsar_broker_factory()
    txn_broker = pulsar_broker_factory(transactionCoordinatorEnabled=True) if FULL else pulsar_broker
    for tool in ("mvn", "java"):
        if shutil.which(tool) is None:
            pytest.skip(f"`{tool}` is not installed: the Java client suite needs a JDK (17+) and Maven")
    # Maven builds a copy of the project, so that its target/ (classes, Surefire's reports) lands in the
    # test's temporary directory, not in the source tree, and no old report counts for this run.
    project = tmp_path / "java"
    shutil.copytree(JAVA_DIR, project, ignore=shutil.ignore_patterns("target", "__pycache__", "*.py"))
    reports = project / "target" / "surefire-reports"

    result = run_maven(
        project,
        pulsar_broker.service_url,
        pulsar_broker.admin_url,
        txn_broker.service_url,
        txn_broker.admin_url,
        only=None if FULL else f"!{CLUSTER_ROOM_CLASS}",
        profile=CLIENTS[client],
    )

    assert reports.is_dir(), f"no Surefire reports (mvn exit {result.returncode}):\n{result.stdout[-5000:]}"
    s = read_reports(reports)
    failed = s.failures + s.errors
    print(f"java client {client} tests: {s.passed} passed, {failed} failed of {s.tests} ({s.skipped} disabled)")
    assert not s.failed, "failing Java tests:\n" + "\n".join(s.failed)
    assert s.failures == 0
    assert s.errors == 0
    expected = MIN_TESTS + (CLUSTER_ROOM_TESTS if FULL else 0)
    assert s.tests >= expected, f"only {s.tests} Java tests ran, expected at least {expected}"
    assert result.returncode == 0, f"mvn exit {result.returncode}:\n{result.stdout[-5000:]}"
