"""Configuration files as Pulsar writes them: ``pulsar-rs standalone --config`` with a Java-properties
``standalone.conf`` (comments, ``key:value``, empty values, comma lists, continuations) or TOML;
Pulsar keys we do not implement named in one warning; keys Pulsar does not have and bad values
refused with one line naming the key (and the closest known key) and a non-zero exit, never a
traceback. ``Broker(**settings)`` and ``pulsar_rs.read_config`` follow the same rules (one parser,
in Rust).
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pulsar
import pytest

import pulsar_rs
from conftest import new_client

pytestmark = pytest.mark.timeout(60)

# An excerpt of Pulsar's own standalone.conf, in its own style (ports made ephemeral).
PULSAR_CONF = """\
#
# Licensed to the Apache Software Foundation (ASF) ...
#

### --- General broker settings --- ###

# Zookeeper quorum connection string
zookeeperServers=
configurationStoreServers=
brokerServicePort=0
webServicePort=0
bindAddress=127.0.0.1
advertisedAddress=127.0.0.1
clusterName=standalone
zooKeeperSessionTimeoutMillis=30000
brokerShutdownTimeoutMs=3000
backlogQuotaCheckEnabled=true
! a comment in the other style
maxUnackedMessagesPerConsumer : 50000
managedLedgerDefaultEnsembleSize=1
managedLedgerDefaultWriteQuorum=1
managedLedgerCacheSizeMB=16
managedLedgerMinLedgerRolloverTimeMinutes=10
isDelayedDeliveryDeliverAtTimeStrict=false
loadBalancerEnabled=false
bookkeeperClientTimeoutInSeconds=30
superUserRoles=localhost,\\
    superUser,admin
tlsCertificateFilePath=
brokerServicePortTls=
numIOThreads=
authenticationEnabled=false
authenticationProviders=
maxMessageSize=1024000
"""


def run_cli(*args: str, cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pulsar_rs.cli", "standalone", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_cli(conf: Path, cwd: Path) -> tuple[subprocess.Popen[str], str]:
    """Starts ``pulsar-rs standalone --config conf``; returns the process and its READY line."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pulsar_rs.cli", "standalone", "--config", str(conf), "--data-dir", "data"],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("READY"):
        proc.kill()
        _, err = proc.communicate(timeout=10)
        pytest.fail(f"broker did not start: {line!r} {err}")
    return proc, line


def stop_cli(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    return err


def test_pulsar_conf_starts_and_serves(tmp_path):
    conf = tmp_path / "standalone.conf"
    conf.write_text(PULSAR_CONF)
    proc, ready = start_cli(conf, tmp_path)
    try:
        service_url = ready.split()[1]
        client = new_client(service_url)
        try:
            producer = client.create_producer("persistent://public/default/conf-t")
            consumer = client.subscribe("persistent://public/default/conf-t", "s")
            producer.send(b"x" * 1000)
            # maxMessageSize=1024000 from the file is in force.
            with pytest.raises(pulsar.MessageTooBig):
                producer.send(b"x" * 1_100_000)
            assert consumer.receive(timeout_millis=5000).data() == b"x" * 1000
        finally:
            client.close()
    finally:
        err = stop_cli(proc)
    warning_lines = [line for line in err.splitlines() if "not implemented" in line]
    assert len(warning_lines) == 1, err
    w = warning_lines[0]
    assert "loadBalancerEnabled" in w
    # Implemented keys (the BookKeeper ones too, unused on the journal) and empty values are not named.
    for key in (
        "maxMessageSize",
        "zookeeperServers",
        "zooKeeperSessionTimeoutMillis",
        "isDelayedDeliveryDeliverAtTimeStrict",
        "bookkeeperClientTimeoutInSeconds",
        "managedLedgerDefaultWriteQuorum",
    ):
        assert key not in w
    assert "Traceback" not in err


def test_read_config_properties(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text(PULSAR_CONF)
    s = pulsar_rs.read_config(conf)
    assert s["maxUnackedMessagesPerConsumer"] == 50000
    assert s["superUserRoles"] == "localhost,superUser,admin"
    assert s["managedLedgerMinLedgerRolloverTimeMinutes"] == 10
    assert s["backlogQuotaCheckEnabled"] is True
    assert "zookeeperServers" not in s and "brokerServicePortTls" not in s  # empty = default
    assert s["loadBalancerEnabled"] == "false"  # Pulsar-only: kept as written
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pulsar_rs.Broker(**s):
            pass
    assert len(caught) == 1 and "loadBalancerEnabled" in str(caught[0].message)


def test_toml_config(tmp_path):
    conf = tmp_path / "broker.toml"
    conf.write_text('brokerServicePort = 0\nwebServicePort = 0\nsuperUserRoles = ["a", "b"]\nmaxMessageSize = 2048\n')
    proc, _ = start_cli(conf, tmp_path)
    err = stop_cli(proc)
    assert "not implemented" not in err
    assert pulsar_rs.read_config(conf)["superUserRoles"] == ["a", "b"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("brokerServicePrt=6650\n", ["brokerServicePrt", "did you mean brokerServicePort?", "line 1"]),
        ("clusterName=x\nmanagedLedgerCacheSizeMb=3\n", ["did you mean managedLedgerCacheSizeMB?", "line 2"]),
        ("maxMessageSize=big\n", ["maxMessageSize", '"big"']),
        ("journalSyncData=yes\n", ["journalSyncData", "true or false"]),
        ("dispatcherMaxReadBatchSize=0\n", ["dispatcherMaxReadBatchSize", "must be > 0"]),
        ("bindAddress=not-an-ip\n", ["bindAddress"]),
    ],
)
def test_bad_config_is_one_line(tmp_path, text, expected):
    conf = tmp_path / "broker.conf"
    conf.write_text(text)
    r = run_cli("--config", str(conf), "--port", "0", "--admin-port", "0", cwd=tmp_path)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr
    for e in expected:
        assert e in lines[0], lines[0]


def test_bad_toml_is_one_line(tmp_path):
    conf = tmp_path / "broker.toml"
    conf.write_text("maxMessageSize = [\n")
    r = run_cli("--config", str(conf), cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "Traceback" not in r.stderr


def test_missing_config_file_is_one_line(tmp_path):
    r = run_cli("--config", str(tmp_path / "nope.conf"), cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "nope.conf" in r.stderr


def test_keyword_settings_follow_the_same_rules():
    with pytest.raises(pulsar_rs.InvalidConfigError, match="did you mean maxMessageSize"):
        pulsar_rs.Broker(maxMesageSize=1024)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pulsar_rs.Broker(loadBalancerEnabled=True, tlsEnabled=False, maxMessageSize=4096):
            pass
    assert len(caught) == 1
    msg = str(caught[0].message)
    assert "loadBalancerEnabled" in msg and "tlsEnabled" in msg and "maxMessageSize" not in msg


def test_pulsar_conf_with_every_provider(tmp_path):
    """As the official client suite's standalone-ssl.conf: TLS, token and Basic providers at once."""
    users = tmp_path / ".htpasswd"
    users.write_text("admin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.\n")  # password 123456
    prefix = "org.apache.pulsar.broker.authentication.AuthenticationProvider"
    conf = tmp_path / "standalone.conf"
    conf.write_text(
        "brokerServicePort=0\nwebServicePort=0\nanonymousUserRole=anonymous\n"
        "authenticationEnabled=true\n"
        f"authenticationProviders={prefix}Tls,{prefix}Token,{prefix}Basic\n"
        "tokenSecretKey=data:;base64,c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0\n"
        f"basicAuthConf={users}\ntlsTrustCertsFilePath={tmp_path / 'ca.pem'}\n"
        "tlsEnabled=true\nbrokerClientAuthenticationPlugin=\n"
    )
    proc, ready = start_cli(conf, tmp_path)
    try:
        client = pulsar.Client(
            ready.split()[1],
            authentication=pulsar.AuthenticationBasic("admin", "123456"),
            operation_timeout_seconds=10,
            logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
        )
        try:
            client.create_producer("persistent://public/default/providers").send(b"x")
        finally:
            client.close()
    finally:
        err = stop_cli(proc)
    assert "tlsEnabled" in err


# Lines of Pulsar's own conf/standalone.conf (apache/pulsar master) whose keys ServiceConfiguration
# lacks: the embedded bookie's (Pulsar standalone hands the same file to BookKeeper) and keys left
# over from older versions. Pulsar ignores them; a standalone.conf copied from Pulsar must start here.
STANDALONE_CONF_NON_BROKER_LINES = """\
maxMessageSizeCheckIntervalInSeconds=60
preciseTopicPublishRateLimiterEnable=false
athenzDomainNames=
bookkeeperClientMinAvailableBookiesInIsolationGroups=
ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage
nettyMaxFrameSizeBytes=5253120
dbStorage_writeCacheMaxSizeMb=
dbStorage_readAheadCacheMaxSizeMb=
dbStorage_readAheadCacheBatchSize=1000
flushInterval=60000
dbStorage_rocksDB_blockCacheSize=
dbStorage_rocksDB_writeBufferSizeMB=4
dbStorage_rocksDB_sstSizeInMB=4
dbStorage_rocksDB_blockSize=4096
dbStorage_rocksDB_bloomFilterBitsPerKey=10
dbStorage_rocksDB_numLevels=-1
dbStorage_rocksDB_numFilesInLevel0=4
dbStorage_rocksDB_maxSizeInLevel1MB=256
journalMaxGroupWaitMSec=1
diskUsageThreshold=0.99
diskUsageWarnThreshold=0.99
allowLoopback=true
gcWaitTime=300000
"""


def test_standalone_conf_bookie_and_stale_keys_accepted(tmp_path):
    conf = tmp_path / "standalone.conf"
    conf.write_text(STANDALONE_CONF_NON_BROKER_LINES)
    s = pulsar_rs.read_config(conf)
    assert s["dbStorage_rocksDB_blockSize"] == "4096"  # Pulsar-only: kept as written
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pulsar_rs.Broker(**s):
            pass
    (w,) = [str(c.message) for c in caught]
    for key in ("dbStorage_rocksDB_blockSize", "maxMessageSizeCheckIntervalInSeconds"):
        assert key in w
    # The embedded bookie's group wait is applied (as journalSyncData is), not ignored.
    assert "journalMaxGroupWaitMSec" not in w


def test_num_io_threads_sizes_the_connection_threads():
    # Pulsar's key for its Netty IO threads sizes the runtime serving the connections.
    with pulsar_rs.Broker(numIOThreads=3) as b:
        assert b.io_threads == 3
        client = new_client(b.service_url)
        try:
            producer = client.create_producer("io-threads")
            consumer = client.subscribe("io-threads", "s")
            producer.send(b"x")
            assert consumer.receive(timeout_millis=10_000).data() == b"x"
        finally:
            client.close()
    with pulsar_rs.Broker() as b:
        assert b.io_threads == max(1, len(os.sched_getaffinity(0)) - 1)
    with pytest.raises(pulsar_rs.InvalidConfigError, match="numIOThreads"):
        pulsar_rs.Broker(numIOThreads=0)
