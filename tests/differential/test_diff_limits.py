"""Differential: Pulsar's limit policies (issue 37) as a client and an operator meet them.

Namespace policies (``maxProducersPerTopic``, ``maxConsumersPerTopic``, ``maxConsumersPerSubscription``,
``maxSubscriptionsPerTopic``, ``maxTopicsPerNamespace``), topic policies (``maxProducers``,
``maxConsumers``, ``maxConsumersPerSubscription``, ``maxSubscriptionsPerTopic``, ``maxMessageSize``) and
the broker settings of the same names, compared with Apache Pulsar: the REST answers, and which client
call is refused with which error.

Pulsar applies namespace and topic policies asynchronously (topic policies travel through a system
topic), so a scenario retries the call that should be refused for a few seconds before it records what
it saw; a broker that applies a policy at once is seen refusing on the first try, which compares equal.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pulsar
import pytest
from tools import pulsar_reference

import raw_protocol
from txn_wire import TxnError, TxnWire

from .diffkit import Target, compare, error_name

SHARED = pulsar.ConsumerType.Shared

#: How long a scenario waits for a policy to take effect on the broker before it gives up.
APPLY_WAIT_S = 15.0


def _refused(attempt: Callable[[], Any]) -> str:
    """Calls ``attempt`` until it raises (closing what it returned), for at most APPLY_WAIT_S.

    Returns the error's name, or ``"accepted"`` when it never failed.
    """
    deadline = time.monotonic() + APPLY_WAIT_S
    while True:
        try:
            made = attempt()
        except Exception as e:  # the client's error type is the observation
            return error_name(e)
        made.close()
        if time.monotonic() > deadline:
            return "accepted"
        time.sleep(0.2)  # poll: Apache Pulsar applies a policy asynchronously


def _refused_new(attempt: Callable[[int], Any]) -> str:
    """As :func:`_refused`, for calls that create something (a subscription): each try gets its own
    index, so a try that succeeded before the policy applied does not make the next ones reuse it."""
    tries = iter(range(1_000_000))
    return _refused(lambda: attempt(next(tries)))


def _policy_crud(t: Target, base: str, name: str) -> list[Any]:
    """GET unset, a negative value, a set, GET, DELETE, GET: Pulsar's REST answers for one policy."""
    return [
        (name, "unset", t.rest("GET", f"{base}/{name}")),
        (name, "negative", t.rest("POST", f"{base}/{name}", -1)),
        (name, "set", t.rest("POST", f"{base}/{name}", 3)[0]),
        (name, "get", t.rest("GET", f"{base}/{name}")),
        (name, "delete", t.rest("DELETE", f"{base}/{name}")[0]),
        (name, "get-after-delete", t.rest("GET", f"{base}/{name}")),
    ]


def test_namespace_limit_policies_rest(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        base = f"/admin/v2/namespaces/{t.namespace}"
        out: list[Any] = []
        for name in (
            "maxProducersPerTopic",
            "maxConsumersPerTopic",
            "maxConsumersPerSubscription",
            "maxSubscriptionsPerTopic",
            "maxTopicsPerNamespace",
        ):
            out += _policy_crud(t, base, name)
        out.append(t.rest("POST", f"{base}/maxProducersPerTopic", "x")[0])
        out.append(t.rest("GET", f"/admin/v2/namespaces/{t.namespace}-missing/maxProducersPerTopic")[0])
        return out

    compare(pair, scenario)


def test_topic_limit_policies_rest(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        topic = t.topic("limits").split("://")[1]
        base = f"/admin/v2/persistent/{topic}"
        out: list[Any] = [t.rest("PUT", base)[0]]
        for name in (
            "maxProducers",
            "maxConsumers",
            "maxConsumersPerSubscription",
            "maxSubscriptionsPerTopic",
            "maxMessageSize",
        ):
            out += _policy_crud(t, base, name)
        out.append(t.rest("POST", f"{base}/maxMessageSize", 64 * 1024 * 1024))  # above the broker's
        out.append(t.rest("GET", f"{base}-missing/maxProducers")[0])
        return out

    compare(pair, scenario)


def test_namespace_producer_and_consumer_limits(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        base = f"/admin/v2/namespaces/{t.namespace}"
        c = t.client()
        topic = t.topic("pc-limits")
        out: list[Any] = []
        p1 = c.create_producer(topic)
        out.append(t.rest("POST", f"{base}/maxProducersPerTopic", 1)[0])
        out.append(("second producer", _refused(lambda: c.create_producer(topic))))
        out.append(t.rest("DELETE", f"{base}/maxProducersPerTopic")[0])
        p1.close()

        out.append(t.rest("POST", f"{base}/maxConsumersPerTopic", 1)[0])
        s1 = c.subscribe(topic, "a", consumer_type=SHARED)  # Shared
        out.append(("second consumer", _refused(lambda: c.subscribe(topic, "b", consumer_type=SHARED))))
        out.append(t.rest("DELETE", f"{base}/maxConsumersPerTopic")[0])

        out.append(t.rest("POST", f"{base}/maxConsumersPerSubscription", 1)[0])
        out.append(("same subscription", _refused(lambda: c.subscribe(topic, "a", consumer_type=SHARED))))
        out.append(("other subscription", _refused_once(lambda: c.subscribe(topic, "c", consumer_type=SHARED))))
        out.append(t.rest("DELETE", f"{base}/maxConsumersPerSubscription")[0])
        s1.close()

        out.append(t.rest("POST", f"{base}/maxSubscriptionsPerTopic", 2)[0])
        # "a" and "c" exist: a third subscription is refused, an existing one is still served.
        out.append(("third subscription", _refused_new(lambda i: c.subscribe(topic, f"d{i}"))))
        out.append(("existing subscription", _refused_once(lambda: c.subscribe(topic, "a"))))
        return out

    compare(pair, scenario)


def _refused_once(attempt: Callable[[], Any]) -> str:
    """One call: the error's name, or ``"accepted"``."""
    try:
        attempt().close()
    except Exception as e:
        return error_name(e)
    return "accepted"


def test_topic_producer_consumer_and_message_size_limits(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        c = t.client()
        topic = t.topic("topic-limits")
        base = f"/admin/v2/persistent/{topic.split('://')[1]}"
        out: list[Any] = []
        p1 = c.create_producer(topic, batching_enabled=False)
        s1 = c.subscribe(topic, "a", consumer_type=SHARED)
        out.append(t.rest("POST", f"{base}/maxProducers", 1)[0])
        out.append(("second producer", _refused(lambda: c.create_producer(topic))))
        out.append(t.rest("POST", f"{base}/maxConsumers", 1)[0])
        out.append(("second consumer", _refused(lambda: c.subscribe(topic, "b", consumer_type=SHARED))))
        out.append(t.rest("DELETE", f"{base}/maxConsumers")[0])
        out.append(t.rest("POST", f"{base}/maxConsumersPerSubscription", 1)[0])
        out.append(("same subscription", _refused(lambda: c.subscribe(topic, "a", consumer_type=SHARED))))
        out.append(t.rest("POST", f"{base}/maxSubscriptionsPerTopic", 1)[0])
        out.append(("second subscription", _refused_new(lambda i: c.subscribe(topic, f"z{i}"))))
        s1.close()

        out.append(t.rest("POST", f"{base}/maxMessageSize", 1024)[0])
        p1.close()
        out.append(("message sizes", _raw_sends(t, topic, [4096, 512])))
        return out

    compare(pair, scenario)


def _raw_sends(t: Target, topic: str, sizes: list[int]) -> list[Any]:
    """Sends one message of each size on a raw connection (the C++ client resends a refused message
    forever): the broker's answer to each, as (command, error code, message); retried while the
    first is accepted, for at most APPLY_WAIT_S, since Pulsar applies topic policies asynchronously."""
    deadline = time.monotonic() + APPLY_WAIT_S
    while True:
        raw = raw_protocol.Raw(t.service_url)
        try:
            raw.connect()
            raw.create_producer(topic)
            answers = []
            for seq, size in enumerate(sizes):
                raw.send(raw_protocol.send_frame(1, seq, b"x" * size))
                ty, body = raw.recv()
                if ty == raw_protocol.SEND_ERROR:  # CommandSendError: error = 3, message = 4
                    answers.append(("SEND_ERROR", body[3][0], body[4][0].decode()))
                else:
                    answers.append((ty,))
        finally:
            raw.close()
        if answers[0][0] != raw_protocol.SEND_RECEIPT or time.monotonic() > deadline:
            return answers
        time.sleep(0.2)  # poll: Apache Pulsar applies a policy asynchronously


def test_max_topics_per_namespace(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        ns = t.namespace
        out: list[Any] = [t.rest("POST", f"/admin/v2/namespaces/{ns}/maxTopicsPerNamespace", 3)[0]]
        out.append(t.rest("PUT", f"/admin/v2/persistent/{ns}/one")[0])
        out.append(t.rest("PUT", f"/admin/v2/persistent/{ns}/parted/partitions", 2)[0])
        # Three topics (one, parted-partition-0, -1): a fourth is refused, by REST and by auto-creation.
        out.append(t.rest("PUT", f"/admin/v2/persistent/{ns}/two"))
        out.append(t.rest("PUT", f"/admin/v2/persistent/{ns}/parted2/partitions", 1))
        c = t.client()
        out.append(("auto-created", _refused(lambda: c.create_producer(t.topic("auto")))))
        out.append(("existing", _refused_once(lambda: c.create_producer(t.topic("one")))))
        out.append(sorted(t.rest("GET", f"/admin/v2/persistent/{ns}")[1]))
        return out

    compare(pair, scenario)


#: The broker settings under test, given to both brokers of ``limited_pair``.
BROKER_LIMITS: dict[str, Any] = {
    "maxNumPartitionsPerPartitionedTopic": 4,
    "maxProducersPerTopic": 2,
    "maxConsumersPerTopic": 2,
    "maxConsumersPerSubscription": 1,
    "maxSubscriptionsPerTopic": 2,
    "maxTopicsPerNamespace": 6,
}


@pytest.fixture(scope="module")
def limited_pair() -> Iterator[tuple[Target, Target]]:
    """(Apache Pulsar, pulsar-rs) both started with BROKER_LIMITS."""
    reason = pulsar_reference.available()
    if reason:
        pytest.skip(f"Apache Pulsar reference unavailable: {reason}")
    from pulsar_rs import Broker

    with pulsar_reference.PulsarStandalone(BROKER_LIMITS) as ref, Broker(**BROKER_LIMITS) as rs:
        pair = (
            Target("pulsar", ref.service_url, ref.admin_url, "public/limited"),
            Target("pulsar-rs", rs.service_url, rs.admin_url, "public/limited"),
        )
        for t in pair:
            status, body = t.rest("PUT", "/admin/v2/namespaces/public/limited")
            assert status == 204, f"{t.name}: {status} {body}"
        yield pair
        for t in pair:
            t.close_clients()


def test_broker_limits(limited_pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        ns = t.namespace
        out: list[Any] = [
            t.rest("PUT", f"/admin/v2/persistent/{ns}/huge/partitions", 1_000_000_000),
            t.rest("PUT", f"/admin/v2/persistent/{ns}/four/partitions", 4)[0],
            t.rest("POST", f"/admin/v2/persistent/{ns}/four/partitions", 5),
            t.rest("GET", f"/admin/v2/namespaces/{ns}/maxTopicsPerNamespace"),
        ]
        c = t.client()
        topic = t.topic("limited")
        producers = [c.create_producer(topic) for _ in range(2)]
        out.append(("third producer", _refused_once(lambda: c.create_producer(topic))))
        s1 = c.subscribe(topic, "a", consumer_type=SHARED)
        out.append(("same subscription", _refused_once(lambda: c.subscribe(topic, "a", consumer_type=SHARED))))
        s2 = c.subscribe(topic, "b", consumer_type=SHARED)
        out.append(("third consumer", _refused_once(lambda: c.subscribe(topic, "c", consumer_type=SHARED))))
        s1.close()
        out.append(("third subscription", _refused_once(lambda: c.subscribe(topic, "c", consumer_type=SHARED))))
        # The namespace policy overrides the broker's setting.
        out.append(t.rest("POST", f"/admin/v2/namespaces/{ns}/maxProducersPerTopic", 3)[0])
        out.append(("third producer, namespace allows 3", _accepted_eventually(lambda: c.create_producer(topic))))
        # Five topics exist (four partitions and "limited"): one more, then none.
        out.append(t.rest("PUT", f"/admin/v2/persistent/{ns}/sixth")[0])
        out.append(t.rest("PUT", f"/admin/v2/persistent/{ns}/seventh"))
        for p in producers:
            p.close()
        s2.close()
        return out

    compare(limited_pair, scenario)


def _accepted_eventually(attempt: Callable[[], Any]) -> str:
    """Calls ``attempt`` until it succeeds, for at most APPLY_WAIT_S: ``"accepted"`` or the last error."""
    deadline = time.monotonic() + APPLY_WAIT_S
    while True:
        try:
            attempt().close()
            return "accepted"
        except Exception as e:
            if time.monotonic() > deadline:
                return error_name(e)
            time.sleep(0.2)  # poll: Apache Pulsar applies a policy asynchronously


#: The limits of a namespace's ``Policies`` document.
POLICY_LIMITS = (
    "max_producers_per_topic",
    "max_consumers_per_topic",
    "max_consumers_per_subscription",
    "max_subscriptions_per_topic",
    "max_topics_per_namespace",
)


def test_limits_in_a_policies_document_and_readers(pair: tuple[Target, Target]) -> None:
    """Limits given in a namespace's create body (a negative one included) as the document and the
    limit paths show them and as producers meet them; a reader is refused past
    ``maxSubscriptionsPerTopic`` like a new subscription."""

    def scenario(t: Target) -> list[Any]:
        ns = f"{t.namespace}-doc"
        body = {"max_producers_per_topic": 1, "max_topics_per_namespace": 5, "max_consumers_per_topic": -1}
        out: list[Any] = [t.rest("PUT", f"/admin/v2/namespaces/{ns}", body)[0]]
        for name in ("maxProducersPerTopic", "maxConsumersPerTopic", "maxTopicsPerNamespace"):
            out.append((name, t.rest("GET", f"/admin/v2/namespaces/{ns}/{name}")))
        doc = t.rest("GET", f"/admin/v2/namespaces/{ns}")[1]
        out.append(("document", {k: doc.get(k, "absent") for k in POLICY_LIMITS}))
        c = t.client()
        topic = f"persistent://{ns}/t"
        p1 = c.create_producer(topic)
        out.append(("second producer", _refused(lambda: c.create_producer(topic))))
        p1.close()

        base = f"/admin/v2/namespaces/{t.namespace}"
        topic = t.topic("readers")
        s1 = c.subscribe(topic, "a")
        out.append(t.rest("POST", f"{base}/maxSubscriptionsPerTopic", 1)[0])
        out.append(("reader", _refused(lambda: c.create_reader(topic, pulsar.MessageId.earliest))))
        s1.close()
        return out

    compare(pair, scenario)


def test_subscription_type_before_its_consumer_count(pair: tuple[Target, Target]) -> None:
    """With ``maxConsumersPerSubscription`` 1: a second Exclusive consumer, and a Shared one on an
    Exclusive subscription, are refused for their type; a second Shared consumer for the count.
    The wire client shows each refusal's ServerError and message."""

    def scenario(t: Target) -> list[Any]:
        out: list[Any] = [t.rest("POST", f"/admin/v2/namespaces/{t.namespace}/maxConsumersPerSubscription", 1)[0]]
        topic = t.topic("sub-type-order")
        deadline = time.monotonic() + APPLY_WAIT_S
        with TxnWire(t.service_url) as w:
            w.subscribe(topic, "x", 1, shared=False)
            w.subscribe(topic, "y", 2, shared=True)
            for consumer_id, sub, shared in ((3, "x", False), (4, "x", True), (5, "y", True)):
                while True:  # Pulsar applies the namespace policy asynchronously
                    try:
                        w.subscribe(topic, sub, consumer_id, shared=shared)
                        answer: Any = "accepted"
                    except TxnError as e:
                        answer = str(e)
                    if answer != "accepted" or time.monotonic() > deadline:
                        break
                    consumer_id += 10
                    time.sleep(0.2)  # poll: Apache Pulsar applies a policy asynchronously
                out.append((sub, "shared" if shared else "exclusive", answer))
        return out

    compare(pair, scenario)
