"""Step 1 of a round: the round's key map and each record's fate.

The map is the cleaner's :class:`~seglog.core.offset_map.OffsetMap` (``compaction.strategy=
offset``: key hash -> latest offset) or, for a KIP-280 strategy (``timestamp`` or
``header:<name>``), a :class:`~seglog.core.version_map.VersionMap` of the same memory, made on
first use. The build over ``[start, end)`` stops *before* the put that would overfill the map;
``latest_offset`` then says how far the round reaches (partial cleaning), and
``full_at_batch_base`` where it stopped. Keys of control batches (transaction markers) and of
aborted transactions' batches never enter the map (:func:`.txn_columns.map_key_lengths`, with
the ``.txnindex`` entries of the mapped range), as in Kafka's ``buildOffsetMap``.

Invariant of the superseded marks: one byte per offset from the first mapped one (up to
:data:`SUPERSEDED_MARKS_MAX` offsets), set exactly when a record lost to a later put of its
key; a record past the marks is judged by a map lookup (:meth:`RoundMap.is_winner`). A
key-sharded round (the Spark job) gives ``losers`` instead: a sorted array of every losing
offset, and no map is built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from seglog.core.offset_map import OffsetMap
from seglog.core.version_map import VersionMap
from seglog.engine.cleaning.chunk_reader import ChunkReader
from seglog.engine.cleaning.errors import UncleanableLogError
from seglog.engine.cleaning.round_stats import CleanerStats
from seglog.engine.cleaning.txn_columns import TxnState, aborted_in, map_key_lengths
from seglog.engine.log import Log
from seglog.format.columnar import RecordColumns
from seglog.storage.segment import LogSegment

# Dirty offsets whose fate the map build records (one byte each): 32 MiB of the 128 MiB the
# round may use beside the offset map; a longer dirty range is looked up past it.
SUPERSEDED_MARKS_MAX = 32 * 1024 * 1024


class RoundMap:
    """The key map of one cleaner's rounds, with the superseded marks or a sharded round's
    losers."""

    def __init__(self, offset_map: OffsetMap, *, use_numba: bool) -> None:
        self.offset_map = offset_map
        self.active_map: OffsetMap | VersionMap = offset_map
        self._version_map: VersionMap | None = None
        self.strategy = "offset"
        self.use_numba = use_numba
        self.superseded = np.zeros(0, dtype=np.uint8)
        self.superseded_base = 0
        self.full_at_batch_base = -1  # base offset of the batch where the last build filled
        self.losers: npt.NDArray[np.int64] | None = None  # a sharded round's losing offsets

    def use_strategy(self, strategy: str) -> OffsetMap | VersionMap:
        """Make ``strategy`` (``compaction.strategy``) the round's; returns its map."""
        self.strategy = strategy
        if strategy == "offset":
            self.active_map = self.offset_map
        else:
            if self._version_map is None:
                self._version_map = VersionMap(
                    self.offset_map.memory_bytes, self.offset_map.load_factor
                )
            self.active_map = self._version_map
        return self.active_map

    def versions(self, columns: RecordColumns) -> npt.NDArray[np.int64]:
        """Each row's version under the round's strategy (timestamp or header value)."""
        if self.strategy == "timestamp":
            return columns.reported_timestamp()
        name = np.frombuffer(self.strategy.partition(":")[2].encode(), dtype=np.uint8)
        out = np.empty(len(columns), dtype=np.int64)
        from seglog.kernels.version_map import header_versions_nb  # numba: on first use

        header_versions = header_versions_nb if self.use_numba else header_versions_nb.py_func  # type: ignore[attr-defined]
        header_versions(
            columns.data, columns.batches.records_position, columns.batches.record_start, name, out
        )
        return out

    def put(
        self,
        columns: RecordColumns,
        rows: int,
        min_offset: int,
        key_length: npt.NDArray[np.int32] | None = None,
    ) -> int:
        """Put rows ``[0, rows)`` into the round's map (``key_length``: the columns' key
        lengths with excluded rows at -1); the row where it filled, else rows."""
        the_map = self.active_map
        lengths = columns.key_length if key_length is None else key_length
        if isinstance(the_map, VersionMap):
            return the_map.put_columns(
                columns.data,
                columns.key_position,
                lengths,
                columns.offset,
                self.versions(columns),
                stop_row=rows,
                min_offset=min_offset,
                superseded=self.superseded,
                superseded_base=self.superseded_base,
            )
        return the_map.put_columns(
            columns.data,
            columns.key_position,
            lengths,
            columns.offset,
            stop_row=rows,
            min_offset=min_offset,
            superseded=self.superseded,
            superseded_base=self.superseded_base,
        )

    def build(
        self,
        log: Log,
        start: int,
        end: int,
        stats: CleanerStats,
        check_done: Callable[[], None],
        reader: ChunkReader,
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
        self.superseded = np.zeros(max(min(end - base, SUPERSEDED_MARKS_MAX), 0), np.uint8)
        self.superseded_base = base
        self.full_at_batch_base = -1
        for segment in prior:
            for _, columns in reader.chunks(segment, 0, check_done):
                rows = int(np.searchsorted(columns.offset, start))
                stop = self.put(columns, rows, 0, map_key_lengths(columns, TxnState()))
                stats.map_messages_read += stop
                stats.map_bytes_read += reader.consumed
                if stop < rows:
                    raise UncleanableLogError(
                        f"{log.topic_partition}: the compacted copy has more keys than the "
                        f"map can take ({offset_map.limit}); raise log.cleaner.dedupe.buffer.size"
                    )
        txn = TxnState()
        txn.add_aborted(aborted_in(log, start, end))
        for i, segment in enumerate(dirty):
            check_done()
            segment_end = dirty[i + 1].base_offset if i + 1 < len(dirty) else end
            _, from_position = segment.offset_index.lookup(start)
            full = False
            for _, columns in reader.chunks(segment, from_position, check_done):
                rows = int(np.searchsorted(columns.offset, end))  # offsets increase
                stop = self.put(columns, rows, start, map_key_lengths(columns, txn))
                stats.map_messages_read += stop
                stats.map_bytes_read += reader.consumed
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

    def is_winner(
        self, columns: RecordColumns, rows: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.bool_]:
        """Whether each of ``rows`` is its key's winner, by a map lookup."""
        the_map = self.active_map
        positions, lengths = columns.key_position[rows], columns.key_length[rows]
        offsets = columns.offset[rows]
        if isinstance(the_map, VersionMap):
            found, found_version = the_map.get_columns(columns.data, positions, lengths)
            versions = self.versions(columns)[rows]
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
