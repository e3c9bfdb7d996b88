"""Planning shared by the batch source and the streaming source: input partitions and bounds.

:mod:`seglog.spark.source` (batch) and :mod:`seglog.spark.streaming` (Structured Streaming)
both turn offset ranges into :class:`RangePartition` s and read partition bounds through a
read-only manager; this module holds that, so neither imports the other's internals.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pyspark.sql.datasource import InputPartition

from seglog.core.isolation import IsolationLevel
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager
from seglog.spark.arrow_reader import RangeRequest
from seglog.spark.offset_ranges import TP, OffsetRange, PartitionBounds, bounds_of
from seglog.spark.options import SourceOptions


class RangePartition(InputPartition):
    """One Spark input partition: a :class:`RangeRequest` (``value``)."""

    def __init__(self, request: RangeRequest) -> None:
        super().__init__(request)
        self.request = request


def range_partitions(options: SourceOptions, ranges: Iterable[OffsetRange]) -> list[InputPartition]:
    """The input partitions reading ``ranges`` with ``options`` (a list, as Spark needs)."""
    return [
        RangePartition(
            RangeRequest(
                log_dirs=options.log_dirs,
                config_path=options.config_path,
                topic=r.topic,
                partition=r.partition,
                start=r.start,
                end=r.end,
                include_headers=options.include_headers,
                read_compacted=options.read_compacted,
                read_committed=options.isolation_level is IsolationLevel.READ_COMMITTED,
                fail_on_data_loss=options.fail_on_data_loss,
                copy_target=options.compacted_copy,
                s3=options.s3,
            )
        )
        for r in ranges
    ]


def open_manager(options: SourceOptions) -> LogManager:
    """The data directories, read-only (no lock, nothing written); the caller closes it."""
    return LogManager.open(options.broker_config(), read_only=True)


def partition_bounds(
    manager: LogManager, tps: Sequence[TP], options: SourceOptions
) -> tuple[dict[TP, Log], dict[TP, PartitionBounds]]:
    """Each partition's log and bounds."""
    logs = {tp: manager.get_log(*tp) for tp in tps}
    bounds = {
        tp: bounds_of(
            log,
            read_compacted=options.read_compacted,
            copy_target=options.compacted_copy,
            read_committed=options.isolation_level is IsolationLevel.READ_COMMITTED,
        )
        for tp, log in logs.items()
    }
    return logs, bounds
