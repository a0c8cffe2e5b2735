"""Buckets `perf script` samples of one process by thread name and by the system call on their stack.

    perf record -F 1999 -g -p BROKER -o w2.data -- sleep 3
    perf script -i w2.data | python benches/perf_buckets.py

A sample whose stack holds a ``__x64_sys_<name>`` frame counts under ``sys_<name>``; one taken in
an interrupt or softirq under ``irq``; everything else under ``user`` (user code, and system calls
whose entry frame was inlined away). Prints the shares, largest first.
"""

from __future__ import annotations

import collections
import re
import sys

SYSCALL = re.compile(r"__(?:x64|se|do)_sys_(\w+)")


def bucket(frames: list[str]) -> str:
    for f in frames:
        m = SYSCALL.match(f)
        if m:
            return "sys_" + m.group(1)
    if any("irq" in f for f in frames[:8]):
        return "irq"
    return "user"


def main() -> None:
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    comm: str | None = None
    frames: list[str] = []

    def flush() -> None:
        if comm is not None:
            counts[(comm, bucket(frames))] += 1

    for line in sys.stdin:
        if not line.strip():
            flush()
            comm, frames = None, []
        elif not line[0].isspace():
            comm, frames = line.split()[0], []
        else:
            parts = line.split(None, 1)
            if len(parts) == 2:
                frames.append(parts[1].rsplit(" (", 1)[0].split("+")[0])
    flush()
    total = sum(counts.values()) or 1
    for (thread, where), n in counts.most_common(30):
        print(f"{100 * n / total:5.1f}%  {thread:<18} {where}")


if __name__ == "__main__":
    main()
