"""Appending an idempotent or transactional producer's batches, for tests and benchmarks.

A client builds v2 batches with its producer id, epoch and base sequence (and the
transactional bit inside a transaction); these helpers do the same with
:class:`~seglog.format.builder.BatchBuilder`, so a test reads like a producer's calls.
"""

from __future__ import annotations

from collections.abc import Sequence

from seglog.engine.log import Log
from seglog.engine.log.append_info import LogAppendInfo
from seglog.format.builder import BatchBuilder

Record = tuple[bytes | None, bytes | None]


def producer_batch(
    records: Sequence[Record],
    *,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    transactional: bool,
    timestamp_ms: int = 0,
) -> bytes:
    """One v2 batch of ``records`` with these producer fields (offsets from 0)."""
    builder = BatchBuilder(
        max_batch_bytes=1 << 30,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )
    for key, value in records:
        builder.append(timestamp_ms, key, value)
    return builder.build()


def _append(
    log: Log,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    records: Sequence[Record],
    *,
    transactional: bool,
    timestamp_ms: int | None,
) -> LogAppendInfo:
    ts = log.clock.now_ms() if timestamp_ms is None else timestamp_ms
    return log.append(
        producer_batch(
            records,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            transactional=transactional,
            timestamp_ms=ts,
        )
    )


def append_idempotent(
    log: Log,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    records: Sequence[Record],
    *,
    timestamp_ms: int | None = None,
) -> LogAppendInfo:
    """Append one idempotent (non-transactional) batch."""
    return _append(
        log,
        producer_id,
        producer_epoch,
        base_sequence,
        records,
        transactional=False,
        timestamp_ms=timestamp_ms,
    )


def append_transactional(
    log: Log,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    records: Sequence[Record],
    *,
    timestamp_ms: int | None = None,
) -> LogAppendInfo:
    """Append one transactional batch (it opens the producer's transaction if none is)."""
    return _append(
        log,
        producer_id,
        producer_epoch,
        base_sequence,
        records,
        transactional=True,
        timestamp_ms=timestamp_ms,
    )
