"""One partition's log: Kafka's ``UnifiedLog`` + ``LocalLog`` for a single node.

A ``Log`` owns a partition directory's segments (oldest first, the last one *active*) and the
partition's offsets:

* ``log_start_offset``: first offset a reader may fetch (raised by retention/DeleteRecords);
* ``log_end_offset`` (LEO): the offset the next appended record gets;
* ``high_watermark``: on a single node every append is committed at once, so it equals LEO;
* ``recovery_point``: every offset below it is fsynced; recovery after a crash starts at the
  segment holding it.

Invariants, kept under the log's lock: segment base offsets strictly increase; each segment's
offsets are below the next one's base; LEO is the active segment's next offset;
``log_start_offset <= high_watermark == LEO`` and ``recovery_point <= LEO``. Readers take a
snapshot of the segment list without the lock, so a read never blocks an append and never sees
a partial batch (a segment's readable size only grows after a whole append was written).

The work is split by responsibility (as Kafka splits ``UnifiedLog``/``LocalLog``/``LogSegments``):

* this module: :class:`Log` owns the offsets above, appends, rolls, flushes, truncation,
  retention, DeleteRecords and the leader-epoch cache, and the one lock (``Log._lock``, an
  ``RLock``) that every change of the log takes; its public methods are the API;
* :mod:`seglog.engine.log.segment_list`: the published segment list (one ``(segments, bases)``
  tuple), the cleaner's swap and its pending state, the two-step delete of segment files; it
  takes no lock of its own: :class:`Log` calls its changing methods under ``Log._lock``;
* :mod:`seglog.engine.log.reads`: reads and lookups on a snapshot (segment list, start and end
  offsets read once), lock-free.

Append: validate each batch and assign offsets from LEO
(:mod:`seglog.core.append_validation`), roll if a roll condition holds
(:mod:`seglog.core.roll`), write, and flush when ``flush.messages`` is reached.

A large append (at least ``PIPELINED_APPEND_MIN_BYTES``, on a topic whose records need no
decoding: not compacted, no CreateTime bounds) is pipelined: the header walk checks
everything but the CRCs and assigns offsets, then the CRCs are checked (and the index entries
planned) on a side thread while this thread writes the bytes (``pwritev`` releases the GIL);
a bad CRC cuts the segment back before the append returns, so nothing of a refused append
stays (see ``LogSegment.append``). The CRC check is about half of an append's own CPU and
overlaps the kernel's copy into the page cache this way (BENCHMARKS.md, append). Smaller
appends are checked whole first: waking a thread costs more than it saves there.
"""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import NamedTuple

from seglog.clock import Clock
from seglog.config import LogConfig
from seglog.core.append_validation import LEADER_EPOCH, check_batch_crcs, validate_append
from seglog.core.cleaning import CleanerSegmentFacts
from seglog.core.retention import RetentionPlan, RetentionSettings, SegmentFacts, plan_retention
from seglog.core.roll import (
    PendingAppend,
    RollReason,
    draw_roll_jitter_ms,
    roll_reason,
)
from seglog.engine.log import reads
from seglog.engine.log.reads import (
    DEFAULT_FETCH_MAX_BYTES,
    FetchResult,
    OffsetAndTimestamp,
)
from seglog.engine.log.record_scan import ConsumedRecord, SkippedRange
from seglog.engine.log.segment_list import SegmentList
from seglog.errors import (
    InvalidConfigError,
    InvalidRecordError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    UnreadableFileError,
)
from seglog.format.builder import BatchBuilder
from seglog.format.checkpoint import (
    EpochEntry,
)
from seglog.format.compression import CompressionType
from seglog.format.names import DELETED_SUFFIX
from seglog.format.records import Header
from seglog.format.topic_names import TopicPartition
from seglog.storage.atomic import fsync_directory
from seglog.storage.loader import LoadedLog, LoadReport, SegmentSettings, load_partition_dir
from seglog.storage.partition_dirs import (
    ensure_partition_dir,
    read_leader_epochs,
    write_leader_epochs,
)
from seglog.storage.segment import LogSegment
from seglog.storage.side_threads import SideThreads

APPEND_CHUNK_BYTES_MAX = 4 * 1024 * 1024  # append_records: bytes per Log.append call
PIPELINED_APPEND_MIN_BYTES = 256 * 1024  # appends this large write while checking CRCs


class LogAppendInfo(NamedTuple):
    """What one append did."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time_ms: int  # -1 unless the topic uses LogAppendTime
    batch_count: int
    record_count: int
    size_bytes: int
    rolled: RollReason | None


class Log:
    """A partition log; see the module docstring. Create with :meth:`open`."""

    def __init__(
        self,
        directory: Path,
        topic_partition: TopicPartition,
        config: LogConfig,
        loaded: LoadedLog,
        *,
        clock: Clock,
        writable: bool,
        rng: random.Random | None = None,
        flush_executor: Executor | None = None,
        file_deleter: Callable[[LogSegment], None] | None = None,
        side_threads: SideThreads | None = None,
    ) -> None:
        self.directory = directory
        self.topic_partition = topic_partition
        self.config = config
        self.clock = clock
        self.writable = writable
        self.load_report: LoadReport = loaded.report
        self._rng = rng or random.Random()
        self._flush_executor = flush_executor
        self._side_threads = side_threads
        self._owns_side_threads = False
        self._append_where = f"append to {topic_partition}"  # error context, built once
        self._truncations = 0  # a background flush planned before a truncation is void
        self._lock = threading.RLock()
        # The published segments, their swaps and file deletions; changed under self._lock.
        self._list = SegmentList(directory, loaded.segments, file_deleter)
        self.log_start_offset = loaded.log_start_offset
        self.log_end_offset = loaded.log_end_offset
        self.recovery_point = loaded.recovery_point
        self._last_flush_ms = clock.monotonic_ms()
        self._needs_dir_fsync = False
        self._failed_write = False  # a multi-file change failed half-way: recover at next open
        self._closed = False
        self._epochs = self._load_epochs()
        self.active_segment.roll_jitter_ms = self._draw_jitter()
        if writable:  # a new log's first segment (Kafka preallocates it at load too)
            self.active_segment.preallocate(config.init_file_size)

    @classmethod
    def open(
        cls,
        directory: Path,
        topic_partition: TopicPartition,
        config: LogConfig,
        *,
        clock: Clock,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        had_clean_shutdown: bool = False,
        writable: bool = True,
        flush_executor: Executor | None = None,
        file_deleter: Callable[[LogSegment], None] | None = None,
        side_threads: SideThreads | None = None,
    ) -> Log:
        """Open (creating when writable) a partition directory and load it.

        ``flush_executor`` runs the flush that follows each roll in the background, as Kafka
        does, so the append that rolls does not wait for fsyncs; without one it runs inline.
        ``side_threads`` check the CRCs of large appends while their bytes are written (see
        :meth:`append`); without them the log makes its own (one thread) when first needed.
        """
        if writable:
            ensure_partition_dir(directory)
        elif not directory.is_dir():
            raise UnreadableFileError("partition directory does not exist", path=str(directory))
        loaded = load_partition_dir(
            directory,
            SegmentSettings(config.index_interval_bytes, config.segment_index_bytes),
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            had_clean_shutdown=had_clean_shutdown,
            now_ms=clock.now_ms(),
            writable=writable,
        )
        try:
            return cls(
                directory,
                topic_partition,
                config,
                loaded,
                clock=clock,
                writable=writable,
                flush_executor=flush_executor,
                file_deleter=file_deleter,
                side_threads=side_threads,
            )
        except BaseException:
            # e.g. the leader-epoch file unreadable or not writable: no descriptor stays open
            # (the load itself releases what it opened when it fails).
            for segment in loaded.segments:
                segment.release_files()
            raise

    def __repr__(self) -> str:
        return (
            f"Log({self.topic_partition}, start={self.log_start_offset}, "
            f"end={self.log_end_offset}, segments={len(self._list.segments)})"
        )

    # --- views -------------------------------------------------------------------------------
    @property
    def segments(self) -> tuple[LogSegment, ...]:
        """The segments, oldest first (a snapshot; the last is the active one)."""
        return self._list.view[0]

    @property
    def active_segment(self) -> LogSegment:
        """The segment that takes appends."""
        return self._list.view[0][-1]

    @property
    def high_watermark(self) -> int:
        """Last committed offset + 1; on one node, the log end offset."""
        return self.log_end_offset

    def size_bytes(self) -> int:
        """Total ``.log`` bytes of every segment."""
        return sum(s.size for s in self._list.segments)

    # --- leader epochs -------------------------------------------------------------------------
    def _load_epochs(self) -> list[EpochEntry]:
        entries = read_leader_epochs(self.directory, create=self.writable)
        return [e for e in entries if e.start_offset < self.log_end_offset]

    def _assign_epoch(self, start_offset: int) -> None:
        if self._epochs and self._epochs[-1].epoch >= LEADER_EPOCH:
            return
        self._epochs.append(EpochEntry(LEADER_EPOCH, start_offset))
        write_leader_epochs(self.directory, self._epochs)

    # --- append ------------------------------------------------------------------------------
    def _draw_jitter(self) -> int:
        return draw_roll_jitter_ms(self.config.segment_jitter_ms, self.config.segment_ms, self._rng)

    def _check_writable(self) -> None:
        if not self.writable:
            raise UnreadableFileError("log is open read-only", path=str(self.directory))
        if self._closed:
            raise UnreadableFileError("log is closed", path=str(self.directory))

    def append(self, data: bytes | bytearray | memoryview) -> LogAppendInfo:
        """Append a producer's chunk of v2 batches (offsets are assigned here)."""
        with self._lock:
            self._check_writable()
            now_ms = self.clock.now_ms()
            pipelined = len(data) >= PIPELINED_APPEND_MIN_BYTES
            checked = validate_append(
                data,
                config=self.config,
                log_end_offset=self.log_end_offset,
                now_ms=now_ms,
                where=self._append_where,
                defer_crc=pipelined,
            )
            size = checked.size
            if size > self.config.segment_bytes:
                raise RecordTooLargeError(
                    f"append to {self.topic_partition} is {size} bytes, above segment.bytes "
                    f"{self.config.segment_bytes}"
                )
            rolled = self._maybe_roll(size, checked.max_timestamp, checked.last_offset, now_ms)
            if not self._epochs:
                self._assign_epoch(checked.first_offset)
            if checked.crc_deferred:
                spans, where = checked.spans, self._append_where
                self.active_segment.append(
                    checked.buffers,
                    size,
                    spans,
                    check=lambda: check_batch_crcs(data, spans, where),
                    checker=self._checker(),
                )
            else:
                self.active_segment.append(checked.buffers, size, checked.spans)
            self.log_end_offset = checked.last_offset + 1
            if self.log_end_offset - self.recovery_point >= self.config.flush_messages:
                self.flush()
            return LogAppendInfo(
                checked.first_offset,
                checked.last_offset,
                checked.max_timestamp,
                now_ms if self.config.message_timestamp_type == "LogAppendTime" else -1,
                len(checked.spans),
                checked.record_count,
                size,
                rolled,
            )

    def _checker(self) -> SideThreads:
        """The side threads that check pipelined appends' CRCs: the LogManager's shared
        ones, or this log's own single one, made on first use and stopped by close()."""
        if self._side_threads is None:
            self._side_threads = SideThreads(max_threads=1)
            self._owns_side_threads = True
        return self._side_threads

    def append_records(
        self,
        records: Iterable[tuple[bytes | None, bytes | None]]
        | Iterable[tuple[bytes | None, bytes | None, Sequence[Header], int]],
        *,
        timestamp_ms: int | None = None,
    ) -> LogAppendInfo:
        """Build batches and append them; returns what the appends did, summed.

        Each item is ``(key, value)`` or ``(key, value, headers, timestamp_ms)``; without a
        timestamp the clock's now is used. Batches use the topic's ``compression.type``
        (``producer`` means uncompressed here) and hold at most ``max.message.bytes`` (and
        never more than ``segment.bytes``); they are appended in chunks of at most
        ``APPEND_CHUNK_BYTES_MAX`` bytes, so any number of records fits any segment size.
        """
        now = self.clock.now_ms() if timestamp_ms is None else timestamp_ms
        codec_name = self.config.compression_type
        codec = (
            CompressionType.NONE
            if codec_name in ("producer", "uncompressed")
            else CompressionType[codec_name.upper()]
        )
        batch_limit = min(self.config.max_message_bytes, self.config.segment_bytes)
        chunk_limit = min(self.config.segment_bytes, APPEND_CHUNK_BYTES_MAX)
        infos: list[LogAppendInfo] = []
        pending: list[bytes] = []
        pending_bytes = 0

        def flush_pending() -> None:
            nonlocal pending_bytes
            if pending:
                infos.append(self.append(b"".join(pending)))
                pending.clear()
                pending_bytes = 0

        def add(batch: bytes) -> None:
            nonlocal pending_bytes
            if pending_bytes + len(batch) > chunk_limit:
                flush_pending()
            pending.append(batch)
            pending_bytes += len(batch)

        builder = BatchBuilder(max_batch_bytes=batch_limit, compression=codec)
        for item in records:
            key, value = item[0], item[1]
            headers: Sequence[Header] = item[2] if len(item) > 2 else ()
            ts: int = item[3] if len(item) > 3 else now
            if not builder.try_append(ts, key, value, headers):
                if not len(builder):
                    builder.append(ts, key, value, headers)  # raises RecordTooLargeError
                add(builder.build())
                builder = BatchBuilder(max_batch_bytes=batch_limit, compression=codec)
                builder.append(ts, key, value, headers)
        if len(builder):
            add(builder.build())
        flush_pending()
        if not infos:
            raise InvalidRecordError(f"append to {self.topic_partition}: no records given")
        return LogAppendInfo(
            infos[0].first_offset,
            infos[-1].last_offset,
            max(i.max_timestamp for i in infos),
            infos[-1].log_append_time_ms,
            sum(i.batch_count for i in infos),
            sum(i.record_count for i in infos),
            sum(i.size_bytes for i in infos),
            next((i.rolled for i in infos if i.rolled is not None), None),
        )

    # --- roll ----------------------------------------------------------------------------------
    def _maybe_roll(
        self, size: int, max_timestamp: int, last_offset: int, now_ms: int
    ) -> RollReason | None:
        reason = roll_reason(
            self.active_segment,
            PendingAppend(size, max_timestamp, last_offset),
            segment_bytes=self.config.segment_bytes,
            max_segment_ms=self.config.max_segment_ms,
            now_ms=now_ms,
        )
        if reason is not None:
            self.roll()
        return reason

    def roll(self) -> LogSegment:
        """Start a new active segment at LEO; the old one is finished and flushed.

        Rolling an empty active segment is a no-op (it already starts at LEO).
        """
        with self._lock:
            self._check_writable()
            old = self.active_segment
            new_base = self.log_end_offset
            if old.base_offset == new_base and old.size == 0:
                return old
            LogSegment.remove_files_for(self.directory, new_base)
            old.on_become_inactive()
            segment = self._new_segment(new_base)
            self._list.publish((*self._list.segments, segment))
            self._needs_dir_fsync = True
            if self._flush_executor is None:
                self.flush(new_base)
            else:
                self._flush_executor.submit(self._flush_rolled, new_base, self._truncations)
            return segment

    def _flush_rolled(self, new_base: int, truncations: int) -> None:
        """The background half of a roll: fsync what lies below the new segment, then move the
        recovery point there unless a truncation came in between."""
        all_segments, point = self._list.segments, self.recovery_point
        segments = [
            segment
            for i, segment in enumerate(all_segments)
            if segment.base_offset < new_base
            and (i + 1 == len(all_segments) or all_segments[i + 1].base_offset > point)
        ]
        try:
            for segment in segments:
                segment.flush()
            fsync_directory(self.directory)
        except (OSError, UnreadableFileError):
            return  # the segment was closed or deleted meanwhile; a later flush covers it
        with self._lock:
            if self._truncations == truncations and self.recovery_point < new_base:
                self.recovery_point = new_base

    def _new_segment(self, base_offset: int) -> LogSegment:
        segment = LogSegment(
            self.directory,
            base_offset,
            index_interval_bytes=self.config.index_interval_bytes,
            segment_index_bytes=self.config.segment_index_bytes,
            created_ms=self.clock.now_ms(),
            roll_jitter_ms=self._draw_jitter(),
        )
        segment.make_active()
        segment.preallocate(self.config.init_file_size)
        return segment

    # --- flush ---------------------------------------------------------------------------------
    def flush(self, up_to_offset: int | None = None) -> None:
        """fsync every segment holding offsets in [recovery point, ``up_to_offset``)."""
        with self._lock:
            if not self.writable:
                return
            target = self.log_end_offset if up_to_offset is None else up_to_offset
            if target <= self.recovery_point:
                return
            segments = self._list.segments
            for i, segment in enumerate(segments):
                upper = (
                    segments[i + 1].base_offset if i + 1 < len(segments) else self.log_end_offset
                )
                if upper > self.recovery_point and segment.base_offset < target:
                    segment.flush()
            if self._needs_dir_fsync:
                fsync_directory(self.directory)
                self._needs_dir_fsync = False
            self.recovery_point = target
            self._last_flush_ms = self.clock.monotonic_ms()

    def flush_if_due(self) -> bool:
        """Flush when ``flush.ms`` has passed since the last flush (the scheduler's check)."""
        if self.clock.monotonic_ms() - self._last_flush_ms >= self.config.flush_ms:
            self.flush()
            return True
        return False

    # --- reads ---------------------------------------------------------------------------------
    def read(
        self,
        offset: int,
        max_bytes: int = DEFAULT_FETCH_MAX_BYTES,
        *,
        min_one_message: bool = True,
    ) -> FetchResult:
        """Bytes from the batch holding ``offset`` on, at most ``max_bytes``.

        Raises ``OffsetOutOfRangeError`` below the log start offset or above LEO; at LEO the
        result is empty. With ``min_one_message`` the first batch comes whole even when it is
        larger than ``max_bytes``.
        """
        view, start, end = self._list.view, self.log_start_offset, self.log_end_offset
        return reads.read(
            view, start, end, self.topic_partition, offset, max_bytes, min_one_message
        )

    def iter_records(
        self,
        offset: int,
        end_offset: int | None = None,
        *,
        max_bytes: int = DEFAULT_FETCH_MAX_BYTES,
        skip_corrupt: bool = False,
        on_skip: Callable[[SkippedRange], None] | None = None,
        check_gaps: bool = False,
    ) -> Iterator[ConsumedRecord]:
        """Data records from ``offset`` up to ``end_offset`` (default: LEO when called), lazily.

        Each batch is decoded once; control batches are skipped. An offset below the log
        start raises ``OffsetOutOfRangeError``. What a read-compacted reader sees (the
        published compacted copy up to its horizon, then this log) is read by
        :func:`seglog.engine.compaction.compactor.iter_compacted_records`, which uses this method: a
        ``Log`` knows nothing of its copy.

        **No silent stops.** Damage met on the way raises ``CorruptRecordError`` naming the
        file, the position and the offset being read, after every record before it has been
        yielded: a corrupt or torn batch, a batch whose offsets lie outside its segment or go
        backwards, a ``partitionLeaderEpoch`` below -1 or below the previous batch's (epochs
        never go down in a log). With ``check_gaps`` (for a log that was never compacted,
        where offsets are contiguous) a batch that does not start right after the previous
        one is damage too (a base offset is outside the CRC). What cannot be seen: a damaged
        base offset that still fits between its neighbours in a compacted log, or a raised
        epoch on the very last batch read.

        With ``skip_corrupt`` the read goes on past damage instead: it resumes at the next
        whole, CRC-valid batch of the segment holding offsets above the ones read (or at
        the next segment), and calls ``on_skip`` with a :class:`SkippedRange` for each
        range passed over.
        """
        return reads.iter_records(
            self,
            offset,
            end_offset,
            max_bytes=max_bytes,
            skip_corrupt=skip_corrupt,
            on_skip=on_skip,
            check_gaps=check_gaps,
        )

    def read_records(
        self,
        offset: int,
        max_records: int = 500,
        *,
        max_bytes: int = DEFAULT_FETCH_MAX_BYTES,
    ) -> list[ConsumedRecord]:
        """Up to ``max_records`` data records from ``offset`` (see :meth:`iter_records`)."""
        records = self.iter_records(offset, max_bytes=max_bytes)
        return list(itertools.islice(records, max_records))

    def fetch_offset_by_timestamp(self, timestamp: int) -> OffsetAndTimestamp | None:
        """Kafka's ListOffsets: -1 latest, -2 earliest, -3 max timestamp, -4 earliest
        local, or the first offset whose record timestamp is >= ``timestamp`` (None if none)."""
        segments, start, end = self._list.segments, self.log_start_offset, self.log_end_offset
        return reads.fetch_offset_by_timestamp(segments, start, end, timestamp)

    # --- truncation ----------------------------------------------------------------------------
    def truncate_to(self, offset: int) -> int:
        """Remove every record at or above ``offset``; returns bytes removed (Kafka's truncateTo).

        Segments entirely at or above ``offset`` are removed; the one holding it is cut at a
        batch boundary. Like Kafka, truncation never splits a batch: an ``offset`` inside a
        batch (above its first offset) raises ``InvalidRecordError`` naming the batch's bounds,
        rather than silently dropping more records than asked. When ``offset`` is at or below
        the first segment's base the log restarts empty there.
        """
        with self._lock:
            self._check_writable()
            self._list.finish_swap()
            if offset < 0:
                raise OffsetOutOfRangeError(f"cannot truncate {self.topic_partition} to {offset}")
            if offset >= self.log_end_offset:
                return 0
            floor = self._list.floor(offset)
            if floor >= 0:
                location = self._list.segments[floor].translate_offset(offset)
                if location is not None and location.first_offset < offset:
                    raise InvalidRecordError(
                        f"cannot truncate {self.topic_partition} to {offset}: it is inside the "
                        f"batch of offsets {location.first_offset}-{location.last_offset}; "
                        f"truncate to {location.first_offset} or {location.last_offset + 1}"
                    )
            removed = 0
            segments = self._list.segments
            keep = [s for s in segments if s.base_offset < offset]
            drop = [s for s in segments if s.base_offset >= offset]
            if keep:
                self._list.publish(tuple(keep))  # readers stop finding the dropped segments first
            for segment in drop:
                removed += segment.size
                self._list.delete_segment_files(segment)
            if not keep:
                keep = [self._new_segment(offset)]
                self.log_start_offset = offset
                self._list.publish(tuple(keep))
            tail = keep[-1]
            removed += tail.truncate_to(offset, self.clock.now_ms())
            tail.make_active()
            self.log_end_offset = offset
            self.log_start_offset = min(self.log_start_offset, offset)
            self.recovery_point = min(self.recovery_point, offset)
            self._truncations += 1
            self._epochs = [e for e in self._epochs if e.start_offset < offset]
            write_leader_epochs(self.directory, self._epochs)
            fsync_directory(self.directory)
            return removed

    # --- retention ----------------------------------------------------------------
    def retention_settings(self) -> RetentionSettings:
        """The retention configs of this log."""
        return RetentionSettings(
            retention_ms=self.config.retention_ms,
            retention_bytes=self.config.retention_bytes,
            has_delete_policy=self.config.has_delete,
        )

    def plan_retention(self, now_ms: int | None = None) -> RetentionPlan:
        """What retention would delete now (nothing is changed)."""
        now = self.clock.now_ms() if now_ms is None else now_ms
        segments = self._list.segments
        facts = [
            SegmentFacts(
                s.base_offset, s.size, s.largest_timestamp(), is_active=i == len(segments) - 1
            )
            for i, s in enumerate(segments)
        ]
        return plan_retention(
            facts,
            self.retention_settings(),
            log_start_offset=self.log_start_offset,
            log_end_offset=self.log_end_offset,
            high_watermark=self.high_watermark,
            now_ms=now,
        )

    def apply_retention(self, now_ms: int | None = None) -> RetentionPlan:
        """Delete what :meth:`plan_retention` says, Kafka's way; returns the plan carried out.

        Steps (a crash at any step leaves a log that opens with nothing half-deleted
        readable): 1. roll when every segment goes (a log keeps an active segment);
        2. raise the log start offset to the first surviving segment, so no new read asks
        for the victims' offsets; 3. oldest first, rename each victim's files ``.deleted``
        (startup removes ``.deleted`` files, and an index left without its ``.log``) and
        take every victim whose ``.log`` was renamed out of the segment list;
        4. fsync the directory; 5. the file deleter unlinks them later (after
        ``file.delete.delay.ms`` under a LogManager), so a read that already holds a
        segment finishes.

        A rename that fails (a full disk, EIO) raises after step 3 took out exactly the
        segments already renamed: the others stay listed under their live names, below the
        raised log start offset, so reads refuse their offsets, their descriptors stay owned
        by the log (closed by ``close``/``abort``) and the next retention pass deletes them
        (they lie below the log start offset), in this process once the disk works again or
        after a restart (the log start offset checkpoint keeps them unreadable then).
        """
        with self._lock:
            self._check_writable()
            self._list.finish_swap()
            plan = self.plan_retention(now_ms)
            if plan.is_empty:
                return plan
            if plan.needs_roll:
                self.roll()
            doomed = {d.base_offset for d in plan.deletions}
            segments = self._list.segments
            victims = [s for s in segments if s.base_offset in doomed]
            assert victims and victims[-1] is not segments[-1]
            assert plan.new_log_start_offset is not None
            self._raise_log_start_offset(plan.new_log_start_offset)
            renamed: list[LogSegment] = []
            try:
                for segment in victims:
                    try:
                        segment.change_file_suffix(DELETED_SUFFIX)
                    finally:
                        if segment.file_suffix == DELETED_SUFFIX:  # its .log was renamed
                            renamed.append(segment)
            finally:
                if renamed:
                    gone = {id(s) for s in renamed}
                    self._list.publish(tuple(s for s in self._list.segments if id(s) not in gone))
                    self._needs_dir_fsync = True
                    for segment in renamed:
                        # Its .log is already .deleted: it is gone after a restart; the
                        # deleter removes whatever files of it are left (live-named indexes
                        # of a half-renamed segment too).
                        self._list.file_deleter(segment)
            fsync_directory(self.directory)
            self._needs_dir_fsync = False
            return plan

    def delete_records(self, offset: int) -> int:
        """Kafka's DeleteRecords: move the log start offset up to ``offset`` (-1 = the high
        watermark); records below it can no longer be read, and retention removes the whole
        segments below it. Returns the new log start offset."""
        with self._lock:
            self._check_writable()
            if not self.config.has_delete:
                raise InvalidConfigError(
                    f"delete-records on {self.topic_partition} needs cleanup.policy with "
                    f"delete (it is {','.join(self.config.cleanup_policy)})"
                )
            target = self.high_watermark if offset == -1 else offset
            if not 0 <= target <= self.high_watermark:
                raise OffsetOutOfRangeError(
                    f"delete-records offset {offset} on {self.topic_partition} is outside "
                    f"[0, {self.high_watermark}] (the high watermark)"
                )
            self._raise_log_start_offset(target)
            return self.log_start_offset

    def _raise_log_start_offset(self, offset: int) -> None:
        """Move the log start offset forward (never back); the epoch cache follows."""
        if offset <= self.log_start_offset:
            return
        self.log_start_offset = offset
        if self._epochs and self._epochs[0].start_offset < offset:
            kept = [e for e in self._epochs if e.start_offset > offset]
            last_dropped = [e for e in self._epochs if e.start_offset <= offset][-1]
            self._epochs = [EpochEntry(last_dropped.epoch, offset), *kept]
            write_leader_epochs(self.directory, self._epochs)

    # --- the log cleaner's view and its swap ---------------------------
    def cleaner_segment_facts(self) -> list[CleanerSegmentFacts]:
        """Per segment, what the cleaner's planning reads (sizes, timestamps, index entries)."""
        segments = self._list.segments
        last = len(segments) - 1
        return [
            CleanerSegmentFacts(
                base_offset=s.base_offset,
                size_bytes=s.size,
                largest_timestamp_ms=s.largest_timestamp(),
                first_batch_timestamp_ms=s.rolling_based_timestamp,
                offset_index_entries=s.offset_index_entries,
                time_index_entries=s.time_index_entries,
                is_active=i == last,
            )
            for i, s in enumerate(segments)
        ]

    def new_cleaned_segment(self, base_offset: int) -> LogSegment:
        """An empty ``{base}.log.cleaned`` segment (stale ``.cleaned`` files removed first)."""
        return self._list.new_cleaned_segment(
            base_offset,
            index_interval_bytes=self.config.index_interval_bytes,
            segment_index_bytes=self.config.segment_index_bytes,
            now_ms=self.clock.now_ms(),
        )

    def adopt_cleaned_segment(self, base_offset: int) -> LogSegment:
        """Open a finished ``{base}.log.cleaned`` segment written by another process (a
        cleaning job's task), ready for :meth:`replace_segments`."""
        self._check_writable()
        return self._list.adopt_cleaned_segment(
            base_offset,
            index_interval_bytes=self.config.index_interval_bytes,
            segment_index_bytes=self.config.segment_index_bytes,
            now_ms=self.clock.now_ms(),
        )

    def remove_cleaned_files(self) -> list[str]:
        """Remove every ``.cleaned`` file of this log (an abandoned round's output; never part
        of the log). Returns the names removed."""
        self._check_writable()
        return self._list.remove_cleaned_files()

    def replace_segments(
        self, new_segments: Sequence[LogSegment], old_segments: Sequence[LogSegment]
    ) -> list[LogSegment]:
        """Put finished ``.cleaned`` segments in place of ``old_segments``, crash-safely.

        Kafka's ``replaceSegments``; what startup recovery (the loader)
        does if the process dies after each step:

        1. Old segments no longer in the list (retention removed them meanwhile) are ignored.
           The swap record (:mod:`seglog.storage.swap_record`: the new and the replaced base
           offsets) is written atomically. Crash: no ``.swap`` exists, so recovery drops the
           ``.cleaned`` files and the record -> the log before the round.
        2. Each new segment's files are renamed ``.cleaned`` -> ``.swap``, highest base offset
           first. Crash: a ``.swap`` at or above the lowest ``.cleaned`` offset is an unfinished
           round, so every ``.swap`` and ``.cleaned`` is deleted -> the log before the round.
        3. The new segments replace the old ones in the list (readers switch; a reader holding
           an old segment keeps its open file).
        4. Each old segment's files are renamed ``.deleted``. Crash (before or during): all new
           segments are ``.swap``, so recovery deletes the live files their offset ranges cover
           (Kafka's rule) and those of every base the swap record names (a replaced segment
           above the new segment's next offset, which Kafka's rule misses), and renames the
           ``.swap`` files -> the cleaned log.
        5. Each new segment's ``.swap`` suffix is removed, then the directory is fsynced; then
           the swap record is removed (and the directory fsynced again, so a power loss never
           keeps the removal without the renames). Crash: the remaining ``.swap`` files are
           renamed by recovery -> the cleaned log; a record without ``.swap`` is removed.
        6. The old segments' files are unlinked later by the file deleter; ``.deleted``
           leftovers are removed at startup.

        When a step fails (a full disk, EIO): before step 3 the new segments' files are
        removed (the log is as before the call; a ``.swap`` left behind is a whole cleaned
        copy, which startup would swap in, equally valid); from step 3 on the swap is kept
        pending and finished (steps 4-6, each rename done at most once) before the next
        change of the segment list (replace, retention, roll, truncation) and at close, so
        the log is whole again in this process once the disk works; until then
        :attr:`needs_recovery` is true, and a restart finishes it from the files.

        Returns the old segments taken out of the list.
        """
        with self._lock:
            self._check_writable()
            self._list.finish_swap()
            return self._list.replace(new_segments, old_segments)

    def finish_pending_swap(self) -> bool:
        """Finish a swap that failed after its swap point, if any (see
        :meth:`replace_segments`); True when none is left pending. Raises what the disk says."""
        with self._lock:
            if self.writable and not self._closed:
                self._list.finish_swap()
            return self._list.pending_swap is None

    def release_retired_files(self) -> None:
        """Close, without writing, the handles of segments a pending swap replaced (they are
        out of the segment list, so closing the listed segments does not reach them)."""
        self._list.release_retired_files()

    @property
    def needs_recovery(self) -> bool:
        """True when a failed write could not be undone: the next open must recover this log
        (the LogManager then writes no clean-shutdown marker)."""
        return (
            self._failed_write
            or self._list.pending_swap is not None
            or any(s.needs_recovery for s in self._list.segments)
        )

    def mark_needs_recovery(self) -> None:
        """Record that a change failed half-way (see :attr:`needs_recovery`)."""
        self._failed_write = True

    # --- close ---------------------------------------------------------------------------------
    def close(self) -> None:
        """Flush, finish the active segment's indexes (final time entry, trim) and close files."""
        with self._lock:
            if self._closed:
                return
            if self.writable:
                try:
                    self._list.finish_swap()
                except BaseException:
                    self.release_retired_files()
                    raise
                self.flush()
                self.active_segment.on_become_inactive()
                self.active_segment.flush()
            for segment in self._list.segments:
                segment.close()
            self._closed = True
            if self._owns_side_threads and self._side_threads is not None:
                self._side_threads.close()
                self._side_threads = None
