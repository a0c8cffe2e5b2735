"""The config files the official clients' own CI starts Apache Pulsar standalone with, and Apache Pulsar
4.0.8's shipped ``conf/standalone.conf`` and ``conf/broker.conf``: ``pulsar-rs standalone --config
FILE`` must start on each (issue 52: the Go client's file was refused at start-up, and nothing in CI
started the broker with it).

Each test starts the installed ``pulsar-rs`` command (the one beside the running Python, else the
one on ``PATH``) and fails with the broker's own stderr line when it refuses the file; once it is up,
the test checks that it keeps running and that every port the file opens answers: the plain admin
port (``/admin/v2/clusters``, ``/metrics``), the TLS admin port (HTTPS, verified with the file's
CA), the binary protocol on both (a round trip with the official Python client: a token on the
plain port, a client certificate on the TLS one) and Basic authentication, and that the stop is
clean. The security keys (TLS, authentication, authorization, the broker's own client) must be
applied, not listed among the ignored keys.

The files hard-code ports 6650/6651/8080/8443. ``--port 0 --admin-port 0`` move the plain ones
without touching the file; ``pulsar-rs`` has no option for the TLS ports, so **the test (only)
rewrites the two lines** ``brokerServicePortTls`` and ``webServicePortTls`` to free ports, and
binds the shipped Pulsar files (``bindAddress=0.0.0.0``) to loopback with ``--bind 127.0.0.1``.

* Go: ``integration-tests/conf/standalone.conf`` of github.com/apache/pulsar-client-go v0.19.0,
  downloaded through the Go module proxy and written exactly as ``tools/compat/go_client_suite.py``
  writes it (its ``broker_conf``). Needs Go (skipped without, as ``tests/go``).
* Python: the CI of apache/pulsar-client-python (commit ef1b354e) starts Pulsar with its
  ``tests/test-conf/standalone-ssl.conf``. No copy of that file is kept here: the test writes Pulsar
  4.0.8's own ``standalone.conf`` with :data:`PYTHON_CLIENT_CI_KEYS` (the keys that file sets
  differently, in our own words) and certificates it makes. When ``PULSAR_CLIENT_PYTHON_TESTS``
  names that suite's ``tests/`` folder (the compat runner's setup), a second test checks
  :data:`PYTHON_CLIENT_CI_KEYS` against the real file key by key and starts the broker with the
  real file, written as the compat runner (``client_suite.py --pulsar-conf``) writes it.
* Apache Pulsar 4.0.8's ``conf/standalone.conf`` and ``conf/broker.conf``, unmodified (read where
  the distribution is unpacked; skipped when it cannot be had, as the other tests using it).

Measured on 2 cores (warm Go module cache): about 2 s for the whole file, under 1 s per broker.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from base64 import b64encode
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pulsar
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tools import pulsar_reference
from tools.compat import go_client_suite

from pki_util import write_pki

jwt = pytest.importorskip("jwt")

pytestmark = pytest.mark.timeout(120)

PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProvider"

#: The keys the official Python client's CI file (apache/pulsar-client-python at ef1b354e,
#: tests/test-conf/standalone-ssl.conf) sets to another value than Apache Pulsar 4.0.8's
#: conf/standalone.conf, or sets where that file does not: every one of them, so that this file's
#: standalone.conf plus these keys is the broker that CI runs. ``{certs}`` is the folder of the
#: test's own certificates and secret (file names as upstream's). Its broker-client keys
#: (``brokerClientAuthenticationPlugin``, ``brokerClientAuthenticationParameters``) are empty, as in
#: standalone.conf, so they are not here. ``test_python_client_ci_keys_match_the_real_file`` ties
#: this to the real file when it is at hand.
PYTHON_CLIENT_CI_KEYS: dict[str, str] = {
    # TLS listeners beside the plain ones, advertised as localhost.
    "brokerServicePortTls": "6651",
    "webServicePortTls": "8443",
    "advertisedAddress": "localhost",
    "tlsEnabled": "true",
    "tlsCertificateFilePath": "{certs}/broker-cert.pem",
    "tlsKeyFilePath": "{certs}/broker-key.pem",
    "tlsTrustCertsFilePath": "{certs}/cacert.pem",
    # Authentication by client certificate, token or Basic user; authorization; the roles.
    "authenticationEnabled": "true",
    "authenticationProviders": f"{PROVIDER}Tls,{PROVIDER}Token,{PROVIDER}Basic",
    "authorizationEnabled": "true",
    "anonymousUserRole": "anonymous",
    "superUserRoles": "localhost,superUser,admin",
    "tokenSecretKey": "file://{certs}/secret.key",
    # The rest of that file's differences.
    "zooKeeperSessionTimeoutMillis": "30000",
    "brokerShutdownTimeoutMs": "3000",
    "clientLibraryVersionCheckAllowUnversioned": "true",
    "acknowledgmentAtBatchIndexLevelEnabled": "true",
    "managedLedgerCacheSizeMB": "1024",
    "maxMessageSize": "1024000",
    "subscriptionKeySharedUseConsistentHashing": "false",
    "topicLevelPoliciesEnabled": "false",
    "loadBalancerPlacementStrategy": "weightedRandomSelection",
    "loadBalancerSheddingIntervalMinutes": "30",
    "loadBalancerBrokerUnderloadedThresholdPercentage": "1",
    "loadBalancerBrokerOverloadedThresholdPercentage": "85",
    "loadBalancerBrokerComfortLoadLevelPercentage": "65",
    "loadBalancerAutoBundleSplitEnabled": "false",
    "loadBalancerNamespaceBundleSplitIntervalMinutes": "15",
    "loadBalancerNamespaceBundleMaxMsgRate": "1000",
}
#: Keys whose value is a file: compared by file name only.
PATH_KEYS = frozenset({"tlsCertificateFilePath", "tlsKeyFilePath", "tlsTrustCertsFilePath", "tokenSecretKey"})

#: The Python client's CI: the Basic users file's one line, "admin" with password 123456 (Apache MD5,
#: `openssl passwd -apr1 -salt FG4AO6aX 123456`; the Go client's CI uses the same).
HTPASSWD = "admin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.\n"
BASIC_USER = ("admin", "123456")

#: The keys that carry these files' security set-up: set (not empty, not false), each must be applied,
#: never merely tolerated in the warning's list of ignored keys. (Pulsar's own leftovers such as
#: ``tlsEnabled``, deprecated since TLS follows the TLS ports, may be ignored.)
SECURITY_KEYS = frozenset(
    {
        "brokerServicePortTls",
        "webServicePortTls",
        "tlsCertificateFilePath",
        "tlsKeyFilePath",
        "tlsTrustCertsFilePath",
        "authenticationEnabled",
        "authenticationProviders",
        "authorizationEnabled",
        "anonymousUserRole",
        "superUserRoles",
        "tokenSecretKey",
        "basicAuthConf",
        "brokerClientTlsEnabled",
        "brokerClientTrustCertsFilePath",
        "brokerClientAuthenticationPlugin",
        "brokerClientAuthenticationParameters",
    }
)


# --- the broker process -------------------------------------------------------------------------


def pulsar_rs_command() -> str:
    """The ``pulsar-rs`` script installed with the running Python's package, else the one on PATH."""
    beside = Path(sys.executable).parent / "pulsar-rs"
    found = str(beside) if beside.is_file() else shutil.which("pulsar-rs")
    assert found, "the pulsar-rs command is not installed (beside sys.executable or on PATH)"
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def move_tls_ports(conf: Path) -> tuple[int, int]:
    """Rewrites the ``brokerServicePortTls`` and ``webServicePortTls`` lines of ``conf`` to free ports
    (the only lines the test changes: the command has no option for them); returns the two ports."""
    ports = {"brokerServicePortTls": free_port(), "webServicePortTls": free_port()}
    lines = []
    for line in conf.read_text().splitlines(keepends=True):
        key = line.split("=", 1)[0].strip()
        if key in ports and not line.lstrip().startswith("#"):
            line = f"{key}={ports[key]}\n"
        lines.append(line)
    conf.write_text("".join(lines))
    return ports["brokerServicePortTls"], ports["webServicePortTls"]


def refusals(stderr: str) -> list[str]:
    """The broker's own lines of stderr that are not a warning or the stop notice: a refused key,
    a file that cannot be read, a start-up failure (``pulsar-rs: ...``)."""
    return [
        line
        for line in stderr.splitlines()
        if line.startswith("pulsar-rs:") and not line.startswith(("pulsar-rs: warning:", "pulsar-rs: stopped"))
    ]


@dataclass
class Started:
    proc: subprocess.Popen[str]
    stderr_path: Path
    service_url: str
    admin_url: str

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def close(self) -> None:
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def start(label: str, conf: Path, work: Path, *extra: str, env: Mapping[str, str] | None = None) -> Started:
    """``pulsar-rs standalone --config conf --data-dir work/data --port 0 --admin-port 0 *extra``;
    fails the test with the broker's stderr when it does not print READY within 30 s."""
    err = work / "broker.stderr"
    cmd = [pulsar_rs_command(), "standalone", "--config", str(conf), "--data-dir", str(work / "data")]
    cmd += ["--port", "0", "--admin-port", "0", *extra]
    with err.open("w") as fh:
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=fh,
            text=True,
            cwd=work,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    assert proc.stdout is not None
    ready = ""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        if select.select([proc.stdout], [], [], 0.2)[0]:
            ready = proc.stdout.readline()
            break
    if not ready.startswith("READY"):
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        proc.stdout.close()
        text = err.read_text(errors="replace")
        refused = refusals(text) or text.strip().splitlines()[-5:] or ["(no output)"]
        pytest.fail(
            f"pulsar-rs standalone refused {label} (exit status {proc.returncode}): " + "\n".join(refused),
            pytrace=False,
        )
    _, service_url, admin_url = ready.split()[:3]
    return Started(proc, err, service_url, admin_url)


def stop(b: Started) -> str:
    """SIGTERM, a clean exit (status 0), and no refusal in the log; returns stderr."""
    assert b.proc.poll() is None, f"the broker exited by itself (status {b.proc.returncode}):\n{b.stderr()[-3000:]}"
    os.killpg(b.proc.pid, signal.SIGTERM)
    try:
        b.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(b.proc.pid, signal.SIGKILL)
        b.proc.wait(timeout=10)
        pytest.fail(f"the broker did not stop within 30 s of SIGTERM:\n{b.stderr()[-3000:]}")
    b.close()
    text = b.stderr()
    assert b.proc.returncode == 0, f"exit status {b.proc.returncode}:\n{text[-3000:]}"
    assert not refusals(text), "\n".join(refusals(text))
    assert "Traceback" not in text, text[-3000:]
    return text


@pytest.fixture
def started() -> Iterator[list[Started]]:
    """Brokers the test started; any still running at the end is killed."""
    brokers: list[Started] = []
    yield brokers
    for b in brokers:
        if b.proc.poll() is None:
            os.killpg(b.proc.pid, signal.SIGKILL)
            b.proc.wait(timeout=10)
        b.close()


def ignored_security_keys(stderr: str, conf: Path) -> list[str]:
    """:data:`SECURITY_KEYS` the file sets that the broker's warning lists as not implemented."""
    warned = " ".join(line for line in stderr.splitlines() if line.startswith("pulsar-rs: warning:"))
    keys = [k for k, v in read_properties(conf).items() if k in SECURITY_KEYS and v not in ("", "false")]
    return [k for k in keys if re.search(rf"\b{re.escape(k)}\b", warned)]


# --- what a started broker must answer ----------------------------------------------------------


def get(url: str, auth: str | None = None, context: ssl.SSLContext | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, headers={"Authorization": auth} if auth else {})
    try:
        with urllib.request.urlopen(req, timeout=10, context=context) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def round_trip(url: str, topic: str, **client_args: object) -> None:
    """One message produced and consumed with the official client on ``url``."""
    client = pulsar.Client(
        url, operation_timeout_seconds=15, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error), **client_args
    )
    try:
        consumer = client.subscribe(topic, "ci-conf")
        client.create_producer(topic).send(b"through " + url.encode())
        assert consumer.receive(timeout_millis=10_000).data() == b"through " + url.encode()
    finally:
        client.close()


@dataclass
class Credentials:
    token: str  # a superuser's token
    ca: Path  # the CA the broker's TLS certificate chains to
    client_cert: Path  # a client certificate whose role is a superuser
    client_key: Path


def check_serves(b: Started, tls_port: int, tls_web_port: int, creds: Credentials, name: str) -> None:
    """Every listener the CI file opens answers, with that CI's credentials."""
    bearer = "Bearer " + creds.token
    status, body = get(f"{b.admin_url}/admin/v2/clusters", bearer)
    assert (status, "standalone" in body) == (200, True), (status, body)
    assert get(f"{b.admin_url}/metrics", bearer)[0] == 200
    basic = "Basic " + b64encode(":".join(BASIC_USER).encode()).decode()
    assert get(f"{b.admin_url}/admin/v2/clusters", basic)[0] == 200
    # Authentication is on: a token signed with another key is refused.
    forged = jwt.encode({"sub": "superUser"}, b"not the broker's secret key, not at all", algorithm="HS256")
    assert get(f"{b.admin_url}/admin/v2/clusters", "Bearer " + forged)[0] == 401

    # HTTPS, the server's certificate verified against the file's CA, host name included.
    ctx = ssl.create_default_context(cafile=str(creds.ca))
    status, body = get(f"https://localhost:{tls_web_port}/admin/v2/clusters", bearer, ctx)
    assert (status, "standalone" in body) == (200, True), (status, body)
    # The client certificate is a way in on HTTPS too (AuthenticationProviderTls).
    ctx.load_cert_chain(str(creds.client_cert), str(creds.client_key))
    assert get(f"https://localhost:{tls_web_port}/admin/v2/clusters", None, ctx)[0] == 200

    topic = f"persistent://public/default/ci-conf-{name}-{time.monotonic_ns() % 10**9}"
    round_trip(b.service_url, topic + "-plain", authentication=pulsar.AuthenticationToken(creds.token))
    round_trip(
        f"pulsar+ssl://localhost:{tls_port}",
        topic + "-tls",
        authentication=pulsar.AuthenticationTLS(str(creds.client_cert), str(creds.client_key)),
        tls_trust_certs_file_path=str(creds.ca),
        tls_validate_hostname=True,
    )
    assert b.proc.poll() is None, f"the broker exited while serving (status {b.proc.returncode})"


# --- config files -------------------------------------------------------------------------------


def read_properties(path: Path) -> dict[str, str]:
    """A Java properties file as written by Pulsar: ``key=value`` or ``key:value``, ``#``/``!``
    comments, ``\\`` continuations; the last value of a key wins."""
    out: dict[str, str] = {}
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip() if not pending else raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        line, pending = pending + line, ""
        m = re.match(r"([^=:\s]+)\s*(?:[=:]\s*(.*))?$", line)
        if m:
            out[m.group(1)] = (m.group(2) or "").strip()
    return out


def with_keys(shipped: str, keys: Mapping[str, str]) -> str:
    """``shipped`` with each of ``keys`` replacing its line (or appended when it has none)."""
    out, seen = [], set()
    for line in shipped.splitlines():
        key = line.split("=", 1)[0].strip() if "=" in line and not line.lstrip().startswith(("#", "!")) else None
        if key is not None and key in keys:
            out.append(f"{key}={keys[key]}")
            seen.add(key)
        else:
            out.append(line)
    out += [f"{k}={v}" for k, v in keys.items() if k not in seen]
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def pulsar_conf() -> Path:
    """Apache Pulsar 4.0.8's ``conf/`` folder, as unpacked from its distribution."""
    reason = pulsar_reference.available()
    if reason and not (pulsar_reference.distribution_home() / "conf").is_dir():
        pytest.skip(f"Apache Pulsar's distribution unavailable: {reason}")
    return pulsar_reference.ensure_distribution() / "conf"


# --- the tests ----------------------------------------------------------------------------------


def test_go_client_ci_conf(tmp_path, started):
    """The Go client's CI file (pulsar-client-go v0.19.0 ``integration-tests/conf/standalone.conf``,
    written by ``go_client_suite.broker_conf`` as the Go suite's runner writes it: TLS, the TLS,
    token and Basic providers, authorization, and the broker's own client on TLS with a client
    certificate, ``brokerClientAuthenticationPlugin=...AuthenticationTls``) starts, serves every
    listener with upstream's certificates and tokens, and stops cleanly."""
    go = shutil.which("go")
    if go is None:
        pytest.skip("the Go toolchain (`go`) is not on PATH: the Go client's CI files come through the Go module proxy")
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-buildvcs=false")
    try:
        info = go_client_suite.download_module(go_client_suite.DEFAULT_VERSION, env, str(tmp_path))
    except go_client_suite.SuiteError as e:
        pytest.fail(str(e))
    src = info["Dir"]  # the module cache's read-only copy: only read here
    conf = Path(go_client_suite.broker_conf(src, str(tmp_path)))
    tls_port, tls_web_port = move_tls_ports(conf)
    it = Path(src) / "integration-tests"
    broker_env = dict(os.environ, PULSAR_EXTRA_OPTS=f"-Dpulsar.auth.basic.conf={it}/conf/.htpasswd")
    b = start("the Go client's CI conf", conf, tmp_path, env=broker_env)
    started.append(b)
    creds = Credentials(
        token=(it / "tokens" / "admin-token").read_text().strip(),
        ca=it / "certs" / "cacert.pem",
        client_cert=it / "certs" / "client-cert.pem",
        client_key=it / "certs" / "client-key.pem",
    )
    check_serves(b, tls_port, tls_web_port, creds, "go")
    err = stop(b)
    assert not ignored_security_keys(err, conf), "set but ignored: " + ", ".join(ignored_security_keys(err, conf))


def test_python_client_ci_conf(tmp_path, started, pulsar_conf):
    """The Python client's CI broker, rebuilt: Apache Pulsar 4.0.8's ``standalone.conf`` with
    :data:`PYTHON_CLIENT_CI_KEYS` (TLS, the three providers, authorization, superusers) and our own
    certificates, secret and users file; adapted as the compat runner adapts the real file
    (``bindAddress=127.0.0.1``, ``basicAuthConf`` added). Starts, serves every listener, stops."""
    certs = tmp_path / "certs"
    # A CA, the broker's certificate for localhost, and a client certificate for the role admin.
    write_pki(certs, {"broker": ("localhost", True), "client": ("admin", False)})
    secret = os.urandom(32)
    (certs / "secret.key").write_bytes(secret)
    (certs / ".htpasswd").write_text(HTPASSWD)
    keys = {k: v.format(certs=certs) for k, v in PYTHON_CLIENT_CI_KEYS.items()}
    keys |= {"bindAddress": "127.0.0.1", "basicAuthConf": str(certs / ".htpasswd")}
    conf = tmp_path / "standalone-ssl.conf"
    conf.write_text(with_keys((pulsar_conf / "standalone.conf").read_text(), keys))
    label = "the Python client's CI conf (Pulsar's standalone.conf + its keys)"
    serves_python_ci(label, conf, tmp_path, started, secret, certs, "python")


def serves_python_ci(
    label: str,
    conf: Path,
    tmp_path: Path,
    started: list[Started],
    secret: bytes,
    certs: Path,
    name: str,
    env: Mapping[str, str] | None = None,
) -> None:
    """Starts the broker on a Python-client CI ``conf`` (TLS ports moved), checks every listener
    with the ``superUser`` token and ``certs``' client certificate, stops it, and checks that no
    security key was ignored."""
    tls_port, tls_web_port = move_tls_ports(conf)
    b = start(label, conf, tmp_path, env=env)
    started.append(b)
    creds = Credentials(
        token=jwt.encode({"sub": "superUser"}, secret, algorithm="HS256"),
        ca=certs / "cacert.pem",
        client_cert=certs / "client-cert.pem",
        client_key=certs / "client-key.pem",
    )
    check_serves(b, tls_port, tls_web_port, creds, name)
    err = stop(b)
    assert not ignored_security_keys(err, conf), "set but ignored: " + ", ".join(ignored_security_keys(err, conf))


def python_client_tests() -> Path:
    suite = os.environ.get("PULSAR_CLIENT_PYTHON_TESTS")
    if not suite:
        pytest.skip(
            "PULSAR_CLIENT_PYTHON_TESTS is not set: it names apache/pulsar-client-python's tests/ folder "
            "(the compat runner's setup), whose test-conf/standalone-ssl.conf this test reads"
        )
    conf = Path(suite) / "test-conf" / "standalone-ssl.conf"
    assert conf.is_file(), f"PULSAR_CLIENT_PYTHON_TESTS={suite}: no {conf}"
    return Path(suite)


def test_python_client_ci_keys_match_the_real_file(pulsar_conf):
    """:data:`PYTHON_CLIENT_CI_KEYS` is exactly what the real ``standalone-ssl.conf`` sets differently
    from Pulsar's ``standalone.conf``: the same keys, the same values (files by name only)."""
    real = read_properties(python_client_tests() / "test-conf" / "standalone-ssl.conf")
    shipped = read_properties(pulsar_conf / "standalone.conf")
    differing = {k: v for k, v in real.items() if shipped.get(k) != v}
    missing = {k: v for k, v in differing.items() if k not in PYTHON_CLIENT_CI_KEYS}
    extra = sorted(set(PYTHON_CLIENT_CI_KEYS) - set(differing))
    assert not missing, f"standalone-ssl.conf sets these differently, PYTHON_CLIENT_CI_KEYS lacks them: {missing}"
    assert not extra, f"PYTHON_CLIENT_CI_KEYS has keys standalone-ssl.conf does not set differently: {extra}"
    for k, v in differing.items():
        ours = PYTHON_CLIENT_CI_KEYS[k]
        if k in PATH_KEYS:
            assert Path(v).name == Path(ours).name, (k, v, ours)
        else:
            assert v == ours, (k, v, ours)


def test_python_client_real_ci_conf(tmp_path, started):
    """The real ``standalone-ssl.conf``, written as the compat runner writes it (``client_suite.py
    --pulsar-conf``: ``bindAddress=127.0.0.1``, ``tokenSecretKey`` on a fresh secret, the TLS files
    in its ``test-conf``, ``basicAuthConf`` added), starts, serves every listener with that suite's
    certificates, and stops cleanly."""
    suite_conf = python_client_tests() / "test-conf"
    secret = os.urandom(32)
    key = tmp_path / "secret.key"
    key.write_bytes(secret)
    lines = []
    for line in (suite_conf / "standalone-ssl.conf").read_text().splitlines(keepends=True):
        k = line.split("=", 1)[0].strip()
        if k == "bindAddress":
            line = "bindAddress=127.0.0.1\n"
        elif k == "tokenSecretKey":
            line = f"tokenSecretKey=file://{key}\n"
        elif k in ("tlsCertificateFilePath", "tlsKeyFilePath", "tlsTrustCertsFilePath"):
            line = f"{k}={suite_conf}/{os.path.basename(line.split('=', 1)[1].strip())}\n"
        lines.append(line)
    lines.append(f"\nbasicAuthConf={suite_conf}/.htpasswd\n")
    conf = tmp_path / "standalone.conf"
    conf.write_text("".join(lines))
    env = dict(os.environ, PULSAR_EXTRA_OPTS=f"-Dpulsar.auth.basic.conf={suite_conf}/.htpasswd")
    serves_python_ci(
        "the Python client's real CI conf", conf, tmp_path, started, secret, suite_conf, "python-real", env
    )


@pytest.mark.parametrize("name", ["standalone.conf", "broker.conf"])
def test_pulsar_shipped_conf_unmodified(tmp_path, started, pulsar_conf, name):
    """Apache Pulsar 4.0.8's own ``conf/standalone.conf`` and ``conf/broker.conf``, read unmodified
    where the distribution is unpacked (only ``--bind 127.0.0.1`` and ephemeral ports on the command
    line), start, serve admin calls and a round trip without credentials, and stop cleanly."""
    b = start(f"Apache Pulsar's {name}", pulsar_conf / name, tmp_path, "--bind", "127.0.0.1")
    started.append(b)
    status, body = get(f"{b.admin_url}/admin/v2/clusters")
    assert status == 200, (status, body)
    assert get(f"{b.admin_url}/metrics")[0] == 200
    round_trip(b.service_url, f"persistent://public/default/shipped-{name.split('.')[0]}")
    stop(b)
