"""``pulsar-rs admin``: pulsar-admin's command tree over the admin REST API (:class:`Admin`).

``pulsar-rs admin [--admin-url URL] [--auth-params token:JWT|file:PATH] [--json] GROUP ACTION ...``
with the groups ``brokers``, ``broker-stats``, ``clusters``, ``tenants``, ``namespaces``, ``topics``,
``topicPolicies``, ``schemas`` and ``transactions`` (one module each here;
each registers its actions with a ``call(admin, args)`` default). Output is readable by default
(:mod:`.output`: lists one item a line, documents as aligned ``key  value`` tables with nested
keys dotted) and the broker's JSON with ``--json``; a refused call prints one line on stderr,
``pulsar-rs admin: STATUS REASON``, and exits 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ...admin import Admin, AdminError
from . import (
    broker_stats,
    brokers,
    clusters,
    namespaces,
    output,
    schemas,
    tenants,
    topic_policies,
    topics,
    transactions,
)

#: The command families, each a module with ``add(groups)``.
FAMILIES = (brokers, broker_stats, clusters, tenants, namespaces, topics, topic_policies, schemas, transactions)


def add_parser(commands: Any) -> None:
    """Adds the ``admin`` command to the ``pulsar-rs`` sub-parsers."""
    p = commands.add_parser("admin", help="administer a broker over its REST API (pulsar-admin style)")
    p.add_argument("--admin-url", default="http://127.0.0.1:8080", help="admin API URL (default: %(default)s)")
    p.add_argument("--auth-params", default=None, help="token:JWT, file:/path/to/token, or a bare JWT")
    p.add_argument("--json", action="store_true", help="print the broker's JSON instead of tables")
    groups = p.add_subparsers(dest="group", required=True, metavar="GROUP")
    for family in FAMILIES:
        family.add(groups)


def _token(auth_params: str | None) -> str | None:
    if not auth_params:
        return None
    kind, sep, value = auth_params.partition(":")
    if sep and kind == "token":
        return value
    if sep and kind == "file":
        return Path(value.removeprefix("//")).read_text().strip()
    return auth_params


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def run(args: argparse.Namespace) -> int:
    """Runs one ``pulsar-rs admin`` command; 0 on success, 1 when it fails."""
    try:
        admin = Admin(args.admin_url, token=_token(args.auth_params))
        result = args.call(admin, args)
    except AdminError as e:
        print(f"pulsar-rs admin: {e.status} {_one_line(e.reason)}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as e:
        print(f"pulsar-rs admin: {_one_line(str(e))}", file=sys.stderr)
        return 1
    output.render(result, as_json=args.json)
    return 0
