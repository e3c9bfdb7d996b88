"""One cleaning round over one log: Kafka's ``Cleaner.doClean``.

A round, given a :class:`~seglog.core.cleaning.LogToClean` chosen by the cleaner manager:

0. **Pre-pass** over every segment's batch headers (the numba frame walk over a read-only
   map; records are not decoded): a log holding transactional batches or control records is
   refused with :class:`TransactionalDataError` before anything is written (seglog has no
   transaction-aware cleaning yet, and cleaning such data without it would resurrect aborted
   records); legacy v0/v1 entries likewise (:class:`LegacyFormatError`). The same pass finds
   each idempotent producer's last data batch, which Kafka never removes (only empties) while
   the producer is active (``producer.id.expiration.ms``).
1. **Build the offset map** over ``[first_dirty_offset, first_uncleanable_offset)``: every
   keyed record at or above the first dirty offset is put (key hash -> offset). When the map
   reaches its limit the build stops *before* the next keyed put; the round then covers only
   up to the last offset put (``end_offset = latest_offset + 1``), the next round goes on
   from there (partial cleaning). A fully read segment moves ``latest_offset`` to its end.
2. **Group** every segment from the log's first one up to ``end_offset`` by size, index size
   and offset span (:func:`~seglog.core.cleaning.group_segments_by_size`): the whole clean
   section is recopied too, which is how old tombstones eventually expire.
3. **Clean each group** into one ``{first base}.log.cleaned`` segment, reading in bounded
   chunks: per record, keep iff its offset is past the map's range, or it has a key and no
   later offset of that key is in the map, and (for a tombstone) its batch's delete horizon
   has not passed. Per batch: copied byte for byte when nothing changes; rebuilt (same base
   and last offset, producer fields, codec) when records go or a horizon must be stamped
   (KIP-534: the first round that keeps a tombstone stamps ``now + delete.retention.ms``);
   kept as a 61-byte empty header when emptied but it is an active producer's last batch or
   ends exactly at the round's upper bound (Kafka 4.x, batch for batch); dropped otherwise, so
   a group may clean to an empty segment (swapped in all the same, as Kafka does; the next
   round groups it with its neighbours). Indexes are built by the normal append path; the
   segment is finished (final time-index entry, trim), fsynced and given the group's last
   modification time.
4. **Swap** it in with :meth:`seglog.engine.log.Log.replace_segments` (Kafka's
   ``.cleaned`` -> ``.swap`` -> ``.deleted`` protocol, crash-safe at every step). A replaced
   segment above the cleaned segment's next offset (all its records dropped) is outside the
   range Kafka's loader derives from the ``.swap`` file; the swap records the replaced bases
   beside it (:mod:`seglog.storage.swap_record`), so recovery removes it too.

The caller (the cleaner manager) writes ``end_offset`` to ``cleaner-offset-checkpoint`` only
after the last group was swapped; a crash before that repeats a round, which is harmless
because cleaning is idempotent.

Aborts: ``check_done`` is called before each segment of the map build and each chunk read; it
raises :class:`CleaningAbortedError` to stop (the current ``.cleaned`` files are deleted).
"""

from __future__ import annotations

import struct
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from crc32c import crc32c

from seglog.clock import Clock
from seglog.core.cleaning import LogToClean, delete_horizon_ms, group_segments_by_size
from seglog.core.offset_map import OffsetMap
from seglog.core.version_map import VersionMap
from seglog.engine.log import Log
from seglog.errors import CorruptRecordError, SeglogError
from seglog.format.batch import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    MAGIC_V2,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
)
from seglog.format.columnar import RecordColumns, scan_columns
from seglog.format.compression import CompressionType, compress
from seglog.format.reader import EndKind
from seglog.kernels import codes, numba_enabled
from seglog.kernels.compact_py import rewrite_batches_py
from seglog.kernels.layouts import (
    ACTION_COPY,
    ACTION_DROP,
    ACTION_EMPTY,
    ACTION_REBUILD,
    BATCH_HEADER_BYTES,
    DELETE_HORIZON_FLAG,
)
from seglog.storage.segment import LogSegment

READ_CHUNK_BYTES = 8 * 1024 * 1024
# Dirty offsets whose fate the map build records (one byte each): 32 MiB of the 128 MiB the
# round may use beside the offset map; a longer dirty range is looked up past it.
SUPERSEDED_MARKS_MAX = 32 * 1024 * 1024
_LOG_OVERHEAD = 12
_SIZE_FIELD = struct.Struct(">i")
_CRC_FIELD = struct.Struct(">I")
_BATCH_LENGTH_FIELD = struct.Struct(">i")


class CleaningAbortedError(SeglogError):
    """The round was aborted (pause, deletion, shutdown); nothing was swapped in."""


class UncleanableLogError(SeglogError):
    """The log cannot be cleaned; the partition is marked uncleanable with this reason."""


class TransactionalDataError(UncleanableLogError):
    """The log holds transactional batches or control records (no transaction-aware cleaning)."""


class LegacyFormatError(UncleanableLogError):
    """The log holds legacy (v0/v1) entries, which this cleaner does not rewrite."""


@dataclass
class CleanerStats:
    """One round's figures, as Kafka's ``CleanerStats``."""

    first_dirty_offset: int = 0
    end_offset: int = 0
    bytes_read: int = 0
    messages_read: int = 0
    bytes_written: int = 0
    messages_written: int = 0
    map_bytes_read: int = 0
    map_messages_read: int = 0
    invalid_messages_read: int = 0
    map_keys: int = 0
    map_slots: int = 0
    buffer_utilization: float = 0.0
    is_partial: bool = False  # the map filled: the round ended before the uncleanable offset
    start_s: float = field(default_factory=time.monotonic)
    map_complete_s: float = 0.0
    end_s: float = 0.0
    size_before_bytes: int = 0
    size_after_bytes: int = 0
    groups: int = 0

    @property
    def elapsed_secs(self) -> float:
        """Seconds the whole round took."""
        return max(self.end_s - self.start_s, 1e-9)

    @property
    def elapsed_index_secs(self) -> float:
        """Seconds spent building the offset map."""
        return max(self.map_complete_s - self.start_s, 0.0)

    @property
    def recopy_percent(self) -> int:
        """Bytes written as a share of bytes read (Kafka's ``cleaner-recopy-percent``)."""
        return int(100 * self.bytes_written / max(self.bytes_read, 1))

    def to_json(self) -> dict[str, Any]:
        """The figures as a JSON-able dict."""
        return {
            "first_dirty_offset": self.first_dirty_offset,
            "end_offset": self.end_offset,
            "bytes_read": self.bytes_read,
            "messages_read": self.messages_read,
            "bytes_written": self.bytes_written,
            "messages_written": self.messages_written,
            "map_bytes_read": self.map_bytes_read,
            "map_messages_read": self.map_messages_read,
            "invalid_messages_read": self.invalid_messages_read,
            "map_keys": self.map_keys,
            "buffer_utilization": round(self.buffer_utilization, 6),
            "is_partial": self.is_partial,
            "elapsed_secs": round(self.elapsed_secs, 6),
            "elapsed_index_secs": round(self.elapsed_index_secs, 6),
            "size_before_bytes": self.size_before_bytes,
            "size_after_bytes": self.size_after_bytes,
            "groups": self.groups,
            "recopy_percent": self.recopy_percent,
        }

    def summary(self, name: str, *, thread: int = 0) -> str:
        """Kafka's INFO summary of a round, in its words."""
        mb = 1024.0 * 1024.0
        elapsed = self.elapsed_secs
        index_secs = self.elapsed_index_secs
        clean_secs = max(elapsed - index_secs, 1e-9)
        lines = [
            f"Log cleaner thread {thread} cleaned log {name} (dirty section = "
            f"[{self.first_dirty_offset}, {self.end_offset}])",
            f"\t{self.bytes_read / mb:.1f} MB of log processed in {elapsed:.1f} seconds "
            f"({self.bytes_read / mb / elapsed:.1f} MB/sec).",
            f"\tIndexed {self.map_bytes_read / mb:.1f} MB in {index_secs:.1f} seconds "
            f"({self.map_bytes_read / mb / max(index_secs, 1e-9):.1f} Mb/sec, "
            f"{100 * index_secs / elapsed:.1f}% of total time)",
            f"\tBuffer utilization: {100 * self.buffer_utilization:.1f}%",
            f"\tCleaned {self.bytes_read / mb:.1f} MB in {clean_secs:.1f} seconds "
            f"({self.bytes_read / mb / clean_secs:.1f} Mb/sec, "
            f"{100 * clean_secs / elapsed:.1f}% of total time)",
            f"\tStart size: {self.bytes_read / mb:.1f} MB ({self.messages_read:,} messages)",
            f"\tEnd size: {self.bytes_written / mb:.1f} MB ({self.messages_written:,} messages)",
            f"\t{100 - 100 * self.bytes_written / max(self.bytes_read, 1):.1f}% size "
            f"reduction ({100 - 100 * self.messages_written / max(self.messages_read, 1):.1f}% "
            "fewer messages)",
        ]
        if self.invalid_messages_read:
            lines.append(f"\tFound {self.invalid_messages_read} invalid messages (no key)")
        return "\n".join(lines)


class Throttler:
    """Kafka's shared cleaner I/O throttle: sleep when the observed rate over the last
    period (at least ``check_interval_s``) exceeds ``bytes_per_second``."""

    def __init__(
        self,
        bytes_per_second: float,
        *,
        check_interval_s: float = 0.3,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if bytes_per_second <= 0:
            raise ValueError("bytes_per_second must be positive")
        self.bytes_per_second = bytes_per_second
        self.check_interval_s = check_interval_s
        self._monotonic = monotonic
        self._sleep = sleep
        self._period_start = monotonic()
        self._observed = 0.0
        self.total_bytes = 0
        self.slept_s = 0.0

    def maybe_throttle(self, byte_count: int) -> None:
        """Account ``byte_count`` bytes and sleep if the period's rate is above the target."""
        self.total_bytes += byte_count
        if self.bytes_per_second >= 1e300:
            return
        self._observed += byte_count
        now = self._monotonic()
        elapsed = now - self._period_start
        if elapsed < self.check_interval_s:
            return
        rate = self._observed / elapsed
        if rate > self.bytes_per_second:
            pause = self._observed / self.bytes_per_second - elapsed
            if pause > 0:
                self._sleep(pause)
                self.slept_s += pause
        self._period_start = self._monotonic()
        self._observed = 0.0


@dataclass(frozen=True, slots=True)
class Producers:
    """Per active idempotent producer, the last offset of its last data batch."""

    last_data_offset: dict[int, int]


@dataclass(frozen=True, slots=True)
class RecordFilter:
    """Extra rules for a pass over a chunk beside the map's (the compacted-copy compactor's):
    rows outside ``[min_offset, max_offset]`` are not copied; keyless rows are kept when
    ``keep_keyless``; rows with a timestamp below ``min_timestamp_ms`` are dropped
    (retention of the copy). The Kafka-style cleaner uses the defaults."""

    min_offset: int = -1
    max_offset: int = (1 << 63) - 1
    keep_keyless: bool = False
    min_timestamp_ms: int | None = None


NO_FILTER = RecordFilter()


@dataclass(frozen=True, slots=True)
class _SegmentSummary:
    """One segment's header facts: its size when read, why it cannot be cleaned (if so),
    and each idempotent producer's last data batch (last offset, max timestamp)."""

    size: int
    refusal: UncleanableLogError | None
    producers: dict[int, tuple[int, int]]


@dataclass(slots=True)
class CleaningRound:
    """A prepared round (steps 0-2): what every group's rewrite and the commit need."""

    log: Log
    now_ms: int
    horizon_ms: int  # KIP-534: the delete horizon stamped on kept tombstones this round
    upper_bound: int  # the first uncleanable offset
    end_offset: int  # the checkpoint after the round (below upper_bound when partial)
    producers: Producers
    groups: list[list[LogSegment]]
    stats: CleanerStats


def contains_sorted(
    sorted_values: npt.NDArray[np.int64], values: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_]:
    """For each of ``values``, whether it is in ``sorted_values`` (ascending, unique)."""
    if len(sorted_values) == 0:
        return np.zeros(len(values), dtype=np.bool_)
    at = np.searchsorted(sorted_values, values)
    found: npt.NDArray[np.bool_] = sorted_values[np.minimum(at, len(sorted_values) - 1)] == values
    return found


def never_done() -> None:
    """The default ``check_done``: a round is never asked to stop."""
    return None


class Cleaner:
    """Cleans one log at a time with its own offset map (one per cleaner thread)."""

    def __init__(
        self,
        offset_map: OffsetMap,
        *,
        clock: Clock,
        throttler: Throttler | None = None,
        producer_id_expiration_ms: int = 24 * 3600 * 1000,
        read_chunk_bytes: int = READ_CHUNK_BYTES,
        max_read_chunk_bytes: int = 64 * 1024 * 1024,
        use_numba: bool | None = None,
    ) -> None:
        self.offset_map = offset_map
        # The map of the round: ``offset_map``, or for a KIP-280 strategy other than
        # "offset" a VersionMap of the same memory (made on first use).
        self.active_map: OffsetMap | VersionMap = offset_map
        self._version_map: VersionMap | None = None
        self._strategy = "offset"
        self.clock = clock
        self.throttler = throttler or Throttler(float("inf"))
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.read_chunk_bytes = read_chunk_bytes
        self.max_read_chunk_bytes = max(max_read_chunk_bytes, read_chunk_bytes)
        self.use_numba = numba_enabled() if use_numba is None else use_numba
        self._buffer = np.empty(read_chunk_bytes, dtype=np.uint8)
        self._out = np.empty(0, dtype=np.uint8)
        self._consumed = 0
        self._superseded = np.zeros(0, dtype=np.uint8)
        self._superseded_base = 0
        self.full_at_batch_base = -1  # base offset of the batch where the last build filled
        self._losers: npt.NDArray[np.int64] | None = None  # a sharded round's losing offsets
        self._summaries: weakref.WeakKeyDictionary[LogSegment, _SegmentSummary] = (
            weakref.WeakKeyDictionary()
        )

    # --- the round -----------------------------------------------------------------------------
    def clean(
        self,
        log: Log,
        to_clean: LogToClean,
        *,
        now_ms: int | None = None,
        check_done: Callable[[], None] = never_done,
    ) -> tuple[int, CleanerStats]:
        """Clean ``log`` once (module docstring); returns (end offset, stats)."""
        round_ = self.prepare_round(log, to_clean, now_ms=now_ms, check_done=check_done)
        for group in round_.groups:
            check_done()
            cleaned = self.write_group(round_, group, check_done)
            self.swap_group(log, cleaned, group)
        return round_.end_offset, self.finish_round(round_)

    def prepare_round(
        self,
        log: Log,
        to_clean: LogToClean,
        *,
        now_ms: int | None = None,
        check_done: Callable[[], None] = never_done,
        losers: npt.NDArray[np.int64] | None = None,
    ) -> CleaningRound:
        """Steps 0-2: the pre-pass, the map over the dirty range, the round's end and groups.

        With ``losers`` (a sorted array of every offset below ``first_uncleanable_offset``
        whose key has a later record there, from a key-sharded map build, see
        :mod:`seglog.engine.cleaning_job`) no map is built: the round covers the whole
        cleanable range and a record's fate is read from the array.
        """
        now = self.clock.now_ms() if now_ms is None else now_ms
        stats = CleanerStats(first_dirty_offset=to_clean.first_dirty_offset)
        stats.size_before_bytes = log.size_bytes()
        producers = self.pre_pass(log, now)
        offset_map = self.use_strategy(log.config.compaction_strategy)
        offset_map.clear()
        upper_bound = to_clean.first_uncleanable_offset
        self._losers = losers
        if losers is not None:
            if self._strategy != "offset":
                raise ValueError("a sharded round supports compaction.strategy=offset only")
            self._superseded = np.zeros(0, np.uint8)
            offset_map.update_latest_offset(upper_bound - 1)
        else:
            # With a strategy other than "offset" a dirty record may lose to a clean-section
            # record of its key, so the map covers the clean section too (from the log start).
            map_start = (
                to_clean.first_dirty_offset if self._strategy == "offset" else log.log_start_offset
            )
            self.build_offset_map(log, map_start, upper_bound, stats, check_done)
        end_offset = self.active_map.latest_offset + 1
        stats.end_offset = end_offset
        stats.is_partial = end_offset < upper_bound
        stats.map_complete_s = time.monotonic()
        stats.map_keys = offset_map.size
        stats.map_slots = offset_map.slots
        segments = [s for s in log.segments[:-1] if s.base_offset < end_offset]
        facts = {f.base_offset: f for f in log.cleaner_segment_facts()}
        groups = group_segments_by_size(
            [facts[s.base_offset] for s in segments],
            max_size_bytes=log.config.segment_bytes,
            max_index_bytes=log.config.segment_index_bytes,
            first_uncleanable_offset=upper_bound,
        )
        by_base = {s.base_offset: s for s in segments}
        return CleaningRound(
            log=log,
            now_ms=now,
            horizon_ms=delete_horizon_ms(now, log.config.delete_retention_ms),
            upper_bound=upper_bound,
            end_offset=end_offset,
            producers=producers,
            groups=[[by_base[f.base_offset] for f in group] for group in groups],
            stats=stats,
        )

    def finish_round(self, round_: CleaningRound) -> CleanerStats:
        """Close the round's figures (after every group was written and swapped)."""
        stats = round_.stats
        stats.groups = len(round_.groups)
        stats.buffer_utilization = self.active_map.utilization
        stats.size_after_bytes = round_.log.size_bytes()
        stats.end_s = time.monotonic()
        return stats

    # --- step 0: headers -----------------------------------------------------------------------
    def pre_pass(self, log: Log, now_ms: int) -> Producers:
        last_offset: dict[int, int] = {}
        last_timestamp: dict[int, int] = {}
        for segment in log.segments:
            summary = self._summaries.get(segment)
            if summary is None or summary.size != segment.size:
                summary = self._summarize(log, segment)
                self._summaries[segment] = summary
            if summary.refusal is not None:
                raise summary.refusal
            for pid, (offset, timestamp) in summary.producers.items():
                last_offset[pid] = offset
                last_timestamp[pid] = timestamp
        expiry = self.producer_id_expiration_ms
        active = {
            pid: offset
            for pid, offset in last_offset.items()
            if now_ms - last_timestamp[pid] < expiry
        }
        return Producers(active)

    def _summarize(self, log: Log, segment: LogSegment) -> _SegmentSummary:
        """What the pre-pass needs from one segment's batch headers (cached per segment:
        a closed segment never changes, and a cleaned one is a new object)."""
        size = segment.size
        frames = segment.batch_headers()
        producers: dict[int, tuple[int, int]] = {}
        if frames.shape[1] == 0:
            return _SegmentSummary(size, None, producers)
        magic = frames[codes.FRAME_MAGIC]
        attributes = frames[codes.FRAME_ATTRIBUTES]
        if (magic != MAGIC_V2).any():
            position = int(frames[codes.FRAME_POSITION][np.argmax(magic != MAGIC_V2)])
            return _SegmentSummary(
                size,
                LegacyFormatError(
                    f"{log.topic_partition}: {segment.log_path.name} holds a legacy (v0/v1) "
                    f"message set at position {position}; seglog cleans only v2 batches "
                    "(Kafka 4 rewrites legacy entries as v2 while cleaning)"
                ),
                producers,
            )
        special = (attributes & (TRANSACTIONAL_FLAG_MASK | CONTROL_FLAG_MASK)) != 0
        if special.any():
            first = int(np.argmax(special))
            return _SegmentSummary(
                size,
                TransactionalDataError(
                    f"{log.topic_partition}: {segment.log_path.name} holds a transactional or "
                    f"control batch at offset {int(frames[codes.FRAME_BASE_OFFSET][first])}; "
                    "seglog has no transaction-aware cleaning yet, so this log is not cleaned"
                ),
                producers,
            )
        producer = frames[codes.FRAME_PRODUCER_ID]
        idempotent = np.flatnonzero(producer >= 0)
        if len(idempotent):
            last = frames[codes.FRAME_BASE_OFFSET] + frames[codes.FRAME_LAST_OFFSET_DELTA]
            stamps = frames[codes.FRAME_MAX_TIMESTAMP]
            for k in idempotent.tolist():
                producers[int(producer[k])] = (int(last[k]), int(stamps[k]))
        return _SegmentSummary(size, None, producers)

    # --- step 1: the offset map ------------------------------------------------------------------
    def use_strategy(self, strategy: str) -> OffsetMap | VersionMap:
        """Make ``strategy`` (``compaction.strategy``) the round's; returns its map."""
        self._strategy = strategy
        if strategy == "offset":
            self.active_map = self.offset_map
        else:
            if self._version_map is None:
                self._version_map = VersionMap(
                    self.offset_map.memory_bytes, self.offset_map.load_factor
                )
            self.active_map = self._version_map
        return self.active_map

    def _versions(self, columns: RecordColumns) -> npt.NDArray[np.int64]:
        """Each row's version under the round's strategy (timestamp or header value)."""
        if self._strategy == "timestamp":
            return columns.reported_timestamp()
        name = np.frombuffer(self._strategy.partition(":")[2].encode(), dtype=np.uint8)
        out = np.empty(len(columns), dtype=np.int64)
        from seglog.kernels.version_map import header_versions_nb  # numba: on first use

        header_versions = header_versions_nb if self.use_numba else header_versions_nb.py_func  # type: ignore[attr-defined]
        header_versions(
            columns.data, columns.batches.records_position, columns.batches.record_start, name, out
        )
        return out

    def _put(self, columns: RecordColumns, rows: int, min_offset: int) -> int:
        """Put rows ``[0, rows)`` into the round's map; the row where it filled, else rows."""
        the_map = self.active_map
        if isinstance(the_map, VersionMap):
            return the_map.put_columns(
                columns.data,
                columns.key_position,
                columns.key_length,
                columns.offset,
                self._versions(columns),
                stop_row=rows,
                min_offset=min_offset,
                superseded=self._superseded,
                superseded_base=self._superseded_base,
            )
        return the_map.put_columns(
            columns.data,
            columns.key_position,
            columns.key_length,
            columns.offset,
            stop_row=rows,
            min_offset=min_offset,
            superseded=self._superseded,
            superseded_base=self._superseded_base,
        )

    def build_offset_map(
        self,
        log: Log,
        start: int,
        end: int,
        stats: CleanerStats,
        check_done: Callable[[], None],
        prior: Sequence[LogSegment] = (),
    ) -> None:
        """Build the round's map over ``[start, end)`` of the log, after the records of
        ``prior`` segments (a compacted copy, all below ``start``) when given."""
        segments = [s for s in log.segments if s.base_offset < end]
        dirty = [
            s
            for i, s in enumerate(segments)
            if (segments[i + 1].base_offset if i + 1 < len(segments) else end) > start
        ]
        offset_map = self.active_map
        # One byte per offset from the first mapped one (up to a bound): set when a record
        # loses to a later put of its key, so the cleaning pass knows its fate without a
        # second lookup.
        base = prior[0].base_offset if prior else start
        self._superseded = np.zeros(max(min(end - base, SUPERSEDED_MARKS_MAX), 0), np.uint8)
        self._superseded_base = base
        self.full_at_batch_base = -1
        for segment in prior:
            for _, columns in self.chunks(segment, 0, check_done):
                rows = int(np.searchsorted(columns.offset, start))
                stop = self._put(columns, rows, 0)
                stats.map_messages_read += stop
                stats.map_bytes_read += self._consumed
                if stop < rows:
                    raise UncleanableLogError(
                        f"{log.topic_partition}: the compacted copy has more keys than the "
                        f"map can take ({offset_map.limit}); raise log.cleaner.dedupe.buffer.size"
                    )
        for i, segment in enumerate(dirty):
            check_done()
            segment_end = dirty[i + 1].base_offset if i + 1 < len(dirty) else end
            _, from_position = segment.offset_index.lookup(start)
            full = False
            for _, columns in self.chunks(segment, from_position, check_done):
                rows = int(np.searchsorted(columns.offset, end))  # offsets increase
                stop = self._put(columns, rows, start)
                stats.map_messages_read += stop
                stats.map_bytes_read += self._consumed
                if stop < rows:
                    full = True
                    self.full_at_batch_base = int(
                        columns.batches.base_offset[columns.batch_index[stop]]
                    )
                    break
                if len(columns.batches):
                    last = min(int(columns.batches.last_offset[-1]), end - 1)
                    if last >= start:
                        offset_map.update_latest_offset(last)
                if rows < len(columns):
                    break  # reached ``end`` inside this segment
            if full:
                return
            offset_map.update_latest_offset(segment_end - 1)

    def chunks(self, segment: LogSegment, position: int, check_done: Callable[[], None]) -> Any:
        """Yield (position, columns) for whole batches of ``segment`` from ``position`` on,
        read in bounded chunks; ``self._consumed`` is the bytes each chunk covered."""
        size = segment.size
        while position < size:
            check_done()
            want = min(len(self._buffer), size - position)
            view = memoryview(self._buffer)[:want]  # type: ignore[arg-type]
            got = segment.read_into(position, view)
            self.throttler.maybe_throttle(got)
            if got < want:
                # The .log is shorter than the bytes the segment holds (cut under it): the
                # batch at ``position`` cannot be whole (LogCleanerTest.
                # testCorruptMessageSizeLargerThanBytesAvailable expects a corrupt record).
                raise CorruptRecordError(
                    f"the file ends {got} bytes after this batch boundary, before the "
                    f"segment's end at position {size}: a batch is larger than the bytes left",
                    position=position,
                    path=str(segment.log_path),
                )
            chunk = self._buffer[:got]
            columns = scan_columns(
                chunk, verify_crc=True, base_position=position, use_numba=self.use_numba
            )
            end = columns.end
            consumed = (end.position - position) if end.kind is not EndKind.CLEAN else got
            if end.kind is EndKind.CORRUPT:
                raise CorruptRecordError(
                    f"{end.reason} while cleaning",
                    position=end.position,
                    path=str(segment.log_path),
                )
            if consumed == 0:
                self._grow_buffer(segment, position)
                continue
            if end.kind is EndKind.TORN_TAIL and position + got >= size and consumed < got:
                raise CorruptRecordError(
                    "torn batch at the end of a closed segment",
                    position=end.position,
                    path=str(segment.log_path),
                )
            self._consumed = consumed
            yield position, columns
            position += consumed

    def _grow_buffer(self, segment: LogSegment, position: int) -> None:
        """A batch larger than the read buffer: grow to exactly its size (Kafka's rule)."""
        head = bytearray(_LOG_OVERHEAD)
        segment.read_into(position, memoryview(head))
        (size,) = _SIZE_FIELD.unpack_from(head, 8)
        need = size + _LOG_OVERHEAD
        if size <= 0 or need <= len(self._buffer):
            raise CorruptRecordError(
                f"cannot read the batch (size field {size})",
                position=position,
                path=str(segment.log_path),
            )
        if need > segment.size - position:
            raise CorruptRecordError(
                f"batch of {need} bytes runs past the end of the segment",
                position=position,
                path=str(segment.log_path),
            )
        if need > self.max_read_chunk_bytes:
            raise UncleanableLogError(
                f"batch of {need} bytes at position {position} of {segment.log_path} is larger "
                f"than the cleaner's maximum read buffer ({self.max_read_chunk_bytes} bytes)"
            )
        self._buffer = np.empty(need, dtype=np.uint8)

    # --- steps 3-4: one group --------------------------------------------------------------------
    def write_group(
        self,
        round_: CleaningRound,
        group: list[LogSegment],
        check_done: Callable[[], None] = never_done,
    ) -> LogSegment:
        """Step 3: clean ``group`` into a finished ``{first base}.log.cleaned`` segment
        (fsynced, trimmed, with the group's last modification time); on failure its files
        are deleted and the log is as it was."""
        log = round_.log
        cleaned = log.new_cleaned_segment(group[0].base_offset)
        try:
            for segment in group:
                for position, columns in self.chunks(segment, 0, check_done):
                    self._clean_chunk(
                        position,
                        columns,
                        cleaned,
                        round_.stats,
                        now_ms=round_.now_ms,
                        horizon_ms=round_.horizon_ms,
                        upper_bound=round_.upper_bound,
                        producers=round_.producers,
                    )
            cleaned.on_become_inactive()
            cleaned.flush()
            cleaned.set_last_modified(group[-1].last_modified_ms())
        except BaseException:
            cleaned.delete_files()  # nothing was renamed yet: the log is as it was
            raise
        finally:
            # The buffer may have grown for one big batch; go back to the configured size.
            if len(self._buffer) != self.read_chunk_bytes:
                self._buffer = np.empty(self.read_chunk_bytes, dtype=np.uint8)
        return cleaned

    @staticmethod
    def swap_group(log: Log, cleaned: LogSegment, group: list[LogSegment]) -> None:
        """Step 4: swap ``cleaned`` in for ``group`` (``Log.replace_segments``)."""
        try:
            log.replace_segments([cleaned], group)
        except BaseException:
            # The swap stopped part-way: its files are whatever the renames left, which
            # startup recovery completes or rolls back; never delete them here.
            log.mark_needs_recovery()
            raise

    def _clean_chunk(
        self,
        chunk_position: int,
        columns: RecordColumns,
        cleaned: LogSegment,
        stats: CleanerStats,
        *,
        now_ms: int,
        horizon_ms: int,
        upper_bound: int,
        producers: Producers,
    ) -> None:
        buffers, spans, written = self.filter_chunk(
            chunk_position,
            columns,
            stats,
            now_ms=now_ms,
            horizon_ms=horizon_ms,
            upper_bound=upper_bound,
            producers=producers,
        )
        if spans:
            cleaned.append(buffers, written, spans)
            self.throttler.maybe_throttle(written)

    def filter_chunk(
        self,
        chunk_position: int,
        columns: RecordColumns,
        stats: CleanerStats,
        *,
        now_ms: int,
        horizon_ms: int,
        upper_bound: int,
        producers: Producers,
        rules: RecordFilter = NO_FILTER,
    ) -> tuple[list[Any], list[tuple[int, int, int, int]], int]:
        """Decide and rewrite one chunk's batches: the buffers and spans to append."""
        batches = columns.batches
        batch_count = len(batches)
        rows = len(columns)
        consumed = self._consumed
        stats.bytes_read += consumed
        stats.messages_read += rows
        if batch_count == 0:
            return [], [], 0
        latest = self.active_map.latest_offset
        keep = self._keep_flags(columns, now_ms, latest, stats, rules)
        record_start = batches.record_start
        counts = np.diff(record_start)
        kept_prefix = np.concatenate(([0], np.cumsum(keep, dtype=np.int64)))
        kept = kept_prefix[record_start[1:]] - kept_prefix[record_start[:-1]]
        tombstone_kept = keep & (columns.value_length < 0)
        tomb_prefix = np.concatenate(([0], np.cumsum(tombstone_kept, dtype=np.int64)))
        tombstones = tomb_prefix[record_start[1:]] - tomb_prefix[record_start[:-1]]
        has_horizon = (batches.attributes & DELETE_HORIZON_FLAG) != 0
        set_horizon = (tombstones > 0) & ~has_horizon
        unchanged = (kept == counts) & (counts > 0) & ~set_horizon
        # Kafka's checkBatchRetention: RETAIN_EMPTY for the batch ending at the round's upper
        # bound (the log end offset survives the clean) and an active producer's last batch.
        retain_empty = batches.last_offset + 1 == upper_bound
        if producers.last_data_offset:
            pids = batches.producer_id
            for pid in np.unique(pids[pids >= 0]).tolist():
                last = producers.last_data_offset.get(int(pid))
                if last is not None:
                    retain_empty |= (pids == pid) & (batches.last_offset == last)
        action = np.where(
            unchanged,
            ACTION_COPY,
            np.where(kept > 0, ACTION_REBUILD, np.where(retain_empty, ACTION_EMPTY, ACTION_DROP)),
        ).astype(np.int8)
        new_base = batches.base_timestamp.copy()
        rebuild = action == ACTION_REBUILD
        if rebuild.any():
            kept_rows = np.flatnonzero(keep)
            first_kept = kept_rows[
                np.minimum(np.searchsorted(kept_rows, record_start[:-1]), len(kept_rows) - 1)
            ]
            plain = rebuild & ~has_horizon & ~set_horizon
            new_base[plain] = columns.timestamp[first_kept[plain]]
            new_base[set_horizon] = horizon_ms
        src = self._buffer
        # Worst case: every batch copied or rebuilt with all its records, a rebuilt record
        # growing by up to 10 bytes; a rebuilt compressed batch is written *uncompressed*
        # first (compressed afterwards), so its decompressed section counts, not its bytes.
        # (``data`` is the chunk itself when nothing was decompressed: counted twice then.)
        out_need = consumed + len(columns.data) + 10 * rows + BATCH_HEADER_BYTES * (batch_count + 1)
        if len(self._out) < out_need:
            self._out = np.empty(max(out_need, len(self._out) * 2), dtype=np.uint8)
        out = self._out
        out_position = np.zeros(batch_count, dtype=np.int64)
        out_bytes = np.zeros(batch_count, dtype=np.int64)
        out_max_timestamp = np.zeros(batch_count, dtype=np.int64)
        rewrite = rewrite_batches_py
        if self.use_numba:
            from seglog.kernels.compact import rewrite_batches_nb  # numba: on first use

            rewrite = rewrite_batches_nb
        positions = batches.position - chunk_position  # where each batch is in ``src``
        total = rewrite(
            src,
            columns.data,
            positions,
            batches.batch_length.astype(np.int64) + _LOG_OVERHEAD,
            action,
            batches.records_position,
            record_start,
            new_base,
            set_horizon.astype(np.uint8),
            ((batches.attributes & TIMESTAMP_TYPE_MASK) != 0).astype(np.uint8),
            keep.astype(np.uint8),
            columns.timestamp,
            out,
            out_position,
            out_bytes,
            out_max_timestamp,
        )
        buffers, spans, written = self._finish_batches(
            out, int(total), action, batches, out_position, out_bytes, out_max_timestamp
        )
        stats.messages_written += int(kept.sum())
        stats.bytes_written += written
        return buffers, spans, written

    def _keep_flags(
        self,
        columns: RecordColumns,
        now_ms: int,
        latest: int,
        stats: CleanerStats,
        rules: RecordFilter = NO_FILTER,
    ) -> npt.NDArray[np.bool_]:
        """Kafka's ``shouldRetainRecord`` for every row at once (plus ``rules``)."""
        offsets = columns.offset
        beyond = offsets > latest
        has_key = columns.key_length >= 0
        marks, base = self._superseded, self._superseded_base
        marked = ~beyond & (offsets >= base) & (offsets < base + len(marks))
        is_latest = np.zeros(len(offsets), dtype=np.bool_)
        if self._losers is not None:
            is_latest = ~contains_sorted(self._losers, offsets)
        elif marked.all():
            is_latest = marks[offsets - base] == 0
        else:
            rows = np.flatnonzero(marked)
            is_latest[rows] = marks[offsets[rows] - base] == 0
            rest = np.flatnonzero(~marked & ~beyond & has_key)
            if len(rest):
                is_latest[rest] = self._is_winner(columns, rest)
        batches = columns.batches
        has_horizon = (batches.attributes & DELETE_HORIZON_FLAG) != 0
        keep_delete = ~has_horizon | (now_ms < batches.base_timestamp)
        is_live_value = columns.value_length >= 0
        keep: npt.NDArray[np.bool_] = beyond | (
            has_key & is_latest & (is_live_value | keep_delete[columns.batch_index])
        )
        stats.invalid_messages_read += int((~beyond & ~has_key).sum())
        if rules is not NO_FILTER:
            if rules.keep_keyless:
                keep |= ~has_key
            keep &= (offsets >= rules.min_offset) & (offsets <= rules.max_offset)
            if rules.min_timestamp_ms is not None:
                keep &= columns.reported_timestamp() >= rules.min_timestamp_ms
        return keep

    def _is_winner(
        self, columns: RecordColumns, rows: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.bool_]:
        """Whether each of ``rows`` is its key's winner, by a map lookup."""
        the_map = self.active_map
        positions, lengths = columns.key_position[rows], columns.key_length[rows]
        offsets = columns.offset[rows]
        if isinstance(the_map, VersionMap):
            found, found_version = the_map.get_columns(columns.data, positions, lengths)
            versions = self._versions(columns)[rows]
            winner: npt.NDArray[np.bool_] = (
                (found < 0)
                | (versions > found_version)
                | ((versions == found_version) & (offsets >= found))
            )
            return winner
        latest: npt.NDArray[np.bool_] = offsets >= the_map.get_columns(
            columns.data, positions, lengths
        )
        return latest

    def _finish_batches(
        self,
        out: npt.NDArray[np.uint8],
        total: int,
        action: npt.NDArray[np.int8],
        batches: Any,
        out_position: npt.NDArray[np.int64],
        out_bytes: npt.NDArray[np.int64],
        out_max_timestamp: npt.NDArray[np.int64],
    ) -> tuple[list[Any], list[tuple[int, int, int, int]], int]:
        """CRC (and compress) the rebuilt batches; the buffers and spans to append."""
        view = memoryview(out)  # type: ignore[arg-type]
        written_batches = np.flatnonzero(action != ACTION_DROP)
        if len(written_batches) == 0:
            return [], [], 0
        changed = np.flatnonzero((action == ACTION_REBUILD) | (action == ACTION_EMPTY))
        codec = batches.attributes & COMPRESSION_CODEC_MASK
        replaced: dict[int, bytes] = {}
        for b in changed.tolist():
            start = int(out_position[b])
            size = int(out_bytes[b])
            if action[b] == ACTION_REBUILD and codec[b] != 0:
                body = compress(
                    CompressionType(int(codec[b])),
                    view[start + BATCH_HEADER_BYTES : start + size],
                )
                batch = bytearray(view[start : start + BATCH_HEADER_BYTES])
                batch += body
                _BATCH_LENGTH_FIELD.pack_into(batch, 8, len(batch) - _LOG_OVERHEAD)
                _CRC_FIELD.pack_into(batch, 17, crc32c(memoryview(batch)[21:]))
                replaced[b] = bytes(batch)
            else:
                _CRC_FIELD.pack_into(view, start + 17, crc32c(view[start + 21 : start + size]))
        buffers: list[Any] = []
        spans: list[tuple[int, int, int, int]] = []
        last_offsets = batches.last_offset
        cursor = 0
        if not replaced:
            buffers.append(view[:total])
            for b in written_batches.tolist():
                spans.append(
                    (
                        int(out_position[b]),
                        int(out_bytes[b]),
                        int(last_offsets[b]),
                        int(out_max_timestamp[b]),
                    )
                )
            return buffers, spans, total
        for b in written_batches.tolist():
            piece: Any = replaced.get(b)
            if piece is None:
                start = int(out_position[b])
                piece = view[start : start + int(out_bytes[b])]
            buffers.append(piece)
            spans.append((cursor, len(piece), int(last_offsets[b]), int(out_max_timestamp[b])))
            cursor += len(piece)
        return buffers, spans, cursor
