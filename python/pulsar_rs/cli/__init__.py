"""The ``pulsar-rs`` command line, as a package: :mod:`.command` parses the command line and runs
``standalone``, ``export`` and ``perf``; :mod:`.admin` is ``pulsar-rs admin`` (pulsar-admin's
command tree, one module per family). ``main`` is the console script's entry point
(``pulsar_rs.cli:main``) and ``python -m pulsar_rs.cli`` runs it too (:mod:`.__main__`).
"""

from __future__ import annotations

from .command import build_parser, main

__all__ = ["build_parser", "main"]
