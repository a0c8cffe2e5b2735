"""Token authentication helpers shared by the security, admin and fuzz rooms: the test secret,
broker settings for tokens with authorization, HS256 tokens, clients with a token, raw admin
HTTP calls and a produce/consume round trip. Kept here (on ``sys.path``, beside conftest) so a
room collected alone still imports them."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request

import jwt
import pulsar

from conftest import OP_TIMEOUT_S, receive_all

SECRET = b"pulsar-rs-test-secret-0123456789abcdef"
SECRET_URL = "data:;base64," + base64.b64encode(SECRET).decode()
TOKEN_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
AUTHN_ERROR, AUTHZ_ERROR = 3, 4
ERROR, GET_TOPICS_OF_NAMESPACE = 14, 32
LOOKUP_FAILED = 2


def token_authz_settings(anonymous_role: str) -> dict:
    """Broker settings for token authentication with authorization on: superuser ``admin``
    (``ADMIN``'s role), unauthenticated connections get ``anonymous_role``."""
    return {
        "authenticationEnabled": True,
        "authenticationProviders": TOKEN_PROVIDER,
        "tokenSecretKey": SECRET_URL,
        "authorizationEnabled": True,
        "superUserRoles": "admin",
        "anonymousUserRole": anonymous_role,
    }


def hs_token(sub: str, **claims) -> str:
    return jwt.encode({"sub": sub, **claims}, SECRET, algorithm="HS256")


def client_for(url: str, token: str | None = None, **kw) -> pulsar.Client:
    auth = pulsar.AuthenticationToken(token) if token is not None else None
    return pulsar.Client(
        url,
        authentication=auth,
        operation_timeout_seconds=OP_TIMEOUT_S,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
        **kw,
    )


def http(method: str, url: str, token: str | None = None, body=None, context=None) -> tuple[int, object]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10, context=context) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw.strip().startswith((b"{", b"[")) else raw
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def round_trip(client: pulsar.Client, topic: str, n: int = 5) -> None:
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(topic)
    for i in range(n):
        producer.send(f"m{i}".encode())
    got = receive_all(consumer, n)
    assert [m.data() for m in got] == [f"m{i}".encode() for i in range(n)]
    producer.close()
    consumer.close()


#: A superuser's token under ``token_authz_settings``.
ADMIN = hs_token("admin")
