"""A real etcd (Debian's ``etcd-server``) for tests: one member on 127.0.0.1 with ephemeral ports and
a temporary data directory, in a process group of its own, killed if the process that started it
dies, and ``etcdctl`` to read what was written.

    with Etcd() as etcd:
        broker conf: metadataStoreUrl=etcd.metadata_store_url
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Self

from . import PulsarReferenceError, _die_with_parent, free_port, stop_process_group


def etcd_missing() -> str | None:
    """Why etcd cannot run here (None: it can)."""
    for tool in ("etcd", "etcdctl"):
        if shutil.which(tool) is None:
            return f"`{tool}` not on PATH (apt-get install etcd-server etcd-client)"
    return None


class Etcd:
    """One etcd member."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="pulsar-rs-etcd-"))
        self.port = free_port()
        self.peer_port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def metadata_store_url(self) -> str:
        """``metadataStoreUrl`` for a broker on this store (Pulsar's form)."""
        return f"etcd:{self.endpoint}"

    def start(self) -> Self:
        if (why := etcd_missing()) is not None:
            raise PulsarReferenceError(why)
        peer = f"http://127.0.0.1:{self.peer_port}"
        with (self.dir / "etcd.log").open("wb") as log:
            self._proc = subprocess.Popen(
                [
                    "etcd",
                    "--name=t",
                    f"--data-dir={self.dir / 'data'}",
                    f"--listen-client-urls={self.endpoint}",
                    f"--advertise-client-urls={self.endpoint}",
                    f"--listen-peer-urls={peer}",
                    f"--initial-advertise-peer-urls={peer}",
                    f"--initial-cluster=t={peer}",
                ],
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        # A listening client port is not a serving etcd yet: wait for `/health` to say so.
        deadline = time.monotonic() + 20
        while not self._healthy():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise PulsarReferenceError(f"etcd did not become healthy; see {self.dir / 'etcd.log'}")
            time.sleep(0.1)  # poll: etcd starting its server
        return self

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.endpoint}/health", timeout=2) as r:
                return json.loads(r.read()).get("health") == "true"
        except (OSError, ValueError):
            return False

    def ctl(self, *args: str) -> str:
        """``etcdctl`` (v3 API) against this member; its output."""
        out = subprocess.run(
            ["etcdctl", f"--endpoints={self.endpoint}", *args],
            env={**os.environ, "ETCDCTL_API": "3"},
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if out.returncode != 0:
            raise PulsarReferenceError(f"etcdctl {' '.join(args)}: {out.stderr.strip()}")
        return out.stdout

    def records(self, prefix: str = "/") -> dict[str, bytes]:
        """Every key starting with ``prefix``, with its value (one read, etcdctl's JSON output)."""
        doc = json.loads(self.ctl("get", prefix, "--prefix", "-w", "json"))
        return {
            base64.b64decode(kv["key"]).decode(): base64.b64decode(kv.get("value", "")) for kv in doc.get("kvs", [])
        }

    def list_keys(self, prefix: str = "/") -> list[str]:
        """Every key starting with ``prefix``, sorted."""
        return sorted(self.records(prefix))

    def value(self, key: str) -> bytes | None:
        """The value at ``key`` (None: no such key)."""
        doc = json.loads(self.ctl("get", key, "-w", "json"))
        kvs = doc.get("kvs", [])
        return base64.b64decode(kvs[0].get("value", "")) if kvs else None

    def stop(self) -> None:
        stop_process_group(self._proc, graceful=False)
        self._proc = None

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None) -> None:
        self.cleanup()
