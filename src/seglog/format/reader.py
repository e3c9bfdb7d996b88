"""Reading a buffer of log entries (a segment's bytes, or a fetch response's record set).

A ``.log`` file is record batches end to end: no header, no padding, no trailer. Each entry
starts with int64 offset + int32 size (12 bytes, ``LOG_OVERHEAD``) and has its magic at byte
16, which says whether it is a v2 batch or a legacy v0/v1 message.

:class:`BatchReader` yields every whole, valid entry with its position, then records how the
buffer ended in :attr:`BatchReader.end`:

* ``CLEAN``: the last entry ended exactly at the end of the buffer;
* ``TORN_TAIL``: the buffer ends inside an entry (fewer than 12 bytes left, or fewer than
  the entry's declared size). This is "need more bytes": a prefix of a valid buffer always
  ends this way, and recovery truncates a torn tail;
* ``CORRUPT``: the bytes at ``position`` cannot be a valid entry: a zero-filled tail (size 0
  with nothing but zeros after it, what preallocated files leave), an impossible size, an
  unknown magic, a CRC mismatch, a v2 batch whose last offset (baseOffset + lastOffsetDelta)
  is above int64's maximum, or offsets that go backwards.

A corrupt entry is never yielded. Positions are of the buffer plus ``base_position``, so a
reader over a slice of a file reports file positions. Bytes not covered by Kafka's CRC
(baseOffset, partitionLeaderEpoch) cannot be checked, except that offsets must increase.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterator
from dataclasses import dataclass, replace

from seglog.errors import CorruptRecordError
from seglog.format.batch import (
    LOG_OVERHEAD,
    MAGIC_V2,
    MIN_BATCH_LENGTH,
    RecordBatch,
    parse_batch_header,
)
from seglog.format.legacy import RECORD_OVERHEAD_V0, LegacyBatch, parse_legacy_entry

Buffer = bytes | bytearray | memoryview
Batch = RecordBatch | LegacyBatch

HEADER_SIZE_UP_TO_MAGIC = 17
MAX_BATCH_BYTES_DEFAULT = (1 << 31) - 1  # positions are int32 in Kafka's indexes
INT64_MAX = (1 << 63) - 1

_OFFSET_AND_SIZE = struct.Struct(">qi")


class EndKind(enum.Enum):
    """How a buffer of entries ended."""

    CLEAN = "clean"
    TORN_TAIL = "torn_tail"
    CORRUPT = "corrupt"


@dataclass(frozen=True, slots=True)
class ReadEnd:
    """Where and why reading stopped. ``position`` is the first byte not returned as data."""

    kind: EndKind
    position: int
    reason: str
    bytes_needed: int | None = None  # TORN_TAIL: bytes the torn entry still needs

    @property
    def is_clean(self) -> bool:
        """True when the buffer ended exactly at an entry boundary."""
        return self.kind is EndKind.CLEAN

    def to_error(self, path: str | None = None) -> CorruptRecordError:
        """This ending as a positioned error (for callers that must not accept it)."""
        return CorruptRecordError(self.reason, position=self.position, path=path)


class BatchReader:
    """Iterate the valid entries of ``buf[start:end]``; afterwards :attr:`end` says how it ended.

    ``verify_crc`` checks each entry's checksum (CRC-32C for v2, CRC-32 for legacy);
    ``check_offsets`` requires each entry's last offset to be above the previous one.
    """

    def __init__(
        self,
        buf: Buffer,
        *,
        start: int = 0,
        end: int | None = None,
        base_position: int = 0,
        verify_crc: bool = True,
        check_offsets: bool = True,
        max_batch_bytes: int = MAX_BATCH_BYTES_DEFAULT,
    ) -> None:
        self._buf = buf
        self._start = start
        self._stop = len(buf) if end is None else end
        self._base_position = base_position
        self._verify_crc = verify_crc
        self._check_offsets = check_offsets
        self._max_batch_bytes = max_batch_bytes
        self.end: ReadEnd | None = None
        self.valid_bytes = 0

    def __iter__(self) -> Iterator[Batch]:
        buf = self._buf
        stop = self._stop
        pos = self._start
        base = self._base_position - self._start
        last_offset = -1 << 63
        while True:
            remaining = stop - pos
            if remaining == 0:
                self._finish(EndKind.CLEAN, pos + base, "end of data")
                return
            if remaining < LOG_OVERHEAD:
                self._finish_short(pos, remaining, base, LOG_OVERHEAD)
                return
            offset, size = _OFFSET_AND_SIZE.unpack_from(buf, pos)
            if size < RECORD_OVERHEAD_V0:
                if size == 0 and not any(memoryview(buf)[pos:stop]):
                    reason = f"zero-filled tail of {remaining} bytes"
                else:
                    reason = f"impossible entry size {size} (below {RECORD_OVERHEAD_V0})"
                self._finish(EndKind.CORRUPT, pos + base, reason)
                return
            if size > self._max_batch_bytes:
                self._finish(
                    EndKind.CORRUPT,
                    pos + base,
                    f"entry size {size} is above the limit of {self._max_batch_bytes} bytes",
                )
                return
            if remaining < HEADER_SIZE_UP_TO_MAGIC:
                self._finish_short(pos, remaining, base, LOG_OVERHEAD + size)
                return
            magic = buf[pos + 16]
            if magic > MAGIC_V2:
                self._finish(EndKind.CORRUPT, pos + base, f"unknown magic byte {magic}")
                return
            if LOG_OVERHEAD + size > remaining:
                self._finish_short(pos, remaining, base, LOG_OVERHEAD + size)
                return
            batch: Batch
            try:
                if magic == MAGIC_V2:
                    if size < MIN_BATCH_LENGTH:
                        raise CorruptRecordError(
                            f"batch length {size} is below the v2 minimum {MIN_BATCH_LENGTH}"
                        )
                    batch = parse_batch_header(buf, pos)
                    if self._verify_crc:
                        batch.ensure_valid()
                    if batch.last_offset_delta < 0 or batch.records_count < 0:
                        raise CorruptRecordError(
                            f"negative lastOffsetDelta {batch.last_offset_delta} or record "
                            f"count {batch.records_count}"
                        )
                    if batch.base_offset > INT64_MAX - batch.last_offset_delta:
                        raise CorruptRecordError(
                            f"baseOffset {batch.base_offset} + lastOffsetDelta "
                            f"{batch.last_offset_delta} overflows int64"
                        )
                else:
                    batch = parse_legacy_entry(buf, pos, stop)
                    if self._verify_crc:
                        batch.ensure_valid()
            except CorruptRecordError as exc:
                self._finish(EndKind.CORRUPT, pos + base, exc.reason)
                return
            if self._check_offsets and offset <= last_offset:
                self._finish(
                    EndKind.CORRUPT,
                    pos + base,
                    f"offset {offset} is not above the previous entry's last offset {last_offset}",
                )
                return
            last_offset = batch.last_offset
            if base:
                batch = _rebase(batch, pos + base)
            pos += LOG_OVERHEAD + size
            self.valid_bytes = pos - self._start
            yield batch

    def _finish_short(self, pos: int, remaining: int, base: int, needed: int) -> None:
        self._finish(
            EndKind.TORN_TAIL,
            pos + base,
            f"torn tail: {remaining} bytes of an entry that needs {needed}",
            needed - remaining,
        )

    def _finish(
        self, kind: EndKind, position: int, reason: str, bytes_needed: int | None = None
    ) -> None:
        self.end = ReadEnd(kind, position, reason, bytes_needed)

    def batches(self) -> list[Batch]:
        """Every valid entry as a list (then :attr:`end` is set)."""
        return list(self)


def _rebase(batch: Batch, position: int) -> Batch:
    """The same batch reporting ``position`` (the file position) instead of the buffer's."""
    return replace(batch, position=position)


def read_batches(buf: Buffer, **options: int | bool) -> tuple[list[Batch], ReadEnd]:
    """All valid entries of ``buf`` and how the buffer ended (see :class:`BatchReader`)."""
    reader = BatchReader(buf, **options)  # type: ignore[arg-type]
    batches = reader.batches()
    assert reader.end is not None
    return batches, reader.end


def iter_batches_strict(buf: Buffer, *, path: str | None = None) -> Iterator[Batch]:
    """Yield every entry, raising ``CorruptRecordError`` unless the buffer ends cleanly."""
    reader = BatchReader(buf)
    yield from reader
    assert reader.end is not None
    if not reader.end.is_clean:
        raise reader.end.to_error(path)
