"""PySpark backlog analytics over pulsar_rs snapshot exports (spark/SCHEMA.md).

Run ``python -m pulsar_rs_spark --input SNAPSHOTS --output RESULTS`` (with ``spark/`` on
``PYTHONPATH``) or ``spark-submit spark/backlog_report.py --input ... --output ...``. Modules:
:mod:`.io` (reading and choosing snapshots), :mod:`.jobs` (the three analyses), :mod:`.report`
(``report.html``), :mod:`.cli` (the command), :mod:`.synthetic` (snapshots for tests and benchmarks).
"""

from __future__ import annotations

__all__ = ["SCHEMA_VERSION"]

from .schema import SCHEMA_VERSION
