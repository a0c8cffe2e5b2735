"""``python -m pulsar_rs_spark``: see :mod:`pulsar_rs_spark.cli`."""

from __future__ import annotations

from .cli import main

raise SystemExit(main())
