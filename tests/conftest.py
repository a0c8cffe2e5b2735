"""Shared helpers for every room of tests/ (official ``pulsar-client`` against pulsar_rs), and the rooms'
markers.

The ``pulsar_broker`` / ``pulsar_broker_factory`` fixtures come from the package's pytest plugin. Test
files import the helpers below with ``from conftest import ...`` (and ``raw_protocol``,
``dispatch_util``, ``webdriver`` beside this file): pyproject puts ``tests/`` on ``sys.path``.

Every test file sits in a room, a folder named for its kind (README, "Tests"); the folder's name is
a marker given to each of its tests, so ``pytest -m interop`` runs one room. The rooms in
``SLOW_ROOMS`` are marked ``slow`` as a whole; elsewhere a test that takes 5 s or more here carries
``@pytest.mark.slow`` itself. ``pytest -m "not slow"`` is the quick inner loop.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from worker_groups import in_schedule_order
from worker_groups import pytest_xdist_make_scheduler as pytest_xdist_make_scheduler  # the rooms' workers

#: The rooms of tests/, each a folder and a marker of the same name (registered in pyproject.toml).
ROOMS = (
    "unit",
    "interop",
    "admin",
    "security",
    "fuzz",
    "spark",
    "system",
    "power_loss",
    "java",
    "go",
    "differential",
    "bookkeeper",
    "cluster",
    "tiered",
)
#: Rooms whose every test is slow: a JVM, a Go build, Apache Pulsar, bookies, FUSE, a wheel or a scale run.
SLOW_ROOMS = frozenset(
    {"spark", "system", "power_loss", "java", "go", "differential", "bookkeeper", "cluster", "tiered"}
)
_TESTS = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # the room marks before any other plugin selects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks each test with its room (and ``slow`` for the slow rooms); a test outside the rooms
    is an error, so that a new file cannot escape the selections. Then the tests in the order
    pytest-xdist hands their groups out (worker_groups.py): the longest groups first."""
    homeless = set()
    for item in items:
        try:
            room = item.path.resolve().relative_to(_TESTS).parts[0]
        except ValueError:
            continue  # not under tests/ (pytest run on another path): no rooms there
        if room not in ROOMS:
            homeless.add(str(item.path.relative_to(_TESTS.parent)))
            continue
        item.add_marker(room)
        if room in SLOW_ROOMS:
            item.add_marker("slow")
    items[:] = in_schedule_order(items)
    if homeless:
        raise pytest.UsageError(
            f"test files outside the rooms of tests/ ({', '.join(ROOMS)}): {', '.join(sorted(homeless))}; "
            "move each into the folder of its kind (README, 'Tests')"
        )


#: How much of each broker's log a failed test's report carries (the end of it).
_LOG_TAIL_LINES = 60
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: How many brokers had been started when a test began.
_LOGS_BEFORE = pytest.StashKey[int]()


def _started_logs() -> list[Path]:
    """Every broker log ``pulsar_rs.testing.process`` started so far (none if not imported)."""
    module = sys.modules.get("pulsar_rs.testing.process")
    return list(getattr(module, "STARTED_LOGS", []))


def _broker_logs(value: object) -> list[Path]:
    """The log files of the brokers a fixture value is or holds (``PulsarRsBroker`` has ``log_path``)."""
    values = value if isinstance(value, list | tuple) else [value]
    return [p for v in values if isinstance(p := getattr(v, "log_path", None), Path) and p.exists()]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """Notes how many brokers were started before the test (see ``pytest_runtest_makereport``)."""
    item.stash[_LOGS_BEFORE] = len(_started_logs())
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A failed test that started brokers (its fixtures', or its own through ``PulsarRsBroker``)
    carries the end of their logs in its report (CI prints only the report; the logs are in a
    temporary directory gone by then)."""
    report = yield
    if report.failed and call.when == "call":
        funcargs = getattr(item, "funcargs", {})
        paths = {p for v in funcargs.values() for p in _broker_logs(v)}
        paths.update(p for p in _started_logs()[item.stash.get(_LOGS_BEFORE, 0) :] if p.exists())
        for path in sorted(paths):
            lines = _ANSI.sub("", path.read_text(errors="replace")).splitlines()[-_LOG_TAIL_LINES:]
            report.sections.append((f"broker log {path.name} (last {len(lines)} lines)", "\n".join(lines)))
    return report


#: Per pytest-xdist worker: [tests, seconds busy (setup + call + teardown), seconds since the
#: session started when its last test ended]. Filled on the controller, printed at the end: how
#: evenly the workers share a room (CI's wall time is the later of the two).
_WORKERS: dict[str, list[float]] = {}
_SESSION_T0 = time.monotonic()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    node = getattr(report, "node", None)  # set by pytest-xdist on the controller: the worker
    if node is None:
        return
    w = _WORKERS.setdefault(str(node.gateway.id), [0, 0.0, 0.0])
    w[1] += report.duration
    if report.when == "teardown":
        w[0] += 1
        w[2] = time.monotonic() - _SESSION_T0


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _WORKERS:
        terminalreporter.write_sep("-", "workers")
        for wid, (tests, busy, done) in sorted(_WORKERS.items()):
            terminalreporter.write_line(f"{wid}: {int(tests)} tests, {busy:.0f} s busy, last one done at {done:.0f} s")


pulsar = pytest.importorskip("pulsar")

_counter = itertools.count()

#: Operation timeout for every client: a broker mistake fails fast instead of hanging 30 s.
OP_TIMEOUT_S = 10


def new_client(service_url: str) -> pulsar.Client:
    return pulsar.Client(
        service_url,
        operation_timeout_seconds=OP_TIMEOUT_S,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn),
    )


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    """A topic name unique to the test."""
    name = request.node.name.replace("[", "-").replace("]", "").replace("_", "-")
    return f"persistent://public/default/{name}-{next(_counter)}-{time.monotonic_ns() % 100000}"


@pytest.fixture
def client_factory() -> Iterator[Callable[[str], pulsar.Client]]:
    """Creates clients on a service URL; all are closed after the test."""
    made: list[pulsar.Client] = []

    def make(url: str) -> pulsar.Client:
        c = new_client(url)
        made.append(c)
        return c

    yield make
    for c in made:
        with contextlib.suppress(Exception):
            c.close()


@pytest.fixture
def client(pulsar_broker, client_factory) -> pulsar.Client:
    """A client connected to a fresh in-process broker."""
    return client_factory(pulsar_broker.service_url)


def receive_all(consumer, expected: int, timeout_ms: int = 5000, ack: bool = True) -> list:
    """Receives until ``expected`` messages came or a receive times out."""
    out = []
    while len(out) < expected:
        try:
            m = consumer.receive(timeout_millis=timeout_ms)
        except pulsar.Timeout:
            break
        out.append(m)
        if ack:
            consumer.acknowledge(m)
    return out


def assert_no_more(consumer, timeout_ms: int = 500) -> None:
    """Asserts that nothing else is delivered within ``timeout_ms``."""
    with pytest.raises(pulsar.Timeout):
        m = consumer.receive(timeout_millis=timeout_ms)
        pytest.fail(f"unexpected extra message {m.data()!r} id={m.message_id()}")


def admin(admin_url: str, method: str, path: str, body: object | None = None) -> tuple[int, object]:
    """One admin REST call; returns (status, parsed JSON or text)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(admin_url.rstrip("/") + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            raw = r.read().decode()
            status = r.status
    except urllib.error.HTTPError as e:
        raw = e.read().decode()
        status = e.code
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw
