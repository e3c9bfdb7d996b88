"""The transaction index (``<base offset>.txnindex``): the aborted transactions of a segment.

One 34-byte big-endian entry per transaction whose ABORT marker lies in the segment::

    pos width field
      0   2  version             0 (a reader rejects a higher one)
      2   8  producerId
     10   8  firstOffset         the transaction's first offset
     18   8  lastOffset          the ABORT marker's offset
     26   8  lastStableOffset    the LSO once the marker was written

Entries are appended with strictly increasing ``lastOffset``; the file is not preallocated
(it exists only once a segment has an aborted transaction). A ``read_committed`` reader
collects the entries overlapping its fetch range and drops those producers' transactional
records between ``firstOffset`` and ``lastOffset``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from seglog.errors import CorruptIndexError

TXN_INDEX_ENTRY_SIZE = 34
TXN_INDEX_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
assert _ENTRY.size == TXN_INDEX_ENTRY_SIZE


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One ``.txnindex`` entry: an aborted transaction of ``producer_id``."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def encode_aborted_txn(txn: AbortedTxn) -> bytes:
    """The 34-byte entry (version 0)."""
    return _ENTRY.pack(
        TXN_INDEX_VERSION,
        txn.producer_id,
        txn.first_offset,
        txn.last_offset,
        txn.last_stable_offset,
    )


def decode_txn_index(data: bytes | bytearray | memoryview, *, path: str) -> list[AbortedTxn]:
    """Every entry of a ``.txnindex`` file's bytes.

    Raises ``CorruptIndexError`` (naming ``path`` and the position) when the size is not a
    multiple of 34 or an entry's version is above 0 (Kafka checks the version's high byte).
    """
    if len(data) % TXN_INDEX_ENTRY_SIZE:
        raise CorruptIndexError(
            f"transaction index size {len(data)} is not a multiple of {TXN_INDEX_ENTRY_SIZE}",
            position=len(data) - len(data) % TXN_INDEX_ENTRY_SIZE,
            path=path,
        )
    entries: list[AbortedTxn] = []
    for position in range(0, len(data), TXN_INDEX_ENTRY_SIZE):
        version, producer_id, first, last, lso = _ENTRY.unpack_from(data, position)
        if version != TXN_INDEX_VERSION:
            raise CorruptIndexError(
                f"transaction index entry has version {version}, only 0 is known",
                position=position,
                path=path,
            )
        entries.append(AbortedTxn(producer_id, first, last, lso))
    return entries
