"""Pulsar's authentication providers with the official ``pulsar-client``: ``AuthenticationProviderTls``
(role = client certificate CN, on ``pulsar+ssl://`` and HTTPS admin), ``AuthenticationProviderBasic``
(htpasswd users from ``basicAuthConf``: a path or base64 data; ``$apr1$`` MD5 and DES crypt hashes),
token, all configured at once and chosen by the client's method; and token refresh on long-lived
connections (AUTH_CHALLENGE every ``authenticationRefreshCheckSeconds``).
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path

import pulsar
import pytest

import pulsar_rs
from conftest import OP_TIMEOUT_S

jwt = pytest.importorskip("jwt")
x509 = pytest.importorskip("cryptography.x509")
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402

pytestmark = pytest.mark.timeout(120)

PROVIDERS = "org.apache.pulsar.broker.authentication.AuthenticationProvider"
SECRET = b"pulsar-rs-auth-providers-secret-0123456789"
SECRET_URL = "data:;base64," + base64.b64encode(SECRET).decode()
# htpasswd lines: "123456" as Apache MD5 (`openssl passwd -apr1 -salt FG4AO6aX 123456`) and
# "test" as DES crypt (`crypt("test", "ab")`).
USERS = "admin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.\nbob:abgOeLfPimXQo\n"


def token(sub: str, **claims) -> str:
    return jwt.encode({"sub": sub, **claims}, SECRET, algorithm="HS256")


def _cert(subject: str, issuer: x509.Certificate | None, issuer_key, key, *, ca=False, server=False):
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    b = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer.subject if issuer else name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        b = b.add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
        ).add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    else:
        usage = x509.oid.ExtendedKeyUsageOID.SERVER_AUTH if server else x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH
        b = b.add_extension(x509.ExtendedKeyUsage([usage]), critical=False).add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False
        )
        if server:
            b = b.add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
    return b.sign(issuer_key, hashes.SHA256())


def _write(directory: Path, name: str, cert, key) -> tuple[Path, Path]:
    c, k = directory / f"{name}.pem", directory / f"{name}.key"
    c.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    k.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return c, k


def _tlv(tag: int, content: bytes) -> bytes:
    n = len(content)
    k = (n.bit_length() + 7) // 8
    length = bytes([n]) if n < 0x80 else bytes([0x80 | k]) + n.to_bytes(k)
    return bytes([tag]) + length + content


def _children(content: bytes) -> list[bytes]:
    """The DER elements (whole, with headers) of a SEQUENCE's content."""
    out = []
    while content:
        first = content[1]
        if first < 0x80:
            head, n = 2, first
        else:
            k = first & 0x7F
            head, n = 2 + k, int.from_bytes(content[2 : 2 + k])
        out.append(content[: head + n])
        content = content[head + n :]
    return out


def _v1_cert(subject: str, issuer: x509.Certificate, issuer_key, key) -> bytes:
    """A PEM X.509 version 1 certificate (no extensions), as ``openssl x509 -req`` issues them: a v3
    one without extensions re-signed without its ``[0] version`` field."""
    now = datetime.datetime.now(datetime.UTC)
    v3 = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(issuer.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(issuer_key, hashes.SHA256())
    )
    (tbs, sig_alg, _) = _children(_children(v3.public_bytes(serialization.Encoding.DER))[0][4:])
    fields = _children(tbs[2:] if tbs[1] < 0x80 else tbs[2 + (tbs[1] & 0x7F) :])
    assert fields[0][0] == 0xA0  # [0] version
    tbs_v1 = _tlv(0x30, b"".join(fields[1:]))
    signature = issuer_key.sign(tbs_v1, ec.ECDSA(hashes.SHA256()))
    der = _tlv(0x30, tbs_v1 + sig_alg + _tlv(0x03, b"\0" + signature))
    v1 = x509.load_der_x509_certificate(der)
    assert v1.version == x509.Version.v1
    return v1.public_bytes(serialization.Encoding.PEM)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, Path]:
    """A CA, a server certificate and client certificates with CN ``tls-client`` / ``other``."""
    d = tmp_path_factory.mktemp("pki")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("pulsar-rs auth CA", None, ca_key, ca_key, ca=True)
    out = {"ca": d / "ca.pem"}
    out["ca"].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    for name, server in (("server", True), ("tls-client", False), ("other", False)):
        key = ec.generate_private_key(ec.SECP256R1())
        out[name], out[name + "-key"] = _write(d, name, _cert(name, ca, ca_key, key, server=server), key)
    # Version 1 client certificates: one from the CA, one from an impostor CA of the same name.
    impostor_key = ec.generate_private_key(ec.SECP256R1())
    impostor = _cert("pulsar-rs auth CA", None, impostor_key, impostor_key, ca=True)
    for name, (issuer, issuer_key) in (("v1-client", (ca, ca_key)), ("v1-impostor", (impostor, impostor_key))):
        key = ec.generate_private_key(ec.SECP256R1())
        _, out[name + "-key"] = _write(d, name, ca, key)
        out[name] = d / f"{name}.pem"
        out[name].write_bytes(_v1_cert("v1-client", issuer, issuer_key, key))
    return out


@pytest.fixture
def broker(pulsar_broker_factory, pki, tmp_path):
    users = tmp_path / "users.htpasswd"
    users.write_text(USERS)
    return pulsar_broker_factory(
        advertisedAddress="localhost",
        brokerServicePortTls=0,
        webServicePortTls=0,
        tlsCertificateFilePath=str(pki["server"]),
        tlsKeyFilePath=str(pki["server-key"]),
        tlsTrustCertsFilePath=str(pki["ca"]),
        authenticationEnabled=True,
        authenticationProviders=f"{PROVIDERS}Tls,{PROVIDERS}Token,{PROVIDERS}Basic",
        tokenSecretKey=SECRET_URL,
        basicAuthConf=str(users),
        authorizationEnabled=True,
        superUserRoles=["super", "admin"],
    )


def new_client(url: str, auth, pki=None, **kw) -> pulsar.Client:
    if pki is not None:
        kw.setdefault("tls_trust_certs_file_path", str(pki["ca"]))
    return pulsar.Client(
        url,
        authentication=auth,
        operation_timeout_seconds=OP_TIMEOUT_S,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
        **kw,
    )


def http(method: str, url: str, headers=None, body=None, context=None) -> tuple[int, object]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10, context=context) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        return e.code, None


def grant(broker, role: str) -> None:
    url = f"{broker.admin_url}/admin/v2/namespaces/public/default/permissions/{role}"
    status, _ = http("POST", url, {"Authorization": f"Bearer {token('super')}"}, ["produce", "consume"])
    assert status == 204


def produce_consume(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    client.create_producer(topic).send(b"hello")
    assert consumer.receive(timeout_millis=5000).data() == b"hello"


def test_tls_role_is_the_certificate_cn(broker, pki, topic):
    grant(broker, "tls-client")
    ok = new_client(
        broker.service_url_tls, pulsar.AuthenticationTLS(str(pki["tls-client"]), str(pki["tls-client-key"])), pki
    )
    other = new_client(broker.service_url_tls, pulsar.AuthenticationTLS(str(pki["other"]), str(pki["other-key"])), pki)
    try:
        produce_consume(ok, topic)
        # Authenticated as "other" (its CN), which has no grant.
        with pytest.raises(pulsar.AuthorizationError):
            other.create_producer(topic)
    finally:
        ok.close()
        other.close()


@pytest.mark.slow  # about 10 s here (README, 'Tests')
def test_tls_version1_client_certificate(broker, pki, topic):
    """X.509 v1 client certificates (no extensions, as ``openssl x509 -req`` and the official
    clients' test PKI issue them) are accepted as Pulsar accepts them: signed by a trusted CA, the
    role is their CN; signed by anyone else, the handshake fails."""
    grant(broker, "v1-client")
    ok = new_client(
        broker.service_url_tls, pulsar.AuthenticationTLS(str(pki["v1-client"]), str(pki["v1-client-key"])), pki
    )
    impostor = new_client(
        broker.service_url_tls, pulsar.AuthenticationTLS(str(pki["v1-impostor"]), str(pki["v1-impostor-key"])), pki
    )
    try:
        produce_consume(ok, topic)
        with pytest.raises(pulsar.PulsarException):
            impostor.create_producer(f"{topic}-impostor")
    finally:
        ok.close()
        impostor.close()


def test_tls_method_needs_a_certificate(broker, pki, topic):
    # Method "tls" on a TLS connection without a client certificate: refused.
    c = new_client(broker.service_url_tls, pulsar.AuthenticationTLS("/nonexistent.pem", "/nonexistent.key"), pki)
    try:
        with pytest.raises(pulsar.PulsarException):
            c.create_producer(topic)
    finally:
        c.close()


def test_https_admin_role_from_client_certificate(pulsar_broker_factory, pki, tmp_path):
    b = pulsar_broker_factory(
        advertisedAddress="localhost",
        webServicePortTls=0,
        tlsCertificateFilePath=str(pki["server"]),
        tlsKeyFilePath=str(pki["server-key"]),
        tlsTrustCertsFilePath=str(pki["ca"]),
        authenticationEnabled=True,
        authenticationProviders=f"{PROVIDERS}Tls,{PROVIDERS}Token",
        tokenSecretKey=SECRET_URL,
        authorizationEnabled=True,
        superUserRoles=["tls-client"],
    )
    url = f"{b.admin_url_tls}/admin/v2/namespaces/public/default/permissions"

    def ctx(name: str | None) -> ssl.SSLContext:
        c = ssl.create_default_context(cafile=str(pki["ca"]))
        if name:
            c.load_cert_chain(str(pki[name]), str(pki[name + "-key"]))
        return c

    assert http("GET", url, context=ctx(None))[0] == 401  # no certificate, no credentials
    assert http("GET", url, context=ctx("other"))[0] == 401  # role "other": not a superuser
    assert http("GET", url, context=ctx("tls-client"))[0] == 200  # role "tls-client": superuser


def test_basic_users_file(broker, topic):
    grant(broker, "bob")
    for user, password in (("admin", "123456"), ("bob", "test")):
        c = new_client(broker.service_url, pulsar.AuthenticationBasic(user, password))
        try:
            produce_consume(c, f"{topic}-{user}")
        finally:
            c.close()
    for user, password in (("admin", "wrong"), ("carol", "123456")):
        c = new_client(broker.service_url, pulsar.AuthenticationBasic(user, password))
        try:
            with pytest.raises(pulsar.AuthenticationError):
                c.create_producer(topic)
        finally:
            c.close()


def test_basic_on_the_admin_api(broker):
    url = f"{broker.admin_url}/admin/v2/namespaces/public/default/permissions"
    good = "Basic " + base64.b64encode(b"admin:123456").decode()  # admin is a superuser
    bad = "Basic " + base64.b64encode(b"admin:nope").decode()
    bob = "Basic " + base64.b64encode(b"bob:test").decode()  # authenticated, not a superuser
    assert http("GET", url, {"Authorization": good})[0] == 200
    assert http("GET", url, {"Authorization": bad})[0] == 401
    assert http("GET", url, {"Authorization": bob})[0] == 401


def test_basic_users_as_base64_data(pulsar_broker_factory, topic):
    b = pulsar_broker_factory(
        authenticationEnabled=True,
        authenticationProviders=f"{PROVIDERS}Basic",
        basicAuthConf=base64.b64encode(USERS.encode()).decode(),
    )
    c = new_client(b.service_url, pulsar.AuthenticationBasic("admin", "123456"))
    try:
        produce_consume(c, topic)
    finally:
        c.close()


def test_token_beside_the_others(broker, topic):
    grant(broker, "alice")
    c = new_client(broker.service_url, pulsar.AuthenticationToken(token("alice")))
    try:
        produce_consume(c, topic)
    finally:
        c.close()


def test_unconfigured_method_refused(pulsar_broker_factory, topic):
    b = pulsar_broker_factory(
        authenticationEnabled=True, authenticationProviders=f"{PROVIDERS}Token", tokenSecretKey=SECRET_URL
    )
    c = new_client(b.service_url, pulsar.AuthenticationBasic("admin", "123456"))
    try:
        with pytest.raises(pulsar.AuthenticationError):
            c.create_producer(topic)
    finally:
        c.close()


def test_method_without_provider_is_the_anonymous_role(pulsar_broker_factory, tmp_path, topic):
    """Pulsar's ``ServerCnx.handleConnect``: a method no configured provider has (here
    ``unknown``) gives the ``anonymousUserRole`` when there is one, so the connection is accepted
    and what fails is the authorization of what anonymous may not do."""
    users = tmp_path / "users.htpasswd"
    users.write_text(USERS)
    b = pulsar_broker_factory(
        authenticationEnabled=True,
        authenticationProviders=f"{PROVIDERS}Basic",
        basicAuthConf=str(users),
        authorizationEnabled=True,
        superUserRoles="admin",
        anonymousUserRole="anonymous",
    )
    unknown = new_client(b.service_url, pulsar.AuthenticationBasic("admin", "123456", "unknown"))
    basic = new_client(b.service_url, pulsar.AuthenticationBasic("admin", "123456", "basic"))
    try:
        with pytest.raises(pulsar.AuthorizationError):
            unknown.create_producer(topic)
        produce_consume(basic, topic)  # the same credentials under their method: superuser
        url = f"{b.admin_url}/admin/v2/namespaces/public/default/permissions/anonymous"
        good = "Basic " + base64.b64encode(b"admin:123456").decode()
        assert http("POST", url, {"Authorization": good}, ["produce", "consume"])[0] == 204
        produce_consume(unknown, f"{topic}-anonymous")  # now granted to anonymous
    finally:
        unknown.close()
        basic.close()


@pytest.fixture
def clock() -> pulsar_rs.ManualClock:
    """The refresh brokers' clock, which tokens expire on: the real time plus the test's advances."""
    return pulsar_rs.ManualClock()


#: How long to wait for the broker's credential check, which runs every
#: `authenticationRefreshCheckSeconds` (1) of real time: a schedule, not a passage of the
#: broker's time (that is the clock's job). Polled, so a loaded machine only makes it slower.
REFRESH_DEADLINE_S = 15.0


def _until(condition) -> bool:
    """Polls `condition` until it holds or REFRESH_DEADLINE_S passes."""
    deadline = time.monotonic() + REFRESH_DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)  # poll: the credential check runs on the broker's real-time schedule
    return True


def _in(clock: pulsar_rs.ManualClock, seconds: int) -> int:
    """`exp` for a token that expires `seconds` from now on the broker's clock."""
    return clock.now_ms() // 1000 + seconds


@pytest.fixture
def refresh_broker(pulsar_broker_factory, clock):
    return pulsar_broker_factory(
        clock=clock,
        authenticationEnabled=True,
        authenticationProviders=f"{PROVIDERS}Token",
        tokenSecretKey=SECRET_URL,
        authenticationRefreshCheckSeconds=1,
    )


def test_expired_token_closes_the_connection(refresh_broker, topic, clock):
    c = new_client(refresh_broker.service_url, pulsar.AuthenticationToken(token("alice", exp=_in(clock, 3))))
    try:
        producer = c.create_producer(topic)
        producer.send(b"before expiry")
        clock.advance(4)
        # The broker challenged, got the same expired token back and closed the connection;
        # a new connection with it is refused.
        assert _until(lambda: not producer.is_connected()), "the connection outlived its token"
        with pytest.raises(pulsar.AuthenticationError):
            c.create_producer(topic + "-2")
    finally:
        c.close()


def test_token_refreshed_through_auth_challenge(refresh_broker, topic, clock):
    calls = []

    def supplier() -> str:
        calls.append(clock.now_ms())
        return token("alice", exp=_in(clock, 3))

    c = new_client(refresh_broker.service_url, pulsar.AuthenticationToken(supplier))
    try:
        producer = c.create_producer(topic)
        consumer = c.subscribe(topic, "s")
        for i in range(7):
            producer.send(f"m{i}".encode())
            if i == 2:
                clock.advance(4)  # past the first token's expiry
                assert _until(lambda: len(calls) >= 2), "no AUTH_CHALLENGE answered"
        assert [consumer.receive(timeout_millis=5000).data() for _ in range(7)] == [f"m{i}".encode() for i in range(7)]
        # Answered AUTH_CHALLENGE at least once with a fresh token (the first call is CONNECT's).
        assert len(calls) >= 2, calls
        c.create_producer(topic + "-2")  # the connection is still good
    finally:
        c.close()


def test_https_service_url_with_tls_authentication(broker, pki, topic):
    """An ``https://`` service URL: REST lookup over HTTPS (client certificate), then ``pulsar+ssl://``."""
    grant(broker, "tls-client")
    auth = pulsar.AuthenticationTLS(str(pki["tls-client"]), str(pki["tls-client-key"]))
    c = new_client(broker.admin_url_tls, auth, pki)
    try:
        produce_consume(c, topic)
    finally:
        c.close()
