"""How ``pulsar-rs admin`` prints an answer.

Readable (the default):

* a list of names: one a line; a list of documents: an aligned table, one column per key;
* a document (stats, internal stats, policies, metadata): an aligned two-column table
  ``key  value``, nested documents flattened with dotted keys (``subscriptions.s.msgBacklog``),
  lists of documents indexed (``publishers.0.producerName``), lists of scalars joined with ``, ``;
* a single value (a TTL, a flag): the value; a policy that is not set: ``(not set)``;
* nothing for an action without an answer.

``--json`` prints the broker's JSON as it came (parsed and re-serialized, keys in its order),
``null`` for a policy that is not set.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["NOT_SET", "flatten", "render", "table"]


class _NotSet:
    """A getter's answer when the broker returned ``null``: the policy is not set."""

    def __repr__(self) -> str:
        return "NOT_SET"


NOT_SET = _NotSet()


def _scalar(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return f"{v:.1f}"
    return str(v)


def flatten(doc: Any, prefix: str = "") -> list[tuple[str, str]]:
    """``(dotted key, printed value)`` rows of a JSON document, in the document's order."""
    rows: list[tuple[str, str]] = []
    if isinstance(doc, dict):
        if not doc and prefix:
            rows.append((prefix, "{}"))
        for k, v in doc.items():
            rows.extend(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(doc, list) and any(isinstance(x, (dict, list)) for x in doc):
        for i, v in enumerate(doc):
            rows.extend(flatten(v, f"{prefix}.{i}" if prefix else str(i)))
    elif isinstance(doc, list):
        rows.append((prefix, ", ".join(_scalar(x) for x in doc) if doc else "[]"))
    else:
        rows.append((prefix, _scalar(doc)))
    return rows


def table(rows: list[list[str]]) -> list[str]:
    """Lines of left-aligned columns separated by two spaces (the last column unpadded)."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join([*(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)), r[-1]]).rstrip() for r in rows]


def _readable(result: Any) -> list[str]:
    if result is NOT_SET:
        return ["(not set)"]
    if isinstance(result, list):
        if result and all(isinstance(x, dict) for x in result):
            keys: list[str] = []
            flat = [dict(flatten(x)) for x in result]
            for f in flat:
                keys.extend(k for k in f if k not in keys)
            return table([[k.upper() for k in keys], *([f.get(k, "") for k in keys] for f in flat)])
        return [_scalar(x) if not isinstance(x, (dict, list)) else json.dumps(x) for x in result]
    if isinstance(result, dict):
        rows = flatten(result)
        return table([[k, v] for k, v in rows]) if rows else ["(empty)"]
    return [_scalar(result)]


def render(result: Any, as_json: bool) -> None:
    """Prints ``result`` (nothing for ``None``, the answer of an action)."""
    if result is None:
        return
    if as_json:
        print(json.dumps(None if result is NOT_SET else result, indent=2))
        return
    for line in _readable(result):
        print(line)
