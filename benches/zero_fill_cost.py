"""What journal preallocation trades, in CPU time of the writing process (issue 14).

Two measurements on the file system of ``--dir`` (default: the system temp directory):

* **rounds**: one ``pwrite`` of a round's bytes and one ``fdatasync``, appended to a growing file
  or overwriting zeros written (and synced) earlier, for several round sizes: what a durable
  round costs with and without preallocation;
* **zero fill**: writing zeros in steps of several sizes, each step synced: what preallocation
  itself costs per KiB.

CPU time is ``getrusage`` user + system time of this process (a VM's disk doorbell exits count
as system time). Wall time is reported too.

    python benches/zero_fill_cost.py --dir /tmp
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed_writes(fd: int, data: bytes, n: int) -> tuple[float, float]:
    """CPU and wall seconds of `n` writes of `data`, one after the other, each followed by
    `fdatasync`."""
    c0, t0 = cpu(), time.perf_counter()
    for i in range(n):
        os.pwrite(fd, data, i * len(data))
        os.fdatasync(fd)
    return cpu() - c0, time.perf_counter() - t0


def rounds(d: str, size: int, n: int, prezero: bool) -> tuple[float, float]:
    """CPU and wall µs per round of `size` bytes: pwrite + fdatasync."""
    path = os.path.join(d, "rounds.bin")
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
    try:
        if prezero:
            zeros = bytes(1 << 20)
            for i in range(size * n // len(zeros) + 1):
                os.pwrite(fd, zeros, i * len(zeros))
            os.fdatasync(fd)
        c, w = timed_writes(fd, os.urandom(size), n)
    finally:
        os.close(fd)
        os.unlink(path)
    return 1e6 * c / n, 1e6 * w / n


def zero_fill(d: str, step: int, total: int) -> tuple[float, float]:
    """CPU µs per KiB and wall ms per MiB of zeros written in synced steps of `step` bytes."""
    path = os.path.join(d, "zeros.bin")
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
    try:
        c, w = timed_writes(fd, bytes(step), total // step)
    finally:
        os.close(fd)
        os.unlink(path)
    return 1e6 * c / (total >> 10), 1e3 * w / (total >> 20)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--rounds", type=int, default=2000)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="zero-fill-", dir=a.dir)
    try:
        print("round size | growing file: CPU / wall µs per round | over zeros: CPU / wall µs per round")
        for size in (6 << 10, 30 << 10, 150 << 10):
            g = rounds(d, size, a.rounds, prezero=False)
            z = rounds(d, size, a.rounds, prezero=True)
            print(f"{size >> 10:4d} KiB | {g[0]:7.1f} / {g[1]:7.1f} | {z[0]:7.1f} / {z[1]:7.1f}")
        print("zero-fill step | CPU µs per KiB | wall ms per MiB")
        for step in (256 << 10, 1 << 20, 4 << 20):
            c, w = zero_fill(d, step, 64 << 20)
            print(f"{step >> 10:5d} KiB | {c:.3f} | {w:.2f}")
    finally:
        os.rmdir(d)


if __name__ == "__main__":
    main()
