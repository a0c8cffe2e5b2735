"""ZooKeeper and Apache BookKeeper bookies from the pinned Apache Pulsar distribution, on 127.0.0.1.

For the tests that run ``pulsar-rs`` (and Apache Pulsar) on real bookies, and for a try-out
(``python -m tools.pulsar_reference bookkeeper``): one ZooKeeper, BookKeeper's metadata formatted
under ``/ledgers``, and ``n`` bookies with small heaps, ephemeral ports and temporary directories.
Every process is stopped (and the directory removed) on exit.

    with BookKeeperCluster(bookies=3) as bk:
        broker conf: metadataStoreUrl=bk.metadata_store_url
"""

from __future__ import annotations

import contextlib
import os
import re
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

from .distribution import (
    PulsarReferenceError,
    _die_with_parent,
    _port_open,
    ensure_distribution,
    free_port,
    stop_process_group,
)

#: How long ZooKeeper plus the bookies may take to come up (JVM starts on a busy 2-core box).
START_TIMEOUT_S = 180.0
#: The cluster Apache Pulsar's brokers of these stores join by default. A pulsar-rs broker that
#: shares the stores with them sets ``clusterName`` to it: Pulsar's
#: ``initialize-cluster-metadata -c <cluster>`` adds its cluster to the replication clusters of an
#: existing ``public/default`` ("Added the replication cluster"), so a broker of another cluster
#: would then replicate ``public/default`` towards it, as Pulsar's own brokers would.
PULSAR_CLUSTER = "test"


def parse_ensembles(text: str) -> list[list[str]]:
    """The ensembles of BookKeeper's ``LedgerMetadata{..., ensembles={0=[a, b], 5=[a, c]}, ...}``."""
    found = re.findall(r"\d+=\[([^\]]*)\]", text.split("ensembles=", 1)[-1].split("}", 1)[0])
    return [[b.strip() for b in e.split(",")] for e in found]


class BookKeeperCluster:
    """ZooKeeper plus ``bookies`` bookies, stopped on exit."""

    def __init__(self, bookies: int = 3, bookie_heap_mb: int = 128) -> None:
        """``bookie_heap_mb``: each bookie's ``-Xmx`` and ``-XX:MaxDirectMemorySize`` (small for the
        tests; a bookie at 128 MiB runs out of heap under a sustained load of ~50 MB/s)."""
        self.bookie_heap_mb = bookie_heap_mb
        self.home = ensure_distribution()
        self.dir = Path(tempfile.mkdtemp(prefix="pulsar-rs-bk-"))
        self.zk_port = free_port()
        self._zk: subprocess.Popen[bytes] | None = None
        #: bookie id (``127.0.0.1:port``) -> process
        self.bookies: dict[str, subprocess.Popen[bytes]] = {}
        self._count = bookies
        #: bookie id -> its number (its directory ``bookie{i}``)
        self._index: dict[str, int] = {}
        self._pulsar: list[PulsarBroker] = []
        self._initialised: set[str] = set()

    @property
    def zk_servers(self) -> str:
        return f"127.0.0.1:{self.zk_port}"

    @property
    def metadata_store_url(self) -> str:
        """``metadataStoreUrl`` for a broker on this cluster (Pulsar's form)."""
        return f"zk:{self.zk_servers}"

    @property
    def bookkeeper_uri(self) -> str:
        """``bookkeeperMetadataServiceUri`` (BookKeeper's form, as ``initnewcluster`` wrote it)."""
        return f"zk+hierarchical://{self.zk_servers}/ledgers"

    def _java(self, *args: str, heap: str = "-Xmx96m", log: str) -> subprocess.Popen[bytes]:
        out = (self.dir / log).open("wb")
        try:
            return subprocess.Popen(
                ["java", heap, "-XX:+UseSerialGC", "-cp", f"{self.home}/lib/*", *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        finally:
            out.close()

    def _bookie_conf(
        self, i: int, port: int, ledger_dir: Path | None = None, settings: dict[str, str] | None = None
    ) -> Path:
        d = self.dir / f"bookie{i}"
        d.mkdir(exist_ok=True)
        conf = d / "bk.conf"
        keys = {
            "bookiePort": str(port),
            "advertisedAddress": "127.0.0.1",
            "allowLoopback": "true",
            "journalDirectories": f"{d}/journal",
            "ledgerDirectories": str(ledger_dir or f"{d}/ledgers"),
            "metadataServiceUri": self.bookkeeper_uri,
            "httpServerEnabled": "false",
            "ledgerStorageClass": "org.apache.bookkeeper.bookie.SortedLedgerStorage",
            # The test machines' own disk may be fuller than BookKeeper's 95 %: only a test that
            # fills a bookie's disk on purpose sets these lower.
            "diskUsageThreshold": "0.999",
            "diskUsageWarnThreshold": "0.998",
            "statsProviderClass": "org.apache.bookkeeper.stats.NullStatsProvider",
            "extraServerComponents": "",
            "zkTimeout": "10000",
            **(settings or {}),
        }
        conf.write_text("".join(f"{k}={v}\n" for k, v in keys.items()))
        return conf

    def start(self) -> Self:
        try:
            self._start_zookeeper()
            init = subprocess.run(
                [
                    "java",
                    "-Xmx96m",
                    "-cp",
                    f"{self.home}/lib/*",
                    "org.apache.bookkeeper.bookie.BookieShell",
                    "-conf",
                    str(self._bookie_conf(0, free_port())),
                    "initnewcluster",
                ],
                capture_output=True,
                timeout=120,
                check=False,
            )
            if init.returncode != 0:
                raise PulsarReferenceError(f"BookKeeper initnewcluster failed:\n{init.stdout.decode()[-2000:]}")
            for i in range(self._count):
                self.start_bookie(i)
            self.wait_writable(self._count, restart_dead=True)
        except BaseException:
            self.stop()
            raise
        return self

    def start_bookie(self, i: int, ledger_dir: Path | None = None, settings: dict[str, str] | None = None) -> str:
        """Starts bookie ``i`` on a fresh port, its ledgers in ``ledger_dir`` (default: its own
        directory) and ``settings`` over the defaults of ``bk.conf``; returns its id."""
        port = free_port()
        conf = self._bookie_conf(i, port, ledger_dir, settings)
        proc = self._java(
            f"-XX:MaxDirectMemorySize={self.bookie_heap_mb}m",
            "org.apache.bookkeeper.server.Main",
            "--conf",
            str(conf),
            heap=f"-Xmx{self.bookie_heap_mb}m",
            log=f"bookie{i}.log",
        )
        bookie = f"127.0.0.1:{port}"
        self.bookies[bookie] = proc
        self._index[bookie] = i
        return bookie

    def kill_bookie(self, bookie: str) -> None:
        """SIGKILLs one bookie (its data stays on disk)."""
        stop_process_group(self.bookies.pop(bookie), graceful=False)

    def _tool(self, main_class: str, *args: str) -> str:
        """Runs one of the distribution's command-line tools to the end: its stdout and stderr."""
        out = subprocess.run(
            ["java", "-Xmx96m", "-cp", f"{self.home}/lib/*", main_class, *args],
            capture_output=True,
            timeout=60,
            check=False,
        )
        return out.stdout.decode(errors="replace") + out.stderr.decode(errors="replace")

    def _bookie_shell(self, *args: str) -> str:
        return self._tool(
            "org.apache.bookkeeper.bookie.BookieShell", "-conf", str(self.dir / "bookie0" / "bk.conf"), *args
        )

    def writable_bookies(self) -> list[str]:
        """The bookies registered writable, as BookKeeper's shell lists them."""
        out = self._bookie_shell("listbookies", "-rw")
        return [b for b in self.bookies if f"127.0.0.1:{b.rsplit(':', 1)[1]}" in out]

    def readonly_bookies(self) -> list[str]:
        """The bookies registered read-only (a full disk, say), as BookKeeper's shell lists them."""
        out = self._bookie_shell("listbookies", "-ro")
        return [b for b in self.bookies if f"127.0.0.1:{b.rsplit(':', 1)[1]}" in out]

    def ledger_ensembles(self, ledger_id: int) -> list[list[str]]:
        """The ensembles of a ledger (oldest first), as BookKeeper's own shell reads its metadata."""
        text = self._bookie_shell("ledgermetadata", "-ledgerid", str(ledger_id))
        found = parse_ensembles(text)
        if not found:
            raise PulsarReferenceError(f"no ensembles for ledger {ledger_id}: {text[-2000:]}")
        return found

    def ledger_quorums(self, ledger_id: int) -> tuple[int, int, int]:
        """(E, Qw, Qa) of a ledger as BookKeeper's own shell reads its metadata."""
        text = self._bookie_shell("ledgermetadata", "-ledgerid", str(ledger_id))
        m = re.search(r"ensembleSize=(\d+), writeQuorumSize=(\d+), ackQuorumSize=(\d+)", text)
        if m is None:
            raise PulsarReferenceError(f"no metadata for ledger {ledger_id}: {text[-2000:]}")
        e, qw, qa = (int(g) for g in m.groups())
        return e, qw, qa

    def create_znode(self, path: str) -> None:
        """Creates a persistent, empty znode (and its parents) with ZooKeeper's own shell, as an
        operator prepares a chroot before brokers use ``metadataStoreUrl=zk:host:port/chroot``."""
        parts = [p for p in path.split("/") if p]
        for i in range(1, len(parts) + 1):
            znode = "/" + "/".join(parts[:i])
            self._tool("org.apache.zookeeper.ZooKeeperMain", "-server", self.zk_servers, "create", znode)

    def _start_zookeeper(self) -> None:
        """ZooKeeper on ``zk_port``, started again on a fresh port (at most twice) when it exits
        before listening: the port can be taken between ``free_port`` and the JVM's bind by any
        outgoing connection on a loaded machine ("Address already in use", seen in CI)."""
        for attempt in range(3):
            self._zk = self._java(
                "-Dzookeeper.admin.enableServer=false",
                "org.apache.zookeeper.server.ZooKeeperServerMain",
                str(self.zk_port),
                str(self.dir / "zk"),
                log="zk.log",
            )
            zk = self._zk
            self._wait(lambda zk=zk: _port_open(self.zk_port) or zk.poll() is not None, "ZooKeeper to listen", "zk.log")
            if zk.poll() is None:
                return
            why = (self.dir / "zk.log").read_text(errors="replace")
            if attempt == 2 or "Address already in use" not in why:
                raise PulsarReferenceError(f"ZooKeeper exited ({zk.returncode}) before listening:\n{why[-2000:]}")
            print(f"ZooKeeper's port {self.zk_port} was taken before it bound: started again on another")
            self.zk_port = free_port()

    def wait_writable(self, n: int, restart_dead: bool = False) -> None:
        """Waits until ``n`` bookies are registered writable. With ``restart_dead`` (before any
        bookie id was handed out), a bookie that died before registering is started again on a
        fresh port with empty directories, at most twice: its port can be taken between
        ``free_port`` and the JVM's bind by any outgoing connection on a loaded machine."""
        deadline = time.monotonic() + START_TIMEOUT_S
        restarts = 0
        while len(writable := self.writable_bookies()) < n:
            if time.monotonic() > deadline:
                raise PulsarReferenceError(f"fewer than {n} bookies registered; logs in {self.dir}")
            for bookie, proc in list(self.bookies.items()):
                if restart_dead and restarts < 2 and bookie not in writable and proc.poll() is not None:
                    restarts += 1
                    i = self._index[bookie]
                    why = [
                        line
                        for line in (self.dir / f"bookie{i}.log").read_text(errors="replace").splitlines()
                        if "ERROR" in line or "Exception:" in line
                    ][:3]
                    print(f"bookie {bookie} died before registering ({proc.returncode}), started again: {why}")
                    del self.bookies[bookie]
                    for sub in ("journal", "ledgers"):
                        shutil.rmtree(self.dir / f"bookie{i}" / sub, ignore_errors=True)
                    self.start_bookie(i)
            time.sleep(1)  # polling external JVMs' registration: there is no event to wait on

    def _wait(self, ready, what: str, log: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready():
            if time.monotonic() > deadline:
                tail = (self.dir / log).read_text(errors="replace")[-2000:]
                raise PulsarReferenceError(f"timed out waiting for {what}:\n{tail}")
            time.sleep(0.2)  # polling an external JVM: there is no event to wait on

    def start_pulsar_broker(
        self,
        cluster: str = PULSAR_CLUSTER,
        ensemble: tuple[int, int, int] = (2, 2, 2),
        initialise: bool = True,
        metadata_store_url: str | None = None,
        settings: Mapping[str, object] | None = None,
        env: Mapping[str, str] | None = None,
        configuration_store_url: str | None = None,
    ) -> PulsarBroker:
        """An Apache Pulsar broker on this ZooKeeper and these bookies (cluster metadata initialised
        on first use by Pulsar's ``pulsar initialize-cluster-metadata``, unless ``initialise`` is
        false: someone else did); stopped with the cluster. ``ensemble`` is its
        managedLedgerDefault (EnsembleSize, WriteQuorum, AckQuorum). ``metadata_store_url``: the
        cluster's metadata elsewhere (``etcd:http://...``), BookKeeper's staying on this ZooKeeper.
        ``settings``: more ``broker.conf`` keys, appended after ours (later keys win: they can
        override ours); ``env``: more environment for the broker's process (for example the
        ``ACCESS_KEY_ID``/``ACCESS_KEY_SECRET`` that the ``S3`` offload driver requires);
        ``configuration_store_url``: the configuration (global) store its cluster shares with
        others (``configurationMetadataStoreUrl``; by default the cluster's own store)."""
        broker = PulsarBroker(
            self,
            cluster,
            ensemble,
            metadata_store_url,
            settings=settings,
            env=env,
            configuration_store_url=configuration_store_url,
        )
        if not initialise:
            self._initialised.add(broker.initialised_key)
        self._pulsar.append(broker)
        return broker.start()

    def stop(self) -> None:
        procs = [*self.bookies.values(), *([self._zk] if self._zk else [])]
        for broker in self._pulsar:
            broker.stop()
        self.bookies, self._zk, self._pulsar = {}, None, []
        for p in procs:
            stop_process_group(p, graceful=False)

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.cleanup()


def _conf_value(v: object) -> str:
    """A value as Java's properties want it (``true``/``false`` for booleans)."""
    return str(v).lower() if isinstance(v, bool) else str(v)


class PulsarBroker:
    """``bin/pulsar broker`` on a :class:`BookKeeperCluster`, 127.0.0.1, ephemeral ports."""

    def __init__(
        self,
        bk: BookKeeperCluster,
        cluster: str,
        ensemble: tuple[int, int, int] = (2, 2, 2),
        metadata_store_url: str | None = None,
        settings: Mapping[str, object] | None = None,
        env: Mapping[str, str] | None = None,
        configuration_store_url: str | None = None,
    ) -> None:
        """``settings``: ``broker.conf`` keys written after the defaults and ours (later keys win
        when Java loads the properties); ``env``: added to the broker's environment."""
        self.bk = bk
        self.cluster = cluster
        #: ``metadataStoreUrl``: the ZooKeeper by default.
        self.metadata_store_url = metadata_store_url or bk.metadata_store_url
        #: ``configurationMetadataStoreUrl``: ``metadata_store_url`` by default.
        self.configuration_store_url = configuration_store_url or self.metadata_store_url
        self.ensemble = ensemble
        self.settings = dict(settings or {})
        self.extra_env = dict(env or {})
        self.port = free_port()
        self.web_port = free_port()
        self.dir = bk.dir / f"pulsar-broker-{self.port}"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def service_url(self) -> str:
        return f"pulsar://127.0.0.1:{self.port}"

    @property
    def initialised_key(self) -> str:
        """What ``initialize-cluster-metadata`` was run for: this cluster on this store."""
        return f"{self.metadata_store_url}|{self.cluster}"

    @property
    def admin_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def _env(self) -> dict[str, str]:
        return {
            **os.environ,
            "PULSAR_MEM": "-Xms128m -Xmx512m -XX:MaxDirectMemorySize=512m",
            "PULSAR_GC": "-XX:+UseSerialGC",
            "PULSAR_GC_LOG": " ",
            "PULSAR_LOG_DIR": str(self.dir / "logs"),
            **self.extra_env,
        }

    def start(self) -> Self:
        self.dir.mkdir(parents=True, exist_ok=True)
        zk = self.metadata_store_url
        if self.initialised_key not in self.bk._initialised:
            init = subprocess.run(
                [
                    str(self.bk.home / "bin" / "pulsar"),
                    "initialize-cluster-metadata",
                    "-c",
                    self.cluster,
                    "-md",
                    zk,
                    "-cms",
                    self.configuration_store_url,
                    "-uw",
                    self.admin_url,
                    "-ub",
                    self.service_url,
                    "--existing-bk-metadata-service-uri",
                    self.bk.bookkeeper_uri,
                ],
                capture_output=True,
                env=self._env(),
                timeout=180,
                check=False,
            )
            if init.returncode != 0:
                raise PulsarReferenceError(f"initialize-cluster-metadata failed:\n{init.stdout.decode()[-3000:]}")
            self.bk._initialised.add(self.initialised_key)
        shipped = (self.bk.home / "conf" / "broker.conf").read_text()
        conf = self.dir / "broker.conf"
        # Later keys win when Java loads the properties.
        conf.write_text(
            f"{shipped}\nmetadataStoreUrl={zk}\nconfigurationMetadataStoreUrl={self.configuration_store_url}\n"
            f"clusterName={self.cluster}\n"
            f"brokerServicePort={self.port}\nwebServicePort={self.web_port}\nbindAddress=127.0.0.1\n"
            f"advertisedAddress=127.0.0.1\nbookkeeperMetadataServiceUri={self.bk.bookkeeper_uri}\n"
            f"managedLedgerDefaultEnsembleSize={self.ensemble[0]}\nmanagedLedgerDefaultWriteQuorum={self.ensemble[1]}\n"
            f"managedLedgerDefaultAckQuorum={self.ensemble[2]}\nfunctionsWorkerEnabled=false\n"
            + "".join(f"{k}={_conf_value(v)}\n" for k, v in self.settings.items())
        )
        out = (self.dir / "broker.out").open("wb")
        self._proc = subprocess.Popen(
            [str(self.bk.home / "bin" / "pulsar"), "broker"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**self._env(), "PULSAR_BROKER_CONF": str(conf)},
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        out.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (_port_open(self.port) and self._answers_lookups()):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                tail = (self.dir / "broker.out").read_text(errors="replace")[-3000:]
                self.stop()
                raise PulsarReferenceError(f"the Apache Pulsar broker did not serve:\n{tail}")
            time.sleep(0.5)  # polling an external JVM: there is no event to wait on
        return self

    def _answers_lookups(self) -> bool:
        """Ready once it owns a bundle of ``public/default`` and answers a topic lookup (its port
        opens before its namespaces load; a client connecting then gets ConnectError)."""
        url = f"{self.admin_url}/lookup/v2/topic/persistent/public/default/readiness-probe"
        with contextlib.suppress(urllib.error.URLError, OSError), urllib.request.urlopen(url, timeout=5) as r:
            return r.status == 200 and b"brokerUrl" in r.read()
        return False

    def stop(self, graceful: bool = False) -> None:
        """Stops the broker: SIGTERM and its orderly shutdown (topics closed, cursors written) when
        ``graceful``, else SIGKILL."""
        proc, self._proc = self._proc, None
        stop_process_group(proc, graceful=graceful, wait_s=60)
