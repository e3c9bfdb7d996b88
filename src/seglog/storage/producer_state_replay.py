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

from seglog.core.producer_state import DataBatch, ProducerStateManager
from seglog.format.batch import RecordBatch
from seglog.format.control import ControlRecordType, decode_control_key, decode_end_txn_marker
from seglog.format.txn_index import AbortedTxn
from seglog.storage.producer_snapshots import newest_valid_snapshot
from seglog.storage.segment import LogSegment


def data_batch(batch: RecordBatch) -> DataBatch:
    """The producer fields of a v2 data batch."""
    return DataBatch(
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        batch.base_offset,
        batch.last_offset,
        batch.max_timestamp,
        batch.is_transactional,
    )


def replay_batch(state: ProducerStateManager, batch: RecordBatch) -> AbortedTxn | None:
    """Apply one batch read from the log; the ``.txnindex`` entry it completes, if any."""
    if batch.producer_id < 0:
        return None
    if not batch.is_control:
        state.replay_data(data_batch(batch))
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


def replay_segment(
    state: ProducerStateManager, segment: LogSegment, from_offset: int, to_offset: int
) -> list[AbortedTxn]:
    """Replay the batches of ``segment`` with offsets in ``[from_offset, to_offset)``; the
    aborted transactions whose markers lie there."""
    aborted: list[AbortedTxn] = []
    if segment.next_offset() <= from_offset or segment.base_offset >= to_offset:
        return aborted
    start = segment.index_position(from_offset) if from_offset > segment.base_offset else 0
    for batch in segment.iter_batches(start, segment.size):
        if not isinstance(batch, RecordBatch) or batch.last_offset < from_offset:
            continue
        if batch.base_offset >= to_offset:
            break
        txn = replay_batch(state, batch)
        if txn is not None:
            aborted.append(txn)
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
    for segment in segments:
        replay_segment(state, segment, start, up_to)
    state.last_map_offset = max(state.last_map_offset, up_to)


def rebuild_txn_indexes(
    directory: Path,
    segments: Sequence[LogSegment],
    recovered: set[int],
    log_start_offset: int,
    now_ms: int,
) -> None:
    """Rewrite the ``.txnindex`` of every segment whose base is in ``recovered`` from the
    markers in the log (recovery: the file may miss the entry of a marker written just
    before a crash, or was found damaged)."""
    if not recovered:
        return
    first = min(recovered)
    # Expiry does not matter here: a producer with an open transaction never expires.
    state = ProducerStateManager(str(directory.name), expiration_ms=1 << 62)
    rebuild_producer_state(
        state,
        directory,
        segments,
        log_start_offset=log_start_offset,
        up_to=first,
        now_ms=now_ms,
        trust_snapshots_below=first,
        remove_damaged=True,
        problems=[],
    )
    for i, segment in enumerate(segments):
        if segment.base_offset < first:
            continue
        end = segments[i + 1].base_offset if i + 1 < len(segments) else segment.next_offset()
        aborted = replay_segment(state, segment, segment.base_offset, end)
        if segment.base_offset in recovered:
            segment.txn_index.replace_all(aborted)
