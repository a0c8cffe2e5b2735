"""Where and how the broker serves a topic: ``topics lookup T`` (the serving broker's URLs; in a
cluster the redirects to the owner are followed), ``topics bundle-range T`` (the namespace bundle
the topic falls in, ``0x..._0x...``),
``topics unload T`` (close the topic, or each partition, until its next use: its clients
reconnect), ``topics compact T`` (start a compaction run; 409 while one runs) and
``topics compaction-status T [-w]`` (``NOT_RUN``, ``RUNNING``, ``SUCCESS`` or ``ERROR``;
``--wait-complete`` polls until it is no longer running)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from ...admin import Admin


def _compaction_status(admin: Admin, a: argparse.Namespace) -> Any:
    status = admin.topics.compaction_status(a.topic)
    while a.wait_complete and status.get("status") == "RUNNING":
        time.sleep(1)  # poll: the broker compacts in the background
        status = admin.topics.compaction_status(a.topic)
    return status


def add_to(g: Any) -> None:
    """Registers the commands on the ``topics`` sub-parsers ``g``."""
    for verb, fn in (
        ("lookup", "lookup"),
        ("bundle-range", "bundle_range"),
        ("unload", "unload"),
        ("compact", "compact"),
    ):
        p = g.add_parser(verb)
        p.add_argument("topic")
        p.set_defaults(call=lambda admin, a, fn=fn: getattr(admin.topics, fn)(a.topic))
    p = g.add_parser("compaction-status")
    p.add_argument("topic")
    p.add_argument("--wait-complete", "-w", action="store_true", help="wait while it runs")
    p.set_defaults(call=_compaction_status)
