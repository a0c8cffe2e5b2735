"""``python -m tools.pulsar_reference fetch|run``: fetch the pinned Apache Pulsar, or run it until Ctrl-C."""

from __future__ import annotations

import argparse
import contextlib
import signal
import time

from . import PULSAR_VERSION, PulsarStandalone, ensure_distribution


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.pulsar_reference", description=__doc__)
    parser.add_argument("command", choices=("fetch", "run"))
    args = parser.parse_args()
    if args.command == "fetch":
        print(f"Apache Pulsar {PULSAR_VERSION} at {ensure_distribution()}")
        return
    # SIGTERM stops it as Ctrl-C does: the broker is stopped and its data directory removed.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with PulsarStandalone() as pulsar, contextlib.suppress(KeyboardInterrupt):
        print(f"READY {pulsar.service_url} {pulsar.admin_url} data_dir={pulsar.data_dir}", flush=True)
        while True:
            time.sleep(3600)  # serve until Ctrl-C


if __name__ == "__main__":
    main()
