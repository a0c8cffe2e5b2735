"""Hand-made Pulsar binary-protocol frames on a raw socket, for what the official Python client
never sends (oversized and corrupt SENDs, out-of-state commands, null values).

The protobuf encoding is a minimal hand-rolled proto2 writer/reader (field numbers from
PulsarApi.proto), so tests do not depend on the broker's own codec.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterable

# BaseCommand.Type values (== field numbers of the command inside BaseCommand).
CONNECT, CONNECTED, PRODUCER, SEND, SEND_RECEIPT, SEND_ERROR = 2, 3, 5, 6, 7, 8
ERROR, PRODUCER_SUCCESS, PING, PONG = 14, 17, 18, 19
LOOKUP, LOOKUP_RESPONSE, GET_SCHEMA, GET_SCHEMA_RESPONSE = 23, 24, 34, 35
SUBSCRIBE, SUCCESS, ACTIVE_CONSUMER_CHANGE = 4, 13, 31
MESSAGE, ACK, FLOW, CLOSE_PRODUCER, REACHED_END_OF_TOPIC = 9, 10, 11, 15, 27
SERVER_ERROR_CHECKSUM, SERVER_ERROR_NOT_ALLOWED, SERVER_ERROR_TOPIC_TERMINATED = 9, 22, 15


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def fv(num: int, value: int) -> bytes:
    return varint(num << 3) + varint(value)


def fb(num: int, value: bytes | str) -> bytes:
    if isinstance(value, str):
        value = value.encode()
    return varint((num << 3) | 2) + varint(len(value)) + value


def parse(buf: bytes) -> dict[int, list]:
    """Decodes one protobuf message into {field: [values]} (varints as int, the rest as bytes)."""
    out: dict[int, list] = {}
    i = 0
    while i < len(buf):
        key, i = _read_varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _read_varint(buf, i)
        elif wt == 2:
            n, i = _read_varint(buf, i)
            v, i = buf[i : i + n], i + n
        elif wt == 1:
            v, i = buf[i : i + 8], i + 8
        elif wt == 5:
            v, i = buf[i : i + 4], i + 4
        else:
            raise ValueError(f"wire type {wt}")
        out.setdefault(num, []).append(v)
    return out


def _read_varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, i


def base(cmd_type: int, body: bytes) -> bytes:
    return fv(1, cmd_type) + fb(cmd_type, body)


def simple_frame(cmd: bytes) -> bytes:
    return struct.pack(">II", 4 + len(cmd), len(cmd)) + cmd


def send_frame(
    producer_id: int,
    seq: int,
    payload: bytes,
    checksum: int | None = None,
    *,
    partition_key: str | None = None,
    uncompressed_size: int | None = None,
    deliver_at_time: int | None = None,
) -> bytes:
    """A SEND of one unbatched message. ``uncompressed_size=0`` with an empty payload is how the
    Java and Go clients send a null value (a compaction tombstone); the C++ client leaves it out.
    ``deliver_at_time``: a delayed message's time (ms since the epoch)."""
    cmd = base(SEND, fv(1, producer_id) + fv(2, seq) + fv(3, 1))
    md = fb(1, "raw-producer") + fv(2, seq) + fv(3, 1_700_000_000_000)
    if partition_key is not None:
        md += fb(6, partition_key)
    if uncompressed_size is not None:
        md += fv(9, uncompressed_size)
    if deliver_at_time is not None:
        md += fv(19, deliver_at_time)
    body = struct.pack(">I", len(md)) + md + payload
    if checksum is not None:
        body = struct.pack(">HI", 0x0E01, checksum) + body
    return struct.pack(">II", 4 + len(cmd) + len(body), len(cmd)) + cmd + body


class Raw:
    """A raw Pulsar connection."""

    def __init__(self, service_url: str):
        host, port = service_url.removeprefix("pulsar://").rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=5)
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def connect(self) -> dict:
        self.send(simple_frame(base(CONNECT, fb(1, "raw-test") + fv(4, 20))))
        ty, body = self.recv()
        assert ty == CONNECTED, ty
        return body

    def recv(self) -> tuple[int, dict]:
        """The next command other than PING/PONG: (type, parsed body)."""
        while True:
            while len(self.buf) < 4 or len(self.buf) < 4 + struct.unpack(">I", self.buf[:4])[0]:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError("closed by the broker")
                self.buf += chunk
            total = struct.unpack(">I", self.buf[:4])[0]
            frame, self.buf = self.buf[4 : 4 + total], self.buf[4 + total :]
            cmd_size = struct.unpack(">I", frame[:4])[0]
            cmd = parse(frame[4 : 4 + cmd_size])
            ty = cmd[1][0]
            if ty == PING:
                self.send(simple_frame(base(PONG, b"")))
                continue
            if ty == PONG:
                continue
            return ty, parse(cmd[ty][0]) if ty in cmd else {}

    def create_producer(self, topic: str, producer_id: int = 1, request_id: int = 1) -> dict:
        self.send(simple_frame(base(PRODUCER, fb(1, topic) + fv(2, producer_id) + fv(3, request_id))))
        ty, body = self.recv()
        assert ty == PRODUCER_SUCCESS, (ty, body)
        return body

    def is_closed(self) -> bool:
        try:
            self.sock.settimeout(5)
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return True
                # Frames sent before the close (e.g. a PING) are fine; keep reading to EOF.
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False

    def close(self) -> None:
        self.sock.close()


def send_null_values(service_url: str, topic: str, keys: list[str]) -> None:
    """Publishes a null value (empty payload, ``uncompressed_size`` 0: a compaction tombstone, as
    the Java and Go clients send ``value(null)``) for each key, and waits for every receipt."""
    raw = Raw(service_url)
    try:
        raw.connect()
        raw.create_producer(topic)
        for seq, key in enumerate(keys):
            raw.send(send_frame(1, seq, b"", partition_key=key, uncompressed_size=0))
            ty, receipt = raw.recv()
            assert ty == SEND_RECEIPT, (ty, receipt)
    finally:
        raw.close()


def send_answers(service_url: str, topic: str, frames: Iterable[bytes]) -> list[tuple]:
    """Sends each SEND frame (producer id 1) on a raw connection, one at a time, and returns the
    broker's answer to each: ("receipt",) or ("error", code, message). Raw, because the C++ client
    resends a refused message. ``frames`` is read lazily (a frame may carry the time it is sent)."""
    raw = Raw(service_url)
    try:
        raw.connect()
        raw.create_producer(topic)
        answers: list[tuple] = []
        for frame in frames:
            raw.send(frame)
            ty, body = raw.recv()
            if ty == SEND_ERROR:  # CommandSendError: error = 3, message = 4
                answers.append(("error", body[3][0], body[4][0].decode()))
            else:
                answers.append(("receipt",) if ty == SEND_RECEIPT else (ty,))
        return answers
    finally:
        raw.close()


# --- a consumer and a producer on raw frames ---------------------------------------------------


def subscribe(raw: Raw, topic: str, sub: str, consumer_id: int, earliest: bool = True) -> None:
    """A Shared SUBSCRIBE (at the earliest or latest position) and its SUCCESS."""
    shared = 1
    body = fb(1, topic) + fb(2, sub) + fv(3, shared) + fv(4, consumer_id) + fv(5, 100 + consumer_id)
    raw.send(simple_frame(base(SUBSCRIBE, body + fv(13, int(earliest)))))
    ty, body = raw.recv()
    assert ty == SUCCESS, (ty, body)


def flow(raw: Raw, consumer_id: int, permits: int = 100) -> None:
    raw.send(simple_frame(base(FLOW, fv(1, consumer_id) + fv(2, permits))))


def ack(raw: Raw, consumer_id: int, ledger_id: int, entry_id: int) -> None:
    raw.send(simple_frame(base(ACK, fv(1, consumer_id) + fv(2, 0) + fb(3, fv(1, ledger_id) + fv(2, entry_id)))))


def produce(raw: Raw, topic: str, n: int, producer_id: int = 1) -> list[tuple[int, int]]:
    """``n`` messages from a raw producer; their (ledger, entry) ids."""
    raw.create_producer(topic, producer_id=producer_id, request_id=producer_id)
    ids = []
    for seq in range(n):
        raw.send(send_frame(producer_id, seq, b"m-%d" % seq))
        ty, receipt = raw.recv()
        assert ty == SEND_RECEIPT, (ty, receipt)
        mid = parse(receipt[3][0])
        ids.append((mid[1][0], mid[2][0]))
    return ids


def expect(raw: Raw, wanted: int) -> dict:
    """The body of the next command, which must be a ``wanted``."""
    ty, body = raw.recv()
    assert ty == wanted, (ty, body)
    return body


def next_within(raw: Raw, seconds: float = 0.5) -> tuple[int, dict] | None:
    """The next command if one comes within ``seconds``, else ``None``."""
    raw.sock.settimeout(seconds)
    try:
        return raw.recv()
    except TimeoutError:
        return None
    finally:
        raw.sock.settimeout(5)
