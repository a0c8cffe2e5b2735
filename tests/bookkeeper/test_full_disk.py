"""A bookie whose disk fills, as Pulsar (BookKeeper's client) treats one.

Three bookies hold the topic's ledger (E=3, Qw=2, Qa=2); one keeps its ledgers on a small tmpfs
the test mounts (root, as on the CI machines; ``PULSAR_RS_SKIP_MOUNT_TESTS=1`` skips) with
BookKeeper's own thresholds (95 %, checked every second). When another process fills that disk,
the bookie turns itself read-only (BookKeeper's ``readOnlyModeEnabled``): it refuses adds, stays
up and registered under ``available/readonly``. The broker's writer takes the refusal as Pulsar's
``PendingAddOp`` does, replaces the bookie in the ledger's ensemble by the spare writable one, and
publishing goes on with nothing receipted lost; a ledger created afterwards never names the
read-only bookie. ``internalStats?metadata=true`` shows the ledger's ensembles as BookKeeper's own
shell reads them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository's tools/
from tools.pulsar_reference import PulsarReferenceError, available

from pulsar_rs import Admin
from pulsar_rs.testing.bookkeeper import BookKeeperCluster, parse_ensembles
from pulsar_rs.testing.process import PulsarRsBroker, wait_for_cluster

if (why := available()) is not None:
    pytest.skip(f"no BookKeeper here: {why}", allow_module_level=True)
if os.environ.get("PULSAR_RS_SKIP_MOUNT_TESTS") == "1":
    pytest.skip("PULSAR_RS_SKIP_MOUNT_TESTS=1", allow_module_level=True)

MIB = 1 << 20


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(disk)], capture_output=True)
    if done.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs (needs root; PULSAR_RS_SKIP_MOUNT_TESTS=1 skips): {done.stderr!r}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path, leave: int) -> None:
    """Fills ``disk`` from another process's file until ``leave`` bytes are free."""
    st = os.statvfs(disk)
    free = st.f_bavail * st.f_frsize
    with (disk / "filler").open("wb") as f:
        chunk = b"\0" * MIB
        for _ in range(max(0, free - leave) // MIB):
            f.write(chunk)


def wait_until(what: str, ready, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(1)  # polling external JVMs' registrations: there is no event to wait on


def test_a_bookie_whose_disk_fills_turns_read_only_and_publishing_goes_on(tmp_path, small_disk):
    topic = "persistent://public/default/full-disk"
    try:
        bk = BookKeeperCluster(bookies=2).start()
    except PulsarReferenceError as e:
        pytest.fail(str(e))
    broker = None
    try:
        thresholds = {"diskUsageThreshold": "0.95", "diskUsageWarnThreshold": "0.90", "diskCheckInterval": "1000"}
        full = bk.start_bookie(2, ledger_dir=small_disk, settings=thresholds)
        bk.wait_writable(3)
        conf = {
            "metadataStoreUrl": bk.metadata_store_url,
            "managedLedgerDefaultEnsembleSize": 3,
            "managedLedgerDefaultWriteQuorum": 2,
            "managedLedgerDefaultAckQuorum": 2,
            "brokerDeduplicationEnabled": False,
            "metadataStoreSessionTimeoutMillis": 6000,
        }
        broker = PulsarRsBroker(tmp_path, "full-disk", conf)
        wait_for_cluster([broker])
        admin = Admin(broker.http)
        quiet = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
        c = pulsar.Client(broker.url, operation_timeout_seconds=30, logger=quiet)
        try:
            c.subscribe(topic, "all").close()
            producer = c.create_producer(topic, batching_enabled=False)
            payload = b"x" * 8000
            for i in range(100):
                producer.send(b"%04d" % i + payload)
            ledger = admin.topics.internal_stats(topic)["ledgers"][-1]["ledgerId"]
            assert full in bk.ledger_ensembles(ledger)[0], "with three bookies the ensemble has all three"
            spare = bk.start_bookie(3)
            bk.wait_writable(4)

            fill(small_disk, leave=MIB)  # ~98 % used: over BookKeeper's 95 %
            wait_until(f"bookie {full} to turn read-only", lambda: full in bk.readonly_bookies())
            assert bk.bookies[full].poll() is None, "a full bookie stays up"

            for i in range(100, 200):
                producer.send(b"%04d" % i + payload)
            ensembles = bk.ledger_ensembles(ledger)
            assert len(ensembles) >= 2 and full not in ensembles[-1] and spare in ensembles[-1], ensembles
            # internalStats?metadata=true shows them as Pulsar does (BookKeeper's toSafeString).
            shown = admin.topics.internal_stats(topic, metadata=True)["ledgers"][0]["metadata"]
            assert parse_ensembles(shown) == ensembles, shown
            assert "ensembleSize=3, writeQuorumSize=2, ackQuorumSize=2, state=OPEN" in shown, shown
            assert "password=OMITTED" in shown and "metadata" not in admin.topics.internal_stats(topic)["ledgers"][0]

            # The next ledger is placed on writable bookies only.
            admin.topics.unload(topic)
            producer.send(b"0200" + payload)
            ledgers = admin.topics.internal_stats(topic)["ledgers"]
            assert ledgers[-1]["ledgerId"] != ledger, ledgers
            assert full not in bk.ledger_ensembles(ledgers[-1]["ledgerId"])[0]

            consumer = c.subscribe(topic, "all")
            got = [consumer.receive(timeout_millis=20000).data()[:4] for _ in range(201)]
            assert got == [b"%04d" % i for i in range(201)], "every receipted message, in order"
        finally:
            c.close()
    finally:
        if broker is not None:
            broker.kill()
        bk.cleanup()
