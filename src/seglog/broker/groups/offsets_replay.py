"""One ``__consumer_offsets`` partition read back batch by batch, transactions included.

:func:`replay_items` walks a partition's log from its log start offset to its end, every
segment, every batch (CRCs checked; damage raises
:class:`~seglog.errors.CorruptRecordError` naming the file and position, never skipped), and
yields what the offsets store replays, in log order:

* :class:`DataRecord` for each record of a data batch: its offset, key and value, and the
  producer id when the batch is transactional (a TxnOffsetCommit's offsets: pending until
  their marker), else None;
* :class:`TxnMarker` for each COMMIT or ABORT control record (the producer id of its batch).
  Other control records (leader changes) are left out.

Legacy (v0/v1) entries, which older brokers wrote, are data records without producer. Records
below the log start offset (a batch cut by DeleteRecords) are left out.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from seglog.engine.log import Log
from seglog.errors import CorruptRecordError
from seglog.format.control import ControlRecordType, decode_control_key


@dataclass(frozen=True, slots=True)
class DataRecord:
    """A record of a data batch; ``producer_id`` is set only for a transactional batch."""

    offset: int
    key: bytes | None
    value: bytes | None
    producer_id: int | None


@dataclass(frozen=True, slots=True)
class TxnMarker:
    """A COMMIT (``commit`` True) or ABORT marker of ``producer_id`` at ``offset``."""

    offset: int
    producer_id: int
    commit: bool


def replay_items(log: Log) -> Iterator[DataRecord | TxnMarker]:
    """What the partition holds, in log order (see the module docstring)."""
    start = log.log_start_offset
    for segment in log.segments:
        for batch in segment.iter_batches(0, segment.size, verify_crc=True):
            if batch.last_offset < start:
                continue
            if batch.is_control:
                for record in batch.records():
                    if record.offset < start:
                        continue
                    try:
                        kind = decode_control_key(record.key).type
                    except CorruptRecordError as exc:
                        raise CorruptRecordError(
                            f"control record at offset {record.offset}: {exc.reason}",
                            path=str(segment.log_path),
                            position=batch.position,
                        ) from exc
                    if kind in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
                        yield TxnMarker(
                            record.offset, batch.producer_id, kind is ControlRecordType.COMMIT
                        )
                continue
            producer = batch.producer_id if batch.is_transactional else None
            for record in batch.records():
                if record.offset >= start:
                    yield DataRecord(record.offset, record.key, record.value, producer)
