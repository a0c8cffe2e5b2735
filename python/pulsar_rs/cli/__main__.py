"""``python -m pulsar_rs.cli ...``: runs the ``pulsar-rs`` command."""

from __future__ import annotations

from .command import main

raise SystemExit(main())
