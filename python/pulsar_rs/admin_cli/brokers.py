"""``pulsar-rs admin brokers healthcheck``: ``ok`` when the broker's admin service answers."""

from __future__ import annotations

from typing import Any


def add(groups: Any) -> None:
    g = groups.add_parser("brokers", help="brokers").add_subparsers(dest="action", required=True)
    g.add_parser("healthcheck").set_defaults(call=lambda admin, a: admin.brokers.healthcheck())
