"""Read one piece of one Kafka tiered-storage segment as Arrow batches (runs on executors).

A piece is "offsets ``start..last`` of segment S" (:class:`RemotePieceRequest`, picklable:
it carries the :class:`~seglog.storage.remote_files.RemoteFiles` view, whose ``pyarrow.fs``
file system pickles). The segment's original bytes come window by window
(:func:`seglog.storage.tiered_segments.iter_segment_bytes`: 8 MiB ranged reads, zstd chunks
decompressed); each window plus the torn tail of the previous one is decoded by the same
columnar decoder as a log directory (:func:`seglog.format.columnar.scan_columns`) and turned
into rows by the same builder as :mod:`seglog.spark.arrow_reader`, so the rows are exactly
those a read of the original log gives. The read stops at the first batch past ``last``.
A segment read from its start (the piece may begin mid-segment: its earlier rows are
decoded and dropped; seeking by the offset index is left for later).

Damage raises :class:`~seglog.errors.CorruptRecordError` naming the object, never stops
silently: a torn tail at the end of the segment, a corrupt batch anywhere. With the
partition's aborted transactions (``read_committed``), their batches' rows are dropped
(:meth:`~seglog.core.aborted_batches.AbortedIntervals.without_aborted_rows`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from seglog.core.aborted_batches import AbortedIntervals
from seglog.errors import CorruptRecordError
from seglog.format.columnar import scan_columns
from seglog.format.reader import EndKind
from seglog.format.txn_index import AbortedTxn
from seglog.spark.arrow_reader import (
    BATCH_ROWS_DEFAULT,
    RangeRequest,
    _BatchBuilder,
    _OrderCheck,
)
from seglog.storage.remote_files import READ_WINDOW_BYTES, RemoteFiles
from seglog.storage.tiered_layouts import RemoteSegment
from seglog.storage.tiered_segments import iter_segment_bytes


@dataclass(frozen=True, slots=True)
class RemotePieceRequest:
    """Offsets ``start..last`` (inclusive; ``last`` None: to the segment's end) of ``segment``."""

    files: RemoteFiles
    segment: RemoteSegment
    start: int
    last: int | None
    include_headers: bool = False
    #: read_committed: the partition's aborted transactions (their batches' rows are dropped)
    aborted: tuple[AbortedTxn, ...] = ()


def read_remote_piece(
    request: RemotePieceRequest,
    *,
    window: int = READ_WINDOW_BYTES,
    batch_rows: int = BATCH_ROWS_DEFAULT,
) -> Iterator[pa.RecordBatch]:
    """The rows of ``request`` (module docstring)."""
    segment = request.segment
    end = (1 << 63) - 1 if request.last is None else request.last + 1
    if request.start >= end:
        return
    name = request.files.describe(segment.log_path)
    builder = _BatchBuilder(
        RangeRequest(
            log_dirs=(),
            config_path=None,
            topic=segment.topic,
            partition=segment.partition,
            start=request.start,
            end=end,
            include_headers=request.include_headers,
        ),
        batch_rows,
    )
    order = _OrderCheck(f"{segment.topic}-{segment.partition}", name)
    aborted = AbortedIntervals(request.aborted)
    pending = b""
    consumed = 0  # segment position of pending[0]
    for window_bytes in iter_segment_bytes(request.files, segment, window):
        data = pending + window_bytes if pending else window_bytes
        columns = scan_columns(data)
        if columns.end.kind is EndKind.CORRUPT:
            raise CorruptRecordError(
                columns.end.reason, position=consumed + columns.end.position, path=name
            )
        if len(columns.batches):
            order.check(columns, request.start, in_copy=False)
            last_offset = int(columns.batches.last_offset[-1])
            if aborted:
                columns = aborted.without_aborted_rows(columns)
            yield from builder.batches(columns, request.start, end)
            if last_offset + 1 >= end:
                return
        pending = bytes(data[columns.end.position :])
        consumed += columns.end.position
    if pending:
        raise CorruptRecordError(
            f"the segment ends inside a batch ({len(pending)} bytes left)",
            position=consumed,
            path=name,
        )
