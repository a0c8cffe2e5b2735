"""Messages read through the admin API (peek-messages, examine-messages, get-message-by-id), as
pulsar-admin decodes them: the entry's payload with its metadata in ``X-Pulsar-*`` headers; a
batch (``X-Pulsar-num-batch-message``) is split into its messages, each with its own
``SingleMessageMetadata`` (properties, key, event time), as ``TopicsImpl.getMessagesFromHttpResponse``
does.

A message is a dict (:class:`.types.RawMessage`): ``messageId`` (``"L:E"``, or ``"L:E:I"`` inside a
batch), ``publishTime`` and ``eventTime`` (ms since the epoch; 0 when not set), ``properties``,
``key`` (``None`` when not set), ``producerName``, ``sequenceId`` and ``data`` (bytes).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .types import RawMessage

__all__ = ["messages_of"]

_PROPERTY = "x-pulsar-property-"


def _ms(iso: str | None) -> int:
    """Pulsar's ``DateFormatter`` text (ISO-8601 with an offset) as ms since the epoch."""
    if not iso:
        return 0
    return round(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if i >= len(buf):
            raise ValueError("truncated varint in a batch's message metadata")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def _fields(buf: bytes) -> list[tuple[int, int | bytes]]:
    """The (field number, value) pairs of a protobuf message: varints as int, strings as bytes."""
    out: list[tuple[int, int | bytes]] = []
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            n, i = _varint(buf, i)
            value, i = buf[i : i + n], i + n
        elif wire == 1:
            value, i = struct.unpack_from("<q", buf, i)[0], i + 8
        elif wire == 5:
            value, i = struct.unpack_from("<i", buf, i)[0], i + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        out.append((field, value))
    return out


def _single(meta: bytes) -> dict[str, Any]:
    """Pulsar's ``SingleMessageMetadata``: 1 properties, 2 partition_key, 3 payload_size,
    5 event_time, 7 ordering_key, 8 sequence_id, 9 null_value."""
    out: dict[str, Any] = {"properties": {}, "key": None, "eventTime": 0, "size": 0}
    for field, v in _fields(meta):
        if field == 1 and isinstance(v, bytes):
            kv = dict(_fields(v))
            k, val = kv.get(1, b""), kv.get(2, b"")
            if isinstance(k, bytes) and isinstance(val, bytes):
                out["properties"][k.decode()] = val.decode()
        elif field == 2 and isinstance(v, bytes):
            out["key"] = v.decode()
        elif field == 3 and isinstance(v, int):
            out["size"] = v
        elif field == 5 and isinstance(v, int):
            out["eventTime"] = v
        elif field == 8 and isinstance(v, int):
            out["sequenceId"] = v
    return out


def messages_of(headers: Mapping[str, str], body: bytes) -> list[RawMessage]:
    """The messages of one admin answer (one entry): one, or each message of a batch."""
    h = {k.lower(): v for k, v in headers.items()}
    message_id = h.get("x-pulsar-message-id", "")
    if "x-pulsar-property" in h:
        properties = json.loads(h["x-pulsar-property"])
    else:
        properties = {k[len(_PROPERTY) :]: v for k, v in h.items() if k.startswith(_PROPERTY)}
    base: RawMessage = {
        "messageId": message_id,
        "publishTime": _ms(h.get("x-pulsar-publish-time")),
        "eventTime": _ms(h.get("x-pulsar-event-time")),
        "properties": properties,
        "key": h.get("x-pulsar-partition-key"),
        "producerName": h.get("x-pulsar-producer-name", ""),
        "sequenceId": int(h.get("x-pulsar-sequence-id", "0") or 0),
        "data": body,
    }
    if "x-pulsar-num-batch-message" not in h:
        return [base]
    out: list[RawMessage] = []
    i = 0
    for index in range(int(h["x-pulsar-num-batch-message"])):
        if i + 4 > len(body):
            raise ValueError(f"batch {message_id} ends after {index} messages")
        (n,) = struct.unpack_from(">I", body, i)
        single = _single(body[i + 4 : i + 4 + n])
        i += 4 + n
        data, i = body[i : i + single["size"]], i + single["size"]
        out.append(
            {
                **base,
                "messageId": f"{message_id}:{index}",
                "eventTime": single["eventTime"],
                "properties": single["properties"],
                "key": single["key"],
                "sequenceId": single.get("sequenceId", base["sequenceId"] + index),
                "data": data,
            }
        )
    return out
