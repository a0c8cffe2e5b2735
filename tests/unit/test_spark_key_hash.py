"""The Spark package's Key_Shared hash (``pulsar_rs_spark.table_entries.key_hash``, pure Python so
that Spark executors need no wheel) is a copy of the broker's (``pulsar_rs.key_hash``, the export's
``key_hash``): they must agree on every key, of every length modulo 4 (Murmur3's tail cases)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pulsar_rs

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "spark"))

from pulsar_rs_spark.table_entries import key_hash, table_identifier


def test_the_spark_key_hash_is_the_brokers():
    rng = random.Random(7)
    keys = [b"", b"a", b"ab", b"abc", b"abcd", b"customer-42", "clé-ü".encode()]
    keys += [bytes(rng.randrange(256) for _ in range(rng.randrange(64))) for _ in range(500)]
    for k in keys:
        assert key_hash(k) == pulsar_rs.key_hash(k), k


def test_table_identifiers_are_the_brokers_table_names():
    assert table_identifier("persistent://public/default/orders", "pulsar") == "pulsar.`public`.`default`.`orders`"
    assert table_identifier("persistent://t/ns/o-partition-3", "c") == "c.`t`.`ns`.`o`"
    assert table_identifier("non-persistent://t/ns/o", "c") is None
