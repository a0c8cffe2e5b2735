"""Differential: topic termination as a client and an operator see it, on raw frames (the official
Python client can show neither the reached-end notice nor, before its C++ core 4.2, the refusal):
the REST answers, the producer closed and a new one refused, REACHED_END_OF_TOPIC only once
everything is acknowledged and at a later subscription's first FLOW, the ledger's state."""

from __future__ import annotations

from typing import Any

import raw_protocol as rp

from .diffkit import Target, compare


def _raw(t: Target) -> rp.Raw:
    r = rp.Raw(t.service_url)
    r.connect()
    return r


def _command(got: tuple[int, dict] | None) -> Any:
    """A command as compared: its type, and its error code when it is an ERROR."""
    if got is None:
        return None
    ty, body = got
    return (ty, body[2][0]) if ty == rp.ERROR else ty


def test_termination_on_the_wire_and_over_rest(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        topic = t.topic("ended")
        path = f"/admin/v2/persistent/{t.namespace}/ended"
        out: list[Any] = [("missing", t.rest("POST", f"{path}/terminate")[0])]
        producer, consumer = _raw(t), _raw(t)
        ids = rp.produce(producer, topic, 3)
        rp.subscribe(consumer, topic, "end", 1)
        rp.flow(consumer, 1)
        out.append([_command(consumer.recv()) for _ in range(3)])
        status, last = t.rest("POST", f"{path}/terminate")
        out.append(("terminate", status, sorted(last), (last["ledgerId"], last["entryId"]) == ids[-1]))
        out.append(("its values", last["partitionIndex"], last["batchIndex"], last["batchSize"]))
        out.append(("again", t.rest("POST", f"{path}/terminate") == (status, last)))
        out.append(("producer", _command(producer.recv())))
        producer.send(rp.simple_frame(rp.base(rp.PRODUCER, rp.fb(1, topic) + rp.fv(2, 2) + rp.fv(3, 2))))
        out.append(("new producer", _command(producer.recv())))
        out.append(("before the acks", _command(rp.next_within(consumer))))
        for lid, eid in ids[:2]:
            rp.ack(consumer, 1, lid, eid)
        out.append(("one unacknowledged", _command(rp.next_within(consumer))))
        rp.ack(consumer, 1, *ids[2])
        out.append(("all acknowledged", _command(rp.next_within(consumer, 5))))
        late = _raw(t)
        rp.subscribe(late, topic, "late", 2, earliest=False)
        out.append(("late subscription", _command(rp.next_within(late))))
        rp.flow(late, 2)
        out.append(("its first flow", _command(rp.next_within(late, 5))))
        status, stats = t.rest("GET", f"{path}/internalStats")
        out.append(("internalStats", status, stats["state"]))
        for r in (producer, consumer, late):
            r.close()
        return out

    compare(pair, scenario)


def test_termination_refusals_and_partitions(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        base = f"/admin/v2/persistent/{t.namespace}"
        out: list[Any] = [t.rest("PUT", f"{base}/parted/partitions", 2)[0]]
        out.append(t.rest("POST", f"{base}/parted/terminate"))
        status, ids = t.rest("POST", f"{base}/parted/terminate/partitions")
        out.append((status, sorted(ids), sorted(sorted(v) for v in ids.values())))
        out.append([(v["entryId"], v["partitionIndex"]) for _, v in sorted(ids.items())])
        out.append(t.rest("GET", f"{base}/parted-partition-1/internalStats")[1]["state"])
        for other in ("parted-partition-0", "plain", "missing"):
            if other == "plain":
                t.client().create_producer(t.topic("plain")).close()
            out.append((other, t.rest("POST", f"{base}/{other}/terminate/partitions")))
        out.append(t.rest("POST", f"/admin/v2/non-persistent/{t.namespace}/plain/terminate"))
        # A partition no client has used exists from its partitioned topic's creation.
        t.rest("PUT", f"{base}/unused/partitions", 2)
        status, last = t.rest("POST", f"{base}/unused-partition-1/terminate")
        out.append(("unused partition", status, last.get("entryId") if isinstance(last, dict) else last))
        return out

    compare(pair, scenario)
