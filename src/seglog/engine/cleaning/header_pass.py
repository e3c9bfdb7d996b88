"""Step 0 of a round: the pre-pass over every segment's batch headers.

The numba frame walk reads batch headers over a read-only map (records are not decoded). It
refuses a log holding legacy v0/v1 entries (:class:`LegacyFormatError`), and finds every
producer's last entry, which Kafka never removes (only empties) while the producer is active:
per producer id, the last offset of its last data batch (None once a control batch of a newer
epoch ended it, Kafka's epoch bump, or when it wrote only markers), its epoch, the last
timestamp, and whether a transaction of it is open (its transactional data after its last
marker). A producer is active unless ``producer.id.expiration.ms`` passed since its last
timestamp with no transaction open (Kafka's ``isProducerExpired``). The result has the shape of
Kafka's ``lastRecordsOfActiveProducers`` and is derived from the log's own batches, as the
producer state rebuilt from the log is, so every process cleaning the log (a Spark task
included) sees the same producers.

Invariant: a segment's summary is cached per segment object and reused only while its size is
unchanged (a closed segment never changes; a cleaned one is a new object).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from seglog.engine.cleaning.errors import LegacyFormatError, UncleanableLogError
from seglog.engine.log import Log
from seglog.format.batch import CONTROL_FLAG_MASK, MAGIC_V2, TRANSACTIONAL_FLAG_MASK
from seglog.kernels import codes
from seglog.storage.segment import LogSegment


@dataclass(frozen=True, slots=True)
class Producers:
    """Per active producer id: (last offset of its last data batch, or None; its epoch)."""

    last_records: dict[int, tuple[int | None, int]]


@dataclass(slots=True)
class _ProducerFacts:
    """One producer's state after a run of its batches (module docstring)."""

    last_data_offset: int | None
    epoch: int
    last_timestamp: int
    txn_open: bool


@dataclass(frozen=True, slots=True)
class _SegmentSummary:
    """One segment's header facts: its size when read, why it cannot be cleaned (if so),
    and the batches that decide each producer's state after the segment, in order, as
    (producer id, epoch, last offset, max timestamp, attributes): per producer its last data
    batch and the control batches after it (all of its batches when it has no data batch)."""

    size: int
    refusal: UncleanableLogError | None
    producer_batches: list[tuple[int, int, int, int, int]]


class HeaderPass:
    """The pre-pass of every round of one cleaner, with its per-segment cache."""

    def __init__(self, producer_id_expiration_ms: int) -> None:
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._summaries: weakref.WeakKeyDictionary[LogSegment, _SegmentSummary] = (
            weakref.WeakKeyDictionary()
        )

    def run(self, log: Log, now_ms: int) -> Producers:
        """The active producers' last entries; raises the first refusal found."""
        facts: dict[int, _ProducerFacts] = {}
        for segment in log.segments:
            summary = self._summaries.get(segment)
            if summary is None or summary.size != segment.size:
                summary = self._summarize(log, segment)
                self._summaries[segment] = summary
            if summary.refusal is not None:
                raise summary.refusal
            for pid, epoch, last, timestamp, attributes in summary.producer_batches:
                known = facts.get(pid)
                if known is None:
                    known = facts[pid] = _ProducerFacts(None, epoch, timestamp, False)
                if attributes & CONTROL_FLAG_MASK:
                    if epoch != known.epoch:
                        known.last_data_offset = None  # an epoch bump clears its batches
                    known.txn_open = False
                else:
                    known.last_data_offset = last
                    known.txn_open = bool(attributes & TRANSACTIONAL_FLAG_MASK)
                known.epoch = epoch
                known.last_timestamp = timestamp
        expiry = self.producer_id_expiration_ms
        active = {
            pid: (f.last_data_offset, f.epoch)
            for pid, f in facts.items()
            if f.txn_open or now_ms - f.last_timestamp < expiry
        }
        return Producers(active)

    def _summarize(self, log: Log, segment: LogSegment) -> _SegmentSummary:
        """What the pre-pass needs from one segment's batch headers (cached per segment:
        a closed segment never changes, and a cleaned one is a new object)."""
        size = segment.size
        frames = segment.batch_headers()
        producers: list[tuple[int, int, int, int, int]] = []
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
        producer = frames[codes.FRAME_PRODUCER_ID]
        rows = np.flatnonzero(producer >= 0)
        if len(rows):
            last = frames[codes.FRAME_BASE_OFFSET] + frames[codes.FRAME_LAST_OFFSET_DELTA]
            entries = zip(
                producer[rows].tolist(),
                frames[codes.FRAME_PRODUCER_EPOCH][rows].tolist(),
                last[rows].tolist(),
                frames[codes.FRAME_MAX_TIMESTAMP][rows].tolist(),
                attributes[rows].tolist(),
                strict=True,
            )
            decided: set[int] = set()  # producers whose last data batch was met (backwards)
            for entry in reversed(list(entries)):
                pid = entry[0]
                if pid in decided:
                    continue
                producers.append(entry)
                if not entry[4] & CONTROL_FLAG_MASK:
                    decided.add(pid)
            producers.reverse()
        return _SegmentSummary(size, None, producers)
