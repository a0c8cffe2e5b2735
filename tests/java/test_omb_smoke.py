"""The OpenMessaging Benchmark (OMB), unchanged, against ``pulsar-rs standalone``: a smoke run of
``benches/omb.py``'s pieces (README there).

OMB's framework and Pulsar driver are built with Maven from the source ``benches/omb.py`` prepared
in ``~/.cache/pulsar-rs/omb`` (or from a checkout named by ``OMB_SRC``), then OMB's published
``simple-workload.yaml`` (1 topic, 10 partitions: the partitioned-topic admin call, 1 KiB
messages) runs against a fresh pulsar-rs with OMB's published ``driver-pulsar/pulsar.yaml`` (only
the broker's URLs, cluster ``standalone``, 1/1/1 persistence and one I/O thread changed), scaled to
no warm-up, 1 000 msg/s and OMB's shortest measured phase: 1 minute (``testDurationMinutes`` is a
whole number of minutes; 0 means "forever"). Every admin call OMB's driver makes (tenant,
namespace, persistence, backlog quota, deduplication, partitioned topic) must be answered, or OMB
exits without a result and the test fails with OMB's log.

Asserts on OMB's own JSON: every 10 s window published and consumed, no publish error, what was
consumed close to what was published, latencies recorded. About 90 s once built; the Maven build
of the three modules takes about 2 minutes on a cold ``~/.m2`` (1 minute warm, cached after).

Skipped without ``java``/``mvn``, and when no OMB source is at hand: no registry reached here
serves it (the Go module proxy answers 403 for github.com/openmessaging/benchmark), so it comes
from a checkout given once to ``benches/omb.py --omb-src`` (or ``OMB_SRC``).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benches"))
import omb  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.java, pytest.mark.timeout(900)]

WORKLOAD = "simple-workload"
RATE = 1000


def test_omb_smoke_against_pulsar_rs(tmp_path: Path) -> None:
    if shutil.which("java") is None or shutil.which("mvn") is None:
        pytest.skip("OMB needs java and mvn")
    try:
        src = omb.prepare_source(os.environ.get("OMB_SRC"), "HEAD")
    except omb.OmbError as e:
        pytest.skip(str(e))
    omb.build(src, None)
    with omb.broker("pulsar-rs") as b:
        drv = tmp_path / "driver-pulsar-rs.yaml"
        drv.write_text(omb.driver_yaml(src, "pulsar-rs", b.service_url, b.admin_url, 1))
        text, _ = omb.workload_yaml(src, WORKLOAD, 1, 0, RATE)
        wf = tmp_path / f"{WORKLOAD}.yaml"
        wf.write_text(text)
        res = omb.run_omb(src, drv, wf, tmp_path / "result.json", "-Xms256m -Xmx512m", 400, tmp_path / "omb.log")
    s = omb.summarize(res)
    print(s)
    assert res["driver"] == "pulsar-rs" and res["partitions"] == 10
    windows = len(res["publishRate"])
    assert windows >= 5, res["publishRate"]  # 60 s of 10 s windows
    assert all(r > 0 for r in res["publishRate"]), res["publishRate"]
    assert all(r > 0 for r in res["consumeRate"]), res["consumeRate"]
    assert not any(res["publishErrorRate"]), res["publishErrorRate"]
    assert s["publish_msg_s"] > 0.5 * RATE, s
    assert s["consume_msg_s"] > 0.9 * s["publish_msg_s"], s
    assert s["publish_p99_ms"] > 0 and s["e2e_p99_ms"] > 0, s
