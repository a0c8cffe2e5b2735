"""The wheel as people install it elsewhere: the very wheel tox built (``TOX_PACKAGE``; tox's
``.pkg`` env builds it with maturin ``--zig --compatibility manylinux2014``, tox.ini) is an abi3,
manylinux_2_17 wheel that auditwheel accepts, and, installed into a clean venv (no system
site-packages, nothing else installed), it runs: ``pulsar-rs standalone`` prints READY, the official
``pulsar-client`` (from the test env, over the network) produces and consumes through it,
``pulsar-rs admin`` and ``pulsar-rs perf`` work. See docs/wheel.md.

Outside tox (no ``TOX_PACKAGE``) the module is skipped; under tox a missing wheel is a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import new_client

pytestmark = pytest.mark.timeout(240)

WHEELS = [Path(p) for p in os.environ.get("TOX_PACKAGE", "").split(os.pathsep) if p.endswith(".whl")]
if not WHEELS and "TOX_ENV_NAME" not in os.environ:
    pytest.skip("no TOX_PACKAGE: run under tox (tox -e py311), which builds the wheel", allow_module_level=True)

# The oldest glibc the wheel may need: manylinux2014 = manylinux_2_17 (CentOS 7).
MAX_GLIBC = (2, 17)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert len(WHEELS) == 1, f"tox should have built exactly one wheel: {WHEELS}"
    # tox may remove its copy when the env ends: work on our own.
    return Path(shutil.copy(WHEELS[0], tmp_path_factory.mktemp("wheel")))


@pytest.fixture(scope="module")
def clean_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv without system site-packages holding only the wheel (installed offline, no deps)."""
    root = tmp_path_factory.mktemp("venv") / "v"
    venv.EnvBuilder(with_pip=True, system_site_packages=False, clear=True).create(root)
    subprocess.run(
        [root / "bin" / "python", "-m", "pip", "install", "--no-index", "--no-deps", "-q", wheel],
        check=True,
        timeout=120,
    )
    return root


def test_wheel_tags_and_auditwheel(wheel: Path) -> None:
    # PEP 425 tags in the name: one build for every CPython >= 3.11 (abi3), glibc >= 2.17.
    name, version, python_tag, abi_tag, platform_tag = wheel.stem.split("-")
    assert (name, python_tag, abi_tag) == ("pulsar_rs", "cp311", "abi3"), wheel.name
    assert "manylinux_2_17_x86_64" in platform_tag.split("."), wheel.name
    shown = subprocess.run(
        [sys.executable, "-m", "auditwheel", "show", wheel], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    flat = " ".join(shown.split())
    assert 'is consistent with the following platform tag: "manylinux_2_17_x86_64"' in flat, shown
    # Every versioned glibc symbol it references exists in glibc 2.17.
    glibc = {tuple(int(x) for x in v.split(".")) for v in re.findall(r"GLIBC_(\d+\.\d+(?:\.\d+)?)", flat)}
    assert glibc and max(glibc)[:2] <= MAX_GLIBC, shown
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        entry_points = z.read(f"pulsar_rs-{version}.dist-info/entry_points.txt").decode()
    package = {
        "_native.abi3.so",
        "_native.pyi",
        "py.typed",
        "admin/__init__.py",
        "admin/client.py",
        "cli/__init__.py",
        "cli/__main__.py",
        "cli/command.py",
        "cli/admin/__init__.py",
        "pytest_plugin.py",
    }
    assert {f"pulsar_rs/{f}" for f in package} <= names
    lines = set(entry_points.replace(" ", "").splitlines())
    assert {"pulsar-rs=pulsar_rs.cli:main", "pulsar_rs=pulsar_rs.pytest_plugin"} <= lines, entry_points


def run(venv_root: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [venv_root / "bin" / "pulsar-rs", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture
def standalone(clean_venv: Path, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """``pulsar-rs standalone`` of the clean venv on ephemeral ports; yields (service URL, admin URL)."""
    proc = subprocess.Popen(
        [clean_venv / "bin" / "pulsar-rs", "standalone", "--data-dir", "data", "--port", "0", "--admin-port", "0"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},  # nothing of the test env leaks in
    )
    assert proc.stdout is not None
    ready = proc.stdout.readline()
    if not ready.startswith("READY "):
        proc.kill()
        pytest.fail(f"no READY line: {ready!r} {proc.communicate(timeout=10)[1]}")
    _, service_url, admin_url, _ = ready.split()
    try:
        yield service_url, admin_url
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err


def test_clean_venv_is_isolated(clean_venv: Path) -> None:
    probe = subprocess.run(
        [clean_venv / "bin" / "python", "-c", "import sys, pulsar_rs; print(pulsar_rs.__file__); import pulsar"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    # pulsar_rs comes from the venv; the test env's packages (pulsar-client) are not visible there.
    assert probe.stdout.startswith(str(clean_venv)), probe.stdout
    assert "No module named 'pulsar'" in probe.stderr, probe.stderr


def test_standalone_produce_consume_admin_perf(clean_venv: Path, standalone: tuple[str, str]) -> None:
    service_url, admin_url = standalone
    topic = "persistent://public/default/wheel-smoke"
    client = new_client(service_url)
    try:
        consumer = client.subscribe(topic, "smoke")
        producer = client.create_producer(topic)
        for i in range(10):
            producer.send(f"m{i}".encode())
        got = []
        for _ in range(10):
            msg = consumer.receive(timeout_millis=10_000)
            consumer.acknowledge(msg)
            got.append(msg.data())
        assert got == [f"m{i}".encode() for i in range(10)]
    finally:
        client.close()

    tenants = run(clean_venv, "admin", "--admin-url", admin_url, "tenants", "list")
    assert tenants.returncode == 0 and tenants.stdout.split() == ["public", "pulsar"], tenants
    stats = run(clean_venv, "admin", "--admin-url", admin_url, "--json", "topics", "stats", topic)
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["msgInCounter"] == 10
    refused = run(clean_venv, "admin", "--admin-url", admin_url, "namespaces", "delete", "public/default")
    assert refused.returncode == 1 and refused.stderr.startswith("pulsar-rs admin: 409"), refused

    common = ["--url", service_url, "--topics", "1", "--topic-prefix", "wheel-perf"]
    produced = run(clean_venv, "perf", "produce", *common, "--rate", "200", "--test-duration", "1.5", "--json")
    assert produced.returncode == 0, produced.stderr
    sent = json.loads(produced.stdout[produced.stdout.index("{") :])["publish"]["messages"]
    assert sent > 0
    consumed = run(clean_venv, "perf", "consume", *common, "--earliest", "--expect", str(sent), "--duration", "20")
    assert consumed.returncode == 0, consumed.stderr
    assert f"Aggregated consume: {sent} msgs" in consumed.stdout, consumed.stdout
