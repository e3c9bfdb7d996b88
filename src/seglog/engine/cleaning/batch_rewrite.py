"""Step 3's inner loop: decide every record of a chunk and rewrite its batches.

Per batch first, Kafka's ``checkBatchRetention`` (:mod:`seglog.core.txn_retention`, over the
round's shared transaction state): an aborted transaction's batch has its records discarded
unread; a commit or abort marker is kept while its transaction still has a batch in the
round, and once it has none it is stamped with a delete horizon and removed after it; the last
batch of every active producer, and the batch ending exactly at the round's upper bound
(Kafka 4.x), stay as a 61-byte empty header if nothing of them survives.

Per record (Kafka's ``shouldRetainRecord``, for all rows at once): a record of a discarded
batch goes; a control record otherwise stays; a data record stays iff its offset is past the
map's range, or it has a key, is its key's winner, and (for a tombstone) its batch's delete
horizon has not passed; plus a :class:`RecordFilter`'s rules for the compacted-copy compactor.
Per batch: copied byte for byte when nothing changes; rebuilt (same base and last offset,
producer fields, codec) when records go or a horizon must be stamped (KIP-534: the first round
that keeps a tombstone, or a marker whose transaction has no data left, stamps ``now +
delete.retention.ms``); kept as an empty header or dropped as above. The numba kernel
(:mod:`seglog.kernels.compact`) writes every batch; this module then CRCs (and recompresses)
the rebuilt ones.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from crc32c import crc32c

from seglog.core.txn_retention import BatchRetention
from seglog.engine.cleaning.chunk_reader import LOG_OVERHEAD
from seglog.engine.cleaning.header_pass import Producers
from seglog.engine.cleaning.round_map import RoundMap
from seglog.engine.cleaning.round_stats import CleanerStats
from seglog.engine.cleaning.txn_columns import TxnState, chunk_verdicts
from seglog.format.batch import COMPRESSION_CODEC_MASK, TIMESTAMP_TYPE_MASK
from seglog.format.columnar import RecordColumns
from seglog.format.compression import CompressionType, compress
from seglog.kernels.compact_py import rewrite_batches_py
from seglog.kernels.layouts import (
    ACTION_COPY,
    ACTION_DROP,
    ACTION_EMPTY,
    ACTION_REBUILD,
    BATCH_HEADER_BYTES,
    DELETE_HORIZON_FLAG,
)

_CRC_FIELD = struct.Struct(">I")
_BATCH_LENGTH_FIELD = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class RecordFilter:
    """Extra rules for a pass over a chunk beside the map's (the compacted-copy compactor's):
    rows outside ``[min_offset, max_offset]`` are not copied; keyless rows are kept when
    ``keep_keyless``; rows with a timestamp below ``min_timestamp_ms`` are dropped
    (retention of the copy); control records (markers) are dropped when ``drop_control``.
    The Kafka-style cleaner uses the defaults."""

    min_offset: int = -1
    max_offset: int = (1 << 63) - 1
    keep_keyless: bool = False
    min_timestamp_ms: int | None = None
    drop_control: bool = False


NO_FILTER = RecordFilter()


@dataclass(frozen=True, slots=True)
class ChunkRules:
    """What decides a chunk's records beside the map: the round's time, the delete horizon
    stamped on kept tombstones and emptied markers (KIP-534), the first uncleanable offset (a
    batch ending there is kept even when emptied), the active producers, the transaction state
    shared by the round's chunks (in log order), and a :class:`RecordFilter`."""

    now_ms: int
    horizon_ms: int
    upper_bound: int
    producers: Producers
    txn: TxnState
    rules: RecordFilter = NO_FILTER


def contains_sorted(
    sorted_values: npt.NDArray[np.int64], values: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_]:
    """For each of ``values``, whether it is in ``sorted_values`` (ascending, unique)."""
    if len(sorted_values) == 0:
        return np.zeros(len(values), dtype=np.bool_)
    at = np.searchsorted(sorted_values, values)
    found: npt.NDArray[np.bool_] = sorted_values[np.minimum(at, len(sorted_values) - 1)] == values
    return found


class BatchRewriter:
    """Rewrites chunks against a :class:`RoundMap`; owns the reusable output buffer."""

    def __init__(self, round_map: RoundMap, *, use_numba: bool) -> None:
        self.round_map = round_map
        self.use_numba = use_numba
        self._out = np.empty(0, dtype=np.uint8)

    def filter_chunk(
        self,
        chunk_position: int,
        src: npt.NDArray[np.uint8],
        consumed: int,
        columns: RecordColumns,
        stats: CleanerStats,
        decide: ChunkRules,
    ) -> tuple[list[Any], list[tuple[int, int, int, int]], int]:
        """Decide and rewrite one chunk's batches: the buffers and spans to append."""
        batches = columns.batches
        batch_count = len(batches)
        rows = len(columns)
        stats.bytes_read += consumed
        stats.messages_read += rows
        if batch_count == 0:
            return [], [], 0
        latest = self.round_map.active_map.latest_offset
        verdicts = chunk_verdicts(
            columns,
            decide.txn,
            now_ms=decide.now_ms,
            upper_bound=decide.upper_bound,
            active_producers=decide.producers.last_records,
        )
        keep = self.keep_flags(columns, decide.now_ms, latest, stats, decide.rules)
        is_control = batches.is_control
        if is_control.any() or verdicts.discard_records.any():
            row_control = is_control[columns.batch_index]
            keep = np.where(row_control, not decide.rules.drop_control, keep)
            keep &= ~verdicts.discard_records[columns.batch_index]
        record_start = batches.record_start
        counts = np.diff(record_start)
        kept_prefix = np.concatenate(([0], np.cumsum(keep, dtype=np.int64)))
        kept = kept_prefix[record_start[1:]] - kept_prefix[record_start[:-1]]
        tombstone_kept = keep & (columns.value_length < 0)
        tomb_prefix = np.concatenate(([0], np.cumsum(tombstone_kept, dtype=np.int64)))
        tombstones = tomb_prefix[record_start[1:]] - tomb_prefix[record_start[:-1]]
        has_horizon = (batches.attributes & DELETE_HORIZON_FLAG) != 0
        needs_horizon = (tombstones > 0) | (verdicts.contains_marker_for_empty_txn & (kept > 0))
        set_horizon = needs_horizon & ~has_horizon
        unchanged = (kept == counts) & (counts > 0) & ~set_horizon
        retain_empty = verdicts.retention == BatchRetention.RETAIN_EMPTY
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
            new_base[set_horizon] = decide.horizon_ms
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
        rewrite: Any = rewrite_batches_py
        if self.use_numba:
            from seglog.kernels.compact import rewrite_batches_nb  # numba: on first use

            rewrite = rewrite_batches_nb
        positions = batches.position - chunk_position  # where each batch is in ``src``
        total = rewrite(
            src,
            columns.data,
            positions,
            batches.batch_length.astype(np.int64) + LOG_OVERHEAD,
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
        buffers, spans, written = self.finish_batches(
            out, int(total), action, batches, out_position, out_bytes, out_max_timestamp
        )
        stats.messages_written += int(kept.sum())
        stats.bytes_written += written
        return buffers, spans, written

    def keep_flags(
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
        round_map = self.round_map
        marks, base = round_map.superseded, round_map.superseded_base
        marked = ~beyond & (offsets >= base) & (offsets < base + len(marks))
        is_latest = np.zeros(len(offsets), dtype=np.bool_)
        if round_map.losers is not None:
            is_latest = ~contains_sorted(round_map.losers, offsets)
        elif marked.all():
            is_latest = marks[offsets - base] == 0
        else:
            rows = np.flatnonzero(marked)
            is_latest[rows] = marks[offsets[rows] - base] == 0
            rest = np.flatnonzero(~marked & ~beyond & has_key)
            if len(rest):
                is_latest[rest] = self.round_map.is_winner(columns, rest)
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

    def finish_batches(
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
                _BATCH_LENGTH_FIELD.pack_into(batch, 8, len(batch) - LOG_OVERHEAD)
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
