"""``pulsar-rs admin clusters``: list, get, create, update, delete (pulsar-admin's flags
``--url``, ``--url-secure``, ``--broker-url``, ``--broker-url-secure``)."""

from __future__ import annotations

import argparse
from typing import Any, cast

from ...admin import Admin, ClusterData


def _data(a: argparse.Namespace) -> ClusterData:
    fields = {
        "serviceUrl": a.url,
        "serviceUrlTls": a.url_secure,
        "brokerServiceUrl": a.broker_url,
        "brokerServiceUrlTls": a.broker_url_secure,
    }
    return cast(ClusterData, {k: v for k, v in fields.items() if v is not None})


def add(groups: Any) -> None:
    g = groups.add_parser("clusters", help="clusters").add_subparsers(dest="action", required=True)
    g.add_parser("list").set_defaults(call=lambda admin, a: admin.clusters.list())
    g.add_parser("get").add_argument("name")
    g.choices["get"].set_defaults(call=lambda admin, a: admin.clusters.get(a.name))
    for verb in ("create", "update"):
        p = g.add_parser(verb)
        p.add_argument("name")
        p.add_argument("--url", help="the cluster's admin (web service) URL")
        p.add_argument("--url-secure", help="the cluster's HTTPS admin URL")
        p.add_argument("--broker-url", help="the cluster's pulsar:// service URL")
        p.add_argument("--broker-url-secure", help="the cluster's pulsar+ssl:// service URL")
        p.set_defaults(call=_create if verb == "create" else _update)
    g.add_parser("delete").add_argument("name")
    g.choices["delete"].set_defaults(call=lambda admin, a: admin.clusters.delete(a.name))


def _create(admin: Admin, a: argparse.Namespace) -> None:
    admin.clusters.create(a.name, _data(a))


def _update(admin: Admin, a: argparse.Namespace) -> None:
    admin.clusters.update(a.name, _data(a))
