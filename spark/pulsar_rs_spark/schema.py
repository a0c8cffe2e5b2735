"""The snapshot export format (spark/SCHEMA.md, schema version 1) as Spark and Arrow schemas.

Every table lives at ``<root>/<table>/broker=<id>/snapshot_ms=<ms>/part-*.parquet``; the two
partition columns are part of the Spark schemas below so that a broker id that looks like a number
stays a string and ``snapshot_ms`` is always a long.
"""

from __future__ import annotations

from typing import Final

SCHEMA_VERSION: Final = 1

#: Columns of each table, in SCHEMA.md order: (name, type, nullable). Types are Spark SQL names.
COLUMNS: Final[dict[str, list[tuple[str, str, bool]]]] = {
    "topics": [
        ("topic", "string", False),
        ("partition", "int", False),
        ("entries", "bigint", False),
        ("size_bytes", "bigint", False),
        ("ledgers", "int", False),
        ("last_confirmed_ledger", "bigint", False),
        ("last_confirmed_entry", "bigint", False),
        ("subscriptions", "int", False),
        ("producers", "int", False),
        ("msg_rate_in", "double", False),
        ("backlog_quota_limit_bytes", "bigint", False),
        ("backlog_quota_limit_seconds", "bigint", False),
        ("compacted_ledger_id", "bigint", True),
        ("compaction_horizon_ledger", "bigint", True),
        ("compaction_horizon_entry", "bigint", True),
        ("compacted_entries", "bigint", False),
        ("txn_ongoing", "bigint", True),
        ("txn_max_read_ledger", "bigint", True),
        ("txn_max_read_entry", "bigint", True),
    ],
    "ledgers": [
        ("topic", "string", False),
        ("ledger_id", "bigint", False),
        ("entries", "bigint", False),
        ("size_bytes", "bigint", False),
        ("created_ms", "bigint", False),
        ("closed_ms", "bigint", True),
    ],
    "entries": [
        ("topic", "string", False),
        ("ledger_id", "bigint", False),
        ("entry_id", "bigint", False),
        ("publish_time_ms", "bigint", False),
        ("size_bytes", "int", False),
        ("messages", "int", False),
        ("key", "string", True),
        ("key_hash", "int", True),
    ],
    "subscriptions": [
        ("topic", "string", False),
        ("subscription", "string", False),
        ("durable", "boolean", False),
        ("type", "string", True),
        ("mark_delete_ledger", "bigint", False),
        ("mark_delete_entry", "bigint", False),
        ("read_ledger", "bigint", False),
        ("read_entry", "bigint", False),
        ("backlog_entries", "bigint", False),
        ("backlog_size_bytes", "bigint", False),
        ("acked_entries", "bigint", False),
        ("ack_ranges", "bigint", False),
        ("oldest_unacked_publish_ms", "bigint", True),
        ("consumers", "int", False),
        ("unacked_messages", "bigint", False),
        ("txn_pending_ack_ongoing", "bigint", True),
    ],
    "ack_ranges": [
        ("topic", "string", False),
        ("subscription", "string", False),
        ("start_ledger", "bigint", False),
        ("start_entry", "bigint", False),
        ("end_ledger", "bigint", False),
        ("end_entry", "bigint", False),
        ("entries", "bigint", False),
    ],
    "consumers": [
        ("topic", "string", False),
        ("subscription", "string", False),
        ("consumer_name", "string", False),
        ("consumer_id", "bigint", False),
        ("address", "string", False),
        ("available_permits", "bigint", False),
        ("unacked_messages", "bigint", False),
        ("blocked", "boolean", False),
        ("msg_rate_out", "double", False),
        ("connected_since_ms", "bigint", False),
    ],
    "transaction_coordinators": [
        ("coordinator_id", "bigint", False),
        ("ongoing", "bigint", False),
        ("created", "bigint", False),
        ("committed", "bigint", False),
        ("aborted", "bigint", False),
        ("timed_out", "bigint", False),
        ("append_log", "bigint", False),
    ],
}

TABLES: Final = tuple(COLUMNS)

#: The Hive partition columns every table gets when read by Spark.
PARTITION_COLUMNS: Final = (("broker", "string"), ("snapshot_ms", "bigint"))


def spark_ddl(table: str) -> str:
    """The Spark DDL schema string of ``table``, data columns then the partition columns."""
    cols = [f"`{name}` {typ}" for name, typ, _ in COLUMNS[table]]
    cols += [f"`{name}` {typ}" for name, typ in PARTITION_COLUMNS]
    return ", ".join(cols)


def arrow_schema(table: str):  # -> pyarrow.Schema (pyarrow is imported lazily)
    """The pyarrow schema of ``table``'s Parquet files (data columns only, no partition columns)."""
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int": pa.int32(),
        "bigint": pa.int64(),
        "double": pa.float64(),
        "boolean": pa.bool_(),
    }
    return pa.schema([pa.field(name, types[typ], nullable) for name, typ, nullable in COLUMNS[table]])
