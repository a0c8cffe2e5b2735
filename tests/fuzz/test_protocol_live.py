"""Mutated binary-protocol frames at a live in-process broker, over TCP.

Hundreds of connections each send a valid conversation (CONNECT, PRODUCER, SENDs with and without
checksum, a batch) with random damage: flipped and inserted bytes, cut frames, size fields set to
random values, pure noise. Whatever happens to those connections, the broker must stay up: a
well-behaved connection opened first keeps getting receipts between rounds, new connections and
the official client still work at the end, and the process's resident memory stays bounded.
The random seed is printed so a failure can be replayed (``PULSAR_RS_FUZZ_SEED``).
"""

from __future__ import annotations

import os
import random
import socket
import struct
import time

import pytest

from raw_protocol import (
    PRODUCER,
    SEND_RECEIPT,
    Raw,
    base,
    fb,
    fv,
    send_frame,
    simple_frame,
)

pulsar = pytest.importorskip("pulsar")

ROUNDS = 10
CONNECTIONS_PER_ROUND = 100
#: Growth of the test process's resident memory (the broker runs in it) allowed over the run.
RSS_GROWTH_LIMIT = 256 << 20


def rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def conversation(topic: str) -> list[bytes]:
    """Valid frames of a producer's session (the connect frame is added by ``hostile``)."""
    producer = simple_frame(base(PRODUCER, fb(1, topic) + fv(2, 1) + fv(3, 1)))
    return [
        producer,
        send_frame(1, 0, b"plain"),
        send_frame(1, 1, b"with a key", partition_key="k"),
        send_frame(1, 2, b"claims compression", uncompressed_size=1 << 31),
        send_frame(1, 3, b"checked", checksum=0),
    ]


def mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(6)
        if op == 0 and b:  # flip bytes
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1:  # insert noise
            i = rng.randrange(len(b) + 1)
            b[i:i] = rng.randbytes(rng.randint(1, 16))
        elif op == 2 and b:  # cut
            del b[rng.randrange(len(b)) :]
        elif op == 3 and len(b) >= 8:  # a size field set to something else
            at = rng.choice([0, 4, rng.randrange(len(b) - 3)])
            value = rng.choice([0, 1, 3, 4, 0x7FFFFFFF, 0xFFFFFFFF, rng.randrange(1 << 32)])
            b[at : at + 4] = struct.pack(">I", value)
        elif op == 4:  # a random interesting byte
            if b:
                b[rng.randrange(len(b))] = rng.choice([0, 0x7F, 0x80, 0xFF])
        else:  # pure noise frame
            b += rng.randbytes(rng.randint(1, 64))
    return bytes(b)


def hostile(host: str, port: int, frames: list[bytes], rng: random.Random) -> None:
    """One connection sending damaged frames; reads what comes back until close or a short wait."""
    connect = simple_frame(base(2, fb(1, "fuzz") + fv(4, rng.choice([1, 6, 20]))))
    parts = [connect, *frames]
    data = b"".join(mutate(rng, p) if rng.random() < 0.5 else p for p in parts)
    if rng.random() < 0.1:
        data = rng.randbytes(rng.randint(1, 512))
    with socket.create_connection((host, port), timeout=2) as s:
        s.settimeout(0.05)
        try:
            s.sendall(data)
            while s.recv(65536):
                pass
        except (TimeoutError, ConnectionError, OSError):
            pass


def well_behaved_send(raw: Raw, seq: int) -> None:
    raw.send(send_frame(7, seq, f"steady-{seq}".encode()))
    ty, body = raw.recv()
    assert ty == SEND_RECEIPT, (ty, body)
    assert body[2] == [seq]


@pytest.mark.slow  # about 5 s here
@pytest.mark.timeout(300)
def test_damaged_frames_never_take_the_broker_down(pulsar_broker, topic):
    seed = int(os.environ.get("PULSAR_RS_FUZZ_SEED", time.time_ns() % 1_000_000))
    print(f"PULSAR_RS_FUZZ_SEED={seed}")
    rng = random.Random(seed)
    host, port = pulsar_broker.service_url.removeprefix("pulsar://").rsplit(":", 1)
    steady = Raw(pulsar_broker.service_url)
    steady.connect()
    steady.create_producer(topic, producer_id=7, request_id=1)
    frames = conversation(f"{topic}-hostile")
    before = rss()
    for round_ in range(ROUNDS):
        for _ in range(CONNECTIONS_PER_ROUND):
            hostile(host, int(port), frames, rng)
        well_behaved_send(steady, round_)
    grown = rss() - before
    assert grown < RSS_GROWTH_LIMIT, f"resident memory grew by {grown >> 20} MiB"
    fresh = Raw(pulsar_broker.service_url)
    fresh.connect()
    fresh.close()
    client = pulsar.Client(pulsar_broker.service_url, operation_timeout_seconds=10)
    try:
        consumer = client.subscribe(topic, "after", initial_position=pulsar.InitialPosition.Earliest)
        got = [consumer.receive(timeout_millis=10_000).data() for _ in range(ROUNDS)]
        assert got == [f"steady-{i}".encode() for i in range(ROUNDS)]
    finally:
        client.close()
    steady.close()
