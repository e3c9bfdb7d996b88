"""seglog's Spark data source (format name ``seglog``): Spark's Kafka source over log dirs.

``spark.read.format("seglog").option("path", DIR).option("subscribe", "t").load()`` reads
the partition logs under ``DIR`` with **Spark's Kafka source schema and options**
(:mod:`seglog.spark.schema`, :mod:`seglog.spark.options`); ``readStream`` does the same as a
Structured Streaming source (:mod:`seglog.spark.streaming`); ``write`` delegates to the sink
(:mod:`seglog.spark.sink`), ``writeStream`` to the streaming sink
(:mod:`seglog.spark.stream_sink`).

Where each step runs: ``schema()`` and ``reader()`` in Spark's planner
Python workers; :meth:`SeglogBatchReader.pushFilters` and :meth:`~SeglogBatchReader.partitions`
there too, on the same reader object; ``read()`` on executors, on a pickled copy. Planning
opens the directories with ``LogManager.open(broker, read_only=True)`` (never writes, no
lock) and closes them before returning; an executor opens only the one partition it reads
(:func:`seglog.spark.arrow_reader.read_range`). Nothing open is kept on ``self``: the reader
and its :class:`RangePartition`s pickle.

Decisions:

* A user schema (``spark.read.schema(...)``) must equal the source's schema (with or
  without ``headers`` as ``includeHeaders`` says), else :class:`SparkOptionError` ("fixed
  schema"), as Spark's Kafka source rejects any custom schema.
* One input partition per topic-partition offset range, split like Spark's Kafka source
  (:func:`seglog.spark.offset_ranges.split_ranges`); empty ranges are not planned (an empty
  plan becomes Spark's single empty partition).
* Filter pushdown, only with the option ``pushFilters=true`` (and
  ``spark.sql.python.filterPushdown.enabled=true``, which
  :func:`seglog.spark.session.embedded_session` sets). Off by default: Spark 4.3 caches
  the plan made at pushdown on the loaded DataFrame's source object and reuses it for a
  later scan of that DataFrame that pushes no filter (``df.where("partition = 1").count()``
  then ``df.count()`` counted one partition; so did the unfiltered branch of
  ``df.where(...).union(df)``), so without the option every filter is returned to Spark
  and the plan never depends on filters. With it: on ``topic`` and ``partition``
  (``=``, ``IN``, comparisons) partitions are pruned; on ``offset`` (``=``, ``<``, ``<=``,
  ``>``, ``>=``) ranges are narrowed; all these are applied exactly and not returned to
  Spark. On ``timestamp`` (``=``, ``>``, ``>=``) each range's start moves up to the first
  offset whose timestamp reaches the bound (the time index, Kafka's ListOffsets): records
  before it all have smaller timestamps, so the narrowing is safe, but later records may
  still be smaller (timestamps are not monotonic), so the filter is returned and Spark
  still applies it. ``IS NOT NULL`` on the never-null columns is accepted. Everything else
  is returned untouched.
"""

from __future__ import annotations

import datetime as dt
import operator
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
)

from seglog.engine.log import Log
from seglog.errors import SparkOptionError
from seglog.spark.arrow_reader import read_range
from seglog.spark.offset_ranges import (
    OffsetRange,
    discover,
    offset_for_timestamp,
    plan_ranges,
    resolve_offsets,
    split_ranges,
)
from seglog.spark.options import (
    SourceOptions,
    include_headers_of,
    parse_source_options,
)
from seglog.spark.planning import open_manager, partition_bounds, range_partitions
from seglog.spark.schema import read_schema_ddl
from seglog.spark.streaming import SeglogStreamReader
from seglog.spark.tiered_source import TieredBatchReader, is_tiered, parse_tiered_options

if TYPE_CHECKING:
    from pyspark.sql.datasource import (
        DataSourceStreamReader,
        DataSourceStreamWriter,
        DataSourceWriter,
    )
    from pyspark.sql.types import StructType

NEVER_NULL_COLUMNS = frozenset({"topic", "partition", "offset", "timestamp", "timestampType"})


def fixed_schema(include_headers: bool) -> StructType:
    """The source schema as a ``StructType``, built without a session (planner workers
    have none, so ``StructType.fromDDL`` cannot run there)."""
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
        fields.append(StructField("headers", ArrayType(header)))
    return StructType(fields)


def check_schema(schema: StructType | None, include_headers: bool) -> None:
    """Refuse a user schema other than the source's own (Kafka's fixed schema)."""
    if schema is None:
        return
    expected = fixed_schema(include_headers)
    if schema != expected:
        raise SparkOptionError(
            "the seglog source has a fixed schema and cannot be set with a custom one: "
            f"expected {read_schema_ddl(include_headers)!r}, got {schema.simpleString()!r}"
        )


class SeglogDataSource(DataSource):
    """``format("seglog")``: batch and streaming source, and the sink (module docstring)."""

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return "seglog"

    def schema(self) -> str:
        """Spark's Kafka source schema (``headers`` with ``includeHeaders=true``)."""
        return read_schema_ddl(include_headers_of(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        """The batch reader (options checked here, at planning)."""
        if is_tiered(self.options):
            tiered = parse_tiered_options(self.options)
            check_schema(schema, tiered.source.include_headers)
            return TieredBatchReader(tiered)
        options = parse_source_options(self.options, is_streaming=False)
        check_schema(schema, options.include_headers)
        return SeglogBatchReader(options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802
        """The Structured Streaming reader."""
        if is_tiered(self.options):
            raise SparkOptionError(
                "option 'tieredStorage' is for batch reads (spark.read); a tiered bucket holds "
                "closed segments only: stream the broker's log directory instead"
            )
        options = parse_source_options(self.options, is_streaming=True)
        check_schema(schema, options.include_headers)
        return SeglogStreamReader(options)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """The batch sink (:mod:`seglog.spark.sink`)."""
        from seglog.spark.sink import make_writer  # type: ignore[import-not-found,unused-ignore]

        writer: DataSourceWriter = make_writer(dict(self.options), schema, overwrite)
        return writer

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:  # noqa: N802
        """The Structured Streaming sink (:mod:`seglog.spark.stream_sink`)."""
        from seglog.spark.stream_sink import make_stream_writer

        return make_stream_writer(dict(self.options), schema, overwrite)


def _timestamp_us(value: object) -> int | None:
    """A Spark timestamp literal (``datetime``) in microseconds since the epoch (UTC)."""
    if not isinstance(value, dt.datetime):
        return None
    # A naive value is the worker's local time (pyspark's TimestampType.fromInternal).
    seconds = int(value.replace(microsecond=0).timestamp())
    return seconds * 1_000_000 + value.microsecond


_PARTITION_OPS: dict[str, Callable[[int, Any], bool]] = {
    "in": lambda partition, values: partition in values,
    "eq": operator.eq,
    "gt": operator.gt,
    "ge": operator.ge,
    "lt": operator.lt,
    "le": operator.le,
}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class SeglogBatchReader(DataSourceReader):
    """Plans offset ranges on the driver and reads them on executors (module docstring)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.topics: set[str] | None = None  # pushed-down topic filter (None: all)
        self.partition_checks: list[tuple[str, Any]] = []  # (op, value) on partition
        self.offset_low = 0
        self.offset_high: int | None = None
        self.timestamp_low_ms: int | None = None

    # --- pushdown ---------------------------------------------------------------------------
    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:  # noqa: N802 (Spark's name)
        """Apply what can be applied (module docstring); return the rest for Spark.

        Without the ``pushFilters`` option nothing is applied (module docstring: Spark
        reuses a pushed-down plan for later unfiltered scans of the same DataFrame).
        """
        if not self.options.push_filters:
            return list(filters)
        return [f for f in filters if not self._push(f)]

    def _push(self, item: Filter) -> bool:
        """True when ``item`` is fully applied by the scan."""
        attribute: tuple[str, ...] = tuple(getattr(item, "attribute", ()))
        if len(attribute) != 1:
            return False
        column = attribute[0]
        if isinstance(item, IsNotNull):
            return column in NEVER_NULL_COLUMNS
        value = getattr(item, "value", None)
        if column == "topic":
            return self._push_topic(item, value)
        if column == "partition":
            return self._push_partition(item, value)
        if column == "offset":
            return self._push_offset(item, value)
        if column == "timestamp":
            self._push_timestamp(item, value)
        return False

    def _push_topic(self, item: Filter, value: Any) -> bool:
        if isinstance(item, EqualTo) and isinstance(value, str):
            names = {value}
        elif isinstance(item, In) and all(isinstance(v, str) for v in value):
            names = set(value)
        else:
            return False
        self.topics = names if self.topics is None else self.topics & names
        return True

    def _push_partition(self, item: Filter, value: Any) -> bool:
        if isinstance(item, In) and all(_is_int(v) for v in value):
            self.partition_checks.append(("in", frozenset(value)))
            return True
        ops = {
            EqualTo: "eq",
            GreaterThan: "gt",
            GreaterThanOrEqual: "ge",
            LessThan: "lt",
            LessThanOrEqual: "le",
        }
        op = ops.get(type(item))
        if op is None or not _is_int(value):
            return False
        self.partition_checks.append((op, value))
        return True

    def _partition_wanted(self, partition: int) -> bool:
        return all(_PARTITION_OPS[op](partition, value) for op, value in self.partition_checks)

    def _push_offset(self, item: Filter, value: Any) -> bool:
        if not _is_int(value):
            return False
        low, high = self.offset_low, self.offset_high
        if isinstance(item, EqualTo):
            low, high = max(low, value), value + 1 if high is None else min(high, value + 1)
        elif isinstance(item, GreaterThan):
            low = max(low, value + 1)
        elif isinstance(item, GreaterThanOrEqual):
            low = max(low, value)
        elif isinstance(item, LessThan):
            high = value if high is None else min(high, value)
        elif isinstance(item, LessThanOrEqual):
            high = value + 1 if high is None else min(high, value + 1)
        else:
            return False
        self.offset_low, self.offset_high = low, high
        return True

    def _push_timestamp(self, item: Filter, value: Any) -> None:
        micros = _timestamp_us(value)
        if micros is None:
            return
        if isinstance(item, (EqualTo, GreaterThanOrEqual)):
            low_ms = -(-micros // 1000)  # ts_ms * 1000 >= micros
        elif isinstance(item, GreaterThan):
            low_ms = micros // 1000 + 1  # ts_ms * 1000 > micros
        else:
            return
        if low_ms > 0:
            current = self.timestamp_low_ms
            self.timestamp_low_ms = low_ms if current is None else max(current, low_ms)

    # --- planning ---------------------------------------------------------------------------
    def plan(self) -> list[OffsetRange]:
        """The offset ranges to read, split (opens and closes the directories)."""
        options = self.options
        with open_manager(options) as manager:
            tps = discover(manager, options.strategy, must_exist=True)
            logs, bounds = partition_bounds(manager, tps, options)
            starts = resolve_offsets(
                options.starting,
                tps,
                logs,
                bounds,
                is_ending=False,
                no_match_is_latest=options.starting_timestamp_strategy_latest,
                read_compacted=options.read_compacted,
                copy_target=options.compacted_copy,
            )
            ends = resolve_offsets(
                options.ending,
                tps,
                logs,
                bounds,
                is_ending=True,
                read_compacted=options.read_compacted,
                copy_target=options.compacted_copy,
            )
            ranges = plan_ranges(starts, ends, bounds, fail_on_data_loss=options.fail_on_data_loss)
            ranges = [self._narrow(r, logs[(r.topic, r.partition)]) for r in ranges]
        return split_ranges(
            [r for r in ranges if self._wanted(r)],
            min_partitions=options.min_partitions,
            max_records_per_partition=options.max_records_per_partition,
        )

    def _wanted(self, r: OffsetRange) -> bool:
        if self.topics is not None and r.topic not in self.topics:
            return False
        return self._partition_wanted(r.partition)

    def _narrow(self, r: OffsetRange, log: Log) -> OffsetRange:
        start = max(r.start, self.offset_low)
        end = r.end if self.offset_high is None else min(r.end, self.offset_high)
        if self.timestamp_low_ms is not None and start < end:
            found = offset_for_timestamp(
                log,
                self.timestamp_low_ms,
                read_compacted=self.options.read_compacted,
                copy_target=self.options.compacted_copy,
            )
            start = end if found is None else max(start, found)
        return OffsetRange(r.topic, r.partition, start, max(start, end))

    def partitions(self) -> list[InputPartition]:
        """One input partition per (split) offset range."""
        return range_partitions(self.options, self.plan())

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The records of one range as Arrow batches (runs on an executor)."""
        request = partition.value
        if request is None:  # Spark's single partition of an empty plan
            return iter(())
        return read_range(request)
