"""What ``seglog report`` shows, gathered from an open LogManager as plain dataclasses (no HTML).

:func:`gather_report` reads, without changing anything (so it works on a read-only open and on
broker-written directories):

* per topic, the configs that decide cleaning and retention (:data:`REPORT_CONFIG_KEYS`);
* per partition, its segments in offset order, each classified (:class:`SegmentKind`) against
  the cleaner's dirty range of a compacted log: ``clean`` (wholly below the first dirty offset,
  i.e. the ``cleaner-offset-checkpoint``), ``dirty`` (cleanable now), ``uncleanable`` (dirty but
  not yet cleanable: at or past the first uncleanable offset, e.g. ``min.compaction.lag.ms``),
  ``active``; segments of a log without ``compact`` are ``closed`` or ``active``;
* the dirty ratio against ``min.cleanable.dirty.ratio`` (compacted logs only);
* the cleaner's rounds (``seglog-cleaner-history.json``), the compactor's runs and the
  retention deletions (:mod:`seglog.engine.run_history`), oldest first, and the compacted
  copy's published horizon and status;
* problems met on the way (damaged history or status files, a partition whose dirty range
  could not be computed): reported, never fatal.

History files are seglog's own and may be hand-edited: a field of the wrong type reads as 0
(or empty), never as an error.

Invariants of a :class:`PartitionReport`: ``segments`` are ordered by ``base_offset``, each
``end_offset`` is the next segment's base (the last one's is the log end offset), and exactly
the last segment is ``active``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from seglog.engine.cleaning.cleaner_manager import CleaningCandidate
from seglog.engine.compaction.compactor import copy_store
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager
from seglog.engine.topic_catalogue import CONFIGS_UNKNOWN
from seglog.errors import SeglogError
from seglog.format.topic_names import TopicPartition

#: The topic configs shown in the report, in this order.
REPORT_CONFIG_KEYS = (
    "cleanup.policy",
    "retention.ms",
    "retention.bytes",
    "segment.bytes",
    "segment.ms",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "max.compaction.lag.ms",
    "delete.retention.ms",
    "compaction.threshold.bytes",
)


class SegmentKind(enum.StrEnum):
    """Where a segment stands for the cleaner (module docstring)."""

    CLEAN = "clean"
    DIRTY = "dirty"
    UNCLEANABLE = "uncleanable"
    ACTIVE = "active"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class SegmentBar:
    """One segment: its offsets ``[base_offset, end_offset)``, size and kind."""

    base_offset: int
    end_offset: int
    size_bytes: int
    kind: SegmentKind
    largest_timestamp_ms: int


@dataclass(frozen=True, slots=True)
class DirtyRatio:
    """The cleaner's view of a compacted log: dirty / (clean + dirty) against the threshold."""

    ratio: float
    threshold: float
    clean_bytes: int
    dirty_bytes: int
    first_dirty_offset: int
    first_uncleanable_offset: int
    is_cleanable: bool
    max_compaction_delay_ms: int


@dataclass(frozen=True, slots=True)
class CleanerRound:
    """One recorded round of the Kafka-style cleaner."""

    time_ms: int
    first_dirty_offset: int
    end_offset: int
    bytes_read: int  # the cleaned section, as clean --once prints it (Kafka's start size)
    bytes_written: int  # what the section became (Kafka's end size)
    size_before_bytes: int  # the whole log, active segment included
    size_after_bytes: int
    keys: int
    messages_read: int
    messages_written: int
    duration_s: float
    is_partial: bool


@dataclass(frozen=True, slots=True)
class CompactionRunRow:
    """One recorded run of the compacted-copy compactor."""

    time_ms: int
    state: str
    horizon: int
    bytes_before: int
    bytes_after: int
    keys: int
    records_read: int
    records_kept: int
    duration_s: float
    is_noop: bool
    is_partial: bool
    error: str


@dataclass(frozen=True, slots=True)
class RetentionSegment:
    """One segment a retention pass deleted, and why."""

    base_offset: int
    size_bytes: int
    rule: str
    reason: str


@dataclass(frozen=True, slots=True)
class RetentionEvent:
    """One recorded retention pass over a partition."""

    time_ms: int
    segment_count: int
    bytes: int
    rules: tuple[str, ...]
    log_start_offset: int
    segments: tuple[RetentionSegment, ...]


@dataclass(frozen=True, slots=True)
class CompactedCopyView:
    """The compacted copy of a partition: publication and last status."""

    state: str
    message: str
    horizon: int | None
    published_ms: int | None


@dataclass(frozen=True, slots=True)
class PartitionReport:
    """Everything the report shows about one partition (invariants: module docstring)."""

    topic: str
    partition: int
    directory: str
    log_start_offset: int
    log_end_offset: int
    size_bytes: int
    cleaner_checkpoint: int | None
    segments: tuple[SegmentBar, ...]
    dirty: DirtyRatio | None
    cleaner_rounds: tuple[CleanerRound, ...]
    compaction_runs: tuple[CompactionRunRow, ...]
    retention_events: tuple[RetentionEvent, ...]
    compacted_copy: CompactedCopyView

    @property
    def name(self) -> str:
        """``<topic>-<partition>``, the partition directory's name."""
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class TopicReport:
    """A topic: the configs that matter and its partitions here."""

    name: str
    is_compacted: bool
    configs: tuple[tuple[str, str], ...]
    partitions: tuple[PartitionReport, ...]


@dataclass(frozen=True, slots=True)
class Report:
    """The whole report: when, which data dirs, topics, problems."""

    generated_ms: int
    data_dirs: tuple[str, ...]
    is_read_only: bool
    topics: tuple[TopicReport, ...]
    problems: tuple[str, ...]


def _int(entry: Mapping[str, Any], key: str, default: int = 0) -> int:
    value = entry.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _float(entry: Mapping[str, Any], key: str) -> float:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value)


def _str(entry: Mapping[str, Any], key: str) -> str:
    value = entry.get(key)
    return value if isinstance(value, str) else ""


def _cleaner_round(entry: Mapping[str, Any]) -> CleanerRound:
    return CleanerRound(
        time_ms=_int(entry, "round_ms"),
        first_dirty_offset=_int(entry, "first_dirty_offset"),
        end_offset=_int(entry, "end_offset"),
        bytes_read=_int(entry, "bytes_read"),
        bytes_written=_int(entry, "bytes_written"),
        size_before_bytes=_int(entry, "size_before_bytes"),
        size_after_bytes=_int(entry, "size_after_bytes"),
        keys=_int(entry, "map_keys"),
        messages_read=_int(entry, "messages_read"),
        messages_written=_int(entry, "messages_written"),
        duration_s=_float(entry, "elapsed_secs"),
        is_partial=entry.get("is_partial") is True,
    )


def _compaction_run(entry: Mapping[str, Any]) -> CompactionRunRow:
    return CompactionRunRow(
        time_ms=_int(entry, "time_ms"),
        state=_str(entry, "state") or "SUCCESS",
        horizon=_int(entry, "horizon", -1),
        bytes_before=_int(entry, "bytes_before"),
        bytes_after=_int(entry, "bytes_after"),
        keys=_int(entry, "keys"),
        records_read=_int(entry, "records_read"),
        records_kept=_int(entry, "records_kept"),
        duration_s=_float(entry, "duration_s"),
        is_noop=entry.get("is_noop") is True,
        is_partial=entry.get("is_partial") is True,
        error=_str(entry, "error"),
    )


def _retention_event(entry: Mapping[str, Any]) -> RetentionEvent:
    raw_segments = entry.get("segments")
    segments = tuple(
        RetentionSegment(
            _int(s, "base_offset"), _int(s, "size_bytes"), _str(s, "rule"), _str(s, "reason")
        )
        for s in (raw_segments if isinstance(raw_segments, list) else [])
        if isinstance(s, dict)
    )
    raw_rules = entry.get("rules")
    rules = tuple(
        r for r in (raw_rules if isinstance(raw_rules, list) else []) if isinstance(r, str)
    )
    return RetentionEvent(
        time_ms=_int(entry, "time_ms"),
        segment_count=_int(entry, "segment_count", len(segments)),
        bytes=_int(entry, "bytes"),
        rules=rules,
        log_start_offset=_int(entry, "log_start_offset"),
        segments=segments,
    )


def segment_bars(log: Log, dirty: DirtyRatio | None) -> tuple[SegmentBar, ...]:
    """The log's segments, classified against ``dirty`` (None: not compacted)."""
    segments = log.segments
    bars = []
    for i, segment in enumerate(segments):
        is_last = i == len(segments) - 1
        end = log.log_end_offset if is_last else segments[i + 1].base_offset
        if is_last:
            kind = SegmentKind.ACTIVE
        elif dirty is None:
            kind = SegmentKind.CLOSED
        elif end <= dirty.first_dirty_offset:
            kind = SegmentKind.CLEAN
        elif segment.base_offset >= dirty.first_uncleanable_offset:
            kind = SegmentKind.UNCLEANABLE
        else:
            kind = SegmentKind.DIRTY
        bars.append(
            SegmentBar(segment.base_offset, end, segment.size, kind, segment.largest_timestamp())
        )
    return tuple(bars)


def _dirty_ratio(candidate: CleaningCandidate) -> DirtyRatio:
    t = candidate.to_clean
    return DirtyRatio(
        ratio=t.cleanable_ratio,
        threshold=t.min_cleanable_dirty_ratio,
        clean_bytes=t.clean_bytes,
        dirty_bytes=t.cleanable_bytes,
        first_dirty_offset=t.first_dirty_offset,
        first_uncleanable_offset=t.first_uncleanable_offset,
        is_cleanable=candidate.is_cleanable,
        max_compaction_delay_ms=t.max_compaction_delay_ms,
    )


def _copy_view(log: Log, problems: list[str]) -> CompactedCopyView:
    store = copy_store(log)
    publication = store.published()
    status = store.status()
    problems.extend(store.problems)
    return CompactedCopyView(
        status.state,
        status.message,
        publication.horizon if publication else None,
        publication.published_ms if publication else None,
    )


def gather_report(manager: LogManager, *, now_ms: int | None = None) -> Report:
    """Everything ``seglog report`` shows (module docstring); changes nothing on disk."""
    now = manager.clock.now_ms() if now_ms is None else now_ms
    problems: list[str] = list(manager.metadata_problems)
    cleaner = manager.cleaner_manager
    checkpoints = cleaner.checkpoints()
    logs = manager.logs()
    topics = []
    for name in manager.topic_names():
        config = manager.log_config(name)
        dirty_by_tp: dict[TopicPartition, DirtyRatio] = {}
        if config.is_compacted:
            try:
                for candidate in cleaner.candidates(now, topic=name):
                    dirty_by_tp[candidate.topic_partition] = _dirty_ratio(candidate)
            except (SeglogError, OSError) as exc:
                problems.append(f"topic {name!r}: the dirty range could not be computed: {exc}")
        partitions = []
        for tp in sorted(tp for tp in logs if tp.topic == name):
            log = logs[tp]
            dirty = dirty_by_tp.get(tp)
            partitions.append(
                PartitionReport(
                    topic=tp.topic,
                    partition=tp.partition,
                    directory=str(log.directory),
                    log_start_offset=log.log_start_offset,
                    log_end_offset=log.log_end_offset,
                    size_bytes=log.size_bytes(),
                    cleaner_checkpoint=checkpoints.get(tp),
                    segments=segment_bars(log, dirty),
                    dirty=dirty,
                    cleaner_rounds=tuple(_cleaner_round(r) for r in cleaner.rounds(tp)),
                    compaction_runs=tuple(
                        _compaction_run(r) for r in manager.history.compaction_runs(tp)
                    ),
                    retention_events=tuple(
                        _retention_event(e) for e in manager.history.retention_events(tp)
                    ),
                    compacted_copy=_copy_view(log, problems),
                )
            )
        properties = config.to_properties()
        if not manager.is_config_known(name):
            # Not seglog's defaults: nothing acts on this topic until its policy is set.
            properties["cleanup.policy"] = CONFIGS_UNKNOWN
        topics.append(
            TopicReport(
                name=name,
                is_compacted=config.is_compacted,
                configs=tuple((k, properties[k]) for k in REPORT_CONFIG_KEYS if k in properties),
                partitions=tuple(partitions),
            )
        )
    problems.extend(manager.history.problems())
    return Report(
        generated_ms=now,
        data_dirs=tuple(manager.broker.log_dirs),
        is_read_only=manager.read_only,
        topics=tuple(topics),
        problems=tuple(dict.fromkeys(problems)),  # each once, in order
    )
