"""One cleaning round over one log: Kafka's ``Cleaner.doClean``.

A round, given a :class:`~seglog.core.cleaning.LogToClean` chosen by the cleaner manager:

0. **Pre-pass** over every segment's batch headers (:mod:`.header_pass`: the frame walk over
   a read-only map; records are not decoded): a log holding legacy v0/v1 entries is refused
   with :class:`LegacyFormatError` before anything is written. The round's active producers
   are the log's producer state, taken once per round (Kafka takes it per group; the log is
   claimed, so only appends to the active segment could differ): the last entry of each is
   never removed, only emptied.
1. **Build the offset map** over ``[first_dirty_offset, first_uncleanable_offset)`` (which
   never passes the last stable offset: the cleaner manager bounds it): every keyed record at
   or above the first dirty offset is put (key hash -> offset), except the records of control
   batches and of aborted transactions (``.txnindex``). When the map
   reaches its limit the build stops *before* the next keyed put; the round then covers only
   up to the last offset put (``end_offset = latest_offset + 1``), the next round goes on
   from there (partial cleaning). A fully read segment moves ``latest_offset`` to its end.
2. **Group** every segment from the log's first one up to ``end_offset`` by size, index size
   and offset span (:func:`~seglog.core.cleaning.group_segments_by_size`): the whole clean
   section is recopied too, which is how old tombstones eventually expire.
3. **Clean each group** into one ``{first base}.log.cleaned`` segment, reading in bounded
   chunks: per record, keep iff its offset is past the map's range, or it has a key and no
   later offset of that key is in the map, and (for a tombstone) its batch's delete horizon
   has not passed. Transactions (:mod:`seglog.core.txn_retention`, one state shared by every
   group of the round, KAFKA-8351, fed with each source segment's ``.txnindex`` entries over
   [its base, the next segment's base), KAFKA-13727): an aborted transaction's records go
   unread; a commit or abort marker stays while its transaction still has a batch in the
   round, then is stamped with a delete horizon and removed after it; the cleaned segment's
   ``.txnindex`` gets the aborted transactions whose markers stay with data seen. Per batch:
   copied byte for byte when nothing changes; rebuilt (same base
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

The steps live in their own modules, composed here: :mod:`.header_pass` (step 0),
:mod:`.round_map` (step 1, the key map and superseded marks), :mod:`.chunk_reader` (bounded,
CRC-checked chunks of whole batches), :mod:`.batch_rewrite` (step 3's per-record decisions and
batch rewrites); :mod:`.round_stats`, :mod:`.throttler` and :mod:`.errors` hold the figures,
the I/O throttle and the error types. The Pulsar-style compactor and the Spark cleaning job
drive the same pieces through this class.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from seglog.clock import Clock
from seglog.core.cleaning import LogToClean, delete_horizon_ms, group_segments_by_size
from seglog.core.offset_map import OffsetMap
from seglog.core.version_map import VersionMap
from seglog.engine.cleaning.batch_rewrite import (
    NO_FILTER,
    BatchRewriter,
    ChunkRules,
    RecordFilter,
    contains_sorted,
)
from seglog.engine.cleaning.chunk_reader import READ_CHUNK_BYTES, ChunkReader
from seglog.engine.cleaning.errors import (
    CleaningAbortedError,
    LegacyFormatError,
    UncleanableLogError,
)
from seglog.engine.cleaning.header_pass import HeaderPass, Producers
from seglog.engine.cleaning.round_map import SUPERSEDED_MARKS_MAX, RoundMap
from seglog.engine.cleaning.round_stats import CleanerStats
from seglog.engine.cleaning.throttler import Throttler
from seglog.engine.cleaning.txn_columns import TxnState, aborted_in, index_kept
from seglog.engine.log import Log
from seglog.format.columnar import RecordColumns
from seglog.kernels import numba_enabled
from seglog.storage.segment import LogSegment

__all__ = [
    "NO_FILTER",
    "READ_CHUNK_BYTES",
    "SUPERSEDED_MARKS_MAX",
    "ChunkRules",
    "Cleaner",
    "CleanerStats",
    "CleaningAbortedError",
    "CleaningRound",
    "LegacyFormatError",
    "Producers",
    "RecordFilter",
    "Throttler",
    "UncleanableLogError",
    "contains_sorted",
    "never_done",
]


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
    txn: TxnState  # shared by every group, in order (KAFKA-8351)


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
        producer_id_expiration_ms: int = 24 * 3600 * 1000,  # the log's producer state expires
        read_chunk_bytes: int = READ_CHUNK_BYTES,
        max_read_chunk_bytes: int = 64 * 1024 * 1024,
        use_numba: bool | None = None,
    ) -> None:
        self.offset_map = offset_map
        self.clock = clock
        self.throttler = throttler or Throttler(float("inf"))
        self.use_numba = numba_enabled() if use_numba is None else use_numba
        self.header_pass = HeaderPass()
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.reader = ChunkReader(
            self.throttler,
            read_chunk_bytes=read_chunk_bytes,
            max_read_chunk_bytes=max_read_chunk_bytes,
            use_numba=self.use_numba,
        )
        self.round_map = RoundMap(offset_map, use_numba=self.use_numba)
        self.rewriter = BatchRewriter(self.round_map, use_numba=self.use_numba)

    @property
    def active_map(self) -> OffsetMap | VersionMap:
        """The map of the round: ``offset_map``, or a VersionMap for a KIP-280 strategy."""
        return self.round_map.active_map

    @property
    def full_at_batch_base(self) -> int:
        """Base offset of the batch where the last map build filled (-1: it did not)."""
        return self.round_map.full_at_batch_base

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
        producers: Producers | None = None,
    ) -> CleaningRound:
        """Steps 0-2: the pre-pass, the map over the dirty range, the round's end and groups.

        With ``losers`` (a sorted array of every offset below ``first_uncleanable_offset``
        whose key has a later record there, from a key-sharded map build, see
        :mod:`seglog.engine.cleaning_job`) no map is built: the round covers the whole
        cleanable range and a record's fate is read from the array. ``producers``: the
        active producers as the driver of a cleaning job saw them (default: the log's now).
        """
        now = self.clock.now_ms() if now_ms is None else now_ms
        stats = CleanerStats(first_dirty_offset=to_clean.first_dirty_offset)
        stats.size_before_bytes = log.size_bytes()
        active = self.pre_pass(log, now)
        producers = active if producers is None else producers
        offset_map = self.use_strategy(log.config.compaction_strategy)
        offset_map.clear()
        upper_bound = to_clean.first_uncleanable_offset
        self.round_map.losers = losers
        if losers is not None:
            if self.round_map.strategy != "offset":
                raise ValueError("a sharded round supports compaction.strategy=offset only")
            self.round_map.superseded = np.zeros(0, np.uint8)
            offset_map.update_latest_offset(upper_bound - 1)
        else:
            # With a strategy other than "offset" a dirty record may lose to a clean-section
            # record of its key, so the map covers the clean section too (from the log start).
            map_start = (
                to_clean.first_dirty_offset
                if self.round_map.strategy == "offset"
                else log.log_start_offset
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
            txn=TxnState(),
        )

    def finish_round(self, round_: CleaningRound) -> CleanerStats:
        """Close the round's figures (after every group was written and swapped)."""
        stats = round_.stats
        stats.groups = len(round_.groups)
        stats.buffer_utilization = self.active_map.utilization
        stats.size_after_bytes = round_.log.size_bytes()
        stats.end_s = time.monotonic()
        return stats

    # --- the steps, as the compactor and the Spark job drive them ---------------------------------
    def pre_pass(self, log: Log, now_ms: int) -> Producers:
        """Step 0 (:mod:`.header_pass`): the refusals, then the log's active producers."""
        del now_ms  # the log's producer state applies expiry
        return self.header_pass.run(log)

    def use_strategy(self, strategy: str) -> OffsetMap | VersionMap:
        """Make ``strategy`` (``compaction.strategy``) the round's; returns its map."""
        return self.round_map.use_strategy(strategy)

    def build_offset_map(
        self,
        log: Log,
        start: int,
        end: int,
        stats: CleanerStats,
        check_done: Callable[[], None],
        prior: Sequence[LogSegment] = (),
    ) -> None:
        """Step 1 (:meth:`.round_map.RoundMap.build`) over ``[start, end)``."""
        self.round_map.build(log, start, end, stats, check_done, self.reader, prior)

    def chunks(
        self, segment: LogSegment, position: int, check_done: Callable[[], None]
    ) -> Iterator[tuple[int, RecordColumns]]:
        """Whole batches of ``segment`` from ``position`` on, as (position, columns)."""
        return self.reader.chunks(segment, position, check_done)

    def filter_chunk(
        self, chunk_position: int, columns: RecordColumns, stats: CleanerStats, decide: ChunkRules
    ) -> tuple[list[Any], list[tuple[int, int, int, int]], int]:
        """Decide and rewrite the chunk just read (:mod:`.batch_rewrite`)."""
        return self.rewriter.filter_chunk(
            chunk_position, self.reader.buffer, self.reader.consumed, columns, stats, decide
        )

    # --- steps 3-4: one group ----------------------------------------------------------------
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
        bases = [s.base_offset for s in log.segments]
        next_base = dict(itertools.pairwise(bases))
        txn = round_.txn
        try:
            decide = ChunkRules(
                round_.now_ms, round_.horizon_ms, round_.upper_bound, round_.producers, txn
            )
            for segment in group:
                end = next_base.get(segment.base_offset, log.log_end_offset)
                txn.add_aborted(aborted_in(log, segment.base_offset, end))
                for position, columns in self.chunks(segment, 0, check_done):
                    buffers, spans, written = self.filter_chunk(
                        position, columns, round_.stats, decide
                    )
                    if spans:
                        cleaned.append(buffers, written, spans)
                        self.throttler.maybe_throttle(written)
                    index_kept(cleaned, txn.take_kept_aborted())
            cleaned.on_become_inactive()
            cleaned.flush()
            cleaned.set_last_modified(group[-1].last_modified_ms())
        except BaseException:
            cleaned.delete_files()  # nothing was renamed yet: the log is as it was
            raise
        finally:
            self.reader.reset_buffer()  # a big batch may have grown it
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
