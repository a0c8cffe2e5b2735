#!/usr/bin/env bash
# beside.sh BUILD COMMAND...: runs the shell command BUILD at nice 10 in the background while
# COMMAND runs in the foreground (tox.ini: the Rust tests' build beside the quick pytest room,
# which leaves half of two cores idle). The build's output is printed when both are done.
# Exits with COMMAND's status when it fails (the build is stopped at once: fail fast), else
# with the build's.
set -uo pipefail
build=$1
shift
log=$(mktemp)
# setsid: the build (bash, cargo, rustc) in a process group of its own, stopped as one.
nice -n 10 setsid bash -c "$build" >"$log" 2>&1 &
builder=$!
"$@"
rc=$?
if [ "$rc" -ne 0 ]; then
    kill -- -"$builder" 2>/dev/null
    wait "$builder" 2>/dev/null
    echo "beside.sh: '$*' failed (exit $rc): the build beside it ('$build') was stopped" >&2
    rm -f "$log"
    exit "$rc"
fi
wait "$builder"
built=$?
echo "beside.sh: '$build' (exit $built):"
cat "$log"
rm -f "$log"
exit "$built"
