"""Facts the Python side takes from the broker instead of writing them again (issue 32): the
Key_Shared key hash, the metadata store's layout and the batch format. Where a copy must stay
(the Spark schema's documentation of ``key_hash``), these tests tie it to the broker's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import pulsar_rs
from pulsar_rs import _native

SPARK = Path(__file__).resolve().parents[2] / "spark"

KEYS = [b"", b"a", b"hello", b"key-0", b"key-1", b"\xff\xfe", "clé".encode(), b"x" * 1000]


@pytest.mark.parametrize("key", KEYS)
def test_key_hash_is_the_documented_rule(key: bytes) -> None:
    # spark/SCHEMA.md documents the key_hash column as Murmur3_x86_32(key, seed 0) & 0x7fffffff.
    assert pulsar_rs.key_hash(key) == pulsar_rs.murmur3_32(key) & 0x7FFFFFFF
    assert 0 <= pulsar_rs.key_hash(key) < 2**31


def test_key_hash_matches_a_known_vector() -> None:
    # Murmur3_x86_32("hello", 0) = 0x248bfa47 (published vector); its top bit is clear.
    assert pulsar_rs.key_hash(b"hello") == 0x248BFA47
    assert pulsar_rs.key_hash(b"The quick brown fox jumps over the lazy dog") == 0x2E4FF723


def test_spark_synthetic_key_hash_is_the_brokers() -> None:
    if str(SPARK) not in sys.path:
        sys.path.insert(0, str(SPARK))
    synthetic = pytest.importorskip("pulsar_rs_spark.synthetic")
    for key in ("key-0", "key-1", "", "clé"):
        assert synthetic.key_hash(key) == pulsar_rs.key_hash(key.encode())


def test_metadata_prefixes_name_the_stores_folders() -> None:
    assert _native.META_DIR == "meta"
    p = _native.METADATA_PREFIXES
    assert p["managed_ledgers"] == "managed-ledgers"
    assert {"cursors", "clusters", "tenants", "namespace_policies", "topic_policies"} <= set(p)


def test_a_malformed_batch_is_a_value_error() -> None:
    assert _native.split_batch(b"", 0) == []
    with pytest.raises(ValueError):
        _native.split_batch(b"\x00\x00", 1)
    with pytest.raises(ValueError):
        _native.split_batch(b"\x00\x00\x00\x09", 1)
