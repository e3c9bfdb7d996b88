"""Step 0 of a round: the pre-pass over every segment's batch headers, and the producers.

The numba frame walk reads batch headers over a read-only map (records are not decoded). It
refuses a log holding legacy v0/v1 entries (:class:`LegacyFormatError`). The round's active
producers are the log's producer state (Kafka's ``lastRecordsOfActiveProducers``: per producer
id the last offset of its last data batch, or None when it has none retained, and its epoch),
whose last entry Kafka never removes (only empties) while the producer is active; the state
expires producers after ``producer.id.expiration.ms`` as Kafka's periodic check does.

Invariant: a segment's verdict is cached per segment object and reused only while its size is
unchanged (a closed segment never changes; a cleaned one is a new object).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from seglog.engine.cleaning.errors import LegacyFormatError, UncleanableLogError
from seglog.engine.log import Log
from seglog.format.batch import MAGIC_V2
from seglog.kernels import codes
from seglog.storage.segment import LogSegment


@dataclass(frozen=True, slots=True)
class Producers:
    """Per active producer id: (last offset of its last data batch, or None; its epoch)."""

    last_records: dict[int, tuple[int | None, int]]

    @classmethod
    def of(cls, log: Log) -> Producers:
        """The log's active producers now."""
        return cls({pid: (r[0], r[1]) for pid, r in log.last_records_of_active_producers().items()})


class HeaderPass:
    """The pre-pass of every round of one cleaner, with its per-segment cache."""

    def __init__(self) -> None:
        self._verdicts: weakref.WeakKeyDictionary[
            LogSegment, tuple[int, UncleanableLogError | None]
        ] = weakref.WeakKeyDictionary()

    def run(self, log: Log) -> Producers:
        """The log's active producers; raises the first refusal found."""
        for segment in log.segments:
            cached = self._verdicts.get(segment)
            if cached is None or cached[0] != segment.size:
                cached = (segment.size, self._refusal(log, segment))
                self._verdicts[segment] = cached
            if cached[1] is not None:
                raise cached[1]
        return Producers.of(log)

    @staticmethod
    def _refusal(log: Log, segment: LogSegment) -> UncleanableLogError | None:
        """Why the cleaner cannot rewrite ``segment`` (a legacy entry), or None."""
        frames = segment.batch_headers()
        if frames.shape[1] == 0:
            return None
        magic = frames[codes.FRAME_MAGIC]
        if not (magic != MAGIC_V2).any():
            return None
        position = int(frames[codes.FRAME_POSITION][np.argmax(magic != MAGIC_V2)])
        return LegacyFormatError(
            f"{log.topic_partition}: {segment.log_path.name} holds a legacy (v0/v1) "
            f"message set at position {position}; seglog cleans only v2 batches "
            "(Kafka 4 rewrites legacy entries as v2 while cleaning)"
        )
