"""``pulsar-rs admin``: pulsar-admin's command tree over the admin REST API (:class:`Admin`).

``pulsar-rs admin [--admin-url URL] [--auth-params token:JWT|file:PATH] [--json] GROUP ACTION ...``
with the groups ``clusters``, ``tenants``, ``namespaces``, ``topics`` and ``schemas``
(the schema commands are in :mod:`.admin_cli_schema`). Lists print one name
a line, documents print as indented JSON; a refused call prints the broker's reason and exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from . import admin_cli_schema
from .admin import Admin, AdminError


def add_parser(commands: Any) -> None:
    """Adds the ``admin`` command to the ``pulsar-rs`` sub-parsers."""
    p = commands.add_parser("admin", help="administer a broker over its REST API (pulsar-admin style)")
    p.add_argument("--admin-url", default="http://127.0.0.1:8080", help="admin API URL (default: %(default)s)")
    p.add_argument("--auth-params", default=None, help="token:JWT, file:/path/to/token, or a bare JWT")
    p.add_argument("--json", action="store_true", help="print lists as JSON too")
    groups = p.add_subparsers(dest="group", required=True, metavar="GROUP")

    clusters = groups.add_parser("clusters", help="clusters").add_subparsers(dest="action", required=True)
    clusters.add_parser("list")
    clusters.add_parser("get").add_argument("name")

    tenants = groups.add_parser("tenants", help="tenants").add_subparsers(dest="action", required=True)
    tenants.add_parser("list")
    tenants.add_parser("get").add_argument("name")
    for verb in ("create", "update"):
        t = tenants.add_parser(verb)
        t.add_argument("name")
        t.add_argument("--admin-roles", "-r", default="", help="comma-separated roles")
        t.add_argument("--allowed-clusters", "-c", default=None, help="comma-separated (default: all clusters)")
    tenants.add_parser("delete").add_argument("name")

    namespaces = groups.add_parser("namespaces", help="namespaces").add_subparsers(dest="action", required=True)
    namespaces.add_parser("list").add_argument("tenant")
    namespaces.add_parser("create").add_argument("namespace", help="tenant/name")
    namespaces.add_parser("delete").add_argument("namespace")
    namespaces.add_parser("policies").add_argument("namespace")
    namespaces.add_parser("permissions").add_argument("namespace")
    grant = namespaces.add_parser("grant-permission")
    grant.add_argument("namespace")
    grant.add_argument("--role", required=True)
    grant.add_argument("--actions", required=True, help="comma-separated: produce,consume")
    revoke = namespaces.add_parser("revoke-permission")
    revoke.add_argument("namespace")
    revoke.add_argument("--role", required=True)
    admin_cli_schema.add_namespace_commands(namespaces)

    topics = groups.add_parser("topics", help="topics").add_subparsers(dest="action", required=True)
    topics.add_parser("list").add_argument("namespace")
    create = topics.add_parser("create")
    create.add_argument("topic")
    create.add_argument("--partitions", "-p", type=int, default=0)
    delete = topics.add_parser("delete")
    delete.add_argument("topic")
    delete.add_argument("--partitioned", action="store_true")
    topics.add_parser("stats").add_argument("topic")
    topics.add_parser("internal-stats").add_argument("topic")
    topics.add_parser("subscriptions").add_argument("topic")
    admin_cli_schema.add_schema_group(groups)


def _token(auth_params: str | None) -> str | None:
    if not auth_params:
        return None
    kind, sep, value = auth_params.partition(":")
    if sep and kind == "token":
        return value
    if sep and kind == "file":
        return Path(value.removeprefix("//")).read_text().strip()
    return auth_params


def _csv(s: str | None) -> list[str]:
    return [x.strip() for x in (s or "").split(",") if x.strip()]


def _call(admin: Admin, args: argparse.Namespace) -> Any:
    g, a = args.group, args.action
    if g == "clusters":
        return admin.clusters.list() if a == "list" else admin.clusters.get(args.name)
    if g == "tenants":
        if a in ("create", "update"):
            clusters = _csv(args.allowed_clusters) if args.allowed_clusters is not None else None
            return getattr(admin.tenants, a)(args.name, _csv(args.admin_roles), clusters)
        return admin.tenants.list() if a == "list" else getattr(admin.tenants, a)(args.name)
    if g == "schemas":
        return admin_cli_schema.call_schemas(admin, args)
    if g == "namespaces":
        if a in admin_cli_schema.NAMESPACE_ACTIONS:
            return admin_cli_schema.call_namespace(admin, args)
        if a == "list":
            return admin.namespaces.list(args.tenant)
        if a == "grant-permission":
            return admin.namespaces.grant_permission(args.namespace, args.role, _csv(args.actions))
        if a == "revoke-permission":
            return admin.namespaces.revoke_permission(args.namespace, args.role)
        return getattr(admin.namespaces, a)(args.namespace)
    if a == "list":
        return admin.topics.list(args.namespace)
    if a == "create":
        return admin.topics.create(args.topic, args.partitions)
    if a == "delete":
        return admin.topics.delete(args.topic, args.partitioned)
    return getattr(admin.topics, a.replace("-", "_"))(args.topic)


def run(args: argparse.Namespace) -> int:
    """Runs one ``pulsar-rs admin`` command; 0 on success, 1 when the broker refuses it."""
    admin = Admin(args.admin_url, token=_token(args.auth_params))
    try:
        result = _call(admin, args)
    except AdminError as e:
        print(f"pulsar-rs admin: {e.status} {e.reason}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as e:
        print(f"pulsar-rs admin: {e}", file=sys.stderr)
        return 1
    if isinstance(result, list) and not args.json:
        for item in result:
            print(item)
    elif result is not None:
        print(json.dumps(result, indent=2, sort_keys=True))
    return 0
