"""The official Go client's own test suite (github.com/apache/pulsar-client-go v0.19.0), in a short form,
against ``pulsar-rs standalone`` configured by that suite's CI file: ``tools/compat/go_client_suite.py``
(README there) run on the tests that cover

* connection set-up, TLS and the authentication plugins against the broker: every top-level test of
  ``pulsar/client_impl_test.go`` (plain and TLS connections, CA and host-name verification, TLS client
  certificates, tokens from a string, a supplier and a file, Basic, OAuth 2.0 against a mock, the same
  over the HTTP lookup service and HTTPS, idle connections);
* the authentication plugins themselves: every test of ``pulsar/auth`` and
  ``pulsaradmin/pkg/admin/auth``;
* the admin client: every test of ``pulsaradmin/pkg/admin`` (tenants, namespaces and their policies,
  topics and topic policies, subscriptions, schemas, brokers), over the admin token.

It fails on any failed test, and when fewer tests ran than :data:`MIN_TESTS` (an empty or truncated
run). The full suite, 544 tests in about 7 minutes, stays a manual run (``tools/compat/README.md``).

The suite hard-codes localhost:6650, 6651, 8080 and 8443: the test fails (not skips) when one is
taken. Without Go it skips, as ``test_go_client.py``. Measured on 2 cores: see ``MIN_TESTS``' comment.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tools.compat import go_client_suite

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.go]

SUITE = ROOT / "tools" / "compat" / "go_client_suite.py"
#: Package -> the test files whose top-level tests run (None: every test file of the package).
SELECTION: dict[str, tuple[str, ...] | None] = {
    "pulsar": ("client_impl_test.go",),
    "pulsar/auth": None,
    "pulsaradmin/pkg/admin": None,
    "pulsaradmin/pkg/admin/auth": None,
}
#: Distinct test names in the selection (44 + 12 + 76 + 2, one name in both auth packages).
MIN_SELECTED = 133
#: Top-level tests run: 135 when written, every one passed (``--run`` is one regexp for every
#: package, so ``pulsar`` also runs ``TestMaxMessageSize``, a name ``pulsaradmin/pkg/admin`` shares:
#: 45 there, 12, 76, 2). Fewer means the run, the selection or the listing broke.
MIN_TESTS = 135
#: Cold (empty Go build cache: the module and its dependencies compiled) and warm runs both fit.
TIMEOUT_S = 1200
LAST_LINE = re.compile(r"^go client suite: (\d+) passed, (\d+) failed of (\d+)$")


def pulsar_rs_command() -> str:
    beside = Path(sys.executable).parent / "pulsar-rs"
    found = str(beside) if beside.is_file() else shutil.which("pulsar-rs")
    assert found, "the pulsar-rs command is not installed (beside sys.executable or on PATH)"
    return found


def selected_tests(module_dir: Path) -> list[str]:
    """The top-level test and example functions of :data:`SELECTION`, read from the module's sources."""
    names: set[str] = set()
    for pkg, files in SELECTION.items():
        paths = [module_dir / pkg / f for f in files] if files else sorted((module_dir / pkg).glob("*_test.go"))
        for path in paths:
            names.update(re.findall(r"^func ((?:Test|Example)\w+)\(", path.read_text(), re.MULTILINE))
    return sorted(names)


@pytest.mark.timeout(TIMEOUT_S + 60)
def test_go_client_suite_short(tmp_path):
    """The short form of the Go client's suite passes whole: no failed test, at least MIN_TESTS run."""
    if shutil.which("go") is None:
        pytest.skip("the Go toolchain (`go`) is not on PATH: the Go client's suite needs Go >= 1.24")
    busy = go_client_suite.ports_busy()
    if busy:
        pytest.fail(
            f"port(s) {', '.join(map(str, busy))} busy on 127.0.0.1: the Go client's suite hard-codes "
            "localhost:6650, 6651, 8080 and 8443; stop whatever listens there",
            pytrace=False,
        )
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-buildvcs=false")
    info = go_client_suite.download_module(go_client_suite.DEFAULT_VERSION, env, str(tmp_path))
    names = selected_tests(Path(info["Dir"]))
    assert len(names) >= MIN_SELECTED, f"only {len(names)} tests selected from the module's sources"

    out = tmp_path / "out"
    cmd = [sys.executable, str(SUITE), "--broker", pulsar_rs_command(), "--out", str(out)]
    cmd += ["--packages", ",".join(SELECTION), "--run", "^({})$".format("|".join(names))]
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    elapsed = time.monotonic() - started
    lines = proc.stdout.strip().splitlines()
    print("\n".join(line for line in lines if not line.startswith("setup ")))
    print(f"({elapsed:.0f} s)")
    m = LAST_LINE.match(lines[-1]) if lines else None
    failures = out / "failures.txt"
    detail = failures.read_text(errors="replace")[-6000:] if failures.is_file() else ""
    assert m, f"no result line (exit status {proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    passed, failed, ran = map(int, m.groups())
    failed_lines = "\n".join(line for line in lines if line.startswith("FAIL "))
    assert failed == 0, f"{failed} of {ran} Go tests failed:\n{failed_lines}\n\n{detail}"
    assert ran >= MIN_TESTS, f"only {ran} Go tests ran (at least {MIN_TESTS} expected):\n{proc.stdout[-4000:]}"
    assert passed == ran and proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
