"""Index files of a segment: ``.index``, ``.timeindex`` and ``.txnindex`` entries.

Pure bytes <-> values; the files themselves are opened by ``seglog.storage``. All integers
are big-endian (the files are memory-mapped Java ``ByteBuffer``s).

Offset index (``.index``), 8 bytes per entry::

    pos width field
      0   4  relativeOffset  int32 = absolute offset - segment base offset (a batch's LAST offset)
      4   4  position        int32 = byte position in the .log of the start of that batch

Time index (``.timeindex``), 12 bytes per entry::

    pos width field
      0   8  timestamp       int64, the largest timestamp seen in the segment up to the batch
      8   4  relativeOffset  int32, that batch's last offset - base offset

Transaction index (``.txnindex``), 34 bytes per aborted transaction::

    pos width field
      0   2  version         int16 (0; readers check the high byte and reject > 0)
      2   8  producerId      int64
     10   8  firstOffset     int64
     18   8  lastOffset      int64 (offset of the ABORT marker)
     26   8  lastStableOffset int64

Invariants of a well-formed (trimmed) index, all checked by the ``validate_*`` functions:

* the file size is a whole number of entries (Kafka trusts ``floor(size / entry size)``);
* offset index: relative offsets >= 0 and strictly increasing, positions >= 0 and
  non-decreasing;
* time index: relative offsets >= 0 and non-decreasing, timestamps strictly increasing (an
  entry is only written when the timestamp grows).

Preallocated files: while a segment is active Kafka sizes its index files to
``segment.index.bytes`` and the unused tail is zeros. Kafka's readers stop at the **first
entry i > 0 whose relative offset is 0** (a real entry after the first always has a relative
offset > 0), and so do the parsers here unless told otherwise. The sanity checks mirror
Kafka's ``sanityCheck``, which look at the whole file, zero tail included.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from seglog.errors import CorruptIndexError

Buffer = bytes | bytearray | memoryview

OFFSET_INDEX_ENTRY_BYTES = 8
TIME_INDEX_ENTRY_BYTES = 12
TXN_INDEX_ENTRY_BYTES = 34
TXN_INDEX_CURRENT_VERSION = 0

INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_TXN_ENTRY = struct.Struct(">hqqqq")


@dataclass(frozen=True, slots=True)
class OffsetIndexEntry:
    """An offset index entry with its absolute ``offset`` and the batch's file ``position``."""

    offset: int
    position: int


@dataclass(frozen=True, slots=True)
class TimeIndexEntry:
    """A time index entry: ``timestamp`` and the absolute ``offset`` of the batch it ends at."""

    timestamp: int
    offset: int


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """A transaction index entry: one aborted transaction whose marker is in the segment."""

    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


# --- sizes ------------------------------------------------------------------------------------


def entry_count(size_bytes: int, entry_bytes: int) -> int:
    """Entries Kafka sees in a file of ``size_bytes``: ``floor(size / entry size)``."""
    return size_bytes // entry_bytes


def _check_size(size: int, entry_bytes: int, kind: str, path: str | None) -> None:
    if size % entry_bytes:
        raise CorruptIndexError(
            f"{kind} size {size} is not a multiple of the {entry_bytes}-byte entry size",
            position=size - size % entry_bytes,
            path=path,
        )


# --- offset index -----------------------------------------------------------------------------


def parse_offset_index(
    buf: Buffer,
    base_offset: int,
    *,
    path: str | None = None,
    stop_at_zero_tail: bool = True,
) -> list[OffsetIndexEntry]:
    """All entries of an offset index buffer (up to Kafka's zero-tail stop unless told not to).

    Raises :class:`CorruptIndexError` when the size is not a multiple of 8 bytes; slice the
    buffer to ``entry_count(len(buf), 8) * 8`` first to read such a file Kafka's way.
    """
    _check_size(len(buf), OFFSET_INDEX_ENTRY_BYTES, "offset index", path)
    entries: list[OffsetIndexEntry] = []
    append = entries.append
    for i, (relative_offset, position) in enumerate(_OFFSET_ENTRY.iter_unpack(buf)):
        if stop_at_zero_tail and relative_offset == 0 and i > 0:
            break
        append(OffsetIndexEntry(base_offset + relative_offset, position))
    return entries


def encode_offset_entry(relative_offset: int, position: int) -> bytes:
    """One raw 8-byte offset index entry (no ordering checks: for tests and writers)."""
    if not 0 <= relative_offset <= INT32_MAX:
        raise ValueError(f"relative offset {relative_offset} is outside [0, 2**31 - 1]")
    if not 0 <= position <= INT32_MAX:
        raise ValueError(f"position {position} is outside [0, 2**31 - 1]")
    return _OFFSET_ENTRY.pack(relative_offset, position)


def encode_offset_index(entries: Sequence[OffsetIndexEntry], base_offset: int) -> bytes:
    """A trimmed offset index holding ``entries``; raises ``ValueError`` if they break the
    invariants (offsets strictly increasing and within int32 of ``base_offset``, positions
    non-decreasing)."""
    out = bytearray()
    previous: OffsetIndexEntry | None = None
    for entry in entries:
        if previous is not None and (
            entry.offset <= previous.offset or entry.position < previous.position
        ):
            raise ValueError(f"offset index entry {entry} does not follow {previous}")
        out += encode_offset_entry(entry.offset - base_offset, entry.position)
        previous = entry
    return bytes(out)


def lookup_offset(
    entries: Sequence[OffsetIndexEntry], base_offset: int, target_offset: int
) -> OffsetIndexEntry:
    """Kafka's ``OffsetIndex.lookup``: the entry with the largest offset <= target, else
    ``(base_offset, 0)``."""
    i = bisect.bisect_right(entries, target_offset, key=lambda e: e.offset)
    return entries[i - 1] if i else OffsetIndexEntry(base_offset, 0)


def validate_offset_index(
    entries: Sequence[OffsetIndexEntry], base_offset: int, *, path: str | None = None
) -> None:
    """Raise :class:`CorruptIndexError` unless ``entries`` keep the offset index invariants."""
    previous: OffsetIndexEntry | None = None
    for i, entry in enumerate(entries):
        position = i * OFFSET_INDEX_ENTRY_BYTES
        if entry.offset < base_offset or entry.position < 0:
            raise CorruptIndexError(
                f"entry {i} (offset {entry.offset}, position {entry.position}) is below the "
                f"base offset {base_offset} or has a negative position",
                position=position,
                path=path,
            )
        if previous is not None and entry.offset <= previous.offset:
            raise CorruptIndexError(
                f"entry {i} offset {entry.offset} is not above the previous {previous.offset}",
                position=position,
                path=path,
            )
        if previous is not None and entry.position < previous.position:
            raise CorruptIndexError(
                f"entry {i} position {entry.position} is below the previous {previous.position}",
                position=position,
                path=path,
            )
        previous = entry


def sanity_check_offset_index(buf: Buffer, base_offset: int, *, path: str | None = None) -> None:
    """Kafka's ``OffsetIndex.sanityCheck`` over the whole file (zero tail included)."""
    size = len(buf)
    entries = entry_count(size, OFFSET_INDEX_ENTRY_BYTES)
    if entries:
        relative_offset, _ = _OFFSET_ENTRY.unpack_from(buf, (entries - 1) * 8)
        last_offset = base_offset + relative_offset
        if last_offset < base_offset:
            raise CorruptIndexError(
                f"corrupt index: non-zero size but the last offset is {last_offset} which is "
                f"less than the base offset {base_offset}",
                position=(entries - 1) * OFFSET_INDEX_ENTRY_BYTES,
                path=path,
            )
    if size % OFFSET_INDEX_ENTRY_BYTES:
        raise CorruptIndexError(
            f"corrupt index: found {size} bytes which is not a multiple of "
            f"{OFFSET_INDEX_ENTRY_BYTES}",
            path=path,
        )


# --- time index -------------------------------------------------------------------------------


def parse_time_index(
    buf: Buffer,
    base_offset: int,
    *,
    path: str | None = None,
    stop_at_zero_tail: bool = True,
) -> list[TimeIndexEntry]:
    """All entries of a time index buffer (up to Kafka's zero-tail stop unless told not to).

    Raises :class:`CorruptIndexError` when the size is not a multiple of 12 bytes.
    """
    _check_size(len(buf), TIME_INDEX_ENTRY_BYTES, "time index", path)
    entries: list[TimeIndexEntry] = []
    append = entries.append
    for i, (timestamp, relative_offset) in enumerate(_TIME_ENTRY.iter_unpack(buf)):
        if stop_at_zero_tail and relative_offset == 0 and i > 0:
            break
        append(TimeIndexEntry(timestamp, base_offset + relative_offset))
    return entries


def encode_time_entry(timestamp: int, relative_offset: int) -> bytes:
    """One raw 12-byte time index entry (no ordering checks: for tests and writers)."""
    if not INT64_MIN <= timestamp <= INT64_MAX:
        raise ValueError(f"timestamp {timestamp} is outside int64")
    if not 0 <= relative_offset <= INT32_MAX:
        raise ValueError(f"relative offset {relative_offset} is outside [0, 2**31 - 1]")
    return _TIME_ENTRY.pack(timestamp, relative_offset)


def encode_time_index(entries: Sequence[TimeIndexEntry], base_offset: int) -> bytes:
    """A trimmed time index holding ``entries``; raises ``ValueError`` unless timestamps are
    strictly increasing and offsets non-decreasing and within int32 of ``base_offset``."""
    out = bytearray()
    previous: TimeIndexEntry | None = None
    for entry in entries:
        if previous is not None and (
            entry.timestamp <= previous.timestamp or entry.offset < previous.offset
        ):
            raise ValueError(f"time index entry {entry} does not follow {previous}")
        out += encode_time_entry(entry.timestamp, entry.offset - base_offset)
        previous = entry
    return bytes(out)


def validate_time_index(
    entries: Sequence[TimeIndexEntry], base_offset: int, *, path: str | None = None
) -> None:
    """Raise :class:`CorruptIndexError` unless ``entries`` keep the time index invariants."""
    previous: TimeIndexEntry | None = None
    for i, entry in enumerate(entries):
        position = i * TIME_INDEX_ENTRY_BYTES
        if entry.offset < base_offset:
            raise CorruptIndexError(
                f"entry {i} offset {entry.offset} is below the base offset {base_offset}",
                position=position,
                path=path,
            )
        if previous is not None and entry.timestamp <= previous.timestamp:
            raise CorruptIndexError(
                f"entry {i} timestamp {entry.timestamp} is not above the previous "
                f"{previous.timestamp}",
                position=position,
                path=path,
            )
        if previous is not None and entry.offset < previous.offset:
            raise CorruptIndexError(
                f"entry {i} offset {entry.offset} is below the previous {previous.offset}",
                position=position,
                path=path,
            )
        previous = entry


def sanity_check_time_index(buf: Buffer, base_offset: int, *, path: str | None = None) -> None:
    """Kafka's ``TimeIndex.sanityCheck`` over the whole file (zero tail included)."""
    size = len(buf)
    entries = entry_count(size, TIME_INDEX_ENTRY_BYTES)
    if entries:
        first_timestamp, _ = _TIME_ENTRY.unpack_from(buf, 0)
        last_position = (entries - 1) * TIME_INDEX_ENTRY_BYTES
        last_timestamp, relative_offset = _TIME_ENTRY.unpack_from(buf, last_position)
        if last_timestamp < first_timestamp:
            raise CorruptIndexError(
                f"corrupt time index: non-zero size but the last timestamp is {last_timestamp} "
                f"which is less than the first timestamp {first_timestamp}",
                position=last_position,
                path=path,
            )
        last_offset = base_offset + relative_offset
        if last_offset < base_offset:
            raise CorruptIndexError(
                f"corrupt time index: non-zero size but the last offset is {last_offset} which "
                f"is less than the base offset {base_offset}",
                position=last_position,
                path=path,
            )
    if size % TIME_INDEX_ENTRY_BYTES:
        raise CorruptIndexError(
            f"corrupt time index: found {size} bytes which is not a multiple of "
            f"{TIME_INDEX_ENTRY_BYTES}",
            path=path,
        )


# --- transaction index ------------------------------------------------------------------------


def parse_txn_index(buf: Buffer, *, path: str | None = None) -> list[AbortedTxn]:
    """All aborted transactions of a ``.txnindex`` buffer (never preallocated: no zero tail).

    Raises :class:`CorruptIndexError` for a size that is not a multiple of 34 bytes or an
    entry whose version (high byte of the int16, as Kafka checks it) is above 0.
    """
    _check_size(len(buf), TXN_INDEX_ENTRY_BYTES, "transaction index", path)
    entries = []
    for i, fields in enumerate(_TXN_ENTRY.iter_unpack(buf)):
        version = fields[0]
        if (version >> 8) > TXN_INDEX_CURRENT_VERSION:
            raise CorruptIndexError(
                f"aborted transaction entry {i} has unknown version {version}",
                position=i * TXN_INDEX_ENTRY_BYTES,
                path=path,
            )
        entries.append(AbortedTxn(*fields))
    return entries


def encode_txn_index(entries: Sequence[AbortedTxn]) -> bytes:
    """A transaction index holding ``entries`` (34 bytes each)."""
    return b"".join(
        _TXN_ENTRY.pack(
            e.version, e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset
        )
        for e in entries
    )
