"""The export schema is defined once, in Rust (`rust/export/src/tables.rs`). Two copies must remain:
`spark/SCHEMA.md` (for people) and `spark/pulsar_rs_spark/schema.py` (Spark reads Parquet with an
explicit schema). These tests tie both, column by column (name, type, nullability, order), to the
Arrow schemas the Rust exporter produces."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from pulsar_rs import Broker, export
from pulsar_rs.export import TABLES, snapshot_tables

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "spark"))

from pulsar_rs_spark import schema as spark_schema  # noqa: E402

#: SCHEMA.md's type names, as Arrow types.
MD_TYPES = {
    "string": pa.string(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "double": pa.float64(),
    "bool": pa.bool_(),
}


@pytest.fixture(scope="module")
def rust_schemas(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pa.Schema]:
    """The schemas of a real export (from the Rust exporter, through the binding)."""
    with Broker(data_dir=tmp_path_factory.mktemp("schema") / "data") as broker:
        tables = snapshot_tables(broker)
    return {name: table.schema for name, table in tables.items()}


def _fields(schema: pa.Schema) -> list[tuple[str, pa.DataType, bool]]:
    return [(f.name, f.type, f.nullable) for f in schema]


def _schema_md() -> dict[str, list[tuple[str, pa.DataType, bool]]]:
    """Parses SCHEMA.md: a `## <table>` heading, then `| column[, column] | type[, nullable] | ..`."""
    tables: dict[str, list[tuple[str, pa.DataType, bool]]] = {}
    current: list[tuple[str, pa.DataType, bool]] | None = None
    for line in (ROOT / "spark" / "SCHEMA.md").read_text().splitlines():
        heading = re.match(r"^## (\w+)", line)
        if heading:
            current = tables.setdefault(heading.group(1), []) if heading.group(1) in TABLES else None
            continue
        if current is None or not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] in ("column", "") or set(cells[0]) <= {"-"}:
            continue
        typ, _, nullable = cells[1].partition(",")
        assert typ.strip() in MD_TYPES, f"SCHEMA.md: unknown type {cells[1]!r} for {cells[0]!r}"
        for name in cells[0].split(","):
            current.append((name.strip(), MD_TYPES[typ.strip()], nullable.strip() == "nullable"))
    return tables


def test_every_table_is_in_every_copy(rust_schemas: dict[str, pa.Schema]) -> None:
    assert set(rust_schemas) == set(TABLES) == set(spark_schema.TABLES) == set(_schema_md())


@pytest.mark.parametrize("table", TABLES)
def test_spark_schema_matches_rust(rust_schemas: dict[str, pa.Schema], table: str) -> None:
    assert _fields(spark_schema.arrow_schema(table)) == _fields(rust_schemas[table])


@pytest.mark.parametrize("table", TABLES)
def test_schema_md_matches_rust(rust_schemas: dict[str, pa.Schema], table: str) -> None:
    assert _schema_md()[table] == _fields(rust_schemas[table])


def test_schema_version_is_one_fact() -> None:
    rust = re.search(r"pub const SCHEMA_VERSION: u32 = (\d+);", (ROOT / "rust/export/src/tables.rs").read_text())
    md = re.search(r"schema version (\d+)", (ROOT / "spark" / "SCHEMA.md").read_text())
    assert rust is not None and md is not None
    version = int(rust.group(1))
    assert int(md.group(1)) == spark_schema.SCHEMA_VERSION == export.SCHEMA_VERSION == version
