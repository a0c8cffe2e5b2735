"""Apache Pulsar itself, as a runnable reference beside pulsar-rs.

Obtains the official ``pulsar-server-distribution`` tarball from Maven Central (through the machine's
Maven, so it lands in ``~/.m2`` and is downloaded once per machine), unpacks it into a cache directory,
and starts ``bin/pulsar standalone`` exactly as shipped but for what a test box needs: 127.0.0.1 only,
ephemeral ports, a temporary data directory, RocksDB metadata (Pulsar 4's standalone default), no
functions worker, no stream storage and a heap that fits beside our own tests.

The version is pinned once, in :mod:`pulsar_rs.testing.distribution` (:data:`PULSAR_VERSION`); the
README says why it is this one.

    with PulsarStandalone() as pulsar:
        client = pulsar_client.Client(pulsar.service_url)
        ...
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Self

from pulsar_rs.testing.distribution import (
    DEPENDENCY_PLUGIN,
    DISTRIBUTION,
    PULSAR_VERSION,
    PulsarReferenceError,
    _conf_value,
    _die_with_parent,
    _port_open,
    available,
    cache_root,
    distribution_home,
    ensure_distribution,
    free_port,
    stop_process_group,
)

__all__ = [
    "DEPENDENCY_PLUGIN",
    "DISTRIBUTION",
    "PULSAR_VERSION",
    "PulsarReferenceError",
    "PulsarStandalone",
    "available",
    "cache_root",
    "distribution_home",
    "ensure_distribution",
    "free_port",
    "stop_process_group",
]

#: JVM sizing for a broker that shares a 2-core box with the tests (the shipped default is 2 GB heap
#: and 4 GB direct memory, with ZGC and pre-touch).
DEFAULT_MEM = "-Xms256m -Xmx1g -XX:MaxDirectMemorySize=1g"
DEFAULT_GC = "-XX:+UseG1GC -XX:+PerfDisableSharedMem"

#: How long a cold start may take (JVM, RocksDB metadata, bookie, broker, namespace creation).
START_TIMEOUT_S = 240.0


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
