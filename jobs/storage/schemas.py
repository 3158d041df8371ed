"""A table's schema as Spark sees it, and the refusal to write data whose columns or
partitioning differ from the table's (delta-rs would silently rewrite them)."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
from deltalake import Schema
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType


def spark_schema(table) -> StructType:
    """The table's schema with partition columns last, as Spark's Parquet reader returns them."""
    fields = from_arrow_schema(pa.schema(table.schema().to_arrow())).fields
    by_name = {f.name: f for f in fields}
    partitions = table.metadata().partition_columns
    return StructType([f for f in fields if f.name not in partitions] + [by_name[p] for p in partitions])


def _nullable(data_type: DataType) -> DataType:
    """Nullable all the way down, as delta-spark creates tables, so a column that happens to
    be non-null in one run does not change the table's schema in the next."""
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, _nullable(f.dataType), True, f.metadata)
                           for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(_nullable(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(_nullable(data_type.keyType), _nullable(data_type.valueType), True)
    return data_type


def _arrow_schema(schema: StructType):
    return to_arrow_schema(_nullable(schema), timezone="UTC")


def _types_only(node: Any) -> Any:
    """A Delta schema's JSON without nullability or field metadata, for comparing types."""
    if isinstance(node, dict):
        return {k: _types_only(v) for k, v in node.items()
                if k not in ("nullable", "containsNull", "valueContainsNull", "metadata")}
    if isinstance(node, list):
        return [_types_only(v) for v in node]
    return node


def check_compatible(table, schema: StructType, partition_by: list[str], path: str) -> None:
    """delta-rs would silently rewrite the table's schema and partitioning; refuse instead."""
    existing_partitions = list(table.metadata().partition_columns)
    if existing_partitions != partition_by:
        raise ValueError(f"{path} is partitioned by {existing_partitions}, not {partition_by}")

    def columns(delta_schema) -> dict:
        return {f["name"]: _types_only(f["type"]) for f in json.loads(delta_schema.to_json())["fields"]}

    old, new = columns(table.schema()), columns(Schema.from_arrow(_arrow_schema(schema)))
    if old != new:
        diff = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        raise ValueError(f"schema of the data written to {path} differs from the table's in {diff}: "
                         f"table {[(k, old.get(k)) for k in diff]}, data {[(k, new.get(k)) for k in diff]}. "
                         "A table keeps the columns it was created with (its other partitions have "
                         "them): to write these, move the table aside and materialise its partitions again")
