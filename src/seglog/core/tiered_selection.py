"""Which uploaded segments a reader of a Kafka tiered-storage location uses, for which offsets.

Pure decisions, no I/O. Two steps:

1. **Committed segments** (:func:`committed_segments`), when the broker's
   ``__remote_log_metadata`` records are given: replay one topic-partition's events in
   order as the broker's metadata cache does. apiKey 0 adds a segment (by segment id),
   apiKey 1 updates its state (and end offset when the update carries one), apiKey 2
   (partition delete, in any state from DELETE_PARTITION_MARKED on) drops the whole
   partition's table. A segment is readable only when its last state is
   COPY_SEGMENT_FINISHED: a copy never finished (state 0 only) was aborted, and one in
   DELETE_SEGMENT_STARTED/FINISHED is gone for the broker. Updates for an unknown id are
   ignored (the broker rejects them).

2. **Read plan** (:func:`plan_remote_reads`): the (segment, first offset, last offset)
   pieces that cover the partition once. When every candidate knows its end offset and leader
   epochs, overlaps are resolved as the broker's ``RemoteLogLeaderEpochState`` does: the
   epoch lineage is rebuilt from the newest segment backwards (an older segment contributes
   the epochs before the newest one's first), each epoch maps "start offset of the epoch
   inside the segment" -> segment with a later-added segment replacing an earlier one at the
   same key, and offset ``p`` is read from the floor entry of ``p``'s lineage epoch, up to
   the segment's end or the next lineage epoch's start. A segment from a fenced leader
   (its epoch is not in the lineage) is never read; a gap between segments is left as a gap.
   Otherwise (no epochs or no ends known, e.g. old manifests) segments are ordered by start
   offset, a later upload of the same start replaces an earlier one, and each is read from
   where the previous one ended to its end (or the next start when its end is unknown).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from seglog.format.remote_log_metadata import (
    COPY_SEGMENT_FINISHED,
    RemoteLogMetadata,
    RemoteLogSegmentMetadataRecord,
    RemoteLogSegmentMetadataUpdateRecord,
    RemotePartitionDeleteMetadataRecord,
)


@dataclass(frozen=True, slots=True)
class SegmentCandidate:
    """What the plan needs to know of one uploaded segment; ``order`` ranks uploads (higher:
    added later)."""

    segment_id: str
    start_offset: int
    end_offset: int | None
    leader_epochs: tuple[tuple[int, int], ...] | None
    order: int


@dataclass(frozen=True, slots=True)
class ReadPiece:
    """Read offsets ``start..last`` (inclusive; ``last`` None: to the segment's end)."""

    segment_id: str
    start: int
    last: int | None


def committed_segments(
    records: Iterable[RemoteLogMetadata], topic_id: str, partition: int
) -> dict[str, SegmentCandidate]:
    """The COPY_SEGMENT_FINISHED segments of one topic-partition (module docstring, step 1)."""
    added: dict[str, RemoteLogSegmentMetadataRecord] = {}
    states: dict[str, int] = {}
    ends: dict[str, int] = {}
    orders: dict[str, int] = {}
    for index, record in enumerate(records):
        if isinstance(record, RemotePartitionDeleteMetadataRecord):
            tip = record.topic_id_partition
            if (tip.topic_id, tip.partition) == (topic_id, partition):
                added.clear()
                states.clear()
            continue
        if not isinstance(
            record, RemoteLogSegmentMetadataRecord | RemoteLogSegmentMetadataUpdateRecord
        ):
            continue
        tip = record.segment_id.topic_id_partition
        if (tip.topic_id, tip.partition) != (topic_id, partition):
            continue
        key = record.segment_id.id
        if isinstance(record, RemoteLogSegmentMetadataRecord):
            added[key] = record
            orders[key] = index
        elif key not in added:
            continue
        elif record.end_offset >= 0:
            ends[key] = record.end_offset
        states[key] = record.state
    return {
        key: SegmentCandidate(
            key,
            record.start_offset,
            ends.get(key, record.end_offset),
            record.segment_leader_epochs,
            orders[key],
        )
        for key, record in added.items()
        if states.get(key) == COPY_SEGMENT_FINISHED
    }


def plan_remote_reads(candidates: Sequence[SegmentCandidate]) -> list[ReadPiece]:
    """The pieces covering the partition once, in offset order (module docstring, step 2)."""
    if not candidates:
        return []
    if all(c.end_offset is not None and c.leader_epochs for c in candidates):
        return _by_epochs(candidates)
    return _by_start(candidates)


def _lineage(candidates: Sequence[SegmentCandidate]) -> list[tuple[int, int]]:
    ordered = sorted(candidates, key=lambda c: (c.end_offset or 0, c.order), reverse=True)
    assert ordered[0].leader_epochs
    lineage = list(ordered[0].leader_epochs)
    for candidate in ordered[1:]:
        assert candidate.leader_epochs is not None
        for epoch, offset in reversed(candidate.leader_epochs):
            first_epoch, first_offset = lineage[0]
            if epoch == first_epoch and offset < first_offset:
                lineage[0] = (epoch, offset)
            elif epoch < first_epoch and offset < first_offset:
                lineage.insert(0, (epoch, offset))
    return lineage


def _by_epochs(candidates: Sequence[SegmentCandidate]) -> list[ReadPiece]:
    lineage = _lineage(candidates)
    starts = [offset for _, offset in lineage]
    maps: dict[int, dict[int, SegmentCandidate]] = {}
    for candidate in sorted(candidates, key=lambda c: c.order):
        assert candidate.leader_epochs is not None
        for epoch, offset in candidate.leader_epochs:
            maps.setdefault(epoch, {})[offset] = candidate
    pieces: list[ReadPiece] = []
    position = lineage[0][1]
    while True:
        k = bisect.bisect_right(starts, position) - 1
        epoch = lineage[max(k, 0)][0]
        entries = maps.get(epoch, {})
        keys = sorted(entries)
        floor = bisect.bisect_right(keys, position) - 1
        chosen = entries[keys[floor]] if floor >= 0 else None
        if chosen is not None and chosen.end_offset is not None and chosen.end_offset >= position:
            epoch_end = starts[k + 1] - 1 if k + 1 < len(starts) else chosen.end_offset
            last = min(chosen.end_offset, epoch_end)
            if last >= position:
                pieces.append(ReadPiece(chosen.segment_id, position, last))
                position = last + 1
                continue
        # A gap: continue at the next offset some lineage epoch's segment starts at.
        following = [
            key
            for e, _ in lineage
            for key in maps.get(e, {})
            if key > position and _epoch_at(lineage, starts, key) == e
        ]
        if not following:
            return _merge(pieces)
        position = min(following)


def _epoch_at(lineage: list[tuple[int, int]], starts: list[int], offset: int) -> int:
    return lineage[max(0, bisect.bisect_right(starts, offset) - 1)][0]


def _merge(pieces: list[ReadPiece]) -> list[ReadPiece]:
    """Adjacent pieces of the same segment as one."""
    out: list[ReadPiece] = []
    for piece in pieces:
        last = out[-1] if out else None
        if (
            last is not None
            and last.segment_id == piece.segment_id
            and last.last is not None
            and last.last + 1 == piece.start
        ):
            out[-1] = ReadPiece(last.segment_id, last.start, piece.last)
        else:
            out.append(piece)
    return out


def _by_start(candidates: Sequence[SegmentCandidate]) -> list[ReadPiece]:
    latest: dict[int, SegmentCandidate] = {}
    for candidate in sorted(candidates, key=lambda c: c.order):
        latest[candidate.start_offset] = candidate
    ordered = [latest[start] for start in sorted(latest)]
    pieces: list[ReadPiece] = []
    position = ordered[0].start_offset
    for i, candidate in enumerate(ordered):
        end = candidate.end_offset
        if end is None and i + 1 < len(ordered):
            end = ordered[i + 1].start_offset - 1
        start = max(position, candidate.start_offset)
        if end is not None and end < start:
            continue
        pieces.append(ReadPiece(candidate.segment_id, start, end))
        if end is None:
            break
        position = end + 1
    return pieces
