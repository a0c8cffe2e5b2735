"""``pulsar-rs standalone`` as a process of its own, for tests and benchmarks that run several
brokers (on bookies, in a cluster, beside Apache Pulsar): a configuration written from
``key=value`` lines, a data directory and a log file of its own, ephemeral ports, and the
``READY pulsar://... http://...`` line it prints once it serves.

    b = PulsarRsBroker(work, "b0", {"metadataStoreUrl": bk.metadata_store_url})
    client = pulsar.Client(b.url); ...; b.stop()
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from . import PulsarReferenceError, _conf_value, _die_with_parent, stop_process_group


class PulsarRsBroker:
    """One ``pulsar-rs standalone`` process, in a session of its own (its process group is the
    broker, for CPU accounting and signals); killed if the process that started it dies."""

    def __init__(self, work: Path, name: str, conf: Mapping[str, object]) -> None:
        self.name = name
        conf_path = work / f"{name}.conf"
        conf_path.write_text("".join(f"{k}={_conf_value(v)}\n" for k, v in conf.items()))
        self.data_dir = work / f"{name}-data"
        self.log_path = work / f"{name}.log"
        log = self.log_path.open("w")
        try:
            args = ["--config", str(conf_path), "--data-dir", str(self.data_dir), "--port", "0", "--admin-port", "0"]
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "pulsar_rs.cli", "standalone", *args],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env={**os.environ, "PULSAR_RS_LOG": os.environ.get("PULSAR_RS_LOG", "info")},
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        finally:
            log.close()
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        m = re.match(r"READY (pulsar://\S+) (http://\S+)", line)
        if not m:
            self.kill()
            raise PulsarReferenceError(f"pulsar-rs {name} did not start: {line!r}\n{self.log()[-3000:]}")
        #: ``pulsar://host:port``
        self.url = m.group(1)
        #: ``http://host:port``
        self.http = m.group(2)
        #: Pulsar's broker id, ``host:webServicePort``.
        self.broker_id = self.http.removeprefix("http://")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def signal(self, sig: signal.Signals) -> None:
        """Sends ``sig`` to the broker (SIGSTOP / SIGCONT freeze and wake it)."""
        self.proc.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL: no orderly anything."""
        stop_process_group(self.proc, graceful=False)  # type: ignore[arg-type]
        self._reap()

    def stop(self) -> None:
        """SIGTERM and its orderly stop (bundles released, cursors written), SIGKILL after 30 s."""
        stop_process_group(self.proc, graceful=True)  # type: ignore[arg-type]
        self._reap()

    def _reap(self) -> None:
        if self.proc.poll() is None:
            self.proc.wait(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
