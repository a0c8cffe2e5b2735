"""A minimal transactional client speaking Pulsar's binary protocol, for the differential scenarios
and the transactional power-loss runs (``tests/power_loss/txn_run``).

The official Python client has no transaction API (its C++ core never implemented one), so the
scenarios drive transactions with this: one blocking TCP connection, hand-encoded protobuf for the
handful of commands a transactional producer needs (CONNECT, PARTITIONED_METADATA, LOOKUP,
TC_CLIENT_CONNECT, NEW_TXN, ADD_PARTITION_TO_TXN, ADD_SUBSCRIPTION_TO_TXN, PRODUCER, SEND with the
txn id in both the command and the message metadata as the Java client sets them, END_TXN, and a
consumer's SUBSCRIBE, FLOW and transactional ACK). Readers stay the official client's. Field
numbers are PulsarApi.proto's; the protobuf primitives are ``tests/raw_protocol.py``'s.
"""

from __future__ import annotations

import select
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Self

from raw_protocol import fb, fv, parse

ASSIGN_TOPIC = "persistent://pulsar/system/transaction_coordinator_assign"

#: ServerError values a transaction scenario may see, by name.
SERVER_ERRORS = {
    0: "UnknownError",
    1: "MetadataError",
    2: "PersistenceError",
    3: "AuthenticationError",
    4: "AuthorizationError",
    5: "ConsumerBusy",
    6: "ServiceNotReady",
    11: "TopicNotFound",
    20: "TransactionCoordinatorNotFound",
    21: "InvalidTxnStatus",
    22: "NotAllowedError",
    23: "TransactionConflict",
    24: "TransactionNotFound",
}

# BaseCommand types (= the command's field number in BaseCommand).
CONNECT, CONNECTED, SUBSCRIBE, PRODUCER, SEND, SEND_RECEIPT, SEND_ERROR = 2, 3, 4, 5, 6, 7, 8
MESSAGE, ACK, FLOW, SUCCESS, ERROR, PRODUCER_SUCCESS, PING, PONG = 9, 10, 11, 13, 14, 17, 18, 19
ACK_RESPONSE = 38
PARTITIONED_METADATA, PARTITIONED_METADATA_RESPONSE, LOOKUP, LOOKUP_RESPONSE = 21, 22, 23, 24
NEW_TXN, NEW_TXN_RESPONSE, ADD_PARTITION_TO_TXN, ADD_PARTITION_TO_TXN_RESPONSE = 50, 51, 52, 53
ADD_SUBSCRIPTION_TO_TXN, ADD_SUBSCRIPTION_TO_TXN_RESPONSE = 54, 55
END_TXN, END_TXN_RESPONSE = 56, 57
END_TXN_ON_PARTITION, END_TXN_ON_PARTITION_RESPONSE = 58, 59
TC_CLIENT_CONNECT_REQUEST, TC_CLIENT_CONNECT_RESPONSE = 62, 63


def _field(num: int, value: int | str | bytes) -> bytes:
    return fv(num, int(value)) if isinstance(value, bool | int) else fb(num, value)


def _message(*fields: tuple[int, int | str | bytes | None]) -> bytes:
    return b"".join(_field(n, v) for n, v in fields if v is not None)


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


@dataclass
class Reply:
    """A decoded command: its type and fields (field number -> values)."""

    type: int
    fields: dict[int, list[int | bytes]]
    #: What follows the command in the frame (a MESSAGE's stored message).
    rest: bytes = b""

    def get(self, num: int, default: int | bytes | None = None) -> int | bytes | None:
        v = self.fields.get(num)
        return v[0] if v else default


class TxnError(Exception):
    """A request answered with an error: ``code`` is the ServerError's name."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


class TxnWire:
    """One connection to a broker; not thread-safe."""

    def __init__(self, service_url: str, timeout: float = 15.0, token: str | None = None) -> None:
        host, port = service_url.removeprefix("pulsar://").rstrip("/").rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self._rid = 0
        self._seq = 0
        #: MESSAGE frames that arrived while a request waited for its answer, oldest first.
        self.inbox: list[Delivered] = []
        # CONNECT: 1 client_version, 3 auth_data, 4 protocol_version, 5 auth_method_name.
        auth = ((3, token.encode()), (5, "token")) if token is not None else ()
        self._send(CONNECT, _message((1, "pulsar-rs-txn-wire"), (4, 19), *auth))
        self._wait(lambda r: r.type == CONNECTED)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _next_rid(self) -> int:
        self._rid += 1
        return self._rid

    def _send(self, ty: int, body: bytes, payload: bytes | None = None) -> None:
        cmd = _message((1, ty), (ty, body))
        frame = struct.pack(">I", len(cmd)) + cmd
        if payload is not None:
            frame += payload
        self.sock.sendall(struct.pack(">I", len(frame)) + frame)

    def _read(self) -> Reply:
        total = struct.unpack(">I", self._recv(4))[0]
        frame = self._recv(total)
        size = struct.unpack(">I", frame[:4])[0]
        cmd = parse(frame[4 : 4 + size])
        ty = int(cmd[1][0])
        body = cmd.get(ty, [b""])[0]
        return Reply(ty, parse(body if isinstance(body, bytes) else b""), frame[4 + size :])

    def _recv(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            buf += chunk
        return bytes(buf)

    def _wait(self, match: Callable[[Reply], bool], request_id: int | None = None) -> Reply:
        while True:
            r = self._read()
            if r.type == PING:
                self._send(PONG, b"")
                continue
            if r.type == MESSAGE:
                self.inbox.append(_delivered(r))
                continue
            if r.type == ERROR and (request_id is None or r.get(1) == request_id):
                raise TxnError(SERVER_ERRORS.get(int(r.get(2, 0)), str(r.get(2))), _text(r.get(3)))
            if match(r):
                return r

    def _request(
        self, ty: int, response: int, body_of: Callable[[int], bytes], error_field: int, message_field: int
    ) -> Reply:
        rid = self._next_rid()
        self._send(ty, body_of(rid))
        r = self._wait(lambda r: r.type == response and r.get(1) == rid, rid)
        if r.get(error_field) is not None:
            code = int(r.get(error_field))
            raise TxnError(SERVER_ERRORS.get(code, str(code)), _text(r.get(message_field)))
        return r

    def partitions(self, topic: str) -> int:
        rid = self._next_rid()
        self._send(PARTITIONED_METADATA, _message((1, topic), (2, rid)))
        r = self._wait(lambda r: r.type == PARTITIONED_METADATA_RESPONSE and r.get(2) == rid, rid)
        if r.get(4) is not None:
            raise TxnError(SERVER_ERRORS.get(int(r.get(4)), str(r.get(4))), _text(r.get(5)))
        return int(r.get(1, 0))

    def lookup(self, topic: str) -> None:
        rid = self._next_rid()
        self._send(LOOKUP, _message((1, topic), (2, rid)))
        r = self._wait(lambda r: r.type == LOOKUP_RESPONSE and r.get(4) == rid, rid)
        if r.get(6) is not None:
            raise TxnError(SERVER_ERRORS.get(int(r.get(6)), str(r.get(6))), _text(r.get(7)))

    def connect_coordinator(self, tc_id: int = 0) -> None:
        """LOOKUP of the coordinator's assign partition (which loads it), then TC_CLIENT_CONNECT."""
        self.lookup(f"{ASSIGN_TOPIC}-partition-{tc_id}")
        self._request(
            TC_CLIENT_CONNECT_REQUEST,
            TC_CLIENT_CONNECT_RESPONSE,
            lambda rid: _message((1, rid), (2, tc_id)),
            2,
            3,
        )

    def new_txn(self, ttl_ms: int = 60_000, tc_id: int = 0) -> tuple[int, int]:
        r = self._request(NEW_TXN, NEW_TXN_RESPONSE, lambda rid: _message((1, rid), (2, ttl_ms), (3, tc_id)), 4, 5)
        return int(r.get(3, 0)), int(r.get(2, 0))

    def add_partition(self, txn: tuple[int, int], topic: str) -> None:
        self._request(
            ADD_PARTITION_TO_TXN,
            ADD_PARTITION_TO_TXN_RESPONSE,
            lambda rid: _message((1, rid), (2, txn[1]), (3, txn[0]), (4, topic)),
            4,
            5,
        )

    def end_txn(self, txn: tuple[int, int], commit: bool) -> None:
        self._request(
            END_TXN,
            END_TXN_RESPONSE,
            lambda rid: _message((1, rid), (2, txn[1]), (3, txn[0]), (4, 0 if commit else 1)),
            4,
            5,
        )

    def end_txn_on_partition(self, txn: tuple[int, int], topic: str, commit: bool) -> None:
        """What a coordinator's broker sends the topic's owner (a broker-to-broker call)."""
        self._request(
            END_TXN_ON_PARTITION,
            END_TXN_ON_PARTITION_RESPONSE,
            lambda rid: _message((1, rid), (2, txn[1]), (3, txn[0]), (4, topic), (5, 0 if commit else 1)),
            4,
            5,
        )

    def add_subscription(self, txn: tuple[int, int], topic: str, subscription: str) -> None:
        self._request(
            ADD_SUBSCRIPTION_TO_TXN,
            ADD_SUBSCRIPTION_TO_TXN_RESPONSE,
            lambda rid: _message((1, rid), (2, txn[1]), (3, txn[0]), (4, _message((1, topic), (2, subscription)))),
            4,
            5,
        )

    def subscribe(self, topic: str, subscription: str, consumer_id: int, *, shared: bool = True) -> None:
        """SUBSCRIBE (Shared or Exclusive, from the earliest message) after the LOOKUP."""
        self.lookup(topic)
        rid = self._next_rid()
        sub_type = 1 if shared else 0
        body = _message((1, topic), (2, subscription), (3, sub_type), (4, consumer_id), (5, rid), (13, 1))
        self._send(SUBSCRIBE, body)
        self._wait(lambda r: r.type == SUCCESS and r.get(1) == rid, rid)

    def flow(self, consumer_id: int, permits: int) -> None:
        self._send(FLOW, _message((1, consumer_id), (2, permits)))

    def receive(self, timeout: float) -> Delivered | None:
        """The next delivered message, or None after ``timeout`` seconds without one."""
        if self.inbox:
            return self.inbox.pop(0)
        deadline = time.monotonic() + timeout
        while True:
            # Waits for the frame's first byte only: a whole frame is then read with the socket's timeout.
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                return None
            r = self._read()
            if r.type == PING:
                self._send(PONG, b"")
            elif r.type == MESSAGE:
                return _delivered(r)

    def ack_txn(
        self,
        consumer_id: int,
        txn: tuple[int, int],
        positions: list[tuple[int, int]] | list[tuple[int, int, list[int], int]],
        *,
        cumulative: bool = False,
    ) -> None:
        """An ACK of ``positions`` in ``txn`` (individual, or cumulative at the one position),
        waiting for its ACK_RESPONSE. A position ``(ledger, entry, ack_set, batch_size)`` names
        messages of a batch: Pulsar's ack set (bit ``i`` set: message ``i`` not acknowledged)."""
        rid = self._next_rid()
        ids = []
        for p in positions:
            # MessageIdData: 1 ledgerId, 2 entryId, 5 ack_set (repeated int64), 6 batch_size.
            words = [(5, w) for w in p[2]] if len(p) == 4 else []
            size = [(6, p[3])] if len(p) == 4 else []
            ids.append((3, _message((1, p[0]), (2, p[1]), *words, *size)))
        ack_type = 1 if cumulative else 0
        self._send(ACK, _message((1, consumer_id), (2, ack_type), *ids, (6, txn[1]), (7, txn[0]), (8, rid)))
        r = self._wait(lambda r: r.type == ACK_RESPONSE and r.get(6) == rid, rid)
        if r.get(4) is not None:
            code = int(r.get(4))
            raise TxnError(SERVER_ERRORS.get(code, str(code)), _text(r.get(5)))

    def producer(self, topic: str, producer_id: int) -> None:
        """PRODUCER with ``txn_enabled``, after the LOOKUP that makes the broker own the topic."""
        self.lookup(topic)
        rid = self._next_rid()
        self._send(PRODUCER, _message((1, topic), (2, producer_id), (3, rid), (12, True)))
        self._wait(lambda r: r.type == PRODUCER_SUCCESS and r.get(1) == rid, rid)

    def send(
        self, producer_id: int, payload: bytes, txn: tuple[int, int] | None = None, *, in_metadata: bool = True
    ) -> None:
        """One message, in ``txn`` if given, waiting for its receipt. ``in_metadata=False`` leaves
        the txn id out of the message metadata, as pulsar-client-go 0.19 does."""
        seq = self._seq
        self._seq += 1
        txn_fields = [(22, txn[1]), (23, txn[0])] if txn and in_metadata else []
        metadata = _message((1, f"txn-wire-{producer_id}"), (2, seq), (3, int(time.time() * 1000)), *txn_fields)
        body = struct.pack(">I", len(metadata)) + metadata + payload
        stored = struct.pack(">HI", 0x0E01, crc32c(body)) + body
        cmd_txn = [(4, txn[1]), (5, txn[0])] if txn else []
        self._send(SEND, _message((1, producer_id), (2, seq), (3, 1), *cmd_txn), stored)
        r = self._wait(lambda r: r.type in (SEND_RECEIPT, SEND_ERROR) and r.get(1) == producer_id)
        if r.type == SEND_ERROR:
            code = int(r.get(3, 0))
            raise TxnError(SERVER_ERRORS.get(code, str(code)), _text(r.get(4)))


@dataclass
class Delivered:
    """A MESSAGE: its position and payload (a non-batched message)."""

    consumer_id: int
    position: tuple[int, int]
    payload: bytes


def _delivered(r: Reply) -> Delivered:
    mid = parse(r.get(2, b""))
    rest = r.rest
    if rest[:2] == b"\x0e\x01":  # magic and checksum
        rest = rest[6:]
    size = struct.unpack(">I", rest[:4])[0]
    return Delivered(int(r.get(1, 0)), (int(mid[1][0]), int(mid[2][0])), rest[4 + size :])


def _text(v: int | bytes | None) -> str:
    return v.decode(errors="replace") if isinstance(v, bytes) else ""
