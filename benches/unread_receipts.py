"""One raw producer sends 1 KiB SENDs for 60 s and never reads a SEND_RECEIPT; every 5 s, the SENDs
the broker's socket took and the broker's RSS. Before `rust/server/src/outbound.rs` both grew without
bound; since, both stop once about 1 MiB of receipts waits for the client.

Usage: ``python benches/unread_receipts.py target/release/pulsar-rs-server``
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benches")]

import hostile_soak  # noqa: E402
import vs_pulsar  # noqa: E402

import raw_protocol as rp  # noqa: E402


def main() -> None:
    broker = vs_pulsar.RsBroker(sys.argv[1] if len(sys.argv) > 1 else "target/release/pulsar-rs-server")
    try:
        topic = hostile_soak.owned_topic(broker.admin_url, "flood")
        raw = rp.Raw(broker.service_url)
        raw.connect()
        raw.create_producer(topic)
        raw.sock.settimeout(1.0)
        stop, sent = threading.Event(), [0]

        def flood() -> None:
            while not stop.is_set():
                try:
                    raw.send(rp.send_frame(1, sent[0], b"y" * 1024))
                    sent[0] += 1
                except TimeoutError:
                    continue  # the broker stopped reading us
                except OSError:
                    return

        threading.Thread(target=flood, daemon=True).start()
        for i in range(12):
            time.sleep(5)
            rss = hostile_soak.group_rss_mb(broker.proc.pid)
            print(f"{(i + 1) * 5}s sent={sent[0]} rss={rss:.1f}MB", flush=True)
        stop.set()
    finally:
        broker.close()


if __name__ == "__main__":
    main()
