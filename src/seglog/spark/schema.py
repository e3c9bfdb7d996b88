"""The Spark Kafka source and sink contracts as Spark and Arrow types.

Read schema, every field nullable, in this order: ``key binary, value binary, topic string,
partition int, offset bigint, timestamp timestamp, timestampType int`` and, with
``includeHeaders=true``, ``headers array<struct<key string, value binary>>`` (null, not an
empty array, for a record without headers). ``timestamp`` is Kafka's millisecond timestamp as
a Spark microsecond timestamp; ``timestampType`` is Kafka's ``TimestampType.id`` (0
CreateTime, 1 LogAppendTime).

From Spark 4.2 a batch yielded by a Python reader must equal ``to_arrow_schema(schema)``
exactly: ``timestamp[us, tz=UTC]``, ``binary`` (not ``large_binary``), nullable fields and the
same column order. :func:`arrow_read_schema` is that schema, built here without pyspark so
executors and tests can use it directly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

#: Kafka's TimestampType ids as Spark reports them.
TIMESTAMP_TYPE_CREATE_TIME = 0
TIMESTAMP_TYPE_LOG_APPEND_TIME = 1

READ_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")
HEADERS_COLUMN = "headers"

HEADER_ARROW_TYPE = pa.list_(
    pa.field("element", pa.struct([("key", pa.string()), ("value", pa.binary())]))
)

_ARROW_READ_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.timestamp("us", tz="UTC")),
    pa.field("timestampType", pa.int32()),
]

READ_SCHEMA_DDL = (
    "key binary, value binary, topic string, partition int, offset bigint, "
    "timestamp timestamp, timestampType int"
)
HEADERS_DDL = "headers array<struct<key: string, value: binary>>"


def arrow_read_schema(include_headers: bool) -> pa.Schema:
    """The Arrow schema of the source's batches (equal to Spark's ``to_arrow_schema``)."""
    fields = list(_ARROW_READ_FIELDS)
    if include_headers:
        fields.append(pa.field(HEADERS_COLUMN, HEADER_ARROW_TYPE))
    return pa.schema(fields)


def read_schema_ddl(include_headers: bool) -> str:
    """The source schema as a DDL string (what ``DataSource.schema()`` returns)."""
    return f"{READ_SCHEMA_DDL}, {HEADERS_DDL}" if include_headers else READ_SCHEMA_DDL


def spark_read_schema(include_headers: bool) -> StructType:
    """The source schema as a Spark ``StructType`` (imports pyspark)."""
    from pyspark.sql.types import StructType

    parsed = StructType.fromDDL(read_schema_ddl(include_headers))
    assert isinstance(parsed, StructType)
    return parsed
