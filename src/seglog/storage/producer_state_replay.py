"""Rebuilding producer state and ``.txnindex`` files from a partition's segments.

Kafka's ``rebuildProducerState`` / ``LogSegment.recover`` producer part, for a load, a
recovery or a truncation: take the newest valid snapshot at or below a bound (or an empty
state at the log start), then replay every batch after it. A data batch with a producer id
updates its producer; a COMMIT/ABORT marker ends its transaction and, for an aborted one with
data, yields the ``.txnindex`` entry that belongs to the segment holding the marker.
Non-idempotent batches (producer id -1) and other control records change nothing.

Replaying reads batch headers only, and decodes the one record of a marker batch; a log with
no producer ids costs one header walk of the replayed range.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from seglog.core.producer_state import DataBatch, ProducerStateManager, producer_fields
from seglog.format.batch import (
    CONTROL_FLAG_MASK,
    LOG_OVERHEAD,
    MAGIC_V2,
    TRANSACTIONAL_FLAG_MASK,
    RecordBatch,
    parse_batch_header,
)
from seglog.format.control import ControlRecordType, decode_control_key, decode_end_txn_marker
from seglog.format.txn_index import AbortedTxn
from seglog.kernels.codes import (
    FRAME_ATTRIBUTES,
    FRAME_BASE_OFFSET,
    FRAME_BASE_SEQUENCE,
    FRAME_BATCH_LENGTH,
    FRAME_LAST_OFFSET_DELTA,
    FRAME_MAGIC,
    FRAME_MAX_TIMESTAMP,
    FRAME_POSITION,
    FRAME_PRODUCER_EPOCH,
    FRAME_PRODUCER_ID,
)
from seglog.storage.producer_snapshots import newest_valid_snapshot
from seglog.storage.segment import LogSegment


def replay_batch(state: ProducerStateManager, batch: RecordBatch) -> AbortedTxn | None:
    """Apply one batch read from the log; the ``.txnindex`` entry it completes, if any."""
    if batch.producer_id < 0:
        return None
    if not batch.is_control:
        state.replay_data(producer_fields(batch))
        return None
    if not batch.records_count:
        return None  # a marker the cleaner emptied: it completes nothing any more
    (record,) = batch.records()[:1]
    key = decode_control_key(record.key)
    if key.type not in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
        return None
    marker = decode_end_txn_marker(record.value)
    return state.replay_marker(
        batch.producer_id,
        batch.producer_epoch,
        offset=batch.base_offset,
        commit=key.type is ControlRecordType.COMMIT,
        coordinator_epoch=marker.coordinator_epoch,
        timestamp=batch.max_timestamp,
    )


#: Ranges at least this large are replayed from the frame walk's header matrix (numba, pages
#: of batch headers only) with Python touching only the batches that carry a producer id;
#: smaller ones batch by batch (no kernel start-up for a short tail).
HEADER_WALK_MIN_BYTES = 4 * 1024 * 1024
NEVER_EXPIRES = 1 << 62


def replay_segment(
    state: ProducerStateManager, segment: LogSegment, from_offset: int, to_offset: int
) -> list[AbortedTxn]:
    """Replay the batches of ``segment`` with offsets in ``[from_offset, to_offset)``; the
    aborted transactions whose markers lie there."""
    aborted: list[AbortedTxn] = []
    if segment.base_offset >= to_offset:
        return aborted
    start = segment.index_position(from_offset) if from_offset > segment.base_offset else 0
    if segment.size - start >= HEADER_WALK_MIN_BYTES:
        return _replay_from_headers(state, segment, from_offset, to_offset)
    for batch in segment.iter_batches(start, segment.size):
        if not isinstance(batch, RecordBatch) or batch.last_offset < from_offset:
            continue
        if batch.base_offset >= to_offset:
            break
        txn = replay_batch(state, batch)
        if txn is not None:
            aborted.append(txn)
    return aborted


def _replay_from_headers(
    state: ProducerStateManager, segment: LogSegment, from_offset: int, to_offset: int
) -> list[AbortedTxn]:
    """:func:`replay_segment` over the header matrix: only batches with a producer id are
    looked at in Python, and only a marker's batch is read whole (to tell COMMIT from ABORT)."""
    frames = segment.batch_headers()
    base = frames[FRAME_BASE_OFFSET]
    last = base + frames[FRAME_LAST_OFFSET_DELTA]
    wanted = (
        (frames[FRAME_MAGIC] == MAGIC_V2)
        & (frames[FRAME_PRODUCER_ID] >= 0)
        & (last >= from_offset)
        & (base < to_offset)
    )
    aborted: list[AbortedTxn] = []
    for i in np.flatnonzero(wanted).tolist():
        attributes = int(frames[FRAME_ATTRIBUTES, i])
        if attributes & CONTROL_FLAG_MASK:
            position = int(frames[FRAME_POSITION, i])
            size = int(frames[FRAME_BATCH_LENGTH, i]) + LOG_OVERHEAD
            batch = parse_batch_header(segment.read_at(position, size), 0)
            txn = replay_batch(state, batch)
            if txn is not None:
                aborted.append(txn)
            continue
        state.replay_data(
            DataBatch(
                int(frames[FRAME_PRODUCER_ID, i]),
                int(frames[FRAME_PRODUCER_EPOCH, i]),
                int(frames[FRAME_BASE_SEQUENCE, i]),
                int(base[i]),
                int(last[i]),
                int(frames[FRAME_MAX_TIMESTAMP, i]),
                bool(attributes & TRANSACTIONAL_FLAG_MASK),
            )
        )
    return aborted


def rebuild_producer_state(
    state: ProducerStateManager,
    directory: Path,
    segments: Sequence[LogSegment],
    *,
    log_start_offset: int,
    up_to: int,
    now_ms: int,
    trust_snapshots_below: int,
    remove_damaged: bool,
    problems: list[str],
) -> None:
    """Make ``state`` cover every offset below ``up_to``: newest valid snapshot at or below
    ``min(up_to, trust_snapshots_below)`` (at or above the log start), then replay."""
    bound = min(up_to, trust_snapshots_below)
    found = newest_valid_snapshot(
        directory, bound, remove_damaged=remove_damaged, problems=problems
    )
    if found is not None and found[0] >= log_start_offset:
        offset, entries = found
        state.load_snapshot(entries, offset, now_ms)
    else:
        state.clear(log_start_offset)
    start = state.last_map_offset
    for i, segment in enumerate(segments):
        # A segment below ``start`` is never read (a damaged closed segment there stays the
        # readers' and the verifier's to report, as without producer state).
        if i + 1 < len(segments) and segments[i + 1].base_offset <= start:
            continue
        replay_segment(state, segment, start, up_to)
    state.last_map_offset = max(state.last_map_offset, up_to)


def replay_recovered(
    state: ProducerStateManager, batches: Sequence[DataBatch | bytes]
) -> list[AbortedTxn]:
    """Replay what a segment's recovery kept of its producer batches
    (:attr:`SegmentRecovery.producer_batches`); the aborted transactions it completes."""
    aborted: list[AbortedTxn] = []
    for item in batches:
        if isinstance(item, bytes):
            txn = replay_batch(state, parse_batch_header(item, 0))
            if txn is not None:
                aborted.append(txn)
        else:
            state.replay_data(item)
    return aborted


def rebuild_txn_indexes(
    directory: Path,
    segments: Sequence[LogSegment],
    recovered_batches: dict[int, Sequence[DataBatch | bytes]],
    log_start_offset: int,
    now_ms: int,
    problems: list[str],
) -> ProducerStateManager | None:
    """Rewrite the ``.txnindex`` of every segment recovery read (``recovered_batches``: its
    base offset -> the producer batches recovery kept of it) from the
    markers in the log (recovery: the file may miss the entry of a marker written just
    before a crash, or was found damaged); returns the producer state this built, which then
    covers every offset of the log (None when nothing was recovered). Producers are never
    expired here (the log applies its ``producer.id.expiration.ms`` when it adopts it)."""
    if not recovered_batches:
        return None
    first = min(recovered_batches)
    state = ProducerStateManager(str(directory.name), expiration_ms=NEVER_EXPIRES)
    rebuild_producer_state(
        state,
        directory,
        segments,
        log_start_offset=log_start_offset,
        up_to=first,
        now_ms=now_ms,
        trust_snapshots_below=first,
        remove_damaged=True,
        problems=problems,
    )
    for i, segment in enumerate(segments):
        if segment.base_offset < first:
            continue
        end = segments[i + 1].base_offset if i + 1 < len(segments) else segment.next_offset()
        seen = recovered_batches.get(segment.base_offset)
        if seen is not None:  # what recovery read of it, not read again
            aborted = replay_recovered(state, seen)
        else:
            aborted = replay_segment(state, segment, max(segment.base_offset, first), end)
        if seen is not None and (aborted or segment.txn_index.path.exists()):
            segment.txn_index.replace_all(aborted)
        state.last_map_offset = max(state.last_map_offset, end)
    return state
