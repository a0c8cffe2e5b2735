"""Reading messages without consuming them, with pulsar-admin's names and flags:
``topics peek-messages T -s SUB [-n COUNT]`` (the first messages of a subscription's backlog),
``topics examine-messages T [-i earliest|latest] [-m POSITION]`` (``examine-message`` also: the
POSITION-th entry from either end), ``topics get-message-by-id T -l LEDGER -e ENTRY``,
``topics last-message-id T``, and the end of a topic's messages: ``topics terminate T`` and
``topics partitioned-terminate T`` (the last message id of the topic, of each partition).

Readable output is one row a message: message id (``L:E``, ``L:E:I`` inside a batch), publish
and event time (ms), key, producer, sequence id, each property as a ``properties.NAME`` column and
the payload (UTF-8 text, else ``0x`` + hex); ``--json`` prints the same as a list of objects.
"""

from __future__ import annotations

from typing import Any


def _printable(message: dict[str, Any]) -> dict[str, Any]:
    """A message with its payload as text (``0x``-prefixed hex when it is not UTF-8)."""
    out = {k: v for k, v in message.items() if k != "data"}
    data: bytes = message["data"]
    try:
        out["payload"] = data.decode()
    except UnicodeDecodeError:
        out["payload"] = "0x" + data.hex()
    return out


def _topic_parser(g: Any, name: str, **kw: Any) -> Any:
    p = g.add_parser(name, **kw)
    p.add_argument("topic", help="persistent://tenant/ns/topic (a partition, not a partitioned topic)")
    return p


def add_to(g: Any) -> None:
    """Registers the message commands on the ``topics`` sub-parsers ``g``."""
    p = _topic_parser(g, "peek-messages")
    p.add_argument("--subscription", "-s", required=True)
    p.add_argument("--count", "-n", type=int, default=1, help="how many messages (default 1)")
    p.set_defaults(
        call=lambda admin, a: [_printable(m) for m in admin.topics.peek_messages(a.topic, a.subscription, a.count)]
    )
    p = _topic_parser(g, "examine-messages", aliases=["examine-message"])
    p.add_argument("--initialPosition", "-i", default="latest", choices=["earliest", "latest"])
    p.add_argument("--messagePosition", "-m", type=int, default=1, help="1 = the first / last entry")
    p.set_defaults(
        call=lambda admin, a: _printable(admin.topics.examine_message(a.topic, a.initialPosition, a.messagePosition))
    )
    p = _topic_parser(g, "get-message-by-id")
    p.add_argument("--ledgerId", "-l", type=int, required=True)
    p.add_argument("--entryId", "-e", type=int, required=True)
    p.set_defaults(
        call=lambda admin, a: [_printable(m) for m in admin.topics.get_message_by_id(a.topic, a.ledgerId, a.entryId)]
    )
    p = _topic_parser(g, "last-message-id")
    p.set_defaults(call=lambda admin, a: admin.topics.last_message_id(a.topic))
    p = _topic_parser(g, "terminate")
    p.set_defaults(call=lambda admin, a: admin.topics.terminate(a.topic))
    p = g.add_parser("partitioned-terminate")
    p.add_argument("topic", help="persistent://tenant/ns/topic (a partitioned topic)")
    p.set_defaults(call=lambda admin, a: admin.topics.terminate_partitioned(a.topic))
