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
from collections.abc import Mapping
from datetime import datetime

from .._native import split_batch
from .types import RawMessage

__all__ = ["messages_of"]

_PROPERTY = "x-pulsar-property-"


def _ms(iso: str | None) -> int:
    """Pulsar's ``DateFormatter`` text (ISO-8601 with an offset) as ms since the epoch."""
    if not iso:
        return 0
    return round(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


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
    return [
        {
            **base,
            "messageId": f"{message_id}:{index}",
            "eventTime": single["event_time"],
            "properties": single["properties"],
            "key": single["key"],
            "sequenceId": single["sequence_id"] if single["sequence_id"] is not None else base["sequenceId"] + index,
            "data": single["data"],
        }
        for index, single in enumerate(split_batch(body, int(h["x-pulsar-num-batch-message"])))
    ]
