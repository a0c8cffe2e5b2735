"""Deduplication of what another cluster's replicator publishes here, on the wire: the replicator
(a producer named ``pulsar.repl.<cluster>--><this cluster>``) numbers its SENDs its own way and starts
again at 1 when it restarts, so a replicated message is deduplicated on its own producer name and
sequence id (its metadata, with ``replicated_from`` set), as Pulsar's brokers do: a message sent
twice is stored once, and a new message after the replicator's restart is stored although its SEND
reuses a sequence id.

A replicator whose CONNECT advertised ``supports_repl_dedup_by_lid_and_eid`` (Pulsar 4.0.4+) is
deduplicated instead on the source position each message carries (``__MSG_PROP_REPL_SOURCE_POSITION``)
and its receipts name that position; the watermark survives the topic's reload."""

from __future__ import annotations

import struct

import pulsar
import pytest

from conftest import admin, new_client, receive_all
from raw_protocol import (
    CONNECT,
    CONNECTED,
    PRODUCER,
    PRODUCER_SUCCESS,
    SEND,
    SEND_ERROR,
    SEND_RECEIPT,
    Raw,
    base,
    fb,
    fv,
    parse,
    simple_frame,
)

pytestmark = pytest.mark.timeout(60)

REPLICATOR = "pulsar.repl.east-->standalone"


def replicated_send(
    producer_id: int, send_seq: int, original_seq: int, payload: bytes, source: str | None = None
) -> bytes:
    """A SEND whose message came from cluster ``east``, published there by ``p-east`` (read there at
    ``source``, ``"<ledgerId>:<entryId>"``, when given)."""
    cmd = base(SEND, fv(1, producer_id) + fv(2, send_seq) + fv(3, 1))
    md = fb(1, "p-east") + fv(2, original_seq) + fv(3, 1_700_000_000_000)
    if source is not None:
        md += fb(4, fb(1, "__MSG_PROP_REPL_SOURCE_POSITION") + fb(2, source))
    md += fb(5, "east")
    body = struct.pack(">I", len(md)) + md + payload
    return struct.pack(">II", 4 + len(cmd) + len(body), len(cmd)) + cmd + body


def open_replicator(url: str, topic: str, by_source_position: bool = False) -> Raw:
    raw = Raw(url)
    if by_source_position:
        # CONNECT with FeatureFlags.supports_repl_dedup_by_lid_and_eid (field 6), as Pulsar's client.
        raw.send(simple_frame(base(CONNECT, fb(1, "raw-test") + fv(4, 20) + fb(10, fv(6, 1)))))
        ty, body = raw.recv()
        assert ty == CONNECTED, ty
        assert parse(body[4][0]).get(6) == [1], "CONNECTED offers dedup by source position"
    else:
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


def receipt_ids(raw: Raw) -> tuple[int, int, tuple[int, int]]:
    """A receipt's sequence id, highest sequence id and message id."""
    ty, body = raw.recv()
    assert ty == SEND_RECEIPT, (ty, body)
    mid = parse(body[3][0])
    return body[2][0], body[4][0], (mid[1][0], mid[2][0])


def test_a_replicator_negotiating_source_positions_is_deduplicated_on_them(pulsar_broker, topic):
    status, _ = admin(pulsar_broker.admin_url, "POST", "/admin/v2/namespaces/public/default/deduplication", True)
    assert status == 204
    dup = (2**64 - 1, 2**64 - 1)
    raw = open_replicator(pulsar_broker.service_url, topic, by_source_position=True)
    raw.send(replicated_send(1, 1, 0, b"a", "5:0"))
    seq, high, first = receipt_ids(raw)
    assert (seq, high) == (5, 0), "the receipt names the source position"
    assert first != dup
    # Another source producer of the same name, from sequence id 0 again: a new message.
    raw.send(replicated_send(1, 2, 0, b"b", "5:1"))
    seq, high, second = receipt_ids(raw)
    assert (seq, high) == (5, 1) and second not in (first, dup)
    # A rewound replicator resends 5:0 (whatever its sequence ids): a duplicate, named by position.
    raw.send(replicated_send(1, 3, 7, b"a", "5:0"))
    assert receipt_ids(raw) == (5, 0, dup)
    # Without its position a message cannot be judged: SEND_ERROR, the replicator resends later.
    raw.send(replicated_send(1, 4, 8, b"c"))
    ty, _ = raw.recv()
    assert ty == SEND_ERROR
    raw.close()
    # The topic reloads: the watermark is rebuilt (from the stored entries' positions).
    status, _ = admin(pulsar_broker.admin_url, "PUT", f"/admin/v2/{topic.replace('://', '/')}/unload")
    assert status == 204, status
    raw = open_replicator(pulsar_broker.service_url, topic, by_source_position=True)
    raw.send(replicated_send(1, 1, 0, b"b", "5:1"))
    assert receipt_ids(raw) == (5, 1, dup), "still a duplicate after the reload"
    raw.close()
    client = new_client(pulsar_broker.service_url)
    try:
        consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        assert [m.data() for m in receive_all(consumer, 3, timeout_ms=2000)] == [b"a", b"b"]
    finally:
        client.close()
