"""``pulsar-rs admin schemas``: pulsar-admin's ``get`` (``--version/-v``, ``--all-version/-a``),
``delete`` (``--force/-f`` accepted: deletion here always removes every version), ``upload`` and
``compatibility`` (``--filename/-f``: a Pulsar ``PostSchemaPayload``,
``{"type": "AVRO", "schema": "...", "properties": {}}``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ...admin import Admin, IsCompatibilityResponse


def add(groups: Any) -> None:
    g = groups.add_parser("schemas", help="schemas").add_subparsers(dest="action", required=True)
    p = g.add_parser("get", help="the latest schema, one version, or all of them")
    p.add_argument("topic")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--version", "-v", type=_version, default=None)
    which.add_argument("--all-version", "-a", action="store_true", help="every version in force")
    p.set_defaults(call=_get)
    p = g.add_parser("delete", help="delete every version of a topic's schema")
    p.add_argument("topic")
    p.add_argument("--force", "-f", action="store_true", help="accepted for pulsar-admin compatibility")
    p.set_defaults(call=lambda admin, a: admin.schemas.delete(a.topic))
    for verb, call in (("upload", _upload), ("compatibility", _compatibility)):
        p = g.add_parser(verb)
        p.add_argument("topic")
        p.add_argument("--filename", "-f", required=True, help="a PostSchemaPayload JSON file")
        p.set_defaults(call=call)


def _version(text: str) -> int:
    v = int(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"--version must be 0 or more, not {v}")
    return v


def _get(admin: Admin, a: argparse.Namespace) -> Any:
    return admin.schemas.get_all_versions(a.topic) if a.all_version else admin.schemas.get(a.topic, a.version)


def _payload(filename: str) -> dict[str, Any]:
    payload = json.loads(Path(filename).read_text())
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
        raise ValueError(f"{filename}: expected a PostSchemaPayload with a 'type'")
    return payload


def _upload(admin: Admin, a: argparse.Namespace) -> dict[str, int]:
    p = _payload(a.filename)
    return {"version": admin.schemas.upload(a.topic, p["type"], p.get("schema", ""), p.get("properties"))}


def _compatibility(admin: Admin, a: argparse.Namespace) -> IsCompatibilityResponse:
    p = _payload(a.filename)
    return admin.schemas.compatibility(a.topic, p["type"], p.get("schema", ""))
