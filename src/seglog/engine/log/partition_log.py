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
:class:`Log` is this module's appends, rolls, flushes, reads and close, on top of parts that
share one state (:mod:`.log_state`, which lists them: truncation, retention, the cleaner's
view and swap); the segment list (:mod:`.segment_list`) and the lock-free reads
(:mod:`.reads`) are composed. Every change takes the one lock (``Log._lock``, an ``RLock``).

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

Producer checks (idempotence, sequences, transactions) are a step of the append
(:mod:`.producer_append`); producer state, snapshots, markers and the LSO live in
:mod:`.transactions`.

Why this module is a little over ~500 lines: the append path (validation, producer checks,
pipelined CRC checks, rolls, flushes) is one procedure; the other responsibilities of a log are
already in their own modules (:mod:`.log_state`).
"""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor
from pathlib import Path

from seglog.clock import Clock
from seglog.config import LogConfig
from seglog.core.append_validation import LEADER_EPOCH, check_batch_crcs, validate_append
from seglog.core.isolation import AbortedRanges, IsolationLevel
from seglog.core.roll import (
    PendingAppend,
    RollReason,
    roll_reason,
)
from seglog.engine.log import reads
from seglog.engine.log.append_info import LogAppendInfo
from seglog.engine.log.cleaner_view import LogCleanerView
from seglog.engine.log.producer_append import DuplicateAppend, plan_producer_append
from seglog.engine.log.reads import (
    DEFAULT_FETCH_MAX_BYTES,
    FetchResult,
    OffsetAndTimestamp,
)
from seglog.engine.log.record_scan import ConsumedRecord, SkippedRange
from seglog.engine.log.retention_ops import LogRetention
from seglog.engine.log.segment_list import SegmentList
from seglog.engine.log.serving import LogServing
from seglog.engine.log.transactions import DEFAULT_PRODUCER_ID_EXPIRATION_MS
from seglog.engine.log.truncation import LogTruncation
from seglog.errors import (
    InvalidRecordError,
    RecordTooLargeError,
    UnreadableFileError,
)
from seglog.format.builder import BatchBuilder
from seglog.format.checkpoint import (
    EpochEntry,
)
from seglog.format.compression import CompressionType
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


class Log(LogTruncation, LogRetention, LogCleanerView, LogServing):
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
        had_clean_shutdown: bool = False,
        initial_recovery_point: int | None = None,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
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
        self._producer_state = None
        self._producer_id_expiration_ms = producer_id_expiration_ms
        self._had_clean_shutdown = had_clean_shutdown
        self._initial_recovery_point = (
            loaded.recovery_point if initial_recovery_point is None else initial_recovery_point
        )
        if loaded.producer_state is not None:  # recovery rebuilt it up to the log end
            # (as a replay does, it expires nobody: the periodic check does, as in Kafka)
            loaded.producer_state.expiration_ms = producer_id_expiration_ms
            self._producer_state = loaded.producer_state
        elif writable:  # appends check against it: build it now (a read-only log on first use)
            _ = self.producer_state
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
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
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
                had_clean_shutdown=had_clean_shutdown,
                initial_recovery_point=(
                    loaded.log_end_offset
                    if had_clean_shutdown
                    else min(recovery_point, loaded.log_end_offset)
                ),
                producer_id_expiration_ms=producer_id_expiration_ms,
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

    # --- leader epochs -------------------------------------------------------------------------
    @property
    def leader_epoch(self) -> int:
        """The latest leader epoch of the log (``leader-epoch-checkpoint``); 0 when it has none."""
        return self._epochs[-1].epoch if self._epochs else 0

    def epoch_entries(self) -> list[EpochEntry]:
        """The leader-epoch cache: ``(epoch, start_offset)`` entries in order."""
        return list(self._epochs)

    def _load_epochs(self) -> list[EpochEntry]:
        entries = read_leader_epochs(self.directory, create=self.writable)
        return [e for e in entries if e.start_offset < self.log_end_offset]

    def _assign_epoch(self, start_offset: int) -> None:
        if self._epochs and self._epochs[-1].epoch >= LEADER_EPOCH:
            return
        self._epochs.append(EpochEntry(LEADER_EPOCH, start_offset))
        write_leader_epochs(self.directory, self._epochs)

    # --- append ------------------------------------------------------------------------------
    def append(self, data: bytes | bytearray | memoryview) -> LogAppendInfo:
        """Append a producer's chunk of v2 batches (offsets are assigned here); the append
        listeners are called once it is written (:mod:`.serving`)."""
        return self._appended(self._append(data))

    def _append(self, data: bytes | bytearray | memoryview) -> LogAppendInfo:
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
                leader_epoch=max(LEADER_EPOCH, self._epochs[-1].epoch if self._epochs else 0),
            )
            size = checked.size
            if size > self.config.segment_bytes:
                raise RecordTooLargeError(
                    f"append to {self.topic_partition} is {size} bytes, above segment.bytes "
                    f"{self.config.segment_bytes}"
                )
            plan = plan_producer_append(
                self.producer_state, data, checked.spans, checked.first_offset, self._append_where
            )
            if isinstance(plan, DuplicateAppend):
                return LogAppendInfo(
                    plan.first_offset,
                    plan.last_offset,
                    plan.max_timestamp,
                    -1,
                    len(checked.spans),
                    checked.record_count,
                    0,
                    None,
                    duplicate=True,
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
            if plan is not None:
                self.producer_state.apply(plan, self.log_end_offset)
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
            self._maybe_write_snapshot(new_base, durable=False)
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
        isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
    ) -> Iterator[ConsumedRecord]:
        """Data records from ``offset`` up to ``end_offset`` (default: LEO when called), lazily.

        With ``isolation_level`` ``READ_COMMITTED`` the read ends at the last stable offset
        (when called) and leaves out the records of aborted transactions (found through the
        ``.txnindex`` files, as a Kafka consumer does with Fetch's aborted-transactions list).

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
        aborted = None
        if isolation_level is IsolationLevel.READ_COMMITTED:
            lso = self.last_stable_offset
            end_offset = lso if end_offset is None else min(end_offset, lso)
            aborted = AbortedRanges(self.aborted_transactions(offset, end_offset))
        return reads.iter_records(
            self,
            offset,
            end_offset,
            max_bytes=max_bytes,
            skip_corrupt=skip_corrupt,
            on_skip=on_skip,
            check_gaps=check_gaps,
            aborted=aborted,
        )

    def read_records(
        self,
        offset: int,
        max_records: int = 500,
        *,
        max_bytes: int = DEFAULT_FETCH_MAX_BYTES,
        isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
    ) -> list[ConsumedRecord]:
        """Up to ``max_records`` data records from ``offset`` (see :meth:`iter_records`)."""
        records = self.iter_records(offset, max_bytes=max_bytes, isolation_level=isolation_level)
        return list(itertools.islice(records, max_records))

    def fetch_offset_by_timestamp(self, timestamp: int) -> OffsetAndTimestamp | None:
        """Kafka's ListOffsets: -1 latest, -2 earliest, -3 max timestamp, -4 earliest
        local, or the first offset whose record timestamp is >= ``timestamp`` (None if none)."""
        segments, start, end = self._list.segments, self.log_start_offset, self.log_end_offset
        return reads.fetch_offset_by_timestamp(segments, start, end, timestamp)

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
                self._maybe_write_snapshot(self.log_end_offset, durable=True)
            for segment in self._list.segments:
                segment.close()
            self._closed = True
            if self._owns_side_threads and self._side_threads is not None:
                self._side_threads.close()
                self._side_threads = None
