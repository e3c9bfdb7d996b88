"""The Pulsar-style compactor: a compacted copy *beside* the log, and read-compacted readers
(Pulsar's topic compaction; the files are :mod:`seglog.storage.compacted_copy`).

A run over one partition, with the compaction horizon H0 of the published copy (-1: none):

1. **Horizon.** H = the log end offset at the start, or the last stable offset when a
   transaction is open below it, minus 1 (a batch end): the copy never holds a record whose
   transaction is undecided. Nothing after H0: the run is a no-op.
2. **Phase one** builds key -> latest offset over the log *after* H0 only (the previous copy
   already holds each older key's latest record), with the same bounded offset map as the
   Kafka-style cleaner (:class:`~seglog.engine.cleaning.cleaner.Cleaner`). When the map fills, the
   run compacts only up to the batch before the one where it filled (H moves back to that
   batch's end, the map is rebuilt over the shorter range if it had taken part of that
   batch) and says so: a horizon always ends a batch, so copies never split one.
3. **Phase two** writes, in offset order, the previous copy's records and the log's records
   in (H0, H] that survive into a new copy directory as Kafka-format segments, rolled at
   ``segment.bytes``, with their original offsets, timestamps, batches' producer fields and
   codecs (the cleaner's batch rewriting). A record survives iff no later record of its key
   is at or below H, and:

   * a **tombstone** (null value) stays for ``delete.retention.ms`` after the first run that
     copied it (its batch is stamped with that horizon, as KIP-534 does in Kafka), so a
     reader that had not caught up still sees the delete (Pulsar drops it at once);
   * a **keyless** record is dropped, unless ``compaction.retain.null.key`` is true (Pulsar's
     ``topicCompactionRetainNullKey``);
   * **transactions**: a record of an aborted transaction (``.txnindex``) never enters the
     map nor the copy, and control batches (commit and abort markers) are not copied: every
     record in the copy is committed, so a read-compacted reader needs no transaction
     filtering below H;
   * **retention** of the copy: when the topic's policy includes ``delete`` and
     ``retention.ms`` >= 0, a record whose timestamp is older than ``now - retention.ms``
     leaves the copy too. So a key whose latest record is past retention disappears from
     the copy as it did from the log (Pulsar keeps such keys forever, issue #24791). Size
     retention and the log start offset do not apply to the copy: it is bounded by the
     number of keys.
4. **Publication**: the copy is fsynced, then ``published.json`` names it and H in one
   atomic durable write; only then is the previous copy deleted. Startup removes unpublished
   and superseded copies.

The original log is never modified. One run per partition at a time
(:class:`CompactionService`); a status (NOT_RUN, RUNNING, SUCCESS, ERROR(message)) with the
last run's figures is persisted beside the copy.

Read-compacted readers (:func:`iter_compacted_records`): the copy's records from the
requested offset up to H, then the log's records after H; offsets strictly increase, and
the data ends at the log end offset, as for a normal reader.

Why this module is longer than the house's ~500 lines: it holds the run's numbered procedure,
the service that schedules runs, and the read-compacted readers, which share the copy's horizon
rules; the readers are about a third of it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from seglog.clock import Clock
from seglog.core.cleaning import delete_horizon_ms
from seglog.core.isolation import IsolationLevel
from seglog.engine.cleaning.cleaner import (
    ChunkRules,
    Cleaner,
    CleanerStats,
    Producers,
    RecordFilter,
    never_done,
)
from seglog.engine.cleaning.txn_columns import TxnState, aborted_in
from seglog.engine.log import Log
from seglog.engine.log.record_scan import ConsumedRecord, SkippedRange
from seglog.errors import SeglogError, UnreadableFileError
from seglog.format.topic_names import TopicPartition
from seglog.storage.atomic import fsync_directory
from seglog.storage.compacted_copy import CompactedCopyStore, CompactionStatus, Publication
from seglog.storage.segment import LogSegment

LOG = logging.getLogger("seglog.compactor")
INT32_MAX = (1 << 31) - 1


class CompactionRunningError(SeglogError):
    """A compaction of this partition is already running."""


class CompactionError(SeglogError):
    """A compaction run failed (the published copy is unchanged)."""


@dataclass
class CompactionRun:
    """One run's figures (persisted in the status)."""

    previous_horizon: int = -1
    horizon: int = -1
    records_read: int = 0
    records_kept: int = 0
    keys: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    copy_bytes: int = 0
    duration_s: float = 0.0
    is_partial: bool = False
    is_noop: bool = False
    copy: str = ""
    started_ms: int = 0
    segments: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def records_removed(self) -> int:
        """Records read and not kept."""
        return self.records_read - self.records_kept

    def to_json(self) -> dict[str, Any]:
        """JSON-able figures."""
        return {
            "previous_horizon": self.previous_horizon,
            "horizon": self.horizon,
            "records_read": self.records_read,
            "records_kept": self.records_kept,
            "records_removed": self.records_removed,
            "keys": self.keys,
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
            "copy_bytes": self.copy_bytes,
            "duration_s": round(self.duration_s, 6),
            "is_partial": self.is_partial,
            "is_noop": self.is_noop,
            "copy": self.copy,
            "started_ms": self.started_ms,
            "segments": self.segments,
        }


def copy_store(log: Log) -> CompactedCopyStore:
    """The compacted-copy store of ``log``'s partition directory."""
    return CompactedCopyStore(log.directory, writable=log.writable)


class Compactor:
    """Runs compactions with one :class:`Cleaner`'s offset map and buffers."""

    def __init__(self, cleaner: Cleaner) -> None:
        self.cleaner = cleaner

    def compact(
        self,
        log: Log,
        *,
        now_ms: int | None = None,
        check_done: Callable[[], None] = never_done,
        cleaner_checkpoint: int | None = None,
        store: CompactedCopyStore | None = None,
    ) -> CompactionRun:
        """One run over ``log`` (module docstring); returns its figures.

        ``store`` is where the copy is built and published: the log's own ``compaction/``
        directory by default; another directory for a copy that leaves the machine (see
        :mod:`seglog.engine.compaction.remote_copy`), the log then being read-only.

        ``cleaner_checkpoint`` is the Kafka-style cleaner's progress on this log: when it is
        past the published horizon, the in-place cleaner may have removed tombstones after
        the horizon that the copy never saw, so the run starts over from the log alone (which
        the cleaner keeps compact) instead of folding the old copy in.
        """
        cleaner = self.cleaner
        now = cleaner.clock.now_ms() if now_ms is None else now_ms
        started = time.monotonic()
        cleaner.pre_pass(log, now)  # refuses what the cleaner refuses (legacy entries)
        store = copy_store(log) if store is None else store
        publication = store.published()
        previous = publication.horizon if publication else -1
        rebuild = cleaner_checkpoint is not None and cleaner_checkpoint > previous + 1
        # The copy holds decided transactions only: never past the last stable offset.
        horizon = min(log.log_end_offset, log.last_stable_offset) - 1
        if rebuild and publication is not None and horizon <= previous:
            rebuild = False  # nothing new at all: the copy stays as published
        run = CompactionRun(previous_horizon=previous, horizon=previous, started_ms=now)
        if horizon <= previous and not rebuild:
            run.is_noop = True
            run.copy = publication.copy if publication else ""
            run.duration_s = time.monotonic() - started
            return run
        config = log.config
        if rebuild:
            run.extra["rebuilt"] = True
            old_segments: list[LogSegment] = []
            previous_folded = -1
        else:
            old_segments = self._open_copy(store, publication, log)
            previous_folded = previous
        stats = CleanerStats()
        try:
            start = max(previous_folded + 1, log.log_start_offset)
            # Under "offset" the previous copy's records are judged by lookups; under a
            # strategy (KIP-280) a tail record may lose to a copy record, so phase one reads
            # the previous copy too.
            the_map = cleaner.use_strategy(config.compaction_strategy)
            prior = old_segments if config.compaction_strategy != "offset" else []
            horizon = self._build_map(log, start, horizon, stats, check_done, prior)
            run.horizon = horizon
            run.keys = the_map.size
            run.is_partial = horizon < min(log.log_end_offset, log.last_stable_offset) - 1
            copy_dir = store.new_copy_dir(horizon)
            run.copy = copy_dir.name
            min_timestamp = None
            if config.has_delete and config.retention_ms >= 0:
                min_timestamp = now - config.retention_ms
            keep_keyless = config.compaction_retain_null_key
            writer = _CopyWriter(copy_dir, log)
            tombstone_horizon = delete_horizon_ms(now, config.delete_retention_ms)
            # The previous copy holds no marker and no aborted data: its state stays empty.
            copied_txn = TxnState()
            sources: list[tuple[LogSegment, int, RecordFilter, TxnState]] = [
                (
                    segment,
                    0,
                    RecordFilter(
                        max_offset=previous_folded,
                        keep_keyless=keep_keyless,
                        min_timestamp_ms=min_timestamp,
                        drop_control=True,
                    ),
                    copied_txn,
                )
                for segment in old_segments
            ]
            tail = RecordFilter(
                min_offset=start,
                max_offset=horizon,
                keep_keyless=keep_keyless,
                min_timestamp_ms=min_timestamp,
                drop_control=True,
            )
            tail_txn = TxnState()
            tail_txn.add_aborted(aborted_in(log, start, horizon + 1))
            for segment in _segments_holding(log, start, horizon):
                _, position = segment.offset_index.lookup(start)
                sources.append((segment, position, tail, tail_txn))
            for segment, position, rules, txn in sources:
                for chunk_position, columns in cleaner.chunks(segment, position, check_done):
                    if len(columns) and int(columns.offset[0]) > rules.max_offset:
                        break
                    buffers, spans, written = cleaner.filter_chunk(
                        chunk_position,
                        columns,
                        stats,
                        ChunkRules(now, tombstone_horizon, -2, Producers({}), txn, rules),
                    )
                    if spans:
                        writer.append(buffers, spans, written)
                        cleaner.throttler.maybe_throttle(written)
            run.segments = writer.finish()
            # The horizon's records must be durable before a copy that folds them is: a
            # crash must not leave a published copy ahead of the log (startup would then
            # withdraw it).
            log.flush(horizon + 1)
            store.publish(Publication(copy_dir.name, horizon, now))
        except BaseException:
            # Remove the new copy unless the publication already names it (the failure came
            # after the atomic rename, e.g. at the directory fsync): then it is the copy.
            if run.copy:
                current = store.published()
                if current is None or current.copy != run.copy:
                    store.remove_copy(run.copy)
            raise
        finally:
            for segment in old_segments:
                segment.close()
        if publication is not None:
            store.remove_copy(publication.copy)
        run.records_read = stats.messages_read
        run.records_kept = stats.messages_written
        run.bytes_read = stats.bytes_read
        run.bytes_written = stats.bytes_written
        run.copy_bytes = store.copy_bytes(run.copy)
        run.duration_s = time.monotonic() - started
        return run

    def _open_copy(
        self, store: CompactedCopyStore, publication: Publication | None, log: Log
    ) -> list[LogSegment]:
        if publication is None:
            return []
        return store.open_segments(
            publication.copy,
            index_interval_bytes=log.config.index_interval_bytes,
            segment_index_bytes=log.config.segment_index_bytes,
        )

    def _build_map(
        self,
        log: Log,
        start: int,
        horizon: int,
        stats: CleanerStats,
        check_done: Callable[[], None],
        prior: list[LogSegment],
    ) -> int:
        """Phase one; returns the run's horizon (moved back to a batch end when full)."""
        cleaner = self.cleaner
        offset_map = cleaner.active_map
        offset_map.clear()
        cleaner.build_offset_map(log, start, horizon + 1, stats, check_done, prior)
        if offset_map.latest_offset >= horizon:
            return horizon
        full_batch = cleaner.full_at_batch_base
        if full_batch <= start:
            raise CompactionError(
                f"{log.topic_partition}: the batch at offset {full_batch} holds more distinct "
                f"keys than the offset map can take ({offset_map.limit}); raise "
                "log.cleaner.dedupe.buffer.size"
            )
        if offset_map.latest_offset >= full_batch:
            # The map took part of the batch where it filled: build it again, stopping
            # before that batch, so the horizon ends a batch.
            offset_map.clear()
            cleaner.build_offset_map(log, start, full_batch, stats, check_done, prior)
        offset_map.update_latest_offset(full_batch - 1)
        return full_batch - 1


def _segments_holding(log: Log, start: int, end: int) -> list[LogSegment]:
    """The log's segments that may hold offsets in [start, end]."""
    segments = log.segments
    out = []
    for i, segment in enumerate(segments):
        upper = segments[i + 1].base_offset if i + 1 < len(segments) else log.log_end_offset
        if upper > start and segment.base_offset <= end:
            out.append(segment)
    return out


class _CopyWriter:
    """Writes a copy's segments, rolling at ``segment.bytes`` (or an int32 offset span)."""

    def __init__(self, directory: Any, log: Log) -> None:
        self.directory = directory
        self.config = log.config
        self.clock = log.clock
        self.segment: LogSegment | None = None
        self.count = 0

    def append(self, buffers: list[Any], spans: list[tuple[int, int, int, int]], size: int) -> None:
        first = buffers[0]
        base_offset = int.from_bytes(bytes(first[spans[0][0] : spans[0][0] + 8]), "big")
        last_offset = spans[-1][2]
        segment = self.segment
        if segment is not None and (
            (segment.size > 0 and segment.size + size > self.config.segment_bytes)
            or last_offset - segment.base_offset > INT32_MAX
        ):
            self._finish_segment()
            segment = None
        if segment is None:
            segment = LogSegment(
                self.directory,
                base_offset,
                index_interval_bytes=self.config.index_interval_bytes,
                segment_index_bytes=self.config.segment_index_bytes,
                created_ms=self.clock.now_ms(),
            )
            self.segment = segment
            self.count += 1
        segment.append(buffers, size, spans)

    def _finish_segment(self) -> None:
        if self.segment is not None:
            self.segment.on_become_inactive()
            self.segment.flush()
            self.segment.close()
            self.segment = None

    def finish(self) -> int:
        """Finish the last segment and fsync the directory; returns the segment count."""
        self._finish_segment()
        fsync_directory(self.directory)
        return self.count


# --- read-compacted readers ------------------------------------------------------------------
def iter_compacted_records(
    log: Log,
    offset: int,
    end_offset: int | None = None,
    *,
    skip_corrupt: bool = False,
    on_skip: Callable[[SkippedRange], None] | None = None,
    store: CompactedCopyStore | None = None,
    isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
) -> Iterator[ConsumedRecord]:
    """Records from ``offset`` as a read-compacted reader sees them: the published copy's
    records up to its horizon, then the log's records after it (module docstring). ``store``:
    where the copy is, the log's own ``compaction/`` directory by default.

    ``isolation_level`` READ_COMMITTED ends the read at the last stable offset and leaves
    the records of aborted transactions out of the log's part (:meth:`Log.iter_records`);
    the copy never holds aborted records, so its part is read as it is.

    Damage raises ``CorruptRecordError`` naming the file and position, in the copy as in the
    log; ``skip_corrupt`` / ``on_skip`` apply to the log's part (see :meth:`Log.iter_records`:
    a damaged copy is never read past, since the copy can always be rebuilt from the log).
    """
    end = log.log_end_offset if end_offset is None else min(end_offset, log.log_end_offset)
    if isolation_level is IsolationLevel.READ_COMMITTED:
        end = min(end, log.last_stable_offset)
    opened = open_published(copy_store(log) if store is None else store, log)
    if opened is None:
        yield from log.iter_records(
            max(offset, log.log_start_offset),
            end,
            skip_corrupt=skip_corrupt,
            on_skip=on_skip,
            isolation_level=isolation_level,
        )
        return
    publication, segments = opened
    position = offset
    stop = min(end, publication.horizon + 1)
    try:
        for i, segment in enumerate(segments):
            if i + 1 < len(segments) and segments[i + 1].base_offset <= position:
                continue  # the next segment starts at or before the position
            if segment.base_offset >= stop:
                break
            _, start_position = segment.offset_index.lookup(position)
            for batch in segment.iter_batches(start_position, segment.size):
                if batch.base_offset >= stop:
                    break
                if batch.last_offset < position or batch.is_control:
                    continue
                for record in batch.records():
                    if record.offset < position or record.offset >= stop:
                        continue
                    yield ConsumedRecord(
                        record.offset,
                        batch.reported_timestamp(record),
                        batch.timestamp_type,
                        record.key,
                        record.value,
                        record.headers,
                    )
    finally:
        for segment in segments:
            segment.close()
    tail_start = max(offset, publication.horizon + 1, log.log_start_offset)
    if tail_start < end:
        yield from log.iter_records(
            tail_start,
            end,
            skip_corrupt=skip_corrupt,
            on_skip=on_skip,
            isolation_level=isolation_level,
        )


def open_published(
    store: CompactedCopyStore, log: Log
) -> tuple[Publication, list[LogSegment]] | None:
    """The publication and its segments, opened (their files stay readable even if a newer
    copy is published and this one deleted meanwhile); None when nothing is published."""
    for attempt in range(20):
        publication = store.published()
        if publication is None:
            return None
        try:
            segments = store.open_segments(
                publication.copy,
                index_interval_bytes=log.config.index_interval_bytes,
                segment_index_bytes=log.config.segment_index_bytes,
            )
        except (UnreadableFileError, FileNotFoundError):
            if attempt == 19:
                raise
            continue  # a newer copy was published and this one deleted meanwhile
        # A copy is deleted only after a newer one is published: if the publication is
        # unchanged now, the listing above was complete (not of a half-deleted directory).
        if store.published() == publication:
            return publication, segments
        for segment in segments:
            segment.close()
    raise CompactionError(f"{log.topic_partition}: the compacted copy kept changing while opened")


def read_compacted_records(log: Log, offset: int, max_records: int = 500) -> list[ConsumedRecord]:
    """Up to ``max_records`` records of :func:`iter_compacted_records`."""
    out = []
    for record in iter_compacted_records(log, offset):
        out.append(record)
        if len(out) >= max_records:
            break
    return out


# --- the service: one run per partition, status, threshold trigger ---------------------------
class CompactionService:
    """Runs compactions for a LogManager: one per partition at a time, status persisted."""

    def __init__(
        self,
        cleaner_factory: Callable[[], Cleaner],
        clock: Clock,
        cleaner_checkpoint: Callable[[Log], int | None] = lambda log: None,
        record_run: Callable[[Log, CompactionRun | None, str | None], None] | None = None,
    ) -> None:
        self._cleaner_factory = cleaner_factory
        self.clock = clock
        self._cleaner_checkpoint = cleaner_checkpoint
        # Called once per finished run: (log, run, None) or, on failure, (log, None, error).
        self._record_run = record_run
        self._lock = threading.Lock()
        self._running: set[TopicPartition] = set()
        self._compactor: Compactor | None = None
        self._compactor_lock = threading.Lock()  # one map: runs of different partitions queue

    def status(self, log: Log) -> CompactionStatus:
        """The persisted status of ``log``'s partition (RUNNING while a run is under way)."""
        status = copy_store(log).status()
        with self._lock:
            if log.topic_partition in self._running:
                return CompactionStatus("RUNNING", "", status.figures)
        return status

    def backlog_bytes(self, log: Log) -> int:
        """Bytes of the log after the published horizon (what a run would read)."""
        publication = copy_store(log).published()
        after = (publication.horizon if publication else -1) + 1
        total = 0
        segments = log.segments
        for i, segment in enumerate(segments):
            upper = segments[i + 1].base_offset if i + 1 < len(segments) else log.log_end_offset
            if upper <= after:
                continue
            if segment.base_offset >= after:
                total += segment.size
            else:
                location = segment.translate_offset(after)
                total += segment.size - (location.position if location else segment.size)
        return total

    def compact(self, log: Log) -> CompactionRun:
        """Run a compaction of ``log`` now; ``CompactionRunningError`` if one is running."""
        tp = log.topic_partition
        with self._lock:
            if tp in self._running:
                raise CompactionRunningError(f"a compaction of {tp} is already running")
            self._running.add(tp)
        store = copy_store(log)
        previous = store.status()
        try:
            store.write_status(CompactionStatus("RUNNING", "", previous.figures))
            with self._compactor_lock:
                if self._compactor is None:
                    self._compactor = Compactor(self._cleaner_factory())
                run = self._compactor.compact(log, cleaner_checkpoint=self._cleaner_checkpoint(log))
        except BaseException as exc:  # an interrupt too: never leave RUNNING behind
            store.write_status(
                CompactionStatus("ERROR", f"{type(exc).__name__}: {exc}", previous.figures)
            )
            LOG.error("compaction of %s failed: %s", tp, exc)
            if isinstance(exc, Exception):
                self._record(log, None, f"{type(exc).__name__}: {exc}")
            raise
        finally:
            with self._lock:
                self._running.discard(tp)
        message = ""
        if run.is_partial:
            message = (
                f"partial: the offset map filled; compacted up to offset {run.horizon}; "
                "the next run goes on from there"
            )
        elif run.is_noop:
            # Keep the figures of the run that made the published copy, if they are its.
            message = "nothing new since the last run"
            figures = previous.figures or {}
            if figures.get("copy") != run.copy:
                figures = {"horizon": run.horizon, "copy": run.copy} if run.copy else {}
                if run.copy:
                    message += (
                        "; the run that published this copy stopped before recording its figures"
                    )
            store.write_status(CompactionStatus("SUCCESS", message, figures))
            self._record(log, run, None)
            return run
        store.write_status(CompactionStatus("SUCCESS", message, run.to_json()))
        self._record(log, run, None)
        return run

    def _record(self, log: Log, run: CompactionRun | None, error: str | None) -> None:
        """Hand a finished run to the history recorder; figures only, so never fatal."""
        if self._record_run is None:
            return
        try:
            self._record_run(log, run, error)
        except Exception as exc:
            LOG.warning("could not record the compaction run of %s: %s", log.topic_partition, exc)

    def maybe_compact(self, log: Log) -> CompactionRun | None:
        """The threshold trigger: run when the backlog exceeds ``compaction.threshold.bytes``
        (0 = off) and no run of this partition is under way."""
        threshold = log.config.compaction_threshold_bytes
        if threshold <= 0 or not log.writable:
            return None
        backlog = self.backlog_bytes(log)
        if backlog <= threshold:
            return None
        try:
            run = self.compact(log)
        except CompactionRunningError:
            return None
        LOG.info(
            "compacted %s (backlog %d bytes > compaction.threshold.bytes %d): horizon %d -> "
            "%d, %d of %d records kept, %d keys, %.3f s",
            log.topic_partition,
            backlog,
            threshold,
            run.previous_horizon,
            run.horizon,
            run.records_kept,
            run.records_read,
            run.keys,
            run.duration_s,
        )
        return run
