"""The pinned Apache Pulsar distribution (for its ZooKeeper and BookKeeper, and Apache Pulsar itself)
and the process helpers the test harnesses share.

The official ``pulsar-server-distribution`` tarball comes from Maven Central through the machine's
Maven (so it lands in ``~/.m2``, downloaded once per machine) and is unpacked into a cache
directory (``$PULSAR_REFERENCE_CACHE`` or ``~/.cache/pulsar-rs``). Needs ``java`` (17+) and, for
the first download, ``mvn``.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import tarfile
import tempfile
from pathlib import Path

#: The Apache Pulsar release the differential tests and benchmarks compare against. The Maven mirror
#: here serves the ``pulsar-server-distribution`` tarball for 4.0.8 and for no later 4.0.x release
#: (4.0.9 to 4.0.14 answer 404; checked 2026-11-26), so 4.0.8 is the newest 4.0 LTS that runs here.
PULSAR_VERSION = "4.0.8"

#: The Maven coordinate of the official server tarball (``bin/``, ``conf/``, ``lib/`` as released).
DISTRIBUTION = f"org.apache.pulsar:pulsar-server-distribution:{PULSAR_VERSION}:tar.gz:bin"

#: maven-dependency-plugin version used to fetch it (pinned: the mirror serves it).
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"


class PulsarReferenceError(RuntimeError):
    """Apache Pulsar could not be obtained or started (the message says which step and why)."""


def cache_root() -> Path:
    """Where unpacked distributions live: ``$PULSAR_REFERENCE_CACHE`` or ``~/.cache/pulsar-rs``."""
    env = os.environ.get("PULSAR_REFERENCE_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "pulsar-rs"


def _m2_tarball() -> Path:
    repo = Path(os.environ.get("MAVEN_REPO_LOCAL", Path.home() / ".m2" / "repository"))
    name = f"pulsar-server-distribution-{PULSAR_VERSION}-bin.tar.gz"
    return repo / "org" / "apache" / "pulsar" / "pulsar-server-distribution" / PULSAR_VERSION / name


def available() -> str | None:
    """None when the kit can run here, else the reason it cannot (no Java, no Maven)."""
    if shutil.which("java") is None:
        return "java is not installed"
    if not distribution_home().is_dir() and not _m2_tarball().is_file() and shutil.which("mvn") is None:
        return "mvn is not installed and Apache Pulsar is not cached"
    return None


def distribution_home() -> Path:
    """The unpacked distribution's directory (may not exist yet)."""
    return cache_root() / f"apache-pulsar-{PULSAR_VERSION}"


def ensure_distribution() -> Path:
    """Downloads (once) and unpacks (once) the pinned distribution; returns its home directory."""
    home = distribution_home()
    if (home / "bin" / "pulsar").is_file() and (home / "lib").is_dir():
        return home
    tarball = _m2_tarball()
    if not tarball.is_file():
        cmd = ["mvn", "-B", "-q", f"{DEPENDENCY_PLUGIN}:get", f"-Dartifact={DISTRIBUTION}", "-Dtransitive=false"]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not tarball.is_file():
            raise PulsarReferenceError(
                f"mvn could not fetch {DISTRIBUTION}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
            )
    _check_sha1(tarball)
    home.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=home.parent))
    try:
        with tarfile.open(tarball) as tar:
            tar.extractall(staging, filter="tar")
        (top,) = list(staging.iterdir())  # apache-pulsar-<version>/
        with contextlib.suppress(FileExistsError, OSError):
            top.rename(home)  # atomic: a concurrent unpacker that won leaves its copy in place
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if not (home / "bin" / "pulsar").is_file():
        raise PulsarReferenceError(f"{tarball} did not unpack to a Pulsar distribution at {home}")
    return home


def _check_sha1(tarball: Path) -> None:
    """Checks the tarball against the ``.sha1`` Maven stored beside it (a torn download is refused)."""
    sha_file = tarball.with_name(tarball.name + ".sha1")
    if not sha_file.is_file():
        return
    expected = sha_file.read_text().split()[0].strip().lower()
    h = hashlib.sha1()
    with tarball.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    if h.hexdigest() != expected:
        raise PulsarReferenceError(f"{tarball}: sha1 {h.hexdigest()} does not match {expected}: delete it and retry")


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process_group(proc: subprocess.Popen[bytes] | None, *, graceful: bool, wait_s: float = 30) -> None:
    """Stops a process started in a session of its own (``bin/pulsar`` execs java, which keeps it):
    SIGTERM and an orderly shutdown when ``graceful`` (SIGKILL after ``wait_s``), else SIGKILL."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM if graceful else signal.SIGKILL)
    try:
        proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def _die_with_parent() -> None:
    """In the child before exec: Linux sends it SIGTERM when the process that started it dies,
    so a killed test run leaves no JVM behind (``bin/pulsar`` execs java, which keeps it)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _conf_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


if __name__ == "__main__":
    # `python3 python/pulsar_rs/testing/distribution.py`: the download alone, before the package is
    # built (.ci/run); this file needs nothing but the standard library.
    print(f"Apache Pulsar {PULSAR_VERSION} at {ensure_distribution()}")
