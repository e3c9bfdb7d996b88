"""Verify's transaction checks: markers, ``.txnindex`` entries and aborted data.

Fed every chunk of every segment in offset order (transactional v2 batches only; the others
cost one numpy mask per chunk), :class:`TxnCheck` follows each producer's transactions the
way a partition leader's producer state does: a producer's first transactional data batch
after a marker opens its transaction, its next COMMIT or ABORT control batch closes it.
A transaction is known by its producer id and its marker's offset. Checks and their kinds:

* ``txn-marker-missing``: a transaction whose data is below the last stable offset but that
  no marker closes, or that the producer's next transactional batch with another epoch
  interrupts (the coordinator writes a marker before a new epoch's transaction begins). A
  marker is removed by the cleaner only once no data of its transaction remains (KIP-534),
  so such data has lost its outcome: ``read_committed`` readers would stop at it forever or,
  when the producer state knows it ended, read it as committed. A transaction still open at
  the end of the log is legitimate while it is at or above the LSO (it is the reason the LSO
  is where it is).
* ``aborted-data-retained`` (only with a cleaner checkpoint): a data batch of an aborted
  transaction below the checkpoint. The cleaner's range never passes the LSO, so a
  transaction with data there had ended when it was cleaned, and the cleaner removes the
  records of aborted transactions; one batch is reported per transaction (the first), with
  the count of the others.
* ``txn-index-entry``: a ``.txnindex`` entry that does not match the log: no ABORT marker of
  its producer at its ``lastOffset``, its ``lastOffset`` outside its segment's offsets, its
  ``firstOffset`` above its transaction's first data batch still in the log, or (in a log
  never cleaned up to there) below it: the index would hide records of other transactions
  from ``read_committed`` readers, or show aborted ones.
* ``txn-index-missing``: an ABORT marker closing a transaction whose data is still in the
  log without an entry in its segment's ``.txnindex``: ``read_committed`` readers would
  read the aborted records.

Memory: one small record per producer with an open transaction, and one per aborted
transaction (as many as the ``.txnindex`` files hold entries).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from seglog.engine.inspect.verify_problems import (
    KIND_ABORTED_DATA_RETAINED,
    KIND_TXN_INDEX_ENTRY,
    KIND_TXN_INDEX_MISSING,
    KIND_TXN_MARKER_MISSING,
    Problems,
)
from seglog.errors import CorruptRecordError
from seglog.format.batch import MAGIC_V2, TRANSACTIONAL_FLAG_MASK
from seglog.format.columnar import RecordColumns
from seglog.format.control import ControlRecordType, decode_control_key
from seglog.format.txn_index import AbortedTxn
from seglog.storage.segment import LogSegment


@dataclass(slots=True)
class _OpenTxn:
    """A producer's transaction from its first data batch still in the log."""

    producer_epoch: int
    first_offset: int  # the first data batch's base offset
    path: str
    position: int
    below_checkpoint: int = 0  # data batches below the cleaner checkpoint
    first_below_checkpoint: tuple[str, int, int] | None = None  # (path, position, offset)


@dataclass(frozen=True, slots=True)
class _Marker:
    """A COMMIT or ABORT marker, and the transaction data it closes (if any remains)."""

    producer_id: int
    offset: int
    path: str
    position: int
    segment_base: int
    txn: _OpenTxn | None


class TxnCheck:
    """The transaction checks of one verify run (see the module docstring)."""

    def __init__(self, problems: Problems, *, cleaner_checkpoint: int | None) -> None:
        self.problems = problems
        self.checkpoint = cleaner_checkpoint
        self.open: dict[int, _OpenTxn] = {}  # producer id -> its open transaction
        self.aborts: dict[tuple[int, int], _Marker] = {}  # (producer id, marker offset)

    def feed(self, segment: LogSegment, columns: RecordColumns) -> None:
        """Follow the transactional batches of one chunk of ``segment``."""
        batches = columns.batches
        transactional = (batches.magic == MAGIC_V2) & (
            (batches.attributes & TRANSACTIONAL_FLAG_MASK) != 0
        )
        rows = np.flatnonzero(transactional)
        if not len(rows):
            return
        is_control = batches.is_control
        path = str(segment.log_path)
        for i in rows.tolist():
            producer_id = int(batches.producer_id[i])
            position = int(batches.position[i])
            if not is_control[i]:
                self._data(
                    producer_id,
                    int(batches.producer_epoch[i]),
                    int(batches.base_offset[i]),
                    path,
                    position,
                )
                continue
            marker_type = _marker_type(
                columns, int(batches.record_start[i]), int(batches.record_start[i + 1])
            )
            if marker_type is None:
                continue  # not a transaction marker (or damaged: check 1 reports damage)
            txn = self.open.pop(producer_id, None)
            if marker_type is ControlRecordType.ABORT:
                offset = int(batches.base_offset[i])
                marker = _Marker(producer_id, offset, path, position, segment.base_offset, txn)
                self.aborts[(producer_id, offset)] = marker
                if txn is not None and txn.first_below_checkpoint is not None:
                    self._aborted_data_retained(txn, marker)

    def _data(self, producer_id: int, epoch: int, offset: int, path: str, position: int) -> None:
        txn = self.open.get(producer_id)
        if txn is not None and txn.producer_epoch != epoch:
            self.problems.add(
                KIND_TXN_MARKER_MISSING,
                txn.path,
                txn.position,
                txn.first_offset,
                f"producer {producer_id}'s transaction from offset {txn.first_offset} (epoch "
                f"{txn.producer_epoch}) has no COMMIT or ABORT marker before the producer's "
                f"next transactional batch at offset {offset} (epoch {epoch}): its outcome "
                "was removed",
            )
            txn = None
        if txn is None:
            txn = _OpenTxn(epoch, offset, path, position)
            self.open[producer_id] = txn
        if self.checkpoint is not None and offset < self.checkpoint:
            txn.below_checkpoint += 1
            if txn.first_below_checkpoint is None:
                txn.first_below_checkpoint = (path, position, offset)

    def _aborted_data_retained(self, txn: _OpenTxn, marker: _Marker) -> None:
        assert txn.first_below_checkpoint is not None
        path, position, offset = txn.first_below_checkpoint
        others = txn.below_checkpoint - 1
        self.problems.add(
            KIND_ABORTED_DATA_RETAINED,
            path,
            position,
            offset,
            f"a batch of producer {marker.producer_id}'s aborted transaction (ABORT marker at "
            f"offset {marker.offset}) is below the cleaner checkpoint {self.checkpoint}: the "
            "cleaner removes aborted records"
            + (f" ({others} more of its batches are there too)" if others else ""),
        )

    def finish(self, segments: Sequence[LogSegment], last_stable_offset: int) -> None:
        """Judge the ``.txnindex`` files against the markers found, and the transactions
        still open against the last stable offset."""
        for producer_id, txn in sorted(self.open.items(), key=lambda kv: kv[1].first_offset):
            if txn.first_offset < last_stable_offset:
                self.problems.add(
                    KIND_TXN_MARKER_MISSING,
                    txn.path,
                    txn.position,
                    txn.first_offset,
                    f"producer {producer_id}'s transactional data from offset "
                    f"{txn.first_offset} is below the last stable offset {last_stable_offset} "
                    "but no COMMIT or ABORT marker follows it: its outcome was removed",
                )
        indexed: set[tuple[int, int]] = set()
        for i, segment in enumerate(segments):
            next_base = segments[i + 1].base_offset if i + 1 < len(segments) else None
            entries = segment.txn_index.entries()
            for entry in entries:
                self._check_entry(segment, next_base, entry)
                indexed.add((entry.producer_id, entry.last_offset))
        for key, marker in sorted(self.aborts.items(), key=lambda kv: kv[0][1]):
            if key not in indexed and marker.txn is not None:
                self.problems.add(
                    KIND_TXN_INDEX_MISSING,
                    marker.path,
                    marker.position,
                    marker.offset,
                    f"producer {marker.producer_id}'s ABORT marker at offset {marker.offset} "
                    f"closes a transaction whose data (from offset {marker.txn.first_offset}) "
                    "is still in the log, but the segment's .txnindex has no entry for it: "
                    "read_committed readers would read the aborted records",
                )

    def _check_entry(self, segment: LogSegment, next_base: int | None, entry: AbortedTxn) -> None:
        path = segment.txn_index.path
        where = (
            f".txnindex entry of producer {entry.producer_id} [{entry.first_offset}, "
            f"{entry.last_offset}]"
        )
        above = next_base is not None and entry.last_offset >= next_base
        if entry.last_offset < segment.base_offset or above:
            upper = "the log end" if next_base is None else str(next_base)
            self.problems.add(
                KIND_TXN_INDEX_ENTRY,
                path,
                None,
                entry.last_offset,
                f"{where}: its lastOffset is outside the segment's offsets "
                f"[{segment.base_offset}, {upper})",
            )
            return
        marker = self.aborts.get((entry.producer_id, entry.last_offset))
        if marker is None:
            self.problems.add(
                KIND_TXN_INDEX_ENTRY,
                path,
                None,
                entry.last_offset,
                f"{where}: no ABORT marker of producer {entry.producer_id} is at offset "
                f"{entry.last_offset}",
            )
            return
        txn = marker.txn
        if txn is None:
            return  # its data was cleaned away: nothing left to compare
        if txn.first_offset < entry.first_offset:
            problem = (
                f"the transaction's data starts at offset {txn.first_offset}, below the "
                "entry's firstOffset: read_committed readers would read its first records"
            )
        elif txn.first_offset > entry.first_offset and (
            self.checkpoint is None or self.checkpoint <= entry.first_offset
        ):
            problem = (
                f"the transaction's data starts at offset {txn.first_offset} and nothing "
                f"cleaned offsets from {entry.first_offset}: the entry's firstOffset is wrong"
            )
        else:
            return
        self.problems.add(
            KIND_TXN_INDEX_ENTRY, path, None, entry.last_offset, f"{where}: {problem}"
        )


def _marker_type(columns: RecordColumns, row: int, stop: int) -> ControlRecordType | None:
    """COMMIT or ABORT for a control batch whose records are rows ``[row, stop)``; None
    otherwise."""
    if row >= stop:
        return None
    try:
        control_type = decode_control_key(columns.key(row)).type
    except CorruptRecordError:
        return None
    if control_type in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
        return control_type
    return None
