"""Regenerates ``docs/console-topic.png``: a broker with live traffic on one topic (a producer at
~50 msg/s, a Shared subscription consumed and acknowledged, a durable subscription nobody reads),
its console topic page captured by headless Chromium (``apt-get install chromium``).

Run from the repository root with pulsar-rs and pulsar-client installed:
``python docs/tools/console_topic_shot.py``.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
import urllib.parse
from pathlib import Path

import pulsar

from pulsar_rs import Broker

OUT = Path(__file__).resolve().parent.parent / "console-topic.png"
TOPIC = "persistent://public/default/orders"


def main() -> None:
    with Broker() as b:
        client = pulsar.Client(b.service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        client.subscribe(TOPIC, "audit").close()  # durable subscription, nobody reading: backlog grows
        worker = client.subscribe(TOPIC, "billing", consumer_type=pulsar.ConsumerType.Shared, consumer_name="billing-1")
        producer = client.create_producer(TOPIC, producer_name="web-1")
        stop = threading.Event()

        def produce() -> None:
            i = 0
            while not stop.is_set():
                producer.send(f"order-{i}".encode() * 10)
                i += 1
                time.sleep(0.02)

        def consume() -> None:
            while not stop.is_set():
                with contextlib.suppress(pulsar.Timeout):
                    worker.acknowledge(worker.receive(timeout_millis=200))

        threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
        for t in threads:
            t.start()
        time.sleep(14)  # seven 2 s samples of history for the charts
        url = b.admin_url + "/#/topic/" + urllib.parse.quote(TOPIC, safe="")
        subprocess.run(
            [
                "chromium",
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--window-size=1440,1100",
                "--virtual-time-budget=4000",
                f"--screenshot={OUT}",
                url,
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        stop.set()
        for t in threads:
            t.join()
        client.close()


if __name__ == "__main__":
    main()
