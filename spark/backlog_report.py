"""Entry script for ``spark-submit spark/backlog_report.py --input IN --output OUT [...]``.

Runs the three jobs of :mod:`pulsar_rs_spark` (backlog report, hottest keys, consumer lag) and
writes their Parquet results and ``report.html``; ``--help`` lists the options.
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from pulsar_rs_spark.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
