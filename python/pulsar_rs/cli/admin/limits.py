"""pulsar-admin's limit commands, ``set-`` / ``get-`` / ``remove-`` each, with its flags.

On a namespace (``namespaces``):

===============================  =====================================
max-producers-per-topic          ``--max-producers-per-topic/-p``
max-consumers-per-topic          ``--max-consumers-per-topic/-c``
max-consumers-per-subscription   ``--max-consumers-per-subscription/-c``
max-subscriptions-per-topic      ``--max-subscriptions-per-topic/-m``
max-topics-per-namespace         ``--max-topics-per-namespace/-t``
===============================  =====================================

On a topic (``topics`` and ``topicPolicies``):

===============================  =====================================
max-producers                    ``--max-producers/-p``
max-consumers                    ``--max-consumers/-c``
max-consumers-per-subscription   ``--max-consumers-per-subscription/-c``
max-subscriptions-per-topic      ``--max-subscriptions-per-topic/-s``
max-message-size                 ``--max-message-size/-m``
===============================  =====================================

0 is unlimited; a getter prints ``(not set)`` when the level leaves the limit to the next one.
"""

from __future__ import annotations

import argparse
from typing import Any

from ...admin import Admin
from .output import NOT_SET

#: (command name, Admin method suffix, long flag, short flag) at each level.
NAMESPACE_LIMITS = (
    ("max-producers-per-topic", "max_producers_per_topic", "--max-producers-per-topic", "-p"),
    ("max-consumers-per-topic", "max_consumers_per_topic", "--max-consumers-per-topic", "-c"),
    ("max-consumers-per-subscription", "max_consumers_per_subscription", "--max-consumers-per-subscription", "-c"),
    ("max-subscriptions-per-topic", "max_subscriptions_per_topic", "--max-subscriptions-per-topic", "-m"),
    ("max-topics-per-namespace", "max_topics_per_namespace", "--max-topics-per-namespace", "-t"),
)
TOPIC_LIMITS = (
    ("max-producers", "max_producers", "--max-producers", "-p"),
    ("max-consumers", "max_consumers", "--max-consumers", "-c"),
    ("max-consumers-per-subscription", "max_consumers_per_subscription", "--max-consumers-per-subscription", "-c"),
    ("max-subscriptions-per-topic", "max_subscriptions_per_topic", "--max-subscriptions-per-topic", "-s"),
    ("max-message-size", "max_message_size", "--max-message-size", "-m"),
)


def _group(admin: Admin, target: str) -> Any:
    return admin.topics if target == "topic" else admin.namespaces


def add(g: Any, target: str) -> None:
    """Registers the limit commands of a ``namespace`` or ``topic`` level on the sub-parsers ``g``."""
    for name, method, long_flag, short_flag in TOPIC_LIMITS if target == "topic" else NAMESPACE_LIMITS:

        def set_call(admin: Admin, a: argparse.Namespace, m: str = method) -> None:
            getattr(_group(admin, target), f"set_{m}")(getattr(a, target), a.value)

        def get_call(admin: Admin, a: argparse.Namespace, m: str = method) -> Any:
            v = getattr(_group(admin, target), f"get_{m}")(getattr(a, target))
            return NOT_SET if v is None else v

        def remove_call(admin: Admin, a: argparse.Namespace, m: str = method) -> None:
            getattr(_group(admin, target), f"remove_{m}")(getattr(a, target))

        p = g.add_parser(f"set-{name}")
        p.add_argument(target)
        p.add_argument(long_flag, short_flag, dest="value", type=int, required=True, help="0: unlimited")
        p.set_defaults(call=set_call)
        for verb, call in (("get", get_call), ("remove", remove_call)):
            p = g.add_parser(f"{verb}-{name}")
            p.add_argument(target)
            p.set_defaults(call=call)
