"""OAuth 2.0 as Pulsar users deploy it, with the official client's ``AuthenticationOauth2``.

The client runs the client-credentials flow against an issuer (discovery document, then the
token endpoint) and presents the access token with the ``token`` method; the broker checks it
with ``AuthenticationProviderToken`` and the issuer's public key (``tokenPublicKey``,
``tokenPublicAlg``) and, when set, ``tokenAudience``: Pulsar's own recipe for OAuth 2.0. The issuer
here is a real HTTP server on loopback that signs RS256 JWTs.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pulsar
import pytest

from conftest import OP_TIMEOUT_S, receive_all

jwt = pytest.importorskip("jwt")
rsa = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.rsa")
serialization = pytest.importorskip("cryptography.hazmat.primitives.serialization")

pytestmark = pytest.mark.timeout(60)

CLIENT_ID, CLIENT_SECRET = "orders-service", "s3cret"
TOKEN_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"


class Issuer:
    """An OAuth 2.0 authorization server on loopback: discovery + client-credentials grant."""

    def __init__(self, audience: str) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.audience = audience
        self.grants: list[dict[str, str]] = []
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args) -> None:
                pass

            def _json(self, code: int, body: dict) -> None:
                raw = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                if self.path == "/.well-known/openid-configuration":
                    self._json(200, {"issuer": issuer.url, "token_endpoint": f"{issuer.url}/oauth/token"})
                else:
                    self._json(404, {"error": "not_found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
                issuer.grants.append(form)
                ok = (
                    form.get("grant_type") == "client_credentials"
                    and form.get("client_id") == CLIENT_ID
                    and form.get("client_secret") == CLIENT_SECRET
                )
                if self.path != "/oauth/token" or not ok:
                    self._json(401, {"error": "invalid_client"})
                    return
                token = issuer.token(form["client_id"], form.get("audience", issuer.audience))
                self._json(200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def token(self, subject: str, audience: str) -> str:
        now = int(time.time())
        claims = {"sub": subject, "aud": audience, "iss": self.url, "iat": now, "exp": now + 3600}
        return jwt.encode(claims, self.key, algorithm="RS256")

    def public_key_url(self) -> str:
        der = self.key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return "data:;base64," + base64.b64encode(der).decode()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    i = Issuer(audience="pulsar-rs-cluster")
    yield i
    i.close()


def oauth2_client(service_url: str, issuer: Issuer, secret: str = CLIENT_SECRET, audience: str | None = None):
    creds = json.dumps({"client_id": CLIENT_ID, "client_secret": secret})
    params = {
        "issuer_url": issuer.url,
        "private_key": "data:application/json;base64," + base64.b64encode(creds.encode()).decode(),
        "audience": audience or issuer.audience,
    }
    return pulsar.Client(
        service_url,
        authentication=pulsar.AuthenticationOauth2(json.dumps(params)),
        operation_timeout_seconds=OP_TIMEOUT_S,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
    )


@pytest.fixture
def broker(pulsar_broker_factory, issuer):
    return pulsar_broker_factory(
        authenticationEnabled=True,
        authenticationProviders=TOKEN_PROVIDER,
        tokenPublicKey=issuer.public_key_url(),
        tokenPublicAlg="RS256",
        tokenAudience="pulsar-rs-cluster",
        authorizationEnabled=True,
        superUserRoles=CLIENT_ID,
    )


def test_client_credentials_flow_produces_and_consumes(broker, issuer, topic):
    client = oauth2_client(broker.service_url, issuer)
    try:
        consumer = client.subscribe(topic, "sub")
        producer = client.create_producer(topic)
        for i in range(5):
            producer.send(f"m{i}".encode())
        assert [m.data() for m in receive_all(consumer, 5)] == [f"m{i}".encode() for i in range(5)]
    finally:
        client.close()
    # The client really went through the issuer, with its credentials and audience.
    assert issuer.grants
    assert {g["client_id"] for g in issuer.grants} == {CLIENT_ID}
    assert {g["audience"] for g in issuer.grants} == {"pulsar-rs-cluster"}


def test_token_for_another_audience_is_refused(broker, issuer, topic):
    client = oauth2_client(broker.service_url, issuer, audience="some-other-service")
    try:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer(topic)
    finally:
        client.close()
    assert issuer.grants, "the client got a token; the broker refused it"


def test_token_signed_by_another_issuer_is_refused(pulsar_broker_factory, issuer, topic):
    other = Issuer(audience="pulsar-rs-cluster")
    try:
        b = pulsar_broker_factory(
            authenticationEnabled=True,
            authenticationProviders=TOKEN_PROVIDER,
            tokenPublicKey=other.public_key_url(),
            tokenPublicAlg="RS256",
        )
        client = oauth2_client(b.service_url, issuer)
        try:
            with pytest.raises(pulsar.PulsarException):
                client.create_producer(topic)
        finally:
            client.close()
    finally:
        other.close()
