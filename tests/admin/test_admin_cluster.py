"""The cluster calls of ``pulsar_rs.Admin`` and ``pulsar-rs admin`` (pulsar-admin's ``brokers list`` /
``leader-broker`` / ``namespaces``, ``namespaces bundles`` / ``unload``, ``topics bundle-range`` /
``lookup``) against a broker on its own, which answers as a one-broker cluster: its id is the
``host:port`` of its admin URL, it leads, a namespace has the bundles it was created with (4 by
default) and the broker owns those its topics are in. Redirects (307, 308),
which a broker of a cluster answers for a bundle another broker owns, are followed with the same
method, body and token, through a small redirecting server in front of the broker."""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import admin as rest
from pulsar_rs import Admin, AdminError
from pulsar_rs.cli import main

FULL_RANGE = "0x00000000_0xffffffff"
#: A namespace's bundles by default (`defaultNumberOfNamespaceBundles` 4, as Pulsar's standalone.conf).
RANGES = ["0x00000000_0x40000000", "0x40000000_0x80000000", "0x80000000_0xc0000000", "0xc0000000_0xffffffff"]
FIRST = RANGES[0]


def range_of(topic: str) -> str:
    """The default bundle a topic (full name) hashes to: Pulsar's CRC-32 of the name."""
    h = zlib.crc32(topic.encode())
    return next(r for r in RANGES if h < int(r.split("_")[1], 16) or r == RANGES[-1])


OWNED = {"broker_assignment": "shared", "is_controlled": False, "is_active": True}


def broker_id(pulsar_broker) -> str:
    return pulsar_broker.admin_url.removeprefix("http://").rstrip("/")


def test_brokers_leader_and_owned_namespaces(pulsar_broker, client):
    admin = Admin(pulsar_broker.admin_url)
    me = broker_id(pulsar_broker)
    assert admin.brokers.list("standalone") == [me]
    assert admin.brokers.leader_broker() == {"brokerId": me, "serviceUrl": pulsar_broker.admin_url}
    admin.tenants.create("acme")
    admin.namespaces.create("acme/orders")
    # As on Pulsar, the broker owns the bundles its topics' lookups landed on: none yet, then
    # the one bundle (of the namespace's four) a producer's topic is in.
    assert admin.brokers.owned_namespaces("standalone", me) == {}
    client.create_producer("persistent://acme/orders/t")
    client.create_producer("persistent://public/default/t")
    assert admin.brokers.owned_namespaces("standalone", me) == {
        f"acme/orders/{range_of('persistent://acme/orders/t')}": OWNED,
        f"public/default/{range_of('persistent://public/default/t')}": OWNED,
    }
    with pytest.raises(AdminError) as e:
        admin.brokers.list("elsewhere")
    assert (e.value.status, e.value.reason) == (412, "Cluster elsewhere does not exist")
    with pytest.raises(AdminError) as e:
        admin.brokers.owned_namespaces("standalone", "10.9.8.7:8080")
    assert (e.value.status, e.value.reason) == (404, "Broker 10.9.8.7:8080 not found")


def test_bundles_unload_bundle_range_lookup(pulsar_broker, client):
    admin = Admin(pulsar_broker.admin_url)
    four = {"boundaries": ["0x00000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"], "numBundles": 4}
    assert admin.namespaces.bundles("public/default") == four
    # Unload answers 204 (no body), the whole namespace or one bundle.
    assert admin.namespaces.unload("public/default") is None
    assert admin.namespaces.unload("public/default", bundle=FIRST) is None
    assert rest(pulsar_broker.admin_url, "PUT", "/admin/v2/namespaces/public/default/unload") == (204, None)
    path = f"/admin/v2/namespaces/public/default/{FIRST}/unload"
    assert rest(pulsar_broker.admin_url, "PUT", path) == (204, None)
    # A range that is not one of the namespace's bundles: Pulsar's 412.
    with pytest.raises(AdminError) as e:
        admin.namespaces.unload("public/default", bundle=FULL_RANGE)
    assert (e.value.status, e.value.reason) == (
        412,
        "Invalid upper boundary for bundle public/default/0x00000000_0xffffffff. "
        "Expected upper boundary of public/default/0x00000000_0x40000000",
    )
    for call in (lambda: admin.namespaces.bundles("public/nope"), lambda: admin.namespaces.unload("public/nope")):
        with pytest.raises(AdminError) as e:
            call()
        assert (e.value.status, e.value.reason) == (404, "Namespace does not exist")

    for topic in ("persistent://public/default/t", "public/default/t", "t"):
        assert admin.topics.bundle_range(topic) == range_of("persistent://public/default/t"), topic
    assert admin.topics.bundle_range("non-persistent://public/default/t") == range_of(
        "non-persistent://public/default/t"
    )
    assert admin.topics.lookup("persistent://public/default/t") == {
        "brokerUrl": pulsar_broker.service_url,
        "brokerUrlTls": "",
        "httpUrl": pulsar_broker.admin_url,
        "httpUrlTls": "",
        "nativeUrl": pulsar_broker.service_url,
    }
    # The lookup's broker serves the topic.
    producer = client.create_producer("persistent://public/default/t")
    producer.send(b"x")
    producer.close()
    assert admin.topics.stats("persistent://public/default/t")["msgInCounter"] == 1


class Server:
    """A small HTTP server on an ephemeral port: ``respond(method, path, body)`` gives each answer
    as ``(status, headers, body)``; every request is recorded in ``seen`` as ``(method, path,
    Authorization, body)``."""

    def __init__(self, respond: Callable[[str, str, bytes], tuple[int, dict[str, str], bytes]]) -> None:
        self.seen: list[tuple[str, str, str | None, bytes]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                outer.seen.append((self.command, self.path, self.headers.get("Authorization"), body))
                status, headers, out = respond(self.command, self.path, body)
                self.send_response(status)
                for k, v in {**headers, "Content-Length": str(len(out))}.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_PUT = do_POST = do_DELETE = _answer

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


class Redirector(Server):
    """Answers every request 307 (or 308): first to itself under ``/hop`` with a relative
    ``Location``, then to ``target`` at the same path and query; ``loop`` makes it redirect to
    itself forever."""

    def __init__(self, target: str, code: int = 307) -> None:
        self.code = code
        self.loop = False

        def respond(method: str, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
            if self.loop or not path.startswith("/hop/"):
                return code, {"Location": "/hop" + path.removeprefix("/hop")}, b""
            return code, {"Location": target.rstrip("/") + path.removeprefix("/hop")}, b""

        super().__init__(respond)


@pytest.fixture(params=[307, 308])
def redirector(request, pulsar_broker) -> Iterator[Redirector]:
    r = Redirector(pulsar_broker.admin_url, code=request.param)
    yield r
    r.close()


def test_redirects_are_followed_with_method_body_and_token(pulsar_broker, redirector):
    direct = Admin(pulsar_broker.admin_url)
    via = Admin(redirector.url, token="tok")
    assert via.topics.lookup("t") == direct.topics.lookup("t")
    assert via.brokers.leader_broker()["brokerId"] == broker_id(pulsar_broker)
    via.namespaces.unload("public/default", bundle=FIRST)
    via.namespaces.create("public/moved", {"message_ttl_in_seconds": 42})
    assert direct.namespaces.policies("public/moved")["message_ttl_in_seconds"] == 42
    lookup = "/lookup/v2/topic/persistent/public/default/t"
    unload = f"/admin/v2/namespaces/public/default/{FIRST}/unload"
    body = json.dumps({"message_ttl_in_seconds": 42}).encode()
    auth = "Bearer tok"
    assert redirector.seen == [
        ("GET", lookup, auth, b""),
        ("GET", "/hop" + lookup, auth, b""),
        ("GET", "/admin/v2/brokers/leaderBroker", auth, b""),
        ("GET", "/hop/admin/v2/brokers/leaderBroker", auth, b""),
        ("PUT", unload, auth, b""),
        ("PUT", "/hop" + unload, auth, b""),
        ("PUT", "/admin/v2/namespaces/public/moved", auth, body),
        ("PUT", "/hop/admin/v2/namespaces/public/moved", auth, body),
    ]
    # destinationBroker (pulsar-admin's `unload -b RANGE -d BROKER`) rides along the redirects.
    redirector.seen.clear()
    me = broker_id(pulsar_broker)
    via.namespaces.unload("public/default", bundle=FIRST, destination_broker=me)
    to = urllib.parse.quote(me, safe="")
    assert [(m, p) for m, p, _, _ in redirector.seen] == [
        ("PUT", f"{unload}?destinationBroker={to}"),
        ("PUT", f"/hop{unload}?destinationBroker={to}"),
    ]
    # A destination that is not a live broker: Pulsar's 412.
    with pytest.raises(AdminError) as e:
        via.namespaces.unload("public/default", bundle=FIRST, destination_broker="10.9.8.7:8080")
    assert (e.value.status, e.value.reason) == (
        412,
        "Not allowed unload namespace bundle to inactive destination broker",
    )
    # A refusal at the end of the redirects is the broker's.
    with pytest.raises(AdminError) as e:
        via.namespaces.bundles("public/nope")
    assert (e.value.status, e.value.reason) == (404, "Namespace does not exist")


def test_a_redirect_loop_gives_up(redirector):
    redirector.loop = True
    with pytest.raises(AdminError) as e:
        Admin(redirector.url).topics.lookup("t")
    assert e.value.status == redirector.code
    last = f"{redirector.url}/hop/lookup/v2/topic/persistent/public/default/t"
    assert e.value.reason == f"more than 10 redirects, the last to {last}"
    assert len(redirector.seen) == 11


def test_load_report_shows_the_bundles_with_their_rates(pulsar_broker, client, capsys):
    """``broker-stats load-report``: on its own the broker reports the bundles of its loaded
    topics with their rates (what a cluster's leader sheds load by), and its CPU."""
    admin = Admin(pulsar_broker.admin_url)
    topic = "persistent://public/default/load-report"
    bundle = f"public/default/{range_of(topic)}"
    producer = client.create_producer(topic)
    deadline = time.monotonic() + 30
    while True:
        for _ in range(50):
            producer.send(b"x" * 100)
        report = admin.broker_stats.load_report()
        stats = report["lastStats"].get(bundle)
        if stats is not None and stats["msgRateIn"] > 0:
            break
        assert time.monotonic() < deadline, report
        time.sleep(0.5)  # the rates are measured over the broker's own window: polled
    assert bundle in report["bundles"] and report["numBundles"] == len(report["bundles"])
    assert stats["producerCount"] == 1 and stats["topics"] == 1, stats
    assert stats["msgThroughputIn"] >= 100 * stats["msgRateIn"] * 0.9, stats
    assert report["msgRateIn"] >= stats["msgRateIn"] and report["numProducers"] >= 1, report
    limit = report["cpu"]["limit"]
    assert limit >= 100.0 and limit % 100 == 0, report["cpu"]  # 100 per core
    assert report["pulsarServiceUrl"] == pulsar_broker.service_url
    assert main(["admin", "--admin-url", pulsar_broker.admin_url, "--json", "broker-stats", "load-report"]) == 0
    assert bundle in json.loads(capsys.readouterr().out)["bundles"]


def test_cli(pulsar_broker, capsys):
    url = ["admin", "--admin-url", pulsar_broker.admin_url]
    me = broker_id(pulsar_broker)

    def out(*args: str) -> str:
        assert main([*url, *args]) == 0, args
        return capsys.readouterr().out

    assert out("brokers", "list", "standalone") == f"{me}\n"
    assert out("brokers", "leader-broker").splitlines() == [
        f"brokerId    {me}",
        f"serviceUrl  {pulsar_broker.admin_url}",
    ]
    assert json.loads(out("--json", "brokers", "leader-broker")) == {
        "brokerId": me,
        "serviceUrl": pulsar_broker.admin_url,
    }
    owned = json.loads(out("--json", "brokers", "namespaces", "standalone", "--url", me))
    assert owned == {}  # no topic loaded yet
    assert json.loads(out("--json", "brokers", "namespaces", "standalone", "-u", me)) == owned
    assert out("namespaces", "bundles", "public/default").splitlines() == [
        "boundaries  0x00000000, 0x40000000, 0x80000000, 0xc0000000, 0xffffffff",
        "numBundles  4",
    ]
    assert out("namespaces", "create", "public/eight", "--bundles", "8") == ""
    assert json.loads(out("--json", "namespaces", "bundles", "public/eight"))["numBundles"] == 8
    Admin(pulsar_broker.admin_url).namespaces.create("public/two", {"message_ttl_in_seconds": 5}, bundles=2)
    assert json.loads(out("--json", "namespaces", "bundles", "public/two"))["boundaries"] == [
        "0x00000000",
        "0x80000000",
        "0xffffffff",
    ]
    assert out("namespaces", "unload", "public/default") == ""
    assert out("namespaces", "unload", "public/default", "--bundle", FIRST) == ""
    assert out("namespaces", "unload", "public/default", "-b", FIRST) == ""
    assert out("namespaces", "unload", "public/default", "-b", FIRST, "-d", me) == ""
    assert out("namespaces", "unload", "public/default", "-b", FIRST, "--destinationBroker", me) == ""
    # split-bundle: halves by default, at the positions given with specified_positions_divide (two
    # topics in the bundle at least, as Pulsar asks), refusals as Pulsar's 412s.
    assert out("namespaces", "split-bundle", "public/two", "-b", "0x00000000_0x80000000") == ""
    assert out("namespaces", "split-bundle", "public/two", "--bundle", "0x80000000_0xffffffff", "-u") == ""
    assert json.loads(out("--json", "namespaces", "bundles", "public/two"))["boundaries"] == [
        "0x00000000",
        "0x40000000",
        "0x80000000",
        "0xbfffffff",
        "0xffffffff",
    ]
    Admin(pulsar_broker.admin_url).namespaces.split_bundle("public/eight", "0x00000000_0x20000000", True)
    assert json.loads(out("--json", "namespaces", "bundles", "public/eight"))["numBundles"] == 9
    assert main([*url, "namespaces", "split-bundle", "public/two", "-b", FIRST, "-san", "nope"]) == 1
    assert "412 Unsupported namespace bundle split algorithm" in capsys.readouterr().err
    san = ["-san", "specified_positions_divide"]
    assert main([*url, "namespaces", "split-bundle", "public/two", "-b", "0x00000000_0x40000000", *san]) == 1
    assert "splitBoundaries must not be empty" in capsys.readouterr().err
    assert out("topics", "bundle-range", "persistent://public/default/t") == (
        f"{range_of('persistent://public/default/t')}\n"
    )
    assert json.loads(out("--json", "topics", "lookup", "persistent://public/default/t"))["brokerUrl"] == (
        pulsar_broker.service_url
    )
    # Refusals: the broker's status and reason on stderr, exit status 1.
    assert main([*url, "brokers", "list", "elsewhere"]) == 1
    assert capsys.readouterr().err == "pulsar-rs admin: 412 Cluster elsewhere does not exist\n"
    assert main([*url, "brokers", "namespaces", "standalone", "--url", "10.9.8.7:8080"]) == 1
    assert capsys.readouterr().err == "pulsar-rs admin: 404 Broker 10.9.8.7:8080 not found\n"
    assert main([*url, "namespaces", "unload", "public/nope"]) == 1
    assert capsys.readouterr().err == "pulsar-rs admin: 404 Namespace does not exist\n"
    assert main([*url, "namespaces", "unload", "public/default", "-d", me]) == 1
    assert capsys.readouterr().err == "pulsar-rs admin: destination_broker needs a bundle\n"
    # pulsar-admin's `brokers namespaces` needs the broker.
    with pytest.raises(SystemExit):
        main([*url, "brokers", "namespaces", "standalone"])
    assert "--url" in capsys.readouterr().err


def test_unload_destination_needs_a_bundle(pulsar_broker):
    with pytest.raises(ValueError, match="destination_broker needs a bundle"):
        Admin(pulsar_broker.admin_url).namespaces.unload("public/default", destination_broker="10.9.8.7:8080")


def test_bundle_range_bare_or_json():
    """Apache Pulsar answers the range bare (with a JSON content type); a JSON string is read too."""
    answers = {"t": b"0x40000000_0x80000000", "u": b'"0x80000000_0xc0000000"\n'}

    def respond(method: str, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        topic = path.removeprefix("/lookup/v2/topic/persistent/public/default/").removesuffix("/bundle")
        if topic in answers:
            return 200, {"Content-Type": "application/json"}, answers[topic]
        return 404, {"Content-Type": "application/json"}, b'{"reason": "Namespace does not exist"}'

    server = Server(respond)
    try:
        admin = Admin(server.url)
        assert admin.topics.bundle_range("persistent://public/default/t") == "0x40000000_0x80000000"
        assert admin.topics.bundle_range("public/default/u") == "0x80000000_0xc0000000"
        with pytest.raises(AdminError) as e:
            admin.topics.bundle_range("public/default/v")
        assert (e.value.status, e.value.reason) == (404, "Namespace does not exist")
        assert [(m, p) for m, p, _, _ in server.seen] == [
            ("GET", f"/lookup/v2/topic/persistent/public/default/{t}/bundle") for t in "tuv"
        ]
    finally:
        server.close()
