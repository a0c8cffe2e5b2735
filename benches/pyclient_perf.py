"""Load driver using the official Python ``pulsar-client`` (the C++ client underneath).

One producer (``send_async``, optional client-side batching) and one consumer thread on one topic,
for a fixed duration. Every message starts with ``time.time_ns()`` so the consumer measures
end-to-end latency. Prints one JSON object with the same shape as ``pulsar-rs-perf``'s output
(``publish`` / ``consume``), percentiles in milliseconds.

    python benches/pyclient_perf.py --url pulsar://127.0.0.1:6650 --size 100 --batch 1 --duration 5
"""

from __future__ import annotations

import argparse
import json
import struct
import threading
import time

import pulsar


def percentiles(samples_ns: list[int]) -> dict:
    if not samples_ns:
        return {"count": 0}
    s = sorted(samples_ns)

    def q(p: float) -> float:
        return s[min(len(s) - 1, int(p * len(s)))] / 1e6

    return {
        "count": len(s),
        "mean": sum(s) / len(s) / 1e6,
        "p50": q(0.50),
        "p95": q(0.95),
        "p99": q(0.99),
        "p999": q(0.999),
        "max": s[-1] / 1e6,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--url", default="pulsar://127.0.0.1:6650")
    ap.add_argument("--topic", default="persistent://public/default/py-perf")
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--batch", type=int, default=1, help="batching_max_messages; 1 = no batching")
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--max-pending", type=int, default=1000)
    ap.add_argument("--drain-timeout", type=float, default=10.0)
    args = ap.parse_args()

    client = pulsar.Client(
        args.url,
        operation_timeout_seconds=30,
        io_threads=1,
        message_listener_threads=1,
        log_conf_file_path=None,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
    )
    consumer = client.subscribe(
        args.topic, "py-perf-sub", consumer_type=pulsar.ConsumerType.Exclusive, receiver_queue_size=1000
    )
    producer = client.create_producer(
        args.topic,
        batching_enabled=args.batch > 1,
        batching_max_messages=max(args.batch, 2),
        batching_max_publish_delay_ms=1,
        max_pending_messages=args.max_pending,
        block_if_queue_full=True,
    )

    pub_lat: list[int] = []
    e2e_lat: list[int] = []
    acked = [0]
    errors = [0]
    last_ack = [0.0]
    received = [0]
    first_recv = [0.0]
    last_recv = [0.0]
    stop = threading.Event()
    lock = threading.Lock()

    def on_sent(res, _msg_id, t0=0):
        now = time.monotonic_ns()
        with lock:
            if res == pulsar.Result.Ok:
                acked[0] += 1
                pub_lat.append(now - t0)
                last_ack[0] = time.monotonic()
            else:
                errors[0] += 1

    def consume() -> None:
        while not stop.is_set():
            try:
                msg = consumer.receive(timeout_millis=200)
            except pulsar.Timeout:
                continue
            now = time.time_ns()
            data = msg.data()
            if len(data) >= 8:
                e2e_lat.append(now - struct.unpack_from("<Q", data)[0])
            consumer.acknowledge(msg)
            t = time.monotonic()
            if received[0] == 0:
                first_recv[0] = t
            last_recv[0] = t
            received[0] += 1

    th = threading.Thread(target=consume, daemon=True)
    th.start()
    filler = b"x" * max(0, args.size - 8)
    start = time.monotonic()
    deadline = start + args.duration
    sent = 0
    while time.monotonic() < deadline:
        for _ in range(100):
            t0 = time.monotonic_ns()
            payload = struct.pack("<Q", time.time_ns()) + filler
            producer.send_async(payload, lambda r, m, t0=t0: on_sent(r, m, t0))
            sent += 1
    producer.flush()
    end_drain = time.monotonic() + args.drain_timeout
    while received[0] < acked[0] and time.monotonic() < end_drain:
        time.sleep(0.02)
    stop.set()
    th.join()
    pub_time = max(last_ack[0] - start, 1e-9)
    cons_time = max(last_recv[0] - first_recv[0], 1e-9)
    out = {
        "client": f"pulsar-client {pulsar.__version__ if hasattr(pulsar, '__version__') else ''}".strip(),
        "config": vars(args),
        "publish": {
            "messages": acked[0],
            "sent": sent,
            "send_errors": errors[0],
            "duration_s": pub_time,
            "msg_per_s": acked[0] / pub_time,
            "mb_per_s": acked[0] * args.size / pub_time / 1e6,
            "latency_ms": percentiles(pub_lat),
        },
        "consume": {
            "messages": received[0],
            "duration_s": cons_time,
            "msg_per_s": received[0] / cons_time,
            "e2e_latency_ms": percentiles(e2e_lat),
        },
    }
    producer.close()
    consumer.close()
    client.close()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
