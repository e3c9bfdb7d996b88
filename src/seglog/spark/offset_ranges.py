"""Driver-side planning of the seglog source: topic-partitions, offsets, and ranges to read.

Pure functions over open, read-only logs (no pyspark). An **offset range** is
``[start, end)`` of one topic-partition: the records whose offsets lie in it *and exist*
(a compacted topic has gaps; a range over a gap returns fewer records than ``end - start``).

* :func:`discover` lists the topic-partitions a strategy chooses.
* :func:`resolve_offsets` turns an :class:`~seglog.spark.options.OffsetSpec` into one offset
  per partition: ``earliest``/-2 -> the first readable offset (the log start offset, or the
  compacted copy's first offset when ``readCompacted`` and lower), ``latest``/-1 -> the log
  end offset, a timestamp -> Kafka's ListOffsets answer (the first offset whose reported
  timestamp is >= it, through the time index: ``Log.fetch_offset_by_timestamp``, at most
  the latest offset; with
  ``readCompacted`` the published copy's records up to its horizon first:
  :func:`offset_for_timestamp`).
* :func:`plan_ranges` pairs starts and ends and applies ``failOnDataLoss`` to starts below
  the first readable offset (gone to retention/DeleteRecords) and to starts above ends.
* :func:`split_ranges` is Spark's ``KafkaOffsetRangeCalculator.getRanges``: empty ranges are
  dropped; with ``maxRecordsPerPartition`` a range of ``n`` offsets becomes
  ``ceil(n / max)`` parts; then, when ``minPartitions`` is above the number of ranges, each
  range becomes ``max(round(n / (total / minPartitions)), 1)`` parts; a range in ``k`` parts
  is cut at ``start + floor(i * n / k)`` (Scala's ``(i * partitionSize).toLong``).
* :func:`rate_limit` is the Kafka micro-batch stream's ``rateLimit``: ``maxOffsetsPerTrigger``
  shared among partitions in proportion to their backlog, a share below 1 rounded up so a
  small partition is never starved, never past the available end.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from seglog.engine.compaction.compactor import open_published
from seglog.engine.compaction.partition_reader import PartitionView
from seglog.engine.compaction.remote_copy import copy_store_for
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager
from seglog.errors import DataLossError, OffsetOutOfRangeError, SparkOptionError, UnknownTopicError
from seglog.spark.options import EARLIEST, LATEST, OffsetKind, OffsetSpec, Strategy, StrategyKind
from seglog.storage.remote_copy_store import CopyTarget

TP = tuple[str, int]
LONG_MAX = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """``[start, end)`` of ``topic``-``partition`` (picklable; one Spark input partition)."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        """Offsets covered (records when the range has no gaps)."""
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class PartitionBounds:
    """What the driver knows of one partition: first readable offset and log end offset."""

    earliest: int
    latest: int


def discover(manager: LogManager, strategy: Strategy, *, must_exist: bool) -> list[TP]:
    """The topic-partitions ``strategy`` chooses, sorted. With ``must_exist`` a subscribed
    topic or an assigned partition that is not here raises ``UnknownTopicError`` (batch);
    otherwise it is skipped until it appears (streaming, as Kafka's source waits for it)."""
    topics = manager.topic_names()
    found: list[TP] = []
    if strategy.kind is StrategyKind.ASSIGN:
        for topic, partition in strategy.partitions:
            if partition in manager.partitions_of(topic):
                found.append((topic, partition))
            elif must_exist:
                manager.get_log(topic, partition)  # raises, naming topic or partition
                raise UnknownTopicError(f"topic {topic!r} has no partition {partition}")
        return sorted(found)
    if strategy.kind is StrategyKind.SUBSCRIBE:
        missing = [t for t in strategy.topics if t not in topics]
        if missing and must_exist:
            raise UnknownTopicError(
                f"option 'subscribe': topic(s) {', '.join(map(repr, missing))} do not exist "
                f"in the log directories (topics there: {', '.join(topics) or 'none'})"
            )
    for topic in topics:
        if strategy.matches(topic):
            found.extend((topic, p) for p in manager.partitions_of(topic))
    return sorted(found)


def bounds_of(
    log: Log,
    *,
    read_compacted: bool,
    copy_target: CopyTarget | None = None,
    read_committed: bool = False,
) -> PartitionBounds:
    """First readable offset and log end offset of ``log`` (see the module docstring);
    ``copy_target``: the compacted copy is the one published there (object storage);
    ``read_committed``: the latest offset is the last stable offset (what a read_committed
    Kafka consumer's end offsets answer)."""
    latest = log.last_stable_offset if read_committed else log.log_end_offset
    if not read_compacted:
        return PartitionBounds(log.log_start_offset, latest)
    view = PartitionView(log, read_compacted=True, store=copy_store_for(log, copy_target))
    try:
        return PartitionBounds(view.first_offset, latest)
    finally:
        view.close()


def offset_for_timestamp(
    log: Log, timestamp_ms: int, *, read_compacted: bool, copy_target: CopyTarget | None = None
) -> int | None:
    """The first offset of what the source reads whose reported timestamp is >= ``timestamp_ms``
    (Kafka's ListOffsets), or None.

    Plainly that is ``Log.fetch_offset_by_timestamp``. With ``read_compacted`` the offsets up
    to the published copy's horizon are the *copy's* records, which may lie below the log
    start offset (retention ran on the log) or be records the log's cleaner has removed
    since, so the log's answer could skip them: the copy is searched first (through its
    segments' time indexes), then the log after the horizon.
    """
    if not read_compacted:
        found = log.fetch_offset_by_timestamp(timestamp_ms)
        return None if found is None else found.offset
    opened = open_published(copy_store_for(log, copy_target), log)
    if opened is None:
        return offset_for_timestamp(log, timestamp_ms, read_compacted=False)
    publication, copy_segments = opened
    horizon = publication.horizon
    try:
        for segment in copy_segments:
            if segment.base_offset > horizon:
                break
            if segment.largest_timestamp() < timestamp_ms:
                continue
            match = segment.find_offset_by_timestamp(timestamp_ms, segment.base_offset)
            if match is not None:
                # offsets rise through the copy: a match past the horizon ends the search
                if match.offset <= horizon:
                    return match.offset
                break
    finally:
        for segment in copy_segments:
            segment.close()
    return _log_offset_for_timestamp_after(log, timestamp_ms, horizon + 1)


def _log_offset_for_timestamp_after(log: Log, timestamp_ms: int, after: int) -> int | None:
    """The first offset ``>= after`` of the log whose timestamp is >= ``timestamp_ms``."""
    found = log.fetch_offset_by_timestamp(timestamp_ms)
    if found is None or found.offset >= after:
        return None if found is None else found.offset
    segments = log.segments
    start = max(after, log.log_start_offset)
    for i, segment in enumerate(segments):
        if i + 1 < len(segments) and segments[i + 1].base_offset <= start:
            continue  # wholly below ``after``
        if segment.largest_timestamp() < timestamp_ms:
            continue
        match = segment.find_offset_by_timestamp(timestamp_ms, start)
        if match is not None:
            return match.offset if match.offset < log.log_end_offset else None
    return None


def resolve_offsets(
    spec: OffsetSpec,
    tps: Sequence[TP],
    logs: Mapping[TP, Log],
    bounds: Mapping[TP, PartitionBounds],
    *,
    is_ending: bool,
    no_match_is_latest: bool = False,
    read_compacted: bool = False,
    copy_target: CopyTarget | None = None,
) -> dict[TP, int]:
    """One offset per partition of ``tps`` for ``spec`` (see the module docstring).

    A timestamp no record reaches resolves to the log end offset for an ending position and
    with ``startingOffsetsByTimestampStrategy=latest``; otherwise it raises
    ``OffsetOutOfRangeError``. A JSON spec must name exactly the partitions read.
    """
    if spec.kind is OffsetKind.EARLIEST:
        return {tp: bounds[tp].earliest for tp in tps}
    if spec.kind is OffsetKind.LATEST:
        return {tp: bounds[tp].latest for tp in tps}
    if spec.kind is OffsetKind.TIMESTAMP:
        given = dict.fromkeys(tps, spec.timestamp_ms)
    else:
        given = spec.as_dict()
        if set(given) != set(tps):
            raise SparkOptionError(
                f"option {spec.option!r} must name every topic-partition read: it names "
                f"{_names(given)}, the query reads {_names(tps)} (use -2 for earliest, "
                "-1 for latest)"
            )
    out: dict[TP, int] = {}
    for tp in tps:
        value = given[tp]
        if spec.kind is OffsetKind.SPECIFIC:
            out[tp] = (
                bounds[tp].earliest
                if value == EARLIEST
                else bounds[tp].latest
                if value == LATEST
                else value
            )
            continue
        offset = offset_for_timestamp(
            logs[tp], value, read_compacted=read_compacted, copy_target=copy_target
        )
        if offset is None:
            if not (is_ending or no_match_is_latest):
                raise OffsetOutOfRangeError(
                    f"option {spec.option!r}: no record of {tp[0]}-{tp[1]} has a timestamp at "
                    f"or after {value} ms (set startingOffsetsByTimestampStrategy=latest to "
                    "start at the end instead)"
                )
            offset = bounds[tp].latest
        # read_committed: a timestamp found past the last stable offset answers the LSO
        out[tp] = min(offset, bounds[tp].latest)
    return out


def _names(tps: object) -> str:
    return "[" + ", ".join(f"{t}-{p}" for t, p in sorted(tps)) + "]"  # type: ignore[call-overload]


def plan_ranges(
    starts: Mapping[TP, int],
    ends: Mapping[TP, int],
    bounds: Mapping[TP, PartitionBounds],
    *,
    fail_on_data_loss: bool,
) -> list[OffsetRange]:
    """One range per partition; data loss is raised or skipped (module docstring)."""
    ranges = []
    for tp in sorted(ends):
        start, end = starts[tp], ends[tp]
        earliest, latest = bounds[tp].earliest, bounds[tp].latest
        if end > latest:
            raise OffsetOutOfRangeError(
                f"{tp[0]}-{tp[1]}: ending offset {end} is above the latest offset {latest} "
                "(the log end offset; the last stable offset under read_committed)"
            )
        if start < earliest:
            if fail_on_data_loss:
                raise DataLossError(
                    f"{tp[0]}-{tp[1]}: offsets {start} to {earliest - 1} are gone: the log now "
                    f"starts at {earliest} (retention or delete-records removed them); set "
                    "failOnDataLoss=false to skip them"
                )
            start = earliest
        if start > end:
            if fail_on_data_loss:
                raise DataLossError(
                    f"{tp[0]}-{tp[1]}: the starting offset {start} is above the ending offset "
                    f"{end} (the log end offset is {latest}); some data may have been missed; "
                    "set failOnDataLoss=false to skip the partition"
                )
            start = end
        ranges.append(OffsetRange(tp[0], tp[1], start, end))
    return ranges


def _divided(parts: int, offset_range: OffsetRange) -> list[OffsetRange]:
    """Spark's getDividedPartition."""
    if parts <= 1:
        return [offset_range]
    size = offset_range.size / parts
    return [
        OffsetRange(
            offset_range.topic,
            offset_range.partition,
            offset_range.start + int(i * size),
            offset_range.start + int((i + 1) * size),
        )
        for i in range(parts)
    ]


def split_ranges(
    ranges: Sequence[OffsetRange],
    *,
    min_partitions: int | None,
    max_records_per_partition: int | None,
) -> list[OffsetRange]:
    """Spark's ``KafkaOffsetRangeCalculator.getRanges`` (module docstring)."""
    out = [r for r in ranges if r.size > 0]
    if min_partitions is None and max_records_per_partition is None:
        return out
    if max_records_per_partition is not None:
        limit = max_records_per_partition
        out = [
            part for r in out for part in _divided(math.ceil(r.size / limit), r) if part.size > 0
        ]
    if min_partitions is not None and min_partitions > len(out):
        total = sum(r.size for r in out)
        ideal = total / min_partitions
        out = [
            part
            for r in out
            for part in _divided(max(math.floor(r.size / ideal + 0.5), 1), r)
            if part.size > 0
        ]
    return out


def rate_limit(limit: int, start: Mapping[TP, int], until: Mapping[TP, int]) -> dict[TP, int]:
    """End offsets after admitting at most about ``limit`` offsets (module docstring).

    ``start`` holds every partition of ``until`` (new partitions at their first offset).
    """
    sizes = {tp: end - start[tp] for tp, end in until.items() if end - start[tp] > 0}
    total = float(sum(sizes.values()))
    if total < 1:
        return dict(until)
    out = {}
    for tp, end in until.items():
        if tp not in sizes:
            out[tp] = end
            continue
        prorate = limit * (sizes[tp] / total)
        share = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        begin = start[tp]
        out[tp] = min(end, LONG_MAX if share > LONG_MAX - begin else begin + share)
    return out
