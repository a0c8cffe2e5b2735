"""Output of long-running commands: a progress line on a terminal (silent in pipes), periodic
schedules (``--every 60s``) and log lines as text or JSON (``--log-format json``, the same shape
as the broker's tracing JSON: ``timestamp``, ``level``, ``fields``, ``target``).
"""

from __future__ import annotations

import datetime
import json
import logging
import re
import sys
import time
from collections.abc import Callable
from typing import IO

from .units import SECONDS_PER_UNIT

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")


def parse_duration(text: str) -> float:
    """Seconds in ``"60s"``, ``"5m"``, ``"1h"``, ``"500ms"`` or ``"30"`` (seconds); > 0."""
    m = _DURATION.match(text)
    if not m:
        raise ValueError(f"not a duration: {text!r} (examples: 60s, 5m, 1h, 500ms)")
    seconds = float(m.group(1)) * SECONDS_PER_UNIT[m.group(2) or "s"]
    if seconds <= 0:
        raise ValueError(f"duration must be positive: {text!r}")
    return seconds


def _si(n: float) -> str:
    """``1.2 k``, ``3.4 M``, ``12 `` (a trailing space, so units read ``1.2 k rows``/``12 rows``)."""
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit} "
    return f"{n:.0f} "


class ExportProgress:
    """``(topics_done, topics_total, rows)`` progress of an export as one rewritten line.

    Shown only when ``stream`` is a terminal (or ``enabled=True``); at most one update per
    ``min_interval`` seconds, except the last one of each phase.
    """

    def __init__(
        self,
        stream: IO[str] | None = None,
        enabled: bool | None = None,
        min_interval: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.min_interval = min_interval
        self.clock = clock
        self.start = clock()
        self.last_draw = float("-inf")
        self.rows = 0
        self.drawn = False

    def _draw(self, line: str, force: bool) -> None:
        now = self.clock()
        if not self.enabled or (not force and now - self.last_draw < self.min_interval):
            return
        self.last_draw = now
        self.stream.write("\r\x1b[K" + line)
        self.stream.flush()
        self.drawn = True

    def rate(self) -> float:
        """Rows per second since the start."""
        return self.rows / max(self.clock() - self.start, 1e-9)

    def __call__(self, topics_done: int, topics_total: int, rows: int) -> None:
        """Export phase (called by the native export)."""
        self.rows = rows
        self._draw(
            f"export: {topics_done}/{topics_total} topics, {_si(rows)}rows, {_si(self.rate())}rows/s",
            force=topics_done == topics_total,
        )

    def table_written(self, table: str, rows: int) -> None:
        """Parquet phase: ``table`` (``rows`` rows) was written."""
        self._draw(f"export: wrote {table} ({_si(rows)}rows)", force=False)

    def finish(self, summary: str) -> None:
        """Ends the line with ``summary`` (only where progress was shown)."""
        if self.enabled:
            self.stream.write("\r\x1b[K" + summary + "\n")
            self.stream.flush()


class JsonFormatter(logging.Formatter):
    """One JSON object per line, shaped like tracing-subscriber's JSON output."""

    def format(self, record: logging.LogRecord) -> str:
        fields = {"message": record.getMessage()}
        fields.update(getattr(record, "fields", {}))
        ts = datetime.datetime.fromtimestamp(record.created, tz=datetime.UTC)
        return json.dumps(
            {
                "timestamp": ts.isoformat().replace("+00:00", "Z"),
                "level": record.levelname,
                "fields": fields,
                "target": record.name,
            }
        )


class TextFormatter(logging.Formatter):
    """``timestamp LEVEL target: message key=value ...``, like tracing-subscriber's text output."""

    def format(self, record: logging.LogRecord) -> str:
        ts = datetime.datetime.fromtimestamp(record.created, tz=datetime.UTC)
        extra = " ".join(f"{k}={v}" for k, v in getattr(record, "fields", {}).items())
        stamp = ts.isoformat(timespec="microseconds").replace("+00:00", "Z")
        return f"{stamp} {record.levelname:>5} {record.name}: {record.getMessage()}" + (f" {extra}" if extra else "")


def cli_logger(fmt: str, stream: IO[str] | None = None) -> logging.Logger:
    """The ``pulsar_rs.cli`` logger writing to ``stream`` (stderr) as ``fmt`` ("text" or "json")."""
    if fmt not in ("text", "json"):
        raise ValueError(f"log format must be text or json, not {fmt!r}")
    logger = logging.getLogger("pulsar_rs.cli")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    for h in list(logger.handlers):
        logger.removeHandler(h)
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    logger.addHandler(handler)
    return logger
