"""Apache Pulsar itself, as a runnable reference beside pulsar-rs.

Obtains the official ``pulsar-server-distribution`` tarball from Maven Central (through the machine's
Maven, so it lands in ``~/.m2`` and is downloaded once per machine), unpacks it into a cache directory,
and starts ``bin/pulsar standalone`` exactly as shipped but for what a test box needs: 127.0.0.1 only,
ephemeral ports, a temporary data directory, RocksDB metadata (Pulsar 4's standalone default), no
functions worker, no stream storage and a heap that fits beside our own tests.

The version is pinned here, once (:data:`PULSAR_VERSION`); the README says why it is this one.

    with PulsarStandalone() as pulsar:
        client = pulsar_client.Client(pulsar.service_url)
        ...
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
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Self

#: The Apache Pulsar release the differential tests and benchmarks compare against. The Maven mirror
#: here serves the ``pulsar-server-distribution`` tarball for 4.0.8 and for no later 4.0.x release
#: (4.0.9 to 4.0.14 answer 404; checked 2026-11-26), so 4.0.8 is the newest 4.0 LTS that runs here.
PULSAR_VERSION = "4.0.8"

#: The Maven coordinate of the official server tarball (``bin/``, ``conf/``, ``lib/`` as released).
DISTRIBUTION = f"org.apache.pulsar:pulsar-server-distribution:{PULSAR_VERSION}:tar.gz:bin"

#: maven-dependency-plugin version used to fetch it (pinned: the mirror serves it).
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

#: JVM sizing for a broker that shares a 2-core box with the tests (the shipped default is 2 GB heap
#: and 4 GB direct memory, with ZGC and pre-touch).
DEFAULT_MEM = "-Xms256m -Xmx1g -XX:MaxDirectMemorySize=1g"
DEFAULT_GC = "-XX:+UseG1GC -XX:+PerfDisableSharedMem"

#: How long a cold start may take (JVM, RocksDB metadata, bookie, broker, namespace creation).
START_TIMEOUT_S = 240.0


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


def _render_conf(shipped: str, overrides: Mapping[str, str]) -> str:
    """The shipped ``standalone.conf`` with ``overrides`` replacing (or appended after) its keys."""
    out, seen = [], set()
    for line in shipped.splitlines():
        key = line.split("=", 1)[0].strip() if "=" in line and not line.lstrip().startswith("#") else None
        if key is not None and key in overrides:
            out.append(f"{key}={overrides[key]}")
            seen.add(key)
        else:
            out.append(line)
    out.extend(f"{k}={v}" for k, v in overrides.items() if k not in seen)
    return "\n".join(out) + "\n"


class PulsarStandalone:
    """One Apache Pulsar standalone on 127.0.0.1 with ephemeral ports, stopped on exit.

    ``settings`` are ``standalone.conf`` keys (Pulsar's names) set on top of the shipped file.
    """

    def __init__(self, settings: Mapping[str, object] | None = None, *, mem: str = DEFAULT_MEM) -> None:
        self.home = ensure_distribution()
        self.data_dir = Path(tempfile.mkdtemp(prefix="pulsar-reference-"))
        self.port = free_port()
        self.web_port = free_port()
        self.bookie_port = free_port()
        self._mem = mem
        self._settings = {k: _conf_value(v) for k, v in (settings or {}).items()}
        self._proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.data_dir / "standalone.out"

    @property
    def service_url(self) -> str:
        return f"pulsar://127.0.0.1:{self.port}"

    @property
    def admin_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def start(self) -> Self:
        overrides = {
            "bindAddress": "127.0.0.1",
            "advertisedAddress": "127.0.0.1",
            "brokerServicePort": str(self.port),
            "webServicePort": str(self.web_port),
            # The embedded bookie reads this same file: no HTTP or stats ports of its own.
            "httpServerEnabled": "false",
            "bookiePort": str(self.bookie_port),
            **self._settings,
        }
        conf = self.data_dir / "standalone.conf"
        conf.write_text(_render_conf((self.home / "conf" / "standalone.conf").read_text(), overrides))
        env = {
            **os.environ,
            "PULSAR_STANDALONE_CONF": str(conf),
            "PULSAR_LOG_DIR": str(self.data_dir / "logs"),
            "PULSAR_MEM": self._mem,
            "PULSAR_GC": DEFAULT_GC,
            "PULSAR_GC_LOG": " ",
        }
        env.pop("PULSAR_STANDALONE_USE_ZOOKEEPER", None)
        cmd = [
            str(self.home / "bin" / "pulsar"),
            "standalone",
            "--no-functions-worker",
            "--no-stream-storage",
            "--advertised-address",
            "127.0.0.1",
            "--metadata-dir",
            str(self.data_dir / "metadata"),
            "--bookkeeper-dir",
            str(self.data_dir / "bookkeeper"),
            "--bookkeeper-port",
            str(self.bookie_port),
            # Never the default data/standalone/zookeeper under the distribution: its presence would
            # switch standalone to ZooKeeper mode.
            "--zookeeper-dir",
            str(self.data_dir / "zookeeper-unused"),
        ]
        log = self.log_path.open("wb")
        self._proc = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        log.close()
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        # Ready when the default namespace answers: standalone creates it after the broker serves.
        deadline = time.monotonic() + START_TIMEOUT_S
        url = f"{self.admin_url}/admin/v2/namespaces/public/default"
        while time.monotonic() < deadline:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise PulsarReferenceError(f"Apache Pulsar exited with {self._proc.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(urllib.error.URLError, OSError), urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200 and _port_open(self.port):
                    return
            time.sleep(0.5)  # polling an external JVM's readiness: there is no event to wait on
        raise PulsarReferenceError(f"Apache Pulsar did not serve within {START_TIMEOUT_S:.0f} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 60) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        stop_process_group(proc, graceful=True)

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.cleanup()


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
