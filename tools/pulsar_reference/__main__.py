"""``python -m tools.pulsar_reference fetch|run|bookkeeper``: fetch the pinned Apache Pulsar, run it until
Ctrl-C, or run ZooKeeper and three bookies from it until Ctrl-C (for ``pulsar-rs`` on BookKeeper)."""

from __future__ import annotations

import argparse
import contextlib
import signal
import time

from . import PULSAR_VERSION, PulsarStandalone, ensure_distribution


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.pulsar_reference", description=__doc__)
    parser.add_argument("command", choices=("fetch", "run", "bookkeeper"))
    parser.add_argument("--bookies", type=int, default=3, help="bookkeeper: how many bookies")
    args = parser.parse_args()
    if args.command == "fetch":
        print(f"Apache Pulsar {PULSAR_VERSION} at {ensure_distribution()}")
        return
    # SIGTERM stops it as Ctrl-C does: the processes are stopped and their directories removed.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    if args.command == "bookkeeper":
        from pulsar_rs.testing.bookkeeper import BookKeeperCluster

        with BookKeeperCluster(bookies=args.bookies) as bk, contextlib.suppress(KeyboardInterrupt):
            print(f"READY metadataStoreUrl={bk.metadata_store_url} bookies={','.join(bk.bookies)}", flush=True)
            while True:
                time.sleep(3600)  # serve until Ctrl-C
        return
    with PulsarStandalone() as pulsar, contextlib.suppress(KeyboardInterrupt):
        print(f"READY {pulsar.service_url} {pulsar.admin_url} data_dir={pulsar.data_dir}", flush=True)
        while True:
            time.sleep(3600)  # serve until Ctrl-C


if __name__ == "__main__":
    main()
