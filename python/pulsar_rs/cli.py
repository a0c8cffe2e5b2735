"""The ``pulsar-rs`` command line.

``pulsar-rs standalone [--config broker.toml] [--data-dir DIR] [--bind 127.0.0.1] [--port 6650]
[--admin-port 8080]`` starts a broker (DESIGN.md section 4).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pulsar-rs``."""
    parser = argparse.ArgumentParser(prog="pulsar-rs", description="A broker with Apache Pulsar's semantics.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    standalone = commands.add_parser("standalone", help="run a standalone broker until Ctrl-C / SIGTERM")
    standalone.add_argument(
        "--config", type=Path, default=None, help="TOML file of broker.conf settings (Pulsar's key names)"
    )
    standalone.add_argument(
        "--data-dir", type=Path, default=None, help="data directory (default: a temporary directory)"
    )
    standalone.add_argument("--bind", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    standalone.add_argument("--port", type=int, default=6650, help="binary protocol port (default: %(default)s)")
    standalone.add_argument("--admin-port", type=int, default=8080, help="admin HTTP port (default: %(default)s)")
    return parser


def _run_standalone(args: argparse.Namespace) -> int:
    """Starts the broker and blocks until it is asked to stop. Wired up by the broker work."""
    raise SystemExit("standalone is not wired yet")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pulsar-rs`` script."""
    args = build_parser().parse_args(argv)
    if args.command == "standalone":
        return _run_standalone(args)
    raise AssertionError(f"unhandled command {args.command!r}")  # argparse rejects unknown commands


if __name__ == "__main__":
    raise SystemExit(main())
