"""Step 0 of a round: the pre-pass over every segment's batch headers.

The numba frame walk reads batch headers over a read-only map (records are not decoded). It
refuses a log holding transactional batches or control records (:class:`TransactionalDataError`:
cleaning such data without transaction awareness would resurrect aborted records) or legacy
v0/v1 entries (:class:`LegacyFormatError`), and finds each idempotent producer's last data
batch, which Kafka never removes (only empties) while the producer is active
(``producer.id.expiration.ms``).

Invariant: a segment's summary is cached per segment object and reused only while its size is
unchanged (a closed segment never changes; a cleaned one is a new object).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from seglog.engine.cleaning.errors import (
    LegacyFormatError,
    TransactionalDataError,
    UncleanableLogError,
)
from seglog.engine.log import Log
from seglog.format.batch import CONTROL_FLAG_MASK, MAGIC_V2, TRANSACTIONAL_FLAG_MASK
from seglog.kernels import codes
from seglog.storage.segment import LogSegment


@dataclass(frozen=True, slots=True)
class Producers:
    """Per active idempotent producer, the last offset of its last data batch."""

    last_data_offset: dict[int, int]


@dataclass(frozen=True, slots=True)
class _SegmentSummary:
    """One segment's header facts: its size when read, why it cannot be cleaned (if so),
    and each idempotent producer's last data batch (last offset, max timestamp)."""

    size: int
    refusal: UncleanableLogError | None
    producers: dict[int, tuple[int, int]]


class HeaderPass:
    """The pre-pass of every round of one cleaner, with its per-segment cache."""

    def __init__(self, producer_id_expiration_ms: int) -> None:
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._summaries: weakref.WeakKeyDictionary[LogSegment, _SegmentSummary] = (
            weakref.WeakKeyDictionary()
        )

    def run(self, log: Log, now_ms: int) -> Producers:
        """The active producers' last data batches; raises the first refusal found."""
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
