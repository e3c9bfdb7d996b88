"""The fast path of ``seglog consume``: whole chunks decoded as columns, written in one call.

:func:`fast_lines` yields, for one partition, the same bytes as rendering each record of
:meth:`seglog.engine.log.Log.iter_records` one by one (the *slow path*), in large pieces:

* each segment is read ``CHUNK_BYTES`` at a time and decoded by
  :func:`seglog.format.columnar.scan_columns` (numpy columns, no object per record);
* ``--format json``: the lines of a chunk are written by one compiled pass,
  :func:`seglog.kernels.json_lines.json_lines_nb`, straight from the columns into one output
  buffer: keys, values and headers escaped as the slow path's ``json.dumps(ensure_ascii=
  False)`` does, bytes that are not UTF-8 (and repeated header keys) as the slow path's
  ``*_base64`` fields. The kernel releases the GIL and runs in a thread one chunk ahead:
  while it renders chunk N, the caller writes chunk N - 1 and the next chunk is read and
  scanned. Two output buffers are used in turn, each reused from chunk to chunk (its pages
  are touched once), and a piece is yielded as a view of one, valid until the piece after
  it has been asked for (the caller writes it at once). With numba disabled
  (``SEGLOG_DISABLE_NUMBA=1``) orjson builds the lines instead
  (:mod:`seglog.cli.consume_fast_orjson`), handing headers and bytes that are not UTF-8 over
  to the slow path;
* plain text (value, or key, separator, value): spans joined by ``bytes.join``;
* ``read_committed``: the caller ends the range at the last stable offset and passes the
  range's aborted transactions; each chunk's aborted batches lose their records before the
  checks (:meth:`~seglog.core.aborted_batches.AbortedIntervals.without_aborted_rows`), as the
  slow path leaves them out.

**Identical output, always.** Before a chunk's records are written, every check of the slow
path's record scan is redone on the whole chunk, vectorised: a clean end (or a torn tail that
is only the chunk's cut), v2 batches only, offsets inside the segment, above the previous
batch and rising row by row, ``partitionLeaderEpoch`` never below -1 nor going down, no gap
when gaps are damage, the log start offset not past the reader. When any check fails, when a
malformed record raises, or when a chunk holds something the fast renderers do not cover (in
JSON: headers on a record whose key and value are both null, which the kernel cannot locate;
in text: headers), the fast path hands over: it stops, and the caller reads the partition
again through the slow path from the same first offset, dropping the records already written
(counted; the chunk in flight is written first when it came before the hand-over point, never
when its own rendering handed over). The slow path then writes the rest, and reports the
damage exactly as it always does (same message, same point in the output). Records written
by the fast path were all before the hand-over point, so the output is the slow path's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import orjson

from seglog import kernels
from seglog.cli.consume_fast_orjson import orjson_lines
from seglog.core.aborted_batches import AbortedIntervals
from seglog.engine.log import Log
from seglog.errors import CorruptRecordError
from seglog.format.batch import MAGIC_V2
from seglog.format.columnar import RecordColumns, scan_columns
from seglog.format.reader import EndKind
from seglog.kernels.json_lines_py import STATUS_OK, capacity

CHUNK_BYTES = 8 * 1024 * 1024
_NO_EPOCH = -1


@dataclass(slots=True)
class FastState:
    """How far the fast path got: ``records`` written, and whether it handed over."""

    records: int = 0
    handed_over: bool = False
    selected: int = 0  # records of the chunks started (``records`` + the one in flight)
    limit_reached: bool = False
    # The scan's running checks across chunks.
    previous_last: int | None = None
    max_epoch: int = _NO_EPOCH
    pieces: list[bytes] = field(default_factory=list)
    # The JSON kernel's two output buffers, used in turn (one is written out while the
    # kernel fills the other), each reused from chunk to chunk and grown when too small.
    buffers: tuple[_Buffer, _Buffer] = field(default_factory=lambda: (_Buffer(), _Buffer()))
    turn: int = 0


@dataclass(slots=True)
class _Buffer:
    """An output buffer of the JSON kernel."""

    array: npt.NDArray[np.uint8] = field(default_factory=lambda: np.empty(0, dtype=np.uint8))


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
    aborted: AbortedIntervals | None = None  # read_committed: the records to leave out


def fast_lines(log: Log, request: FastRequest, state: FastState) -> Iterator[bytes | memoryview]:
    """The output bytes of ``request``, chunk by chunk (module docstring); sets
    ``state.handed_over`` and stops when the slow path must take over.

    ``state.records`` counts the records of the pieces yielded so far. A piece may be a view
    of a buffer the piece after next overwrites: write it before asking for the next. JSON
    chunks are rendered by the kernel in a thread (it releases the GIL), one chunk ahead: the
    caller writes chunk N while chunk N + 1 is scanned and rendered.
    """
    pending: _Job | None = None
    for columns, data in _checked_chunks(log, request, state):
        job = _start_render(columns, data, request, state)
        if pending is not None:
            piece = pending.wait()
            if piece is None:
                job.wait()
                state.handed_over = True
                return
            state.records += pending.rows
            if piece:
                yield piece
        pending = job
        if state.limit_reached:
            break
    if pending is not None:
        piece = pending.wait()
        if piece is None:
            state.handed_over = True
            return
        state.records += pending.rows
        if piece:
            yield piece


class _Job:
    """One chunk's rendering: done already, or running in a thread."""

    def __init__(self, rows: int, piece: bytes | memoryview | None = None) -> None:
        self.rows = rows
        self._piece = piece
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._render: Callable[[], bytes | memoryview | None] | None = None

    def run_in_thread(self, render: Callable[[], bytes | memoryview | None]) -> _Job:
        """Start ``render`` in a daemon thread; :meth:`wait` gives its result."""
        self._render = render
        self._thread = threading.Thread(target=self._run, name="consume-json", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        assert self._render is not None
        try:
            self._piece = self._render()
        except BaseException as exc:  # handed to the waiting thread by wait()
            self._error = exc

    def wait(self) -> bytes | memoryview | None:
        """The piece (None: the slow path must take over); re-raises the thread's error."""
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        return self._piece


def _checked_chunks(
    log: Log, request: FastRequest, state: FastState
) -> Iterator[tuple[RecordColumns, bytes]]:
    """The chunks of ``request`` that passed every check, in order; sets
    ``state.handed_over`` and stops at the first that did not."""
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
            if request.aborted is not None:
                columns = request.aborted.without_aborted_rows(columns)
            step = _chunk_step(columns, data, wanted, position, size)
            if step is None or not _checks_pass(
                columns, segment.base_offset, next_base, request, state
            ):
                state.handed_over = True
                return
            yield columns, data
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
        room = request.limit - state.selected
        if high - low >= room:
            high = low + room
            state.limit_reached = True
    return slice(low, high)


def _start_render(
    columns: RecordColumns, data: bytes, request: FastRequest, state: FastState
) -> _Job:
    """Start rendering the chunk's selected rows (the piece is None when the chunk holds what
    only the slow path renders)."""
    rows = _selected_rows(columns, request, state)
    count = rows.stop - rows.start
    if count <= 0:
        return _Job(0, b"")
    state.selected += count
    if request.kind == "json" and kernels.numba_enabled():
        buffer = state.buffers[state.turn]
        state.turn ^= 1
        return _Job(count).run_in_thread(lambda: _json_kernel(columns, rows, request, buffer))
    if (columns.header_count[rows] != 0).any():
        return _Job(count, None)
    raw = data if columns.is_zero_copy else columns.data.tobytes()
    if request.kind == "json":
        return _Job(count, orjson_lines(columns, rows, raw, _json_head(request)))
    piece = _text(
        raw,
        columns.key_position[rows].tolist(),
        columns.key_length[rows].tolist(),
        columns.value_position[rows].tolist(),
        columns.value_length[rows].tolist(),
        request,
    )
    return _Job(count, piece)


def _json_head(request: FastRequest) -> bytes:
    """``{"topic":T,"partition":P,"offset":``, the start of every line of the partition."""
    return b'{"topic":%s,"partition":%d,"offset":' % (
        orjson.dumps(request.topic),
        request.partition,
    )


def _json_kernel(
    columns: RecordColumns, rows: slice, request: FastRequest, buffer: _Buffer
) -> memoryview | None:
    """JSON lines of ``rows`` by the compiled kernel, as a view of ``buffer``'s array."""
    from seglog.kernels.json_lines import json_lines_nb

    head = np.frombuffer(_json_head(request), dtype=np.uint8)
    key_length = columns.key_length[rows]
    value_length = columns.value_length[rows]
    header_count = columns.header_count[rows]
    needed = capacity(len(head), key_length, value_length, header_count, len(columns.data))
    if len(buffer.array) < needed:
        buffer.array = np.empty(max(needed, 2 * len(buffer.array)), dtype=np.uint8)
    batch_index = columns.batch_index[rows]
    log_append = columns.batches.is_log_append_time[batch_index]
    timestamps = columns.timestamp[rows]
    if log_append.any():
        timestamps = np.where(log_append, columns.batches.max_timestamp[batch_index], timestamps)
    status, written = json_lines_nb(
        columns.data,
        head,
        columns.offset[rows],
        timestamps,
        log_append,
        columns.key_position[rows],
        key_length,
        columns.value_position[rows],
        value_length,
        header_count,
        buffer.array,
    )
    if status != STATUS_OK:
        return None
    return buffer.array[:written].data


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
