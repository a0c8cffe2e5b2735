"""Transactions against Apache Pulsar and pulsar-rs, both with ``transactionCoordinatorEnabled=true``.

The official Python client has no transaction API, so transactions are driven through
:mod:`txn_wire` (``tests/txn_wire.py``; raw protocol: the txn id in CommandSend and in the metadata,
as the Java client sends them) and observed with the official client's consumers and readers. The
brokers are their own pair (the session's others keep Pulsar's default, transactions off), started
once per module.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pulsar = pytest.importorskip("pulsar")

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tools import pulsar_reference  # noqa: E402

from txn_wire import ASSIGN_TOPIC, TxnError, TxnWire  # noqa: E402

from .diffkit import Target, compare  # noqa: E402

pytestmark = [pytest.mark.differential, pytest.mark.slow]

_ids = itertools.count()
#: ``maxActiveTransactionsPerCoordinator`` of both brokers: above what any other scenario holds open.
MAX_ACTIVE = 16


@pytest.fixture(scope="module")
def txn_brokers() -> Iterator[tuple[Any, Any]]:
    reason = pulsar_reference.available()
    if reason:
        pytest.skip(f"Apache Pulsar reference unavailable: {reason}")
    conf = {
        "transactionCoordinatorEnabled": True,
        "brokerDeleteInactiveTopicsEnabled": False,
        "maxActiveTransactionsPerCoordinator": MAX_ACTIVE,
    }
    # pulsar-rs acknowledges at the batch-index level by default, as Pulsar 4.1 (PIP-391;
    # docs/what-works.md, "Batch-index acks in a transaction"): the 4.0 reference is set to do
    # so too, so the batch scenarios compare like with like.
    ref = pulsar_reference.PulsarStandalone({**conf, "acknowledgmentAtBatchIndexLevelEnabled": True})
    ref.start()
    from pulsar_rs import Broker

    try:
        with Broker(**conf) as rs:
            yield ref, rs
    finally:
        ref.cleanup()


@pytest.fixture
def txn_pair(request: pytest.FixtureRequest, txn_brokers: tuple[Any, Any]) -> Iterator[tuple[Target, Target]]:
    ref_broker, rs_broker = txn_brokers
    ns = f"public/{request.node.name.replace('_', '-')[:40]}-{next(_ids)}"
    pair = (
        Target("pulsar", ref_broker.service_url, ref_broker.admin_url, ns),
        Target("pulsar-rs", rs_broker.service_url, rs_broker.admin_url, ns),
    )
    for t in pair:
        status, body = t.rest("PUT", f"/admin/v2/namespaces/{t.namespace}")
        assert status == 204, f"{t.name}: creating {t.namespace}: {status} {body}"
    yield pair
    for t in pair:
        t.close_clients()


def _wire(t: Target) -> TxnWire:
    w = TxnWire(t.service_url)
    w.connect_coordinator(0)
    return w


def _drain(consumer: Any, first_ms: int = 3000, then_ms: int = 700) -> list[str]:
    out = []
    wait = first_ms
    while True:
        try:
            m = consumer.receive(timeout_millis=wait)
        except pulsar.Timeout:
            return out
        out.append(m.data().decode())
        consumer.acknowledge(m)
        wait = then_ms


def test_coordinator_assign_topic(txn_pair: tuple[Target, Target]) -> None:
    """The assign topic's partitions (the coordinators a client finds) and the system namespace."""

    def scenario(t: Target) -> dict[str, Any]:
        with TxnWire(t.service_url) as w:
            n = w.partitions(ASSIGN_TOPIC)
            w.connect_coordinator(0)
            try:
                w.connect_coordinator(n + 5)
                unknown = "connected"
            except TxnError as e:
                unknown = e.code
        return {"partitions": n, "unknown_coordinator": unknown}

    compare(txn_pair, scenario)


def test_commit_abort_visibility_and_ledger_order(txn_pair: tuple[Target, Target]) -> None:
    """m1, t1 (committed later), x1 (aborted), m2: dispatch stops at the first open transaction;
    after the abort nothing new shows; after the commit t1 then m2, in ledger order."""

    def scenario(t: Target) -> dict[str, list[str]]:
        topic = t.topic("txn-order")
        c = t.client()
        consumer = c.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        with _wire(t) as w:
            w.producer(topic, 1)
            w.send(1, b"m1")
            committed = w.new_txn()
            w.add_partition(committed, topic)
            aborted = w.new_txn()
            w.add_partition(aborted, topic)
            w.send(1, b"t1", committed)
            w.send(1, b"x1", aborted)
            w.send(1, b"m2")
            seen = {"while_open": _drain(consumer)}
            w.end_txn(aborted, commit=False)
            seen["after_abort"] = _drain(consumer, 1500)
            w.end_txn(committed, commit=True)
            seen["after_commit"] = _drain(consumer)
        late = c.subscribe(topic, "late", initial_position=pulsar.InitialPosition.Earliest)
        seen["new_subscription"] = _drain(late)
        return seen

    compare(txn_pair, scenario)


def test_end_transaction_errors(txn_pair: tuple[Target, Target]) -> None:
    """The error codes of ending a transaction twice, the other way, or one that never existed."""

    def scenario(t: Target) -> dict[str, str]:
        topic = t.topic("txn-errors")
        out = {}
        with _wire(t) as w:

            def attempt(name: str, f: Any) -> None:
                try:
                    f()
                    out[name] = "ok"
                except TxnError as e:
                    out[name] = e.code

            a = w.new_txn()
            w.add_partition(a, topic)
            attempt("commit", lambda: w.end_txn(a, commit=True))
            attempt("commit_again", lambda: w.end_txn(a, commit=True))
            attempt("abort_committed", lambda: w.end_txn(a, commit=False))
            attempt("add_partition_after_end", lambda: w.add_partition(a, topic))
            b = w.new_txn()
            attempt("abort", lambda: w.end_txn(b, commit=False))
            attempt("commit_aborted", lambda: w.end_txn(b, commit=True))
            attempt("unknown", lambda: w.end_txn((0, 10**9), commit=True))
            attempt("unknown_coordinator", lambda: w.end_txn((77, 1), commit=True))
        return out

    compare(txn_pair, scenario)


def test_reader_ends_after_a_trailing_marker(txn_pair: tuple[Target, Target]) -> None:
    """A topic whose last entries are markers: a reader gets every visible message, then
    ``has_message_available`` is false (GET_LAST_MESSAGE_ID skips markers and aborted messages)."""

    def scenario(t: Target) -> dict[str, Any]:
        topic = t.topic("txn-last")
        with _wire(t) as w:
            w.producer(topic, 1)
            w.send(1, b"plain")
            a = w.new_txn()
            w.add_partition(a, topic)
            w.send(1, b"committed", a)
            w.end_txn(a, commit=True)
            b = w.new_txn()
            w.add_partition(b, topic)
            w.send(1, b"aborted", b)
            w.end_txn(b, commit=False)
        reader = t.client().create_reader(topic, pulsar.MessageId.earliest)
        got = []
        while reader.has_message_available():
            got.append(reader.read_next(timeout_millis=5000).data().decode())
        return {"read": got, "more": reader.has_message_available()}

    compare(txn_pair, scenario)


def test_txn_id_only_on_the_send_command(txn_pair: tuple[Target, Target]) -> None:
    """A message whose txn id is on CommandSend but not in its metadata (what pulsar-client-go 0.19
    sends, apache/pulsar-client-go#1498): held back while its transaction is open, like any other;
    after an abort nothing marks it aborted, so it is delivered."""

    def scenario(t: Target) -> dict[str, list[str]]:
        topic = t.topic("txn-send-only")
        consumer = t.client().subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        with _wire(t) as w:
            w.producer(topic, 1)
            txn = w.new_txn()
            w.add_partition(txn, topic)
            w.send(1, b"unmarked", txn, in_metadata=False)
            w.send(1, b"after")
            seen = {"while_open": _drain(consumer, 1500)}
            w.end_txn(txn, commit=False)
            seen["after_abort"] = _drain(consumer)
        return seen

    compare(txn_pair, scenario)


def test_new_txn_beyond_max_active_transactions_goes_unanswered(txn_pair: tuple[Target, Target]) -> None:
    """``maxActiveTransactionsPerCoordinator``: NEW_TXN on a coordinator already holding that many
    transactions not yet ended gets no answer at all (Pulsar leaves the client to time out,
    apache/pulsar#15133), and is answered again once one of them ends."""

    def scenario(t: Target) -> dict[str, Any]:
        out: dict[str, Any] = {}
        opened = []
        with _wire(t) as w:
            # After the connect: Pulsar loads the coordinator only then (404 before).
            status, stats = t.rest("GET", "/admin/v3/transactions/coordinatorStats?coordinatorId=0")
            assert status == 200, f"{t.name}: coordinator stats: {status} {stats}"
            ongoing = stats["ongoingTxnSize"]
            for _ in range(MAX_ACTIVE + 2):
                w.sock.settimeout(3)
                try:
                    opened.append(w.new_txn())
                except TimeoutError:
                    out["unanswered_at_the_limit"] = ongoing + len(opened) == MAX_ACTIVE
                    break
                except TxnError as e:
                    out["refused"] = e.code
                    break
            w.sock.settimeout(15)
            if opened:
                w.end_txn(opened.pop(0), commit=False)
                try:
                    opened.append(w.new_txn())
                    out["after_one_ended"] = "ok"
                except (TimeoutError, TxnError) as e:
                    out["after_one_ended"] = getattr(e, "code", "unanswered")
            for txn in opened:
                w.end_txn(txn, commit=False)
        return out

    seen = compare(txn_pair, scenario)
    assert seen == {"unanswered_at_the_limit": True, "after_one_ended": "ok"}, seen


def _batch_of_four(c: Any, topic: str) -> None:
    """b0..b3 in one batch entry."""
    p = c.create_producer(topic, batching_enabled=True, batching_max_messages=4, batching_max_publish_delay_ms=10_000)
    for i in range(4):
        p.send_async(f"b{i}".encode(), None)
    p.flush()
    p.close()


def _ack_set(acked: list[int], size: int = 4) -> list[int]:
    """Pulsar's ack set of a batch of ``size`` with ``acked`` acknowledged (as Java's BitSet)."""
    return [sum(1 << i for i in range(size) if i not in acked)]


def test_batch_index_acks_in_transactions(txn_pair: tuple[Target, Target]) -> None:
    """Messages of one batch entry acknowledged in transactions: b0 and b1 in one that commits,
    b2 in one that aborts (b1 again in it: a conflict); then b0 and b1 cumulatively in another on
    an Exclusive subscription. What a fresh consumer of each subscription gets after."""

    def scenario(t: Target) -> dict[str, Any]:
        topic = t.topic("txn-batch-index")
        c = t.client()
        seen: dict[str, Any] = {}
        for sub in ("shared", "exclusive"):
            c.subscribe(topic, sub, initial_position=pulsar.InitialPosition.Earliest).close()
        _batch_of_four(c, topic)
        with _wire(t) as w:
            w.subscribe(topic, "shared", 1)
            w.flow(1, 10)
            d = w.receive(5)
            assert d is not None, f"{t.name}: nothing delivered"
            ledger, entry = d.position
            committed, aborted = w.new_txn(), w.new_txn()
            w.add_subscription(committed, topic, "shared")
            w.add_subscription(aborted, topic, "shared")
            w.ack_txn(1, committed, [(ledger, entry, _ack_set([0, 1]), 4)])
            w.ack_txn(1, aborted, [(ledger, entry, _ack_set([2]), 4)])
            try:
                w.ack_txn(1, aborted, [(ledger, entry, _ack_set([1]), 4)])
                seen["held_twice"] = "accepted"
            except TxnError as e:
                seen["held_twice"] = e.code
            w.end_txn(committed, commit=True)
            w.end_txn(aborted, commit=False)
        with _wire(t) as w:
            w.subscribe(topic, "exclusive", 2, shared=False)
            w.flow(2, 10)
            d = w.receive(5)
            assert d is not None, f"{t.name}: nothing delivered"
            cumulative = w.new_txn()
            w.add_subscription(cumulative, topic, "exclusive")
            w.ack_txn(2, cumulative, [(*d.position, _ack_set([0, 1]), 4)], cumulative=True)
            w.end_txn(cumulative, commit=True)
        for sub in ("shared", "exclusive"):
            consumer = c.subscribe(topic, sub, initial_position=pulsar.InitialPosition.Earliest)
            seen[sub] = sorted(_drain(consumer))
            consumer.close()
        return seen

    observed = compare(txn_pair, scenario)
    # What both observed, spelled out: each message once, none acknowledged lost.
    assert observed == {"held_twice": "TransactionConflict", "shared": ["b2", "b3"], "exclusive": ["b2", "b3"]}


def test_operator_abort_and_position_states(txn_pair: tuple[Target, Target]) -> None:
    """An operator's ``abortTransaction``: the transaction's message never visible, its held ack
    released, its client's commit refused; where messages stand in the subscription's acks
    (``positionStatsInPendingAck``) before and after; the coordinators (``coordinators``)."""

    def scenario(t: Target) -> dict[str, Any]:
        topic = t.topic("txn-operator")
        local = topic.removeprefix("persistent://")
        c = t.client()
        consumer = c.subscribe(topic, "plain", initial_position=pulsar.InitialPosition.Earliest)
        out: dict[str, Any] = {}
        with _wire(t) as w:
            w.producer(topic, 1)
            for i in range(3):
                w.send(1, b"m%d" % i)
            w.subscribe(topic, "held", 1)
            w.flow(1, 10)
            m0, m1, m2 = (m.position for m in (w.receive(10) for _ in range(3)) if m is not None)
            first = w.new_txn()
            w.add_subscription(first, topic, "held")
            w.ack_txn(1, first, [m0])
            w.end_txn(first, commit=True)
            held = w.new_txn()
            w.add_subscription(held, topic, "held")
            w.ack_txn(1, held, [m1])
            w.add_partition(held, topic)
            w.send(1, b"aborted", held)

            def state(p: tuple[int, int], sub: str = "held") -> Any:
                path = f"/admin/v3/transactions/positionStatsInPendingAck/{local}/{sub}/{p[0]}/{p[1]}"
                status, body = t.rest("GET", path)
                return status, body.get("state") if isinstance(body, dict) else None

            out["before"] = [state(m0), state(m1), state(m2)]
            abort = f"/admin/v3/transactions/abortTransaction/{held[0]}/{held[1]}"
            out["abort"] = t.rest("POST", abort)[0]
            out["after"] = [state(m0), state(m1), state(m2)]
            try:
                w.end_txn(held, commit=True)
                out["client_commit"] = "ok"
            except TxnError as e:
                out["client_commit"] = e.code
            status, listed = t.rest("GET", "/admin/v3/transactions/coordinators")
            out["coordinators"] = (status, [x["id"] for x in listed] if status == 200 else listed)
            out["coordinator_0_here"] = status == 200 and listed[0]["brokerServiceUrl"].endswith(
                ":" + t.service_url.rsplit(":", 1)[1]
            )
        out["visible"] = _drain(consumer)
        return out

    compare(txn_pair, scenario)
