"""The transaction rules (:mod:`seglog.core.txn_retention`) applied to a chunk's columns.

Chunks are read with their control batches' records (the marker: key = version and type,
value = version and coordinator epoch), so a kept marker can be rewritten with a delete horizon.
Here:

* :func:`control_types`: per batch, the control record type of its first record
  (``NO_CONTROL_RECORD`` for a plain batch or an emptied control batch,
  ``CONTROL_TYPE_UNKNOWN`` for a key that is not a 4-byte control key);
* :func:`map_key_lengths`: the key lengths the offset map may take: a row of a control batch
  or of an aborted transaction's batch gets -1 (no key), so neither ever enters the map, as
  in Kafka's ``buildOffsetMap``; the state advances over every batch;
* :func:`chunk_verdicts`: ``checkBatchRetention`` for every batch of the chunk.

:func:`aborted_in` reads the ``.txnindex`` entries the rules start from.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from seglog.core.txn_retention import (
    CONTROL_TYPE_UNKNOWN,
    NO_CONTROL_RECORD,
    BatchVerdicts,
    CleanedTransactionMetadata,
    batch_verdicts,
    facts_of,
    is_special,
)
from seglog.engine.log import Log
from seglog.format.columnar import RecordColumns
from seglog.format.txn_index import AbortedTxn
from seglog.storage.segment import LogSegment

TxnState = CleanedTransactionMetadata[AbortedTxn]


def aborted_in(log: Log, start: int, end: int) -> list[AbortedTxn]:
    """The ``.txnindex`` entries of ``log`` overlapping ``[start, end)`` (Kafka's
    ``collectAbortedTransactions``)."""
    return log.aborted_transactions(start, end)


def index_kept(segment: LogSegment, kept: list[AbortedTxn]) -> None:
    """Append ``kept`` to the cleaned ``segment``'s ``.txnindex`` (Kafka's ``cleanedIndex``)."""
    for txn in kept:
        segment.txn_index.append(txn)


def control_types(columns: RecordColumns) -> npt.NDArray[np.int16]:
    """Per batch, its first control record's type (module docstring)."""
    batches = columns.batches
    out = np.full(len(batches), NO_CONTROL_RECORD, dtype=np.int16)
    control = np.flatnonzero(batches.is_control)
    if len(control) == 0:
        return out
    record_start = batches.record_start
    data = columns.data
    for b in control.tolist():
        row = int(record_start[b])
        if row == int(record_start[b + 1]):
            continue  # an emptied control batch
        length = int(columns.key_length[row])
        if length < 4:
            out[b] = CONTROL_TYPE_UNKNOWN
            continue
        at = int(columns.key_position[row])
        out[b] = int.from_bytes(data[at + 2 : at + 4].tobytes(), "big", signed=True)
    return out


def _header_columns(
    columns: RecordColumns,
) -> tuple[
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int16],
    npt.NDArray[np.int16],
    npt.NDArray[np.int64],
    npt.NDArray[np.int16],
]:
    b = columns.batches
    return (
        b.base_offset,
        b.last_offset,
        b.producer_id,
        b.producer_epoch,
        b.attributes,
        b.base_timestamp,
        control_types(columns),
    )


def map_key_lengths(columns: RecordColumns, txn: TxnState) -> npt.NDArray[np.int32]:
    """``columns.key_length`` with rows of control batches and aborted batches set to -1;
    advances ``txn`` over every transactional and control batch of the chunk."""
    batches = columns.batches
    special = np.flatnonzero(is_special(batches.attributes))
    if len(special) == 0:
        return columns.key_length
    header = _header_columns(columns)
    excluded = np.zeros(len(batches), dtype=np.bool_)
    for b in special.tolist():
        facts = facts_of(b, *header)
        discard = txn.on_any_batch(facts)
        excluded[b] = facts.is_control or discard
    if not excluded.any():
        return columns.key_length
    masked: npt.NDArray[np.int32] = np.where(
        excluded[columns.batch_index], np.int32(-1), columns.key_length
    ).astype(np.int32)
    return masked


def chunk_verdicts(
    columns: RecordColumns,
    txn: TxnState,
    *,
    now_ms: int,
    upper_bound: int,
    active_producers: Mapping[int, tuple[int | None, int]],
) -> BatchVerdicts:
    """``checkBatchRetention`` for every batch of the chunk, in order (advances ``txn``)."""
    base, last, pid, epoch, attributes, base_ts, control = _header_columns(columns)
    return batch_verdicts(
        txn,
        base_offset=base,
        last_offset=last,
        producer_id=pid,
        producer_epoch=epoch,
        attributes=attributes,
        base_timestamp=base_ts,
        control_type=control,
        now_ms=now_ms,
        upper_bound=upper_bound,
        active_producers=active_producers,
    )
