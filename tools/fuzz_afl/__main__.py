"""``python3 -m tools.fuzz_afl [--seconds N] [target ...]``: see the package's docstring."""

from __future__ import annotations

import argparse
import sys

from tools.fuzz_afl import TARGETS, run


def main() -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tools.fuzz_afl")
    parser.add_argument("--seconds", type=int, default=60, help="per target")
    parser.add_argument("targets", nargs="*", default=list(TARGETS), choices=TARGETS)
    args = parser.parse_args()
    bad = 0
    for r in run(args.seconds, tuple(args.targets)):
        print(f"{r.target}: {r.execs} execs, {r.paths} inputs in the corpus")
        for p in r.crashes + r.hangs:
            print(f"  found: {p}")
        bad += len(r.crashes) + len(r.hangs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
