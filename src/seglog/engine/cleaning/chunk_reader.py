"""Reading a segment for the cleaner: whole batches, in bounded chunks, as columns.

One reusable buffer of ``read_chunk_bytes`` (Kafka's ``log.cleaner.io.buffer.size`` role);
a batch larger than it grows the buffer to exactly that batch (Kafka's rule), up to
``max_read_chunk_bytes``, past which the log is uncleanable. Every chunk is CRC-checked and
scanned into :class:`~seglog.format.columnar.RecordColumns`, control batches' records (the
transaction markers) included, so a kept marker can be rewritten; damage raises
:class:`~seglog.errors.CorruptRecordError` naming the file and position, never a silent stop.
Every byte read is accounted to the shared :class:`~seglog.engine.cleaning.throttler.Throttler`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator

import numpy as np

from seglog.engine.cleaning.errors import UncleanableLogError
from seglog.engine.cleaning.throttler import Throttler
from seglog.errors import CorruptRecordError
from seglog.format.columnar import RecordColumns, scan_columns
from seglog.format.reader import EndKind
from seglog.storage.segment import LogSegment

READ_CHUNK_BYTES = 8 * 1024 * 1024
LOG_OVERHEAD = 12  # offset (8) + size (4) before every batch
_SIZE_FIELD = struct.Struct(">i")


class ChunkReader:
    """Chunks of whole batches of a segment; ``consumed`` is the bytes the last one covered."""

    def __init__(
        self,
        throttler: Throttler,
        *,
        read_chunk_bytes: int = READ_CHUNK_BYTES,
        max_read_chunk_bytes: int = 64 * 1024 * 1024,
        use_numba: bool,
    ) -> None:
        self.throttler = throttler
        self.read_chunk_bytes = read_chunk_bytes
        self.max_read_chunk_bytes = max(max_read_chunk_bytes, read_chunk_bytes)
        self.use_numba = use_numba
        self.buffer = np.empty(read_chunk_bytes, dtype=np.uint8)
        self.consumed = 0

    def reset_buffer(self) -> None:
        """Go back to the configured buffer size (after one big batch grew it)."""
        if len(self.buffer) != self.read_chunk_bytes:
            self.buffer = np.empty(self.read_chunk_bytes, dtype=np.uint8)

    def chunks(
        self, segment: LogSegment, position: int, check_done: Callable[[], None]
    ) -> Iterator[tuple[int, RecordColumns]]:
        """Yield (position, columns) for whole batches of ``segment`` from ``position`` on,
        read in bounded chunks; ``consumed`` is the bytes each chunk covered."""
        size = segment.size
        while position < size:
            check_done()
            want = min(len(self.buffer), size - position)
            view = memoryview(self.buffer)[:want]  # type: ignore[arg-type]
            got = segment.read_into(position, view)
            self.throttler.maybe_throttle(got)
            if got < want:
                # The .log is shorter than the bytes the segment holds (cut under it): the
                # batch at ``position`` cannot be whole (LogCleanerTest.
                # testCorruptMessageSizeLargerThanBytesAvailable expects a corrupt record).
                raise CorruptRecordError(
                    f"the file ends {got} bytes after this batch boundary, before the "
                    f"segment's end at position {size}: a batch is larger than the bytes left",
                    position=position,
                    path=str(segment.log_path),
                )
            chunk = self.buffer[:got]
            columns = scan_columns(
                chunk,
                verify_crc=True,
                include_control=True,
                base_position=position,
                use_numba=self.use_numba,
            )
            end = columns.end
            consumed = (end.position - position) if end.kind is not EndKind.CLEAN else got
            if end.kind is EndKind.CORRUPT:
                raise CorruptRecordError(
                    f"{end.reason} while cleaning",
                    position=end.position,
                    path=str(segment.log_path),
                )
            if consumed == 0:
                self._grow_buffer(segment, position)
                continue
            if end.kind is EndKind.TORN_TAIL and position + got >= size and consumed < got:
                raise CorruptRecordError(
                    "torn batch at the end of a closed segment",
                    position=end.position,
                    path=str(segment.log_path),
                )
            self.consumed = consumed
            yield position, columns
            position += consumed

    def _grow_buffer(self, segment: LogSegment, position: int) -> None:
        """A batch larger than the read buffer: grow to exactly its size (Kafka's rule)."""
        head = bytearray(LOG_OVERHEAD)
        segment.read_into(position, memoryview(head))
        (size,) = _SIZE_FIELD.unpack_from(head, 8)
        need = size + LOG_OVERHEAD
        if size <= 0 or need <= len(self.buffer):
            raise CorruptRecordError(
                f"cannot read the batch (size field {size})",
                position=position,
                path=str(segment.log_path),
            )
        if need > segment.size - position:
            raise CorruptRecordError(
                f"batch of {need} bytes runs past the end of the segment",
                position=position,
                path=str(segment.log_path),
            )
        if need > self.max_read_chunk_bytes:
            raise UncleanableLogError(
                f"batch of {need} bytes at position {position} of {segment.log_path} is larger "
                f"than the cleaner's maximum read buffer ({self.max_read_chunk_bytes} bytes)"
            )
        self.buffer = np.empty(need, dtype=np.uint8)
