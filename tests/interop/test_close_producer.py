"""CLOSE_PRODUCER with SENDs in flight, on the wire: the broker answers the close only after the
producer's pending SENDs, as Pulsar's ``Producer.close`` waits for its pending publishes. Answered
first, the Java client fails the pending sends as ``AlreadyClosedException`` while the broker
stores them (the OpenMessaging Benchmark saw 49 076 of them at the end of a max-rate run)."""

from __future__ import annotations

import uuid

from raw_protocol import CLOSE_PRODUCER, SEND_RECEIPT, SUCCESS, Raw, base, fv, send_frame, simple_frame

N = 500


def test_close_producer_is_answered_after_every_send_in_flight(pulsar_broker):
    topic = f"persistent://public/default/close-{uuid.uuid4().hex[:8]}"
    raw = Raw(pulsar_broker.service_url)
    try:
        raw.connect()
        raw.create_producer(topic, producer_id=1, request_id=1)
        # Every SEND and the close in one write: the close reaches the broker while the SENDs'
        # journal round is still being written.
        raw.send(
            b"".join(send_frame(1, seq, b"m-%d" % seq) for seq in range(N))
            + simple_frame(base(CLOSE_PRODUCER, fv(1, 1) + fv(2, 99)))
        )
        order = []
        while True:
            ty, body = raw.recv()
            if ty == SUCCESS:
                assert body[1] == [99], body
                break
            assert ty == SEND_RECEIPT, (ty, body)
            order.append(body[2][0])
        assert order == list(range(N)), f"{len(order)} receipts before the close's SUCCESS"
    finally:
        raw.close()
