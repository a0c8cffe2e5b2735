"""Brokers of a cluster that reach each other only over TLS with client certificates (issue 52),
as Pulsar deployments configure them: ``brokerClientTlsEnabled``, ``brokerClientTrustCertsFilePath``,
``tlsHostnameVerificationEnabled`` and ``brokerClientAuthenticationPlugin=AuthenticationTls`` with
the broker's client certificate (CN ``broker``, a superuser), on two pulsar-rs brokers on real
ZooKeeper and bookies with authentication and authorization on.

What makes "only over TLS" checkable: the broker's one credential is its certificate, which exists
only on a TLS handshake. A connection it opened over plain TCP would name the ``tls`` method with
no certificate and be refused, and a forwarded admin call without a caller's header would be
anonymous (no ``anonymousUserRole``: refused). So each call below succeeds only if it went over
TLS with the client certificate:

* END_TXN_ON_PARTITION from the coordinator's broker to the topic's owner (binary protocol,
  ``pulsar+ssl://``, found by the broker's own lookup);
* a partitioned topic's stats through a broker that owns some partitions only, called over HTTPS
  with a client certificate and no ``Authorization`` header (the other partitions' stats come from
  their owner over ``https://``);
* ``transactions coordinators-list`` through the broker that does not serve the coordinator (a
  call in the broker's own name).

A topic call through the wrong broker over HTTPS is sent (307) to the owner's HTTPS URL.
"""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

import txn_wire as tw

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository's tools/
from tools.pulsar_reference import available

from cluster_util import by_url, cluster_broker, get, lookup, read_all, three_bookies, topics_owned
from pki_util import write_pki
from pulsar_rs.testing.bookkeeper import BookKeeperCluster
from pulsar_rs.testing.process import PulsarRsBroker, wait_for_cluster
from token_util import SECRET_URL, TOKEN_PROVIDER, hs_token

if (why := available()) is not None:
    pytest.skip(f"no BookKeeper here: {why}", allow_module_level=True)

pytestmark = [pytest.mark.slow]

TLS_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderTls"
TC0 = f"{tw.ASSIGN_TOPIC}-partition-0"


@pytest.fixture(scope="module")
def bookies() -> Iterator[BookKeeperCluster]:
    yield from three_bookies()


def tls_cluster_conf(pki: Path, ca: Path, stores: bool) -> dict[str, object]:
    """Every broker's settings: TLS listeners, TLS and token authentication, authorization, and
    peers reached over TLS with the ``broker`` certificate, the host name checked. ``stores``: the
    peers' CA from a JKS trust store (``keytool``) and the certificate from a PKCS#12 key store
    (``AuthenticationKeyStoreTls``), as Java deployments keep them; else PEM files."""
    conf: dict[str, object] = {
        "transactionCoordinatorEnabled": True,
        "brokerServicePortTls": 0,
        "webServicePortTls": 0,
        "tlsCertificateFilePath": str(pki / "server-cert.pem"),
        "tlsKeyFilePath": str(pki / "server-key.pem"),
        "tlsTrustCertsFilePath": str(ca),
        "authenticationEnabled": True,
        "authenticationProviders": f"{TLS_PROVIDER},{TOKEN_PROVIDER}",
        "tokenSecretKey": SECRET_URL,
        "authorizationEnabled": True,
        "superUserRoles": "admin,broker",
        "brokerClientTlsEnabled": True,
        "tlsHostnameVerificationEnabled": True,
    }
    if not stores:
        return conf | {
            "brokerClientTrustCertsFilePath": str(ca),
            "brokerClientAuthenticationPlugin": "org.apache.pulsar.client.impl.auth.AuthenticationTls",
            "brokerClientAuthenticationParameters": json.dumps(
                {"tlsCertFile": str(pki / "broker-cert.pem"), "tlsKeyFile": str(pki / "broker-key.pem")}
            ),
        }
    keytool = shutil.which("keytool")
    assert keytool, "keytool (Java 17) is needed for the key-store variant"
    trust = pki / "trust.jks"
    args = ["-importcert", "-noprompt", "-alias", "ca", "-file", str(ca), "-keystore", str(trust)]
    made = subprocess.run(
        [keytool, *args, "-storetype", "JKS", "-storepass", "trustpw"], capture_output=True, text=True, check=False
    )
    assert made.returncode == 0, f"keytool: {made.stdout}{made.stderr}"
    key = serialization.load_pem_private_key((pki / "broker-key.pem").read_bytes(), None)
    cert = x509.load_pem_x509_certificate((pki / "broker-cert.pem").read_bytes())
    p12 = pki / "broker.p12"
    p12.write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"broker",
            key,
            cert,
            None,
            serialization.BestAvailableEncryption(b"keypw"),  # type: ignore[arg-type]
        )
    )
    return conf | {
        "brokerClientTlsEnabledWithKeyStore": True,
        "brokerClientTlsTrustStoreType": "JKS",
        "brokerClientTlsTrustStore": str(trust),
        "brokerClientTlsTrustStorePassword": "trustpw",
        "brokerClientAuthenticationPlugin": "org.apache.pulsar.client.impl.auth.AuthenticationKeyStoreTls",
        "brokerClientAuthenticationParameters": json.dumps(
            {"keyStoreType": "PKCS12", "keyStorePath": str(p12), "keyStorePassword": "keypw"}
        ),
    }


@pytest.mark.parametrize("stores", [False, True], ids=["pem", "key-stores"])
def test_brokers_reach_each_other_only_over_tls_with_client_certificates(tmp_path, bookies, stores):
    pki = tmp_path / "pki"
    ca = write_pki(pki, {"server": ("localhost", True), "broker": ("broker", False), "operator": ("admin", False)})
    admin = hs_token("admin")
    started: list[PulsarRsBroker] = []
    try:
        conf = tls_cluster_conf(pki, ca, stores)
        for name in ("x0", "x1"):
            started.append(cluster_broker(tmp_path, bookies, name, **conf))
        wait_for_cluster(started, token=admin)
        # Each broker's HTTPS URL, as a REST lookup of a topic it owns gives it out.
        https_of: dict[str, str] = {}

        # 1. END_TXN_ON_PARTITION over pulsar+ssl:// to the topic's owner.
        tc_broker = by_url(started, lookup(started[0], TC0, admin))
        other = next(b for b in started if b is not tc_broker)
        (topic,) = topics_owned(started, f"tls-{stores}", [other.url], admin)
        with tw.TxnWire(tc_broker.url, token=admin) as tc, tw.TxnWire(other.url, token=admin) as prod:
            # As a client's transaction handler: the assign topic's metadata (which records the
            # coordinators' count in the cluster's store), then the coordinator.
            assert tc.partitions(tw.ASSIGN_TOPIC) >= 1
            tc.connect_coordinator(0)
            prod.producer(topic, 0)
            txn = tc.new_txn()
            tc.add_partition(txn, topic)
            prod.send(0, b"over-tls", txn)
            tc.end_txn(txn, commit=True)
        c = pulsar.Client(other.url, authentication=pulsar.AuthenticationToken(admin))
        try:
            assert read_all(c, topic, 1) == [b"over-tls"], "the commit marker was not written on the owner"
        finally:
            c.close()

        # 2. A partitioned topic's stats over HTTPS with a client certificate and no header.
        ctx = ssl.create_default_context(cafile=str(ca))
        ctx.load_cert_chain(str(pki / "operator-cert.pem"), str(pki / "operator-key.pem"))
        # The HTTPS URLs come from a REST lookup over plain HTTP (the token is the caller's).
        for b in started:
            (t,) = topics_owned(started, f"https-of-{stores}", [b.url], admin)
            req = urllib.request.Request(f"{b.http}/lookup/v2/topic/persistent/{t.removeprefix('persistent://')}")
            req.add_header("Authorization", f"Bearer {admin}")
            with urllib.request.urlopen(req, timeout=30) as r:
                found = json.loads(r.read())
            assert found["brokerUrl"] == b.url, found
            assert found["httpUrlTls"].startswith("https://"), found
            https_of[b.url] = found["httpUrlTls"]
        local_parted = f"tls-parted-{'stores' if stores else 'pem'}"
        parted = f"persistent://public/default/{local_parted}"
        put = urllib.request.Request(
            f"{started[0].http}/admin/v2/persistent/public/default/{local_parted}/partitions", data=b"8", method="PUT"
        )
        put.add_header("Authorization", f"Bearer {admin}")
        put.add_header("Content-Type", "application/json")
        urllib.request.urlopen(put, timeout=30).close()
        owners = {i: lookup(started[i % 2], f"{parted}-partition-{i}", admin) for i in range(8)}
        assert set(owners.values()) == {b.url for b in started}, f"all 8 partitions on one broker: {owners}"
        # One message in each partition (round robin), so every partition has stats.
        hosts = ",".join(b.url.removeprefix("pulsar://") for b in started)
        c = pulsar.Client(f"pulsar://{hosts}", authentication=pulsar.AuthenticationToken(admin))
        try:
            p = c.create_producer(
                parted, batching_enabled=False, message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution
            )
            for i in range(8):
                p.send(b"p-%d" % i)
            p.close()
        finally:
            c.close()
        via = started[0]
        st, doc, _ = get(
            f"{https_of[via.url]}/admin/v2/persistent/public/default/{local_parted}/partitioned-stats?perPartition=true",
            context=ctx,
        )
        assert st == 200, doc
        assert isinstance(doc, dict) and len(doc["partitions"]) == 8, doc
        assert doc["msgInCounter"] == 8, doc

        # 3. A topic call through the wrong broker, over HTTPS: 307 to the owner's HTTPS URL.
        wrong = next(b for b in started if b is not other)
        st, doc, location = get(
            f"{https_of[wrong.url]}/admin/v2/persistent/{topic.removeprefix('persistent://')}/stats",
            follow=False,
            context=ctx,
        )
        assert st == 307, (st, doc)
        assert location is not None and location.startswith(https_of[other.url] + "/"), location
        st, doc, _ = get(
            f"{https_of[wrong.url]}/admin/v2/persistent/{topic.removeprefix('persistent://')}/stats", context=ctx
        )
        assert st == 200, doc

        # 4. coordinators-list through the broker that does not serve TC 0 (its own credential).
        st, doc, _ = get(f"{https_of[other.url]}/admin/v3/transactions/coordinators", context=ctx)
        assert st == 200, doc
        assert isinstance(doc, list) and {"id": 0, "brokerServiceUrl": tc_broker.url} in doc, doc
    finally:
        for b in started:
            b.stop()
