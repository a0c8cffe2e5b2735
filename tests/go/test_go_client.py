"""The official Go client (github.com/apache/pulsar-client-go) against pulsar-rs.

Starts a broker with the pytest plugin and runs the Go module in ``tests/go`` (``go test -json``)
with ``PULSAR_SERVICE_URL`` / ``PULSAR_ADMIN_URL`` set, and ``PULSAR_TXN_SERVICE_URL`` naming a
second broker with ``transactionCoordinatorEnabled`` for ``transaction_test.go``. Every Go test function found in the
module's sources must report a result: passed, or skipped with a ``pulsar-rs: ...`` reason (a
known broker difference). No failures; an empty run cannot pass.

Run the Go tests by hand against any broker::

    pulsar-rs standalone --data-dir $(mktemp -d) --port 6650 --admin-port 8080 &
    cd tests/go && PULSAR_SERVICE_URL=pulsar://127.0.0.1:6650 PULSAR_ADMIN_URL=http://127.0.0.1:8080 go test ./...

Measured on 2 cores: a cold run (empty GOMODCACHE and GOCACHE: downloads the client and its
dependencies through the module proxy, then compiles) takes about 100 s; a warm one about 32 s,
mostly the tests' own waits (delays, "nothing more arrives" checks).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

GO_DIR = Path(__file__).resolve().parent
# The Go module's test functions (34 when written, 3 of them skipped for known pulsar-rs
# differences, then 5 transaction tests): below these numbers the source scan or the run itself is broken.
MIN_GO_TESTS = 39
MIN_GO_PASSED = 39
# `go test`'s own limit; pytest's (below) leaves room for a cold module download on top.
GO_TEST_TIMEOUT_S = 420
SKIP_PREFIX = "pulsar-rs: "

pytestmark = [pytest.mark.slow, pytest.mark.go]


def go_test_functions() -> set[str]:
    """The top-level test functions the Go module defines (``func TestX(t *testing.T)``)."""
    names: set[str] = set()
    for path in sorted(GO_DIR.glob("*_test.go")):
        names.update(re.findall(r"^func (Test\w+)\(t \*testing\.T\)", path.read_text(), re.MULTILINE))
    return names


def parse_events(stdout: str) -> tuple[dict[str, str], dict[str, list[str]], list[str]]:
    """``go test -json`` events: the final action per test, each test's output lines, and the
    package-level output (build errors, panics outside a test)."""
    results: dict[str, str] = {}
    output: dict[str, list[str]] = {}
    package_output: list[str] = []
    for line in stdout.splitlines():
        if not line.startswith("{"):
            package_output.append(line)
            continue
        event = json.loads(line)
        test = event.get("Test")
        action = event.get("Action")
        if test is None:
            if action == "output":
                package_output.append(event.get("Output", "").rstrip("\n"))
            continue
        if action == "output":
            output.setdefault(test, []).append(event.get("Output", "").rstrip("\n"))
        elif action in ("pass", "fail", "skip"):
            results[test] = action
    return results, output, package_output


@pytest.mark.timeout(GO_TEST_TIMEOUT_S + 120)
def test_go_client(pulsar_broker_factory):
    go = shutil.which("go")
    if go is None:
        pytest.skip("the Go toolchain (`go`) is not on PATH: the Go client tests need Go >= 1.24")
    expected = go_test_functions()
    assert len(expected) >= MIN_GO_TESTS, f"only {len(expected)} Go test functions found in {GO_DIR}"

    broker = pulsar_broker_factory()
    # transaction_test.go's broker; the other tests keep Pulsar's default (no coordinator).
    txn_broker = pulsar_broker_factory(transactionCoordinatorEnabled=True)
    env = dict(os.environ)
    env.update(
        PULSAR_SERVICE_URL=broker.service_url,
        PULSAR_ADMIN_URL=broker.admin_url,
        PULSAR_TXN_SERVICE_URL=txn_broker.service_url,
        # Use the Go on PATH, never download another toolchain.
        GOTOOLCHAIN="local",
        # go.sum is committed: never rewrite it during a test run.
        GOFLAGS=(env.get("GOFLAGS", "") + " -mod=readonly").strip(),
    )
    started = time.monotonic()
    proc = subprocess.run(
        [go, "test", "-count=1", "-json", f"-timeout={GO_TEST_TIMEOUT_S}s", "./..."],
        cwd=GO_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=GO_TEST_TIMEOUT_S + 90,
        check=False,
    )
    elapsed = time.monotonic() - started
    results, output, package_output = parse_events(proc.stdout)

    top = {name: action for name, action in results.items() if "/" not in name}
    passed = sorted(name for name, action in results.items() if action == "pass")
    failed = sorted(name for name, action in results.items() if action == "fail")
    skipped = sorted(name for name, action in results.items() if action == "skip")
    top_passed = [name for name in passed if "/" not in name]
    top_failed = [name for name in failed if "/" not in name]
    print(
        f"go client tests: {len(top_passed)} passed, {len(top_failed)} failed of {len(top)}"
        f" ({len(top) - len(top_passed) - len(top_failed)} skipped; with subtests {len(passed)} passed,"
        f" {len(failed)} failed of {len(results)}; {elapsed:.0f} s)"
    )
    for name in skipped:
        reason = next((line.strip() for line in output.get(name, []) if SKIP_PREFIX in line), "?")
        print(f"  skipped {name}: {reason}")

    details = []
    for name in failed:
        details.append(f"--- {name}\n" + "\n".join(output.get(name, [])[-30:]))
    assert not failed, f"{len(failed)} Go tests failed:\n" + "\n".join(details)
    assert proc.returncode == 0, (
        f"go test exited {proc.returncode}:\n" + "\n".join(package_output[-40:]) + "\n" + proc.stderr[-3000:]
    )
    missing = expected - top.keys()
    assert not missing, f"Go tests without a result: {sorted(missing)}"
    # A skip must name the broker difference it stands for.
    for name in skipped:
        assert any(SKIP_PREFIX in line for line in output.get(name, [])), f"{name} skipped without a pulsar-rs reason"
    assert len(top_passed) >= MIN_GO_PASSED, f"only {len(top_passed)} Go tests passed, want >= {MIN_GO_PASSED}"
