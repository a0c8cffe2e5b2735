"""The web console at ``/`` on the admin port, in a real headless Chromium (Debian's
``chromium`` + ``chromedriver``, driven over WebDriver by ``tests/webdriver.py``), against a broker
fed by the official ``pulsar-client``: the topic list shows a topic and its live backlog, the
charts fill from the broker's in-memory history, the operator actions go through the admin API,
and token login works when authentication is on. The overview test takes a screenshot into its
temporary directory; ``PULSAR_RS_CONSOLE_SCREENSHOT=docs/console.png`` asks it to save a copy there
(how docs/console.md's picture is refreshed): a plain run writes nothing into the source tree.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import threading
import time
import urllib.error
import urllib.request

import pulsar
import pytest

from conftest import OP_TIMEOUT_S
from webdriver import browser, find_browser

pytestmark = pytest.mark.timeout(180)

#: Where to copy the overview screenshot, when asked (docs/console.md); otherwise it stays in tmp_path.
SCREENSHOT_COPY = os.environ.get("PULSAR_RS_CONSOLE_SCREENSHOT")
NEED_BROWSER = pytest.mark.skipif(
    find_browser() is None,
    reason="chromium/chromedriver not found (apt-get install chromium chromium-driver; .ci/run does it)",
)


def http(url: str, method: str = "GET", body: bytes | None = None, token: str | None = None):
    req = urllib.request.Request(url, data=body, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=10) as r:
        raw = r.read()
        return json.loads(raw) if raw and "json" in r.headers.get("content-type", "") else raw


def client_for(url: str, token: str | None = None) -> pulsar.Client:
    return pulsar.Client(
        url,
        authentication=pulsar.AuthenticationToken(token) if token else None,
        operation_timeout_seconds=OP_TIMEOUT_S,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
    )


def backlog_topic(client: pulsar.Client, topic: str, n: int) -> pulsar.Producer:
    """Creates ``topic`` with a durable subscription ``sub`` (no consumer left) and ``n`` messages."""
    client.subscribe(topic, "sub").close()
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(n):
        producer.send(f"m{i}".encode())
    return producer


def test_console_api_overview_and_history(pulsar_broker):
    """The console's JSON endpoints (no browser needed): overview rows and sampled history."""
    topic = "persistent://public/default/console-api"
    client = client_for(pulsar_broker.service_url)
    try:
        backlog_topic(client, topic, 7)
        http(f"{pulsar_broker.admin_url}/admin/v2/persistent/public/default/parts/partitions", "PUT", b"3")
        ov = http(f"{pulsar_broker.admin_url}/console/api/overview")
        rows = {r["name"]: r for r in ov["topics"]}
        assert rows[topic]["msgBacklog"] == 7
        assert rows[topic]["subscriptions"] == 1 and rows[topic]["producers"] == 1
        assert rows[topic]["storageSize"] > 0
        assert {"name": "persistent://public/default/parts", "partitions": 3} in ov["partitioned"]
        deadline = time.monotonic() + 10
        while True:
            points = http(f"{pulsar_broker.admin_url}/console/api/history?topic={topic}")["points"]
            if points and points[-1]["backlog"] == 7:
                break
            assert time.monotonic() < deadline, f"history never sampled the backlog: {points}"
            time.sleep(0.3)  # poll: the history is sampled on a real-time schedule
        broker = http(f"{pulsar_broker.admin_url}/console/api/history")["points"]
        assert broker and broker[-1]["backlog"] >= 7
        # The cluster view: a broker on its own is a one-broker cluster owning the bundles of its
        # loaded topics (as `brokers namespaces` lists them).
        view = http(f"{pulsar_broker.admin_url}/console/api/cluster")
        me = http(f"{pulsar_broker.admin_url}/admin/v2/brokers/standalone")[0]
        owned = http(f"{pulsar_broker.admin_url}/admin/v2/brokers/standalone/{me}/ownedNamespaces")
        assert view["cluster"] == "standalone" and view["leader"] == me, view
        assert [(b["brokerId"], b["leader"], b["self"]) for b in view["brokers"]] == [(me, True, True)]
        assert view["brokers"][0]["bundles"] == sorted(owned) and owned, (view, owned)
        page = http(f"{pulsar_broker.admin_url}/")
        assert b"pulsar_rs console" in page
        assert b"/console/app.js" in page
        assert b"function chart" in http(f"{pulsar_broker.admin_url}/console/app.js")
    finally:
        client.close()


@pytest.mark.slow  # about 12 s here (README, 'Tests')
@NEED_BROWSER
def test_console_shows_topics_live_backlog_and_acts(pulsar_broker, tmp_path):
    admin = pulsar_broker.admin_url
    topic = "persistent://public/default/console-orders"
    client = client_for(pulsar_broker.service_url)
    stop = threading.Event()
    try:
        producer = backlog_topic(client, topic, 10)
        # Some steady traffic on a partitioned topic, so rates and charts have something to show.
        http(f"{admin}/admin/v2/persistent/public/default/payments/partitions", "PUT", b"3")
        payments = "persistent://public/default/payments"
        consumer = client.subscribe(payments, "billing", consumer_type=pulsar.ConsumerType.Shared)
        load = client.create_producer(payments)

        def feed() -> None:
            i = 0
            while not stop.is_set():
                load.send_async(f"p{i}".encode() * 20, None)
                i += 1
                if i % 4 == 0:
                    m = consumer.receive(timeout_millis=1000)
                    consumer.acknowledge(m)
                time.sleep(0.01)  # paces the steady load (real-time rates for the charts)

        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
        with browser() as b:
            b.get(admin + "/")
            row = f"tr[data-topic='{topic}']"
            b.wait_text(f"{row} td.backlog", lambda t: t == "10")
            assert b.wait_text(f"{row} td.subscriptions", lambda t: t == "1")
            for i in range(15):
                producer.send(f"more{i}".encode())
            b.wait_text(f"{row} td.backlog", lambda t: t == "25")
            b.wait_text(f"tr[data-topic='{payments}'] td:nth-child(2)", lambda t: t == "3")
            # The broker's history fills the charts (sampled every 2 s).
            deadline = time.monotonic() + 15
            while int(b.script("return +document.getElementById('charts').dataset.points") or 0) < 4:
                assert time.monotonic() < deadline, "charts never got history points"
                time.sleep(0.5)  # poll: history is sampled every 2 s of real time
            time.sleep(2.5)  # one more refresh so the screenshot shows the latest figures
            shot = tmp_path / "console.png"
            b.screenshot(shot)
            assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            if SCREENSHOT_COPY:
                shutil.copyfile(shot, SCREENSHOT_COPY)

            # Topic page: subscription backlog, then "Clear backlog" through the admin API.
            b.get(admin + "/#/topic/" + urllib.request.quote(topic, safe=""))
            sub_row = "tr[data-subscription='sub']"
            b.wait_text(f"{sub_row} td.backlog", lambda t: t == "25")
            b.wait_text("#ledgers tbody", lambda t: len(t) > 0)
            # "Why not delivering?": the subscription has a backlog and no consumer.
            b.click(b.find_all(f"{sub_row} button.diagnose")[0])
            b.wait_text("#diagnosis", lambda t: "backlog 25" in t and "NO_CONSUMERS" in t)
            # "Offload now": nothing closed to offload yet (one ledger, the current one): SUCCESS,
            # with the current ledger as the first one kept.
            b.wait_text("#offload-status", lambda t: t.startswith("NOT_RUN"))
            b.click(b.find_all("#offload-now")[0])
            b.wait_text("#offload-status", lambda t: t.startswith("SUCCESS, first ledger kept"))
            b.script("window.confirm = () => true")
            b.click(b.find_all(f"{sub_row} button.clear-backlog")[0])
            b.wait_text("#action-result", lambda t: "clear backlog: done" in t)
            b.wait_text(f"{sub_row} td.backlog", lambda t: t == "0")
            stats = http(f"{admin}/admin/v2/persistent/public/default/console-orders/stats")
            assert stats["subscriptions"]["sub"]["msgBacklog"] == 0

            # Set a policy from the page; the admin API reads it back.
            b.wait_text("#policies", lambda t: "publishRate" in t)
            b.script(
                "document.getElementById('policy-kind').value = 'retention';"
                "document.getElementById('policy-body').value ="
                " JSON.stringify({retentionTimeInMinutes: 42, retentionSizeInMB: 7});"
            )
            b.click(b.find_all("#policy-set")[0])
            b.wait_text("#action-result", lambda t: "set retention: done" in t)
            b.wait_text("#policies", lambda t: '"retentionTimeInMinutes":42' in t)
            got = http(f"{admin}/admin/v2/persistent/public/default/console-orders/retention")
            assert got == {"retentionTimeInMinutes": 42, "retentionSizeInMB": 7}
            # A bad policy body shows the broker's reason instead of failing silently.
            b.script("document.getElementById('policy-body').value = '{\"nope\": 1}'")
            b.click(b.find_all("#policy-set")[0])
            b.wait_text("#action-result", lambda t: "invalid JSON body" in t)

            # The cluster page: this broker, leading, with the bundles of its topics.
            b.click(b.find_all("#cluster-link")[0])
            b.wait_text("#brokers tr.broker td.broker-id", lambda t: "(this broker)" in t)
            assert b.wait_text("#brokers tr.broker td:nth-child(2)", lambda t: t == "leader")
            me = http(f"{admin}/admin/v2/brokers/standalone")[0]
            expected = sorted(http(f"{admin}/admin/v2/brokers/standalone/{me}/ownedNamespaces"))
            assert expected, "the topics' bundles are owned"
            b.wait_text("#brokers tr.broker td.bundles", lambda t: t.split() == expected)
            assert b.wait_text("#brokers tr.broker td.bundle-count", lambda t: t == str(len(expected)))
    finally:
        stop.set()
        client.close()


SECRET = b"pulsar-rs-console-secret-0123456789abcdef"
TOKEN_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"


@NEED_BROWSER
def test_console_token_login(pulsar_broker_factory):
    jwt = pytest.importorskip("jwt")
    broker = pulsar_broker_factory(
        authenticationEnabled=True,
        authenticationProviders=TOKEN_PROVIDER,
        tokenSecretKey="data:;base64," + base64.b64encode(SECRET).decode(),
    )
    token = jwt.encode({"sub": "admin"}, SECRET, algorithm="HS256")
    # The page is public (the login form must load); its data is not.
    assert b"Log in" in http(f"{broker.admin_url}/")
    with pytest.raises(urllib.error.HTTPError) as e:
        http(f"{broker.admin_url}/console/api/overview")
    assert e.value.code == 401
    e.value.close()
    topic = "persistent://public/default/console-secret"
    client = client_for(broker.service_url, token)
    try:
        backlog_topic(client, topic, 3)
        with browser() as b:
            b.get(broker.admin_url + "/")
            b.wait_text("#login", lambda t: "Log in" in t)
            assert not b.find_all(f"tr[data-topic='{topic}']")
            b.type(b.find_all("#token")[0], "not-a-token")
            b.click(b.find_all("#login-submit")[0])
            b.wait_text("#login-error", lambda t: "Authentication required" in t)
            b.script("document.getElementById('token').value = ''")
            b.type(b.find_all("#token")[0], token)
            b.click(b.find_all("#login-submit")[0])
            b.wait_text(f"tr[data-topic='{topic}'] td.backlog", lambda t: t == "3")
            assert b.script("return sessionStorage.getItem('pulsar_rs.token')") == token
    finally:
        client.close()


@NEED_BROWSER
def test_console_shows_replication_peers_and_backlog_to_each(pulsar_broker):
    """A namespace replicated to a cluster whose brokers do not answer (its port bound, never
    listening): the replication view lists the peer from its cluster record and the topic's
    backlog kept for it, the replicator not connected; the page follows the backlog live."""
    admin = pulsar_broker.admin_url
    with socket.socket() as dead:
        dead.bind(("127.0.0.1", 0))
        port = dead.getsockname()[1]
        west = {"serviceUrl": f"http://127.0.0.1:{port}", "brokerServiceUrl": f"pulsar://127.0.0.1:{port}"}
        http(f"{admin}/admin/v2/clusters/west", "PUT", json.dumps(west).encode())
        tenant = {"adminRoles": [], "allowedClusters": ["standalone", "west"]}
        http(f"{admin}/admin/v2/tenants/geo", "PUT", json.dumps(tenant).encode())
        http(f"{admin}/admin/v2/namespaces/geo/console", "PUT")
        http(f"{admin}/admin/v2/namespaces/geo/console/replication", "POST", b'["standalone", "west"]')
        topic = "persistent://geo/console/orders"
        client = client_for(pulsar_broker.service_url)
        try:
            producer = client.create_producer(topic, batching_enabled=False)
            for i in range(7):
                producer.send(f"o{i}".encode())
            deadline = time.monotonic() + 15
            while True:
                view = http(f"{admin}/console/api/replication")
                rows = [r for r in view["topics"] if r["topic"] == topic]
                if rows and rows[0]["replicationBacklog"] == 7:
                    break
                assert time.monotonic() < deadline, f"no backlog towards west: {view}"
                time.sleep(0.3)  # poll: replicators start on the broker's one-second check
            assert view["cluster"] == "standalone"
            assert [(r["remote"], r["connected"], r["msgOutCount"]) for r in rows] == [("west", False, 0)]
            peers = {p["name"]: p for p in view["peers"]}
            assert set(peers) == {"west"}, peers
            assert peers["west"]["serviceUrl"] == west["serviceUrl"]
            assert peers["west"]["brokerServiceUrl"] == west["brokerServiceUrl"]
            assert (peers["west"]["known"], peers["west"]["topics"], peers["west"]["connected"]) == (True, 1, 0)
            assert peers["west"]["replicationBacklog"] == 7
            # The same figure as the topic's stats.
            stats = http(f"{admin}/admin/v2/persistent/geo/console/orders/stats")
            assert stats["replication"]["west"]["replicationBacklog"] == 7
            with browser() as b:
                b.get(admin + "/")
                b.click(b.find_all("#replication-link")[0])
                b.wait_text("#replication-peers tr.peer[data-cluster='west'] td.peer-backlog", lambda t: t == "7")
                assert b.wait_text("#replication-peers tr.peer td.peer-connected", lambda t: t == "0 of 1")
                row = f"#replication-topics tr[data-topic='{topic}'][data-cluster='west']"
                assert b.wait_text(f"{row} td.repl-connected", lambda t: t == "not connected")
                for i in range(3):
                    producer.send(f"late{i}".encode())
                b.wait_text(f"{row} td.repl-backlog", lambda t: t == "10")
        finally:
            client.close()
