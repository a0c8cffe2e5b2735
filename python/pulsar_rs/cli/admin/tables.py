"""Topic table commands (the ``icebergTable`` policy), named as pulsar-admin names its policy
commands: ``set-iceberg-table [--disable] [--commit-interval/-i SECONDS] [--partition-by/-p
day|hour|none] NS|T``, ``get-iceberg-table``, ``remove-iceberg-table`` on ``namespaces`` and
``topics``, and ``topics table-status T`` (the table's name, the last message id committed per
partition, its snapshot, rows and files).
"""

from __future__ import annotations

import argparse
from typing import Any

from ...admin import Admin
from ...admin.tables import iceberg_table_policy
from .output import NOT_SET

__all__ = ["add"]


def _target(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    topic = getattr(a, "topic", None)
    return (admin.topics, topic) if topic is not None else (admin.namespaces, a.namespace)


def _set(admin: Admin, a: argparse.Namespace) -> None:
    group, target = _target(admin, a)
    group.set_iceberg_table(target, iceberg_table_policy(not a.disable, a.commit_interval, a.partition_by))


def _get(admin: Admin, a: argparse.Namespace) -> Any:
    group, target = _target(admin, a)
    policy = group.get_iceberg_table(target)
    return NOT_SET if policy is None else policy


def _remove(admin: Admin, a: argparse.Namespace) -> None:
    group, target = _target(admin, a)
    group.remove_iceberg_table(target)


def add(g: Any, target: str) -> None:
    """The commands on the ``namespaces`` or ``topics`` sub-parsers ``g`` (``target``:
    ``namespace`` or ``topic``)."""
    p = g.add_parser("set-iceberg-table", help=f"commit the {target}'s messages to an Iceberg table")
    p.add_argument(target)
    p.add_argument("--disable", action="store_true", help="stop committing (the table stays)")
    p.add_argument("--commit-interval", "-i", type=int, default=None, help="seconds between commits (60)")
    p.add_argument(
        "--partition-by", "-p", choices=("day", "hour", "none"), default=None, help="partitioning of a new table (day)"
    )
    p.set_defaults(call=_set)
    p = g.add_parser("get-iceberg-table", help=f"the {target}'s own icebergTable policy")
    p.add_argument(target)
    p.set_defaults(call=_get)
    p = g.add_parser("remove-iceberg-table", help=f"remove the {target}'s own icebergTable policy")
    p.add_argument(target)
    p.set_defaults(call=_remove)
    if target == "topic":
        p = g.add_parser("table-status", help="the topic's Iceberg table: what is committed up to which message id")
        p.add_argument("topic")
        p.set_defaults(call=lambda admin, a: admin.topics.iceberg_table_status(a.topic))
