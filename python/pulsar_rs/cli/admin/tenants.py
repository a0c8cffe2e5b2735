"""``pulsar-rs admin tenants``: list, get, create, update, delete (``--admin-roles/-r``,
``--allowed-clusters/-c``, comma-separated; at creation the clusters default to all of them,
at update a list not given is kept)."""

from __future__ import annotations

import argparse
from typing import Any

from ...admin import Admin
from .units import csv


def add(groups: Any) -> None:
    g = groups.add_parser("tenants", help="tenants").add_subparsers(dest="action", required=True)
    g.add_parser("list").set_defaults(call=lambda admin, a: admin.tenants.list())
    g.add_parser("get").add_argument("name")
    g.choices["get"].set_defaults(call=lambda admin, a: admin.tenants.get(a.name))
    for verb in ("create", "update"):
        p = g.add_parser(verb)
        p.add_argument("name")
        keep = "keep the current ones" if verb == "update" else "none"
        p.add_argument("--admin-roles", "-r", default=None, help=f"comma-separated roles (default: {keep})")
        keep = "keep the current ones" if verb == "update" else "all clusters"
        p.add_argument("--allowed-clusters", "-c", default=None, help=f"comma-separated (default: {keep})")
        p.set_defaults(call=_create if verb == "create" else _update)
    g.add_parser("delete").add_argument("name")
    g.choices["delete"].set_defaults(call=lambda admin, a: admin.tenants.delete(a.name))


def _clusters(a: argparse.Namespace) -> list[str] | None:
    return csv(a.allowed_clusters) if a.allowed_clusters is not None else None


def _create(admin: Admin, a: argparse.Namespace) -> None:
    admin.tenants.create(a.name, csv(a.admin_roles), _clusters(a))


def _update(admin: Admin, a: argparse.Namespace) -> None:
    """As pulsar-admin: a list not given keeps the tenant's current one."""
    current = admin.tenants.get(a.name)
    roles = csv(a.admin_roles) if a.admin_roles is not None else current.get("adminRoles", [])
    clusters = _clusters(a)
    admin.tenants.update(a.name, roles, clusters if clusters is not None else current.get("allowedClusters", []))
