"""Security with the official ``pulsar-client``: token authentication (HS256 and RS256, on the
binary protocol and as a Bearer header on the admin API), authorization (superusers, namespace
and topic grants through Pulsar's admin paths, refusals on PRODUCER/SUBSCRIBE/LOOKUP) and TLS
(``pulsar+ssl://`` and HTTPS admin against a test CA made here, with hostname verification).

A refused CONNECT surfaces as ``pulsar.AuthenticationError`` on ``create_producer`` /
``subscribe`` right away (not after the operation timeout): the broker answers CONNECTED and
refuses the first request with AuthenticationError (see ``rust/server/src/connection/handshake.rs``).
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import ipaddress
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pulsar
import pytest

import pulsar_rs
from conftest import OP_TIMEOUT_S
from raw_protocol import CONNECT, CONNECTED, LOOKUP, LOOKUP_RESPONSE, Raw, base, fb, fv, simple_frame
from token_util import (
    ADMIN,
    AUTHN_ERROR,
    AUTHZ_ERROR,
    ERROR,
    GET_TOPICS_OF_NAMESPACE,
    LOOKUP_FAILED,
    SECRET,
    SECRET_URL,
    TOKEN_PROVIDER,
    client_for,
    hs_token,
    http,
    round_trip,
)

jwt = pytest.importorskip("jwt")
x509 = pytest.importorskip("cryptography.x509")
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec, rsa  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def clients() -> Callable[..., pulsar.Client]:
    made: list[pulsar.Client] = []

    def make(url: str, token: str | None = None, **kw) -> pulsar.Client:
        c = client_for(url, token, **kw)
        made.append(c)
        return c

    yield make
    for c in made:
        with contextlib.suppress(Exception):
            c.close()


# --- authentication ----------------------------------------------------------------------------


@pytest.fixture
def hs_broker(pulsar_broker_factory):
    return pulsar_broker_factory(
        authenticationEnabled=True,
        authenticationProviders=TOKEN_PROVIDER,
        tokenSecretKey=SECRET_URL,
    )


def test_hs256_token_round_trip(hs_broker, clients, topic):
    round_trip(clients(hs_broker.service_url, hs_token("alice")), topic)
    exp = int(time.time()) + 3600
    round_trip(clients(hs_broker.service_url, hs_token("alice", exp=exp)), topic + "-exp")


def test_secret_key_from_file(pulsar_broker_factory, clients, topic, tmp_path):
    key = tmp_path / "secret.key"
    key.write_bytes(SECRET)
    broker = pulsar_broker_factory(
        authenticationEnabled=True, authenticationProviders="token", tokenSecretKey=f"file://{key}"
    )
    round_trip(clients(broker.service_url, hs_token("alice")), topic)


@pytest.fixture(scope="module")
def rsa_keys(tmp_path_factory) -> tuple[object, Path]:
    """An RSA key pair; the public key as DER (X.509 SubjectPublicKeyInfo) like
    ``pulsar tokens create-key-pair`` writes it."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path = tmp_path_factory.mktemp("rsa") / "public.key"
    path.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return key, path


def test_rs256_token_round_trip(pulsar_broker_factory, clients, topic, rsa_keys):
    key, pub = rsa_keys
    broker = pulsar_broker_factory(
        authenticationEnabled=True, authenticationProviders="token", tokenPublicKey=f"file://{pub}"
    )
    token = jwt.encode({"sub": "rsa-user", "exp": int(time.time()) + 600}, key, algorithm="RS256")
    round_trip(clients(broker.service_url, token), topic)
    # An HS256 token is refused when only a public key is configured.
    with pytest.raises(pulsar.AuthenticationError):
        clients(broker.service_url, hs_token("alice")).create_producer(topic)
    # So is an RS256 token signed by another key.
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = jwt.encode({"sub": "rsa-user"}, other, algorithm="RS256")
    with pytest.raises(pulsar.AuthenticationError):
        clients(broker.service_url, forged).create_producer(topic)


def test_es256_with_pem_public_key(pulsar_broker_factory, clients, topic):
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    broker = pulsar_broker_factory(
        authenticationEnabled=True,
        authenticationProviders="token",
        tokenPublicKey="data:;base64," + base64.b64encode(pem).decode(),
        tokenPublicAlg="ES256",
    )
    round_trip(clients(broker.service_url, jwt.encode({"sub": "ec-user"}, key, algorithm="ES256")), topic)


@pytest.mark.parametrize(
    "token",
    [
        None,
        "not-a-jwt",
        jwt.encode({"sub": "alice"}, b"some other secret, also long enough", algorithm="HS256"),
        hs_token("alice", exp=int(time.time()) - 60),
        hs_token("alice", nbf=int(time.time()) + 3600),
        jwt.encode({"name": "no subject"}, SECRET, algorithm="HS256"),
    ],
    ids=["missing", "garbage", "bad-signature", "expired", "not-yet-valid", "no-role"],
)
def test_refused_tokens_raise_authentication_error(hs_broker, clients, topic, token):
    client = clients(hs_broker.service_url, token)
    t0 = time.monotonic()
    with pytest.raises(pulsar.AuthenticationError):
        client.create_producer(topic)
    with pytest.raises(pulsar.AuthenticationError):
        client.subscribe(topic, "sub")
    # Refused at once, not after retrying until the operation timeout.
    assert time.monotonic() - t0 < OP_TIMEOUT_S / 2


def test_refused_connection_answers_then_closes(hs_broker):
    raw = Raw(hs_broker.service_url)
    try:
        connect = fb(1, "raw-test") + fb(3, b"not-a-jwt") + fv(4, 20) + fb(5, "token")
        raw.send(simple_frame(base(CONNECT, connect)))
        ty, _ = raw.recv()
        assert ty == CONNECTED
        raw.send(simple_frame(base(LOOKUP, fb(1, "persistent://public/default/x") + fv(2, 9))))
        ty, body = raw.recv()
        assert ty == LOOKUP_RESPONSE
        assert body[3] == [LOOKUP_FAILED] and body[4] == [9] and body[6] == [AUTHN_ERROR]
        assert raw.is_closed()
    finally:
        raw.close()


def test_admin_bearer_token(hs_broker):
    url = f"{hs_broker.admin_url}/admin/v2/persistent/public/default"
    assert http("GET", url)[0] == 401
    assert http("GET", url, token="garbage")[0] == 401
    assert http("GET", url, token=hs_token("alice", exp=int(time.time()) - 5))[0] == 401
    status, body = http("GET", url, token=hs_token("alice"))
    assert status == 200 and isinstance(body, list)
    # /metrics stays open (authenticateMetricsEndpoint=false, Pulsar's default).
    assert http("GET", f"{hs_broker.admin_url}/metrics")[0] == 200


def test_anonymous_role(pulsar_broker_factory, clients, topic):
    broker = pulsar_broker_factory(
        authenticationEnabled=True,
        authenticationProviders="token",
        tokenSecretKey=SECRET_URL,
        anonymousUserRole="anon",
    )
    round_trip(clients(broker.service_url), topic)


def test_custom_role_claim(pulsar_broker_factory, clients, topic):
    broker = pulsar_broker_factory(
        authenticationEnabled=True,
        authenticationProviders="token",
        tokenSecretKey=SECRET_URL,
        tokenAuthClaim="role",
        authorizationEnabled=True,
        superUserRoles="ops",
    )
    # "sub" is ignored: the role comes from "role".
    round_trip(clients(broker.service_url, jwt.encode({"sub": "x", "role": "ops"}, SECRET, algorithm="HS256")), topic)
    # "sub" is not the role: a token whose "role" is not a superuser is refused...
    not_ops = jwt.encode({"sub": "ops", "role": "alice"}, SECRET, algorithm="HS256")
    with pytest.raises(pulsar.AuthorizationError):
        clients(broker.service_url, not_ops).create_producer(topic)
    # ...and one without a "role" claim is not authenticated at all.
    with pytest.raises(pulsar.AuthenticationError):
        clients(broker.service_url, hs_token("ops")).create_producer(topic)


def test_bad_security_settings_name_the_key(tmp_path):
    cases = [
        ({"authenticationEnabled": True, "authenticationProviders": "token"}, "tokenSecretKey"),
        ({"authenticationEnabled": True, "tokenSecretKey": SECRET_URL}, "authenticationProviders"),
        (
            {"authenticationEnabled": True, "authenticationProviders": "token", "tokenSecretKey": "file:///no/such"},
            "tokenSecretKey",
        ),
        ({"brokerServicePortTls": 0}, "tlsCertificateFilePath"),
        (
            {
                "webServicePortTls": 0,
                "tlsCertificateFilePath": str(tmp_path / "none.pem"),
                "tlsKeyFilePath": str(tmp_path / "none.key"),
            },
            "tlsCertificateFilePath",
        ),
        ({"tokenPublicAlg": "HS1"}, "tokenPublicAlg"),
    ]
    for settings, key in cases:
        with pytest.raises(pulsar_rs.InvalidConfigError, match=key):
            pulsar_rs.Broker(**settings)


# --- authorization -----------------------------------------------------------------------------

ALICE = hs_token("alice")
BOB = hs_token("bob")


@pytest.fixture
def authz_broker(pulsar_broker_factory, tmp_path):
    return pulsar_broker_factory(
        data_dir=tmp_path / "data",
        authenticationEnabled=True,
        authenticationProviders=TOKEN_PROVIDER,
        tokenSecretKey=SECRET_URL,
        authorizationEnabled=True,
        superUserRoles="admin,ops",
    )


def ns_perm_url(broker, role: str | None = None) -> str:
    u = f"{broker.admin_url}/admin/v2/namespaces/public/default/permissions"
    return f"{u}/{role}" if role else u


def topic_perm_url(broker, topic: str, role: str | None = None) -> str:
    local = topic.removeprefix("persistent://")
    u = f"{broker.admin_url}/admin/v2/persistent/{local}/permissions"
    return f"{u}/{role}" if role else u


def perms(reply: tuple[int, object]) -> dict[str, list[str]]:
    """A permissions answer with each role's actions sorted (Pulsar returns sets)."""
    status, body = reply
    assert status == 200, reply
    return {role: sorted(actions) for role, actions in body.items()}


def test_superuser_may_do_everything(authz_broker, clients, topic):
    round_trip(clients(authz_broker.service_url, ADMIN), topic)
    round_trip(clients(authz_broker.service_url, hs_token("ops")), topic + "-ops")


def test_namespace_grants(authz_broker, clients, topic):
    alice = clients(authz_broker.service_url, ALICE)
    with pytest.raises(pulsar.AuthorizationError):
        alice.create_producer(topic)
    with pytest.raises(pulsar.AuthorizationError):
        alice.subscribe(topic, "sub")

    # Only a superuser may grant.
    assert http("POST", ns_perm_url(authz_broker, "alice"), ALICE, ["produce"])[0] == 401
    assert http("POST", ns_perm_url(authz_broker, "alice"), ADMIN, ["produce"])[0] == 204
    assert http("GET", ns_perm_url(authz_broker), ADMIN) == (200, {"alice": ["produce"]})

    producer = alice.create_producer(topic)
    producer.send(b"hello")
    with pytest.raises(pulsar.AuthorizationError):
        alice.subscribe(topic, "sub")

    assert http("POST", ns_perm_url(authz_broker, "alice"), ADMIN, ["produce", "consume"])[0] == 204
    consumer = alice.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    assert consumer.receive(timeout_millis=5000).data() == b"hello"
    consumer.close()
    producer.close()

    # Bob has nothing; revoking Alice's grant refuses her next producer.
    with pytest.raises(pulsar.AuthorizationError):
        clients(authz_broker.service_url, BOB).create_producer(topic)
    assert http("DELETE", ns_perm_url(authz_broker, "alice"), ADMIN)[0] == 204
    assert http("GET", ns_perm_url(authz_broker), ADMIN) == (200, {})
    with pytest.raises(pulsar.AuthorizationError):
        clients(authz_broker.service_url, ALICE).create_producer(topic)


def test_topic_grants(authz_broker, clients, topic):
    other = topic + "-other"
    assert http("POST", topic_perm_url(authz_broker, topic, "bob"), ADMIN, ["consume"])[0] == 204
    assert http("POST", ns_perm_url(authz_broker, "carol"), ADMIN, ["produce"])[0] == 204
    status, perms = http("GET", topic_perm_url(authz_broker, topic), ADMIN)
    assert status == 200 and perms == {"bob": ["consume"], "carol": ["produce"]}

    carol = clients(authz_broker.service_url, hs_token("carol"))
    producer = carol.create_producer(topic)
    producer.send(b"for-bob")

    bob = clients(authz_broker.service_url, BOB)
    consumer = bob.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    assert consumer.receive(timeout_millis=5000).data() == b"for-bob"
    with pytest.raises(pulsar.AuthorizationError):
        bob.create_producer(topic)
    with pytest.raises(pulsar.AuthorizationError):
        bob.subscribe(other, "sub")

    # A role with a grant may read the topic's stats; without one it may not.
    stats_url = f"{authz_broker.admin_url}/admin/v2/persistent/{topic.removeprefix('persistent://')}/stats"
    assert http("GET", stats_url, BOB)[0] == 200
    assert http("GET", stats_url, hs_token("mallory"))[0] == 401

    assert http("DELETE", topic_perm_url(authz_broker, topic, "bob"), ADMIN)[0] == 204
    with pytest.raises(pulsar.AuthorizationError):
        clients(authz_broker.service_url, BOB).subscribe(topic, "sub2")


def test_bad_grant_bodies(authz_broker):
    assert http("POST", ns_perm_url(authz_broker, "alice"), ADMIN, ["write"])[0] == 400
    assert http("POST", ns_perm_url(authz_broker, "alice"), ADMIN, {"produce": True})[0] == 400


def test_partitioned_topic_inherits_topic_grant(authz_broker, clients, topic):
    local = topic.removeprefix("persistent://")
    url = f"{authz_broker.admin_url}/admin/v2/persistent/{local}/partitions"
    req = urllib.request.Request(url, data=b"3", method="PUT", headers={"Authorization": f"Bearer {ADMIN}"})
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status in (200, 204)
    assert http("POST", topic_perm_url(authz_broker, topic, "alice"), ADMIN, ["produce", "consume"])[0] == 204
    round_trip(clients(authz_broker.service_url, ALICE), topic, n=9)


def test_policies_need_a_superuser(authz_broker):
    url = f"{authz_broker.admin_url}/admin/v2/namespaces/public/default/retention"
    body = {"retentionTimeInMinutes": 10, "retentionSizeInMB": 5}
    assert http("POST", url, ALICE, body)[0] == 401
    assert http("POST", url, ADMIN, body)[0] in (200, 204)
    assert http("GET", url, ALICE)[0] == 401
    assert http("GET", url, ADMIN)[0] == 200


@pytest.mark.slow  # about 5 s here (README, 'Tests')
def test_lookup_refused_with_lookup_response(authz_broker):
    raw = Raw(authz_broker.service_url)
    try:
        connect = fb(1, "raw-test") + fb(3, ALICE) + fv(4, 20) + fb(5, "token")
        raw.send(simple_frame(base(CONNECT, connect)))
        assert raw.recv()[0] == CONNECTED
        raw.send(simple_frame(base(LOOKUP, fb(1, "persistent://public/default/secret") + fv(2, 5))))
        ty, body = raw.recv()
        assert ty == LOOKUP_RESPONSE
        assert body[3] == [LOOKUP_FAILED] and body[4] == [5] and body[6] == [AUTHZ_ERROR]
        # GET_TOPICS_OF_NAMESPACE (regex subscriptions) needs a namespace grant: ERROR.
        raw.send(simple_frame(base(GET_TOPICS_OF_NAMESPACE, fv(1, 6) + fb(2, "public/default"))))
        ty, body = raw.recv()
        assert ty == ERROR and body[1] == [6] and body[2] == [AUTHZ_ERROR]
        # Authorization refusals leave the connection open.
        assert not raw.is_closed()
    finally:
        raw.close()


def test_grants_survive_a_restart(pulsar_broker_factory, clients, topic, tmp_path):
    settings = dict(
        data_dir=tmp_path / "data",
        authenticationEnabled=True,
        authenticationProviders=TOKEN_PROVIDER,
        tokenSecretKey=SECRET_URL,
        authorizationEnabled=True,
        superUserRoles=["admin"],
    )
    b1 = pulsar_broker_factory(**settings)
    assert http("POST", ns_perm_url(b1, "alice"), ADMIN, ["produce", "consume"])[0] == 204
    assert http("POST", topic_perm_url(b1, topic, "bob"), ADMIN, ["consume"])[0] == 204
    b1.stop()
    b2 = pulsar_broker_factory(**settings)
    assert perms(http("GET", ns_perm_url(b2), ADMIN)) == {"alice": ["consume", "produce"]}
    assert perms(http("GET", topic_perm_url(b2, topic), ADMIN)) == {
        "alice": ["consume", "produce"],
        "bob": ["consume"],
    }
    round_trip(clients(b2.service_url, ALICE), topic)


# --- TLS ---------------------------------------------------------------------------------------


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_pki(directory: Path, sans: list[x509.GeneralName]) -> tuple[Path, Path, Path]:
    """A test CA and a server certificate for ``sans``: (ca.pem, server.pem, server.key)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("pulsar-rs test CA"))
        .issuer_name(_name("pulsar-rs test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("pulsar-rs broker"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    ca_path, cert_path, key_path = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    ca_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return ca_path, cert_path, key_path


GOOD_SANS = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]


def tls_broker(factory, pki: tuple[Path, Path, Path], **extra) -> pulsar_rs.Broker:
    _, cert, key = pki
    return factory(
        advertisedAddress="localhost",
        brokerServicePortTls=0,
        webServicePortTls=0,
        tlsCertificateFilePath=str(cert),
        tlsKeyFilePath=str(key),
        **extra,
    )


def test_tls_is_off_by_default(pulsar_broker):
    assert pulsar_broker.service_url_tls is None
    assert pulsar_broker.admin_url_tls is None


def test_tls_round_trip_with_hostname_verification(pulsar_broker_factory, clients, topic, tmp_path):
    pki = make_pki(tmp_path / "pki", GOOD_SANS)
    broker = tls_broker(pulsar_broker_factory, pki)
    assert broker.service_url_tls.startswith("pulsar+ssl://localhost:")
    assert broker.admin_url_tls.startswith("https://localhost:")
    client = clients(broker.service_url_tls, tls_trust_certs_file_path=str(pki[0]), tls_validate_hostname=True)
    round_trip(client, topic)
    # The plain port keeps working beside the TLS one.
    round_trip(clients(broker.service_url), topic + "-plain")

    ctx = ssl.create_default_context(cafile=str(pki[0]))
    status, body = http("GET", f"{broker.admin_url_tls}/admin/v2/persistent/public/default", context=ctx)
    assert status == 200 and topic in body
    # Without the test CA the server certificate is not trusted.
    with pytest.raises(urllib.error.URLError):
        http("GET", f"{broker.admin_url_tls}/admin/v2/brokers/health", context=ssl.create_default_context())


def test_tls_with_token_authentication(pulsar_broker_factory, clients, topic, tmp_path):
    pki = make_pki(tmp_path / "pki", GOOD_SANS)
    broker = tls_broker(
        pulsar_broker_factory,
        pki,
        authenticationEnabled=True,
        authenticationProviders="token",
        tokenSecretKey=SECRET_URL,
    )
    trust = {"tls_trust_certs_file_path": str(pki[0]), "tls_validate_hostname": True}
    round_trip(clients(broker.service_url_tls, hs_token("alice"), **trust), topic)
    with pytest.raises(pulsar.AuthenticationError):
        clients(broker.service_url_tls, "garbage", **trust).create_producer(topic)
    ctx = ssl.create_default_context(cafile=str(pki[0]))
    url = f"{broker.admin_url_tls}/admin/v2/persistent/public/default"
    assert http("GET", url, context=ctx)[0] == 401
    assert http("GET", url, hs_token("alice"), context=ctx)[0] == 200


def test_tls_hostname_mismatch_fails(pulsar_broker_factory, tmp_path, topic):
    pki = make_pki(tmp_path / "pki", [x509.DNSName("wrong.example")])
    broker = tls_broker(pulsar_broker_factory, pki)
    client = pulsar.Client(
        broker.service_url_tls,
        tls_trust_certs_file_path=str(pki[0]),
        tls_validate_hostname=True,
        operation_timeout_seconds=3,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
    )
    try:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer(topic)
    finally:
        client.close()
    # The same certificate is accepted once hostname verification is off (chain still checked).
    lenient = pulsar.Client(
        broker.service_url_tls,
        tls_trust_certs_file_path=str(pki[0]),
        tls_validate_hostname=False,
        operation_timeout_seconds=OP_TIMEOUT_S,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
    )
    try:
        round_trip(lenient, topic)
    finally:
        lenient.close()
    ctx = ssl.create_default_context(cafile=str(pki[0]))
    with pytest.raises(urllib.error.URLError, match=r"(?i)hostname|certificate"):
        http("GET", f"{broker.admin_url_tls}/admin/v2/brokers/health", context=ctx)


def test_mutual_tls_requires_a_client_certificate(pulsar_broker_factory, tmp_path):
    pki = make_pki(tmp_path / "pki", GOOD_SANS)
    broker = tls_broker(
        pulsar_broker_factory,
        pki,
        tlsTrustCertsFilePath=str(pki[0]),
        tlsRequireTrustedClientCertOnConnect=True,
    )
    ctx = ssl.create_default_context(cafile=str(pki[0]))
    with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
        http("GET", f"{broker.admin_url_tls}/admin/v2/brokers/health", context=ctx)
