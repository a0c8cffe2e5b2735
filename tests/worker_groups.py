"""Which tests share a pytest-xdist worker (tox.ini runs the quick room with ``-n 2
--dist loadgroup``, the slow room with ``-n 3``).

A group runs whole on one worker, so the fixtures its tests share start once: each test file is a
group (its module fixtures: brokers, bookies, JVMs), each room of ``ONE_WORKER_ROOMS`` is one group
(its files share a session fixture), and each test of a file in ``ONE_GROUP_PER_TEST`` is a group
of its own. The groups are the scopes of :class:`RoomScheduling`, the scheduler tests/conftest.py
gives pytest-xdist for ``--dist loadgroup``: it reads them from the test ids, where pytest-xdist's
own ``loadgroup`` reads ``xdist_group`` marks through a suffix it writes into them, which pytest
9.2's structured node ids no longer take (pytest-dev/pytest-xdist#1386: every group was then split
over both workers, each starting the group's fixtures again; measured 2026-12-07).
"""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

#: Rooms whose files share a session-scoped fixture (Apache Pulsar started once; one Spark session):
#: the whole room is one group.
ONE_WORKER_ROOMS = frozenset({"differential", "spark"})
#: Files (under tests/) whose every test is a group of its own: tests/java's suite, once per Java
#: client, each run on a worker of its own.
ONE_GROUP_PER_TEST = frozenset({"java/test_java_client.py"})


def room_and_file(nodeid: str) -> tuple[str | None, str]:
    """The room and the file (relative to tests/) of a test id such as
    ``tests/spark/test_x.py::test_y[p]``; no room when the file is not under a ``tests`` folder."""
    path = nodeid.split("::", 1)[0]
    parts = PurePosixPath(path).parts
    if "tests" not in parts:
        return None, path
    last = max(i for i, part in enumerate(parts) if part == "tests")
    inner = parts[last + 1 :]
    return (inner[0] if len(inner) > 1 else None), "/".join(inner)


#: The groups that take longest, handed out first (then every other group, the most tests first),
#: so that no long group starts last and leaves the other worker idle at the end of the room.
#: Measured 2026-12-07 on two cores with cold caches, as in CI: the Rust workspace's tests 227 s
#: (first all the same, so that a Rust failure shows early), the bookies module 283 s, the Go
#: suite 246 s and AFL 220 s with their first builds, the differential room 165 s, three brokers
#: 138 s, Spark 135 s, pulsar-admin 94 s.
LONGEST_FIRST = (
    "system/test_rust_workspace.py",
    "bookkeeper/test_broker_on_bookies.py",
    "go/test_go_client_suite_short.py",
    "fuzz/test_afl.py",
    "room:differential",
    "cluster/test_three_brokers.py",
    "room:spark",
    "admin/test_pulsar_admin.py",
)


def group_of(nodeid: str) -> str:
    """The group (the scheduling scope) of a test id: ``room:ROOM``, a file relative to tests/, or
    the test id itself (``ONE_GROUP_PER_TEST``)."""
    room, file = room_and_file(nodeid)
    if room in ONE_WORKER_ROOMS:
        return f"room:{room}"
    if file in ONE_GROUP_PER_TEST:
        return nodeid
    return file


def in_schedule_order(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` grouped and in the order their groups are handed out: ``LONGEST_FIRST``, then the
    other groups by their number of tests, most first; each group's tests in collection order.
    Deterministic, so every worker collects the same order (pytest-xdist checks it)."""
    groups: dict[str, list[pytest.Item]] = {}
    for item in items:
        groups.setdefault(group_of(item.nodeid), []).append(item)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    ordered = sorted(groups, key=lambda g: (rank.get(g, len(rank)), -len(groups[g])))
    return [item for g in ordered for item in groups[g]]


def _scheduling_class() -> type:
    from xdist.scheduler import LoadScopeScheduling  # a test extra; imported when xdist runs

    class RoomScheduling(LoadScopeScheduling):  # type: ignore[misc]
        """pytest-xdist's scope scheduling over :func:`group_of`'s groups: a worker that frees up
        takes the next whole group, in collection order (:func:`in_schedule_order`, which
        tests/conftest.py applies), not re-sorted by size."""

        def __init__(self, config: pytest.Config, log: object = None) -> None:
            super().__init__(config, log)
            config.option.loadscopereorder = False  # the order is in_schedule_order's

        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return RoomScheduling


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # before pytest-xdist's own choice; absent without xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """:class:`RoomScheduling` for ``--dist loadgroup``; pytest-xdist's own for any other mode."""
    if config.getvalue("dist") != "loadgroup":
        return None
    return _scheduling_class()(config, log)
