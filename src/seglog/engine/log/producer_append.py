"""The producer-state step of an append: read each batch's producer fields and check them.

Runs after :func:`seglog.core.append_validation.validate_append` (offsets assigned, CRCs and
sizes checked) and before anything is written. A chunk whose batches all come from
non-idempotent producers (producer id -1, the common case) costs one 8-byte read per batch
and no plan. Otherwise the batches are checked against the producer state
(:meth:`ProducerStateManager.check_batch`) into a plan the log applies once the bytes are
written, so a refused chunk changes nothing.

A chunk that repeats batches already written (an idempotent producer's retry) is answered
with the original offsets and written again never; a chunk mixing repeated and new batches is
refused (``OutOfOrderSequenceError``), since writing only part of it would lose the rest
silently.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

from seglog.core.append_validation import BatchSpan
from seglog.core.producer_state import AppendPlan, DataBatch, ProducerStateManager
from seglog.errors import OutOfOrderSequenceError
from seglog.format.batch import TRANSACTIONAL_FLAG_MASK

_ATTRIBUTES_AT = 21
# from byte 21: attributes int16, lastOffsetDelta int32, (baseTimestamp, maxTimestamp),
# producerId int64, producerEpoch int16, baseSequence int32 (bytes 21-57)
_FIELDS = struct.Struct(">hi16xqhi")


class DuplicateAppend(NamedTuple):
    """The whole chunk repeats batches already in the log: their original offsets."""

    first_offset: int
    last_offset: int
    max_timestamp: int


def plan_producer_append(
    state: ProducerStateManager,
    data: bytes | bytearray | memoryview,
    spans: Sequence[BatchSpan],
    first_offset: int,
    where: str,
) -> AppendPlan | DuplicateAppend | None:
    """The checked producer changes of an append (None when no batch has a producer id)."""
    plan: AppendPlan | None = None
    duplicates: list[tuple[int, int, int]] = []
    for position, _size, last_offset, max_timestamp in spans:
        attributes, last_delta, producer_id, epoch, base_sequence = _FIELDS.unpack_from(
            data, position + _ATTRIBUTES_AT
        )
        if producer_id < 0:
            continue
        batch = DataBatch(
            producer_id,
            epoch,
            base_sequence,
            last_offset - last_delta,
            last_offset,
            max_timestamp,
            bool(attributes & TRANSACTIONAL_FLAG_MASK),
        )
        if plan is None:
            plan = AppendPlan()
        duplicate = state.check_batch(plan, batch, where)
        if duplicate is not None:
            duplicates.append((duplicate.first_offset, duplicate.last_offset, duplicate.timestamp))
    if not duplicates:
        return plan
    if len(duplicates) != len(spans):
        raise OutOfOrderSequenceError(
            f"{where}: the chunk at offset {first_offset} mixes {len(duplicates)} batch(es) "
            f"already written with {len(spans) - len(duplicates)} new one(s); send them apart"
        )
    return DuplicateAppend(duplicates[0][0], duplicates[-1][1], max(d[2] for d in duplicates))
