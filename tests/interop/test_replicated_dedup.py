"""Deduplication of what another cluster's replicator publishes here, on the wire: the replicator
(a producer named ``pulsar.repl.<cluster>--><this cluster>``) numbers its SENDs its own way and starts
again at 1 when it restarts, so a replicated message is deduplicated on its own producer name and
sequence id (its metadata, with ``replicated_from`` set), as Pulsar's brokers do: a message sent
twice is stored once, and a new message after the replicator's restart is stored although its SEND
reuses a sequence id."""

from __future__ import annotations

import struct

import pulsar
import pytest

from conftest import admin, new_client, receive_all
from raw_protocol import PRODUCER, PRODUCER_SUCCESS, SEND, SEND_RECEIPT, Raw, base, fb, fv, parse, simple_frame

pytestmark = pytest.mark.timeout(60)

REPLICATOR = "pulsar.repl.east-->standalone"


def replicated_send(producer_id: int, send_seq: int, original_seq: int, payload: bytes) -> bytes:
    """A SEND whose message came from cluster ``east``, published there by ``p-east``."""
    cmd = base(SEND, fv(1, producer_id) + fv(2, send_seq) + fv(3, 1))
    md = fb(1, "p-east") + fv(2, original_seq) + fv(3, 1_700_000_000_000) + fb(5, "east")
    body = struct.pack(">I", len(md)) + md + payload
    return struct.pack(">II", 4 + len(cmd) + len(body), len(cmd)) + cmd + body


def open_replicator(url: str, topic: str) -> Raw:
    raw = Raw(url)
    raw.connect()
    raw.send(simple_frame(base(PRODUCER, fb(1, topic) + fv(2, 1) + fv(3, 1) + fb(4, REPLICATOR))))
    ty, body = raw.recv()
    assert ty == PRODUCER_SUCCESS, (ty, body)
    return raw


def receipt(raw: Raw) -> tuple[int, int]:
    ty, body = raw.recv()
    assert ty == SEND_RECEIPT, (ty, body)
    mid = parse(body[3][0])
    return mid[1][0], mid[2][0]


def test_a_replicated_message_is_deduplicated_on_its_own_producer_and_sequence(pulsar_broker, topic):
    status, _ = admin(pulsar_broker.admin_url, "POST", "/admin/v2/namespaces/public/default/deduplication", True)
    assert status == 204
    raw = open_replicator(pulsar_broker.service_url, topic)
    raw.send(replicated_send(1, 1, 10, b"a"))
    first = receipt(raw)
    raw.send(replicated_send(1, 2, 10, b"a"))  # the same message again (a rewound replicator)
    assert receipt(raw) == (2**64 - 1, 2**64 - 1), "a duplicate is answered -1:-1"
    raw.close()
    raw = open_replicator(pulsar_broker.service_url, topic)  # the replicator restarted
    raw.send(replicated_send(1, 1, 11, b"b"))
    second = receipt(raw)
    assert second != first and second[0] != 2**64 - 1, "a new message whose SEND reuses sequence id 1 is stored"
    raw.close()
    client = new_client(pulsar_broker.service_url)
    try:
        consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        assert [m.data() for m in receive_all(consumer, 2)] == [b"a", b"b"]
    finally:
        client.close()
