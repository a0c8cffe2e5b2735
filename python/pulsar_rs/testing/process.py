"""``pulsar-rs standalone`` as a process of its own, for tests and benchmarks that run several
brokers (on bookies, in a cluster, beside Apache Pulsar): a configuration written from
``key=value`` lines, a data directory and a log file of its own, ephemeral ports, and the
``READY pulsar://... http://...`` line it prints once it serves.

    b = PulsarRsBroker(work, "b0", {"metadataStoreUrl": bk.metadata_store_url})
    client = pulsar.Client(b.url); ...; b.stop()
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Self

from .distribution import PulsarReferenceError, _conf_value, _die_with_parent, stop_process_group

#: The log file of every broker started in this process, in order: a failed test's report carries
#: the end of those it started (``tests/conftest.py``), wherever the test made them.
STARTED_LOGS: list[Path] = []


class PulsarRsBroker:
    """One ``pulsar-rs standalone`` (or ``command``: ``broker``) process, in a session of its own (its
    process group is the broker, for CPU accounting and signals); killed if the process that started
    it dies. ``prelude``: configuration text before ``conf``'s lines (a ``broker.conf`` as Pulsar
    ships it; later keys win)."""

    def __init__(
        self, work: Path, name: str, conf: Mapping[str, object], command: str = "standalone", prelude: str = ""
    ) -> None:
        self.name = name
        conf_path = work / f"{name}.conf"
        lines = "".join(f"{k}={_conf_value(v)}\n" for k, v in conf.items())
        conf_path.write_text(f"{prelude}\n{lines}" if prelude else lines)
        self.data_dir = work / f"{name}-data"
        self.log_path = work / f"{name}.log"
        STARTED_LOGS.append(self.log_path)
        log = self.log_path.open("w")
        try:
            args = ["--config", str(conf_path), "--data-dir", str(self.data_dir), "--port", "0", "--admin-port", "0"]
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "pulsar_rs.cli", command, *args],
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

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.kill()

    def _reap(self) -> None:
        if self.proc.poll() is None:
            self.proc.wait(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def wait_for_cluster(
    brokers: Iterable[PulsarRsBroker], cluster: str = "standalone", timeout: float = 60, token: str | None = None
) -> None:
    """Waits until every one of ``brokers`` lists exactly ``brokers`` as the cluster's brokers and
    names one of them leader: brokers killed earlier on the same ZooKeeper stay registered (and may
    stay leader or owner, so lookups redirect to them) until their sessions expire. ``token``: a
    superuser's, when the brokers require authentication."""
    brokers = list(brokers)
    want = sorted(b.broker_id for b in brokers)
    deadline = time.monotonic() + timeout
    seen: object = None
    while True:
        try:
            views = [(_get_json(f"{b.http}/admin/v2/brokers/{cluster}", token), _leader(b, token)) for b in brokers]
            seen = views
            if all(isinstance(ls, list) and sorted(ls) == want and leader in want for ls, leader in views):
                return
        except (OSError, ValueError) as e:  # a broker still starting, or redirecting to a dead one
            seen = e
        if time.monotonic() > deadline:
            raise PulsarReferenceError(f"the cluster did not settle on {want} in {timeout} s: {seen}")
        time.sleep(0.2)  # polling other processes' views over HTTP: there is no event to wait on


def _leader(b: PulsarRsBroker, token: str | None = None) -> str | None:
    doc = _get_json(f"{b.http}/admin/v2/brokers/leaderBroker", token)
    return doc.get("brokerId") if isinstance(doc, dict) else None


def _get_json(url: str, token: str | None = None) -> object:
    req = urllib.request.Request(url)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")  # kept across redirects
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())
