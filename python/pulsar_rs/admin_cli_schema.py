"""The schema commands of ``pulsar-rs admin``, in pulsar-admin's naming: ``namespaces
set-schema-compatibility-strategy / get-schema-compatibility-strategy / set-is-allow-auto-update-schema
/ get-is-allow-auto-update-schema / set-schema-validation-enforce / get-schema-validation-enforce``
and the ``schemas`` group (``get``, ``delete``, ``upload``, ``compatibility``).

``schemas upload`` and ``schemas compatibility`` read ``--filename``: a Pulsar ``PostSchemaPayload``
(``{"type": "AVRO", "schema": "...", "properties": {}}``), as pulsar-admin's.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .admin import Admin

NAMESPACE_ACTIONS = (
    "set-schema-compatibility-strategy",
    "get-schema-compatibility-strategy",
    "set-is-allow-auto-update-schema",
    "get-is-allow-auto-update-schema",
    "set-schema-validation-enforce",
    "get-schema-validation-enforce",
)


def add_namespace_commands(namespaces: Any) -> None:
    """Adds the schema policy actions to the ``namespaces`` sub-parsers."""
    s = namespaces.add_parser("set-schema-compatibility-strategy")
    s.add_argument("namespace")
    s.add_argument("--compatibility", "-c", required=True, help="FULL, BACKWARD, ..., ALWAYS_INCOMPATIBLE")
    for verb in ("set-is-allow-auto-update-schema", "set-schema-validation-enforce"):
        p = namespaces.add_parser(verb)
        p.add_argument("namespace")
        on_off = p.add_mutually_exclusive_group(required=True)
        on_off.add_argument("--enable", "-e", action="store_true")
        on_off.add_argument("--disable", "-d", action="store_true")
    for verb in NAMESPACE_ACTIONS:
        if verb.startswith("get-"):
            namespaces.add_parser(verb).add_argument("namespace")


def add_schema_group(groups: Any) -> None:
    """Adds the ``schemas`` group."""
    schemas = groups.add_parser("schemas", help="schemas").add_subparsers(dest="action", required=True)
    get = schemas.add_parser("get")
    get.add_argument("topic")
    get.add_argument("--version", type=int, default=None)
    get.add_argument("--all-version", action="store_true", help="every version in force")
    schemas.add_parser("delete").add_argument("topic")
    for verb in ("upload", "compatibility"):
        p = schemas.add_parser(verb)
        p.add_argument("topic")
        p.add_argument("--filename", "-f", required=True, help="a PostSchemaPayload JSON file")


def call_namespace(admin: Admin, args: argparse.Namespace) -> Any:
    """Runs one of :data:`NAMESPACE_ACTIONS`."""
    ns, a = admin.namespaces, args.action
    if a == "set-schema-compatibility-strategy":
        return ns.set_schema_compatibility_strategy(args.namespace, args.compatibility)
    if a.startswith("set-"):
        return getattr(ns, a.replace("-", "_"))(args.namespace, bool(args.enable))
    return getattr(ns, a.replace("-", "_"))(args.namespace)


def call_schemas(admin: Admin, args: argparse.Namespace) -> Any:
    """Runs one ``schemas`` action."""
    s, a = admin.schemas, args.action
    if a == "get":
        return s.get_all_versions(args.topic) if args.all_version else s.get(args.topic, args.version)
    if a == "delete":
        return s.delete(args.topic)
    payload = json.loads(Path(args.filename).read_text())
    if not isinstance(payload, dict) or "type" not in payload:
        raise ValueError(f"{args.filename}: expected a PostSchemaPayload with a 'type'")
    schema = payload.get("schema", "")
    if a == "upload":
        return {"version": s.upload(args.topic, payload["type"], schema, payload.get("properties"))}
    return s.compatibility(args.topic, payload["type"], schema)
