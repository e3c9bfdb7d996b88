"""The fast path of ``seglog consume``: whole chunks decoded as columns, written in one call.

:func:`fast_lines` yields, for one partition, the same bytes as rendering each record of
:meth:`seglog.engine.log.Log.iter_records` one by one (the *slow path*), in large pieces:

* each segment is read ``CHUNK_BYTES`` at a time and decoded by
  :func:`seglog.format.columnar.scan_columns` (numpy columns, no object per record);
* ``--format json``: keys and values are decoded as UTF-8 per span, one dict per record is
  handed to orjson in a single call per chunk, and the array it returns becomes JSON lines by
  turning each ``},{"topic"`` into ``}\\n{"topic"`` (safe: inside a JSON string a ``"`` is
  always escaped, so that byte sequence only occurs between two records). orjson and the
  slow path's ``json.dumps(ensure_ascii=False, separators=(",", ":"))`` escape strings
  identically (a test checks every code point);
* plain text (value, or key, separator, value): spans joined by ``bytes.join``.

**Identical output, always.** Before a chunk's records are written, every check of the slow
path's record scan is redone on the whole chunk, vectorised: a clean end (or a torn tail that
is only the chunk's cut), v2 batches only, offsets inside the segment, above the previous
batch and rising row by row, ``partitionLeaderEpoch`` never below -1 nor going down, no gap
when gaps are damage, the log start offset not past the reader. When any check fails,
when a malformed record raises, or when a chunk holds something the fast renderers do not
cover (headers, bytes that are not UTF-8), the fast path hands over: it stops, and the
caller reads the partition again through the slow path from the same first offset, dropping
the records already written (counted). The slow path then writes the rest, and reports the
damage exactly as it always does (same message, same point in the output). Records written
by the fast path were all before the hand-over point, so the output is the slow path's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from seglog.engine.log import Log
from seglog.errors import CorruptRecordError
from seglog.format.batch import MAGIC_V2
from seglog.format.columnar import RecordColumns, scan_columns
from seglog.format.reader import EndKind

CHUNK_BYTES = 8 * 1024 * 1024
ROWS_PER_DUMP = 20_000  # records per orjson call (bounded memory per piece)
_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
_NO_EPOCH = -1


@dataclass(slots=True)
class FastState:
    """How far the fast path got: ``records`` written, and whether it handed over."""

    records: int = 0
    handed_over: bool = False
    limit_reached: bool = False
    # The scan's running checks across chunks.
    previous_last: int | None = None
    max_epoch: int = _NO_EPOCH
    pieces: list[bytes] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class FastRequest:
    """One partition's read: offsets ``[first, end)``, at most ``limit`` records."""

    topic: str
    partition: int
    first: int
    end: int
    limit: int | None
    check_gaps: bool
    kind: str  # "json" or "text"
    print_key: bool = False
    key_separator: bytes = b"\t"
    null_literal: bytes = b"null"


def fast_lines(log: Log, request: FastRequest, state: FastState) -> Iterator[bytes]:
    """The output bytes of ``request``, chunk by chunk (module docstring); sets
    ``state.handed_over`` and stops when the slow path must take over."""
    if request.first >= request.end or request.limit == 0:
        return
    segments = log.segments
    bases = [s.base_offset for s in segments]
    index = max(0, int(np.searchsorted(bases, request.first, side="right")) - 1)
    position: int | None = None
    while index < len(segments):
        segment = segments[index]
        try:
            location = segment.translate_offset(request.first)
        except CorruptRecordError:
            state.handed_over = True
            return
        if location is not None:
            position = location.position
            break
        index += 1
    if position is None:
        return
    cursor = request.first
    while index < len(segments) and cursor < request.end:
        segment = segments[index]
        next_base = segments[index + 1].base_offset if index + 1 < len(segments) else None
        size = segment.size
        while position < size and cursor < request.end:
            if cursor < log.log_start_offset:
                state.handed_over = True
                return
            wanted = min(CHUNK_BYTES, size - position)
            data = segment.read_at(position, wanted)
            try:
                columns = scan_columns(data, base_position=position)
            except CorruptRecordError:
                state.handed_over = True
                return
            step = _chunk_step(columns, data, wanted, position, size)
            if step is None or not _checks_pass(
                columns, segment.base_offset, next_base, request, state
            ):
                state.handed_over = True
                return
            piece = _render(columns, data, request, state)
            if piece is None:
                state.handed_over = True
                return
            if piece:
                yield piece
            last = int(columns.batches.last_offset[-1])
            cursor = max(cursor, last + 1)
            if state.limit_reached:
                return
            position = step
        index += 1
        position = 0


def _chunk_step(
    columns: RecordColumns, data: bytes, wanted: int, position: int, size: int
) -> int | None:
    """Where the next chunk starts, or None when the chunk's ending is not plain."""
    if len(columns.batches) == 0 or len(data) < wanted:
        return None
    end = columns.end
    if end.kind is EndKind.CLEAN:
        return end.position
    if end.kind is EndKind.TORN_TAIL and position + len(data) < size:
        return end.position  # the chunk's cut: read on from there
    return None


def _checks_pass(
    columns: RecordColumns,
    segment_base: int,
    next_base: int | None,
    request: FastRequest,
    state: FastState,
) -> bool:
    """The slow path's placement, order, epoch and gap checks, on a whole chunk."""
    batches = columns.batches
    if (batches.magic != MAGIC_V2).any():
        return False
    base, last = batches.base_offset, batches.last_offset
    if int(base[0]) < segment_base or (next_base is not None and int(last.max()) >= next_base):
        return False
    previous = np.empty_like(last)
    previous[1:] = last[:-1]
    has_previous = np.ones(len(last), dtype=bool)
    if state.previous_last is None:
        has_previous[0] = False
        previous[0] = 0
    else:
        previous[0] = state.previous_last
    if (has_previous & (base <= previous)).any():
        return False
    if request.check_gaps and (has_previous & (base != previous + 1)).any():
        return False
    epochs = batches.partition_leader_epoch.astype(np.int64)
    if (epochs < _NO_EPOCH).any():
        return False
    running = np.maximum.accumulate(np.concatenate(([state.max_epoch], epochs)))[:-1]
    if ((epochs != _NO_EPOCH) & (epochs < running)).any():
        return False
    offsets = columns.offset
    if len(offsets):
        row_batch = columns.batch_index
        if (offsets < base[row_batch]).any() or (offsets > last[row_batch]).any():
            return False
        if len(offsets) > 1 and (np.diff(offsets) <= 0).any():
            return False
    state.previous_last = int(last[-1])
    state.max_epoch = int(max(state.max_epoch, int(epochs.max())))
    return True


def _selected_rows(columns: RecordColumns, request: FastRequest, state: FastState) -> slice:
    offsets = columns.offset
    low = int(np.searchsorted(offsets, request.first, side="left"))
    high = int(np.searchsorted(offsets, request.end, side="left"))
    if request.limit is not None:
        room = request.limit - state.records
        if high - low >= room:
            high = low + room
            state.limit_reached = True
    return slice(low, high)


def _render(
    columns: RecordColumns, data: bytes, request: FastRequest, state: FastState
) -> bytes | None:
    """The chunk's output, or None when it holds what only the slow path renders."""
    rows = _selected_rows(columns, request, state)
    if rows.stop <= rows.start:
        return b""
    if (columns.header_count[rows] != 0).any():
        return None
    raw = data if columns.is_zero_copy else columns.data.tobytes()
    key_position = columns.key_position[rows].tolist()
    key_length = columns.key_length[rows].tolist()
    value_position = columns.value_position[rows].tolist()
    value_length = columns.value_length[rows].tolist()
    if request.kind == "json":
        piece = _json(
            columns, rows, raw, key_position, key_length, value_position, value_length, request
        )
    else:
        piece = _text(raw, key_position, key_length, value_position, value_length, request)
    if piece is not None:
        state.records += rows.stop - rows.start
    return piece


def _spans_text(raw: bytes, positions: list[int], lengths: list[int]) -> list[str | None] | None:
    try:
        return [
            None if length < 0 else raw[start : start + length].decode()
            for start, length in zip(positions, lengths, strict=True)
        ]
    except UnicodeDecodeError:
        return None


def _json(
    columns: RecordColumns,
    rows: slice,
    raw: bytes,
    key_position: list[int],
    key_length: list[int],
    value_position: list[int],
    value_length: list[int],
    request: FastRequest,
) -> bytes | None:
    keys = _spans_text(raw, key_position, key_length)
    values = _spans_text(raw, value_position, value_length)
    if keys is None or values is None:
        return None
    batch_index = columns.batch_index[rows]
    log_append = columns.batches.is_log_append_time
    timestamps = columns.timestamp[rows]
    if log_append.any():
        appended = log_append[batch_index]
        timestamps = np.where(appended, columns.batches.max_timestamp[batch_index], timestamps)
        types = [_TIMESTAMP_TYPES[t] for t in appended.astype(np.int8).tolist()]
    else:
        types = [_TIMESTAMP_TYPES[0]] * len(keys)
    topic, partition = request.topic, request.partition
    headers: dict[str, Any] = {}
    objects = [
        {
            "topic": topic,
            "partition": partition,
            "offset": offset,
            "timestamp": timestamp,
            "timestampType": kind,
            "key": key,
            "value": value,
            "headers": headers,
        }
        for offset, timestamp, kind, key, value in zip(
            columns.offset[rows].tolist(), timestamps.tolist(), types, keys, values, strict=True
        )
    ]
    pieces = []
    for begin in range(0, len(objects), ROWS_PER_DUMP):
        body = orjson.dumps(objects[begin : begin + ROWS_PER_DUMP])
        pieces.append(body[1:-1].replace(b'},{"topic"', b'}\n{"topic"'))
        pieces.append(b"\n")
    return b"".join(pieces)


def _text(
    raw: bytes,
    key_position: list[int],
    key_length: list[int],
    value_position: list[int],
    value_length: list[int],
    request: FastRequest,
) -> bytes:
    null = request.null_literal
    values = [
        null if length < 0 else raw[start : start + length]
        for start, length in zip(value_position, value_length, strict=True)
    ]
    if request.print_key:
        separator = request.key_separator
        keys = [
            null if length < 0 else raw[start : start + length]
            for start, length in zip(key_position, key_length, strict=True)
        ]
        lines = [key + separator + value for key, value in zip(keys, values, strict=True)]
        return b"\n".join(lines) + b"\n"
    return b"\n".join(values) + b"\n"
