"""The seglog Structured Streaming source (``spark.readStream.format("seglog")``).

Offsets are Spark's Kafka source offsets: ``{"topic": {"0": next_offset, ...}}`` (JSON object,
partition numbers as strings); Spark stores them verbatim in the checkpoint's ``offsets/N``.
A micro-batch ``(start, end]`` reads ``[start[tp], end[tp])`` of every partition of ``end``.

The reader object lives on the driver for the whole query, so it
keeps the availableNow target and the time of the last batch; every call re-opens the
directories read-only (``LogManager.open(..., read_only=True)``) to see new appends, and
closes them before returning. ``read()`` runs on executors like the batch reader.

Behaviour, as Spark's Kafka micro-batch stream:

* ``initialOffset``: ``startingOffsets`` (default ``latest``), ``startingTimestamp`` or
  ``startingOffsetsByTimestamp`` resolved once, for a new query only (a restarted query
  resumes from its checkpoint).
* ``latestOffset(start, limit)``: the log end offset of every partition the strategy
  chooses *now*: partitions and (subscribe/pattern) topics that appear later are read from
  their first offset. ``ReadAllAvailable`` takes everything. Otherwise the options apply:
  ``minOffsetsPerTrigger`` skips the batch (returns ``start``) while fewer offsets are
  waiting and ``maxTriggerDelay`` has not passed since the last batch;
  ``maxOffsetsPerTrigger`` (or the engine's ``ReadMaxRows``) caps the batch, shared among
  partitions in proportion to their backlog (:func:`~seglog.spark.offset_ranges.rate_limit`).
  With ``Trigger.AvailableNow`` (:meth:`prepareForTriggerAvailableNow`) ends never pass the
  log end offsets seen when the query started, and partitions found later are not read.
* ``getDefaultReadLimit``: ``ReadMaxRows(maxOffsetsPerTrigger)``, else
  ``ReadMinRows(minOffsetsPerTrigger)``, else ``ReadAllAvailable``.
* Data loss (``failOnDataLoss``, default true): a partition of ``start`` that disappeared, a
  start below the partition's first readable offset (retention or delete-records passed the
  query's position) or above its end (truncation) raises
  :class:`~seglog.errors.DataLossError` naming the partition and offsets; with false the
  partition is dropped or the range starts at the first readable offset.
* ``minPartitions`` / ``maxRecordsPerPartition`` split each micro-batch's ranges as in batch.

On pyspark 4.0/4.1 ``latestOffset()`` is called without arguments (no admission control);
the signature ``latestOffset(start=None, limit=None)`` serves both.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from seglog.errors import DataLossError
from seglog.spark.arrow_reader import read_range
from seglog.spark.offset_ranges import (
    TP,
    PartitionBounds,
    discover,
    plan_ranges,
    rate_limit,
    resolve_offsets,
    split_ranges,
)
from seglog.spark.options import SourceOptions
from seglog.spark.planning import open_manager, partition_bounds, range_partitions

OffsetDict = dict[str, dict[str, int]]


def to_offset_dict(offsets: Mapping[TP, int]) -> OffsetDict:
    """``{(topic, p): n}`` -> ``{"topic": {"p": n}}`` (topics and partitions sorted)."""
    out: OffsetDict = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def from_offset_dict(offsets: Mapping[str, Mapping[str, Any]] | None) -> dict[TP, int]:
    """``{"topic": {"p": n}}`` -> ``{(topic, p): n}``."""
    return {
        (topic, int(partition)): int(offset)
        for topic, per_partition in (offsets or {}).items()
        for partition, offset in per_partition.items()
    }


class SeglogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The micro-batch stream (module docstring)."""

    def __init__(self, options: SourceOptions, *, clock: Any = time.monotonic) -> None:
        self.options = options
        self._clock = clock
        self._target: dict[TP, int] | None = None  # availableNow: ends never above these
        self._last_batch_s = clock()

    # --- driver side ----------------------------------------------------------------------
    def _current(self) -> tuple[dict[TP, int], dict[TP, PartitionBounds]]:
        """Log end offsets and bounds of the partitions chosen now."""
        with open_manager(self.options) as manager:
            tps = discover(manager, self.options.strategy, must_exist=False)
            _, bounds = partition_bounds(manager, tps, self.options)
        return {tp: b.latest for tp, b in bounds.items()}, bounds

    def initialOffset(self) -> OffsetDict:  # noqa: N802 (Spark's name)
        """Where a new query starts (``startingOffsets`` etc.)."""
        options = self.options
        with open_manager(options) as manager:
            tps = discover(manager, options.strategy, must_exist=False)
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
        return to_offset_dict(starts)

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        """Fix the target: the log end offsets now."""
        self._target, _ = self._current()

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802
        """``maxOffsetsPerTrigger`` / ``minOffsetsPerTrigger`` as a read limit."""
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def reportLatestOffset(self) -> OffsetDict:  # noqa: N802
        """The log end offsets (for the query's progress reports)."""
        latest, _ = self._current()
        return to_offset_dict(latest)

    def latestOffset(  # noqa: N802
        self, start: OffsetDict | None = None, limit: ReadLimit | None = None
    ) -> OffsetDict:
        """The end of the next micro-batch (module docstring)."""
        latest, bounds = self._current()
        target = self._target
        if target is not None:
            latest = {tp: min(end, target[tp]) for tp, end in latest.items() if tp in target}
        if start is None:
            return to_offset_dict(latest)
        begin = self._checked_start(from_offset_dict(start), latest, bounds)
        ends: dict[TP, int] | None = latest
        if limit is not None and not isinstance(limit, ReadAllAvailable):
            ends = self._admitted(begin, latest, limit)
        if ends is None:
            return start
        if ends != {tp: begin[tp] for tp in ends}:
            self._last_batch_s = self._clock()
        # A partition of ``start`` that vanished was dropped (failOnDataLoss=false) or raised.
        return to_offset_dict(ends)

    def _checked_start(
        self,
        start: dict[TP, int],
        latest: dict[TP, int],
        bounds: Mapping[TP, PartitionBounds],
    ) -> dict[TP, int]:
        """Per partition of ``latest``, where the next batch begins."""
        gone = sorted(set(start) - set(latest))
        if gone and self.options.fail_on_data_loss and self._target is None:
            names = ", ".join(f"{t}-{p}" for t, p in gone)
            raise DataLossError(
                f"partition(s) {names} are gone (topic deleted?) while the query was reading "
                "them; set failOnDataLoss=false to go on without them"
            )
        return {tp: start.get(tp, bounds[tp].earliest) for tp in latest}

    def _admitted(
        self, begin: dict[TP, int], latest: dict[TP, int], limit: ReadLimit
    ) -> dict[TP, int] | None:
        """Ends under ``limit`` and the trigger options; None: skip this trigger."""
        options = self.options
        minimum = options.min_offsets_per_trigger
        if isinstance(limit, ReadMinRows):
            minimum = limit.min_rows
        if minimum is not None and self._target is None:
            backlog = sum(max(0, end - begin[tp]) for tp, end in latest.items())
            waited_ms = (self._clock() - self._last_batch_s) * 1000
            if backlog < minimum and waited_ms < options.max_trigger_delay_ms:
                return None
        maximum = options.max_offsets_per_trigger
        if isinstance(limit, ReadMaxRows):
            maximum = limit.max_rows
        if maximum is None:
            return latest
        return rate_limit(maximum, begin, latest)

    def partitions(self, start: OffsetDict, end: OffsetDict) -> list[InputPartition]:
        """The ranges ``[start, end)`` of every partition of ``end``, split."""
        ends = from_offset_dict(end)
        if not ends:
            return []
        starts = from_offset_dict(start)
        options = self.options
        _, bounds = self._current()
        for tp, end_offset in ends.items():
            found = bounds.get(tp)
            if found is None:
                # Gone since latestOffset: keep the planned range; the executor reports the
                # loss (or skips it with failOnDataLoss=false).
                bounds[tp] = PartitionBounds(
                    min(starts.get(tp, end_offset), end_offset), end_offset
                )
            elif found.latest < end_offset:
                # Truncated since latestOffset: likewise left to the executor.
                bounds[tp] = PartitionBounds(found.earliest, end_offset)
        begin = {tp: starts.get(tp, bounds[tp].earliest) for tp in ends}
        ranges = plan_ranges(begin, ends, bounds, fail_on_data_loss=options.fail_on_data_loss)
        ranges = split_ranges(
            ranges,
            min_partitions=options.min_partitions,
            max_records_per_partition=options.max_records_per_partition,
        )
        return range_partitions(options, ranges)

    def commit(self, end: OffsetDict) -> None:
        """Nothing to do: the source keeps no state outside Spark's checkpoint."""

    def stop(self) -> None:
        """Nothing is held open between calls."""

    # --- executor side ----------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The records of one range as Arrow batches."""
        return read_range(partition.value)
