"""Columnar decode of a buffer of log entries: numpy columns instead of ``Record`` objects.

:func:`scan_columns` reads the same bytes as :class:`seglog.format.reader.BatchReader` plus
``batch.records()``, and returns the same facts as columns (:class:`RecordColumns`):

* per record: ``offset`` (baseOffset + offsetDelta), ``timestamp`` (as written:
  baseTimestamp + timestampDelta), ``key_position``/``key_length`` and
  ``value_position``/``value_length`` (byte spans in :attr:`RecordColumns.data`; position and
  length -1 for null), ``header_count`` and ``batch_index`` (row of the per-batch columns);
* per entry (:class:`BatchColumns`): every valid entry read, control batches included, with
  its header fields and ``record_start`` (rows ``record_start[i]:record_start[i+1]`` are its
  records; empty for an excluded control batch);
* ``end``: a :class:`~seglog.format.reader.ReadEnd`, identical to BatchReader's.

Invariants and choices:

* **Zero copy when possible.** When every batch whose records are returned is an uncompressed
  v2 batch, ``data`` *is* the input (a view: mutating a writable input changes the keys and
  values read through the columns, and an ``mmap`` cannot be closed while they are alive).
  Otherwise ``data`` is an arena: a copy of the input when any returned batch is
  uncompressed (so positions of uncompressed batches are input positions in both cases),
  then each decompressed records section and the key/value bytes of legacy entries, each
  copied in as soon as it is decoded.
* **Framing and CRC problems end the scan**, exactly where and why BatchReader ends
  (``end.kind`` torn tail or corrupt, same position and reason); entries before it are
  returned, nothing at or after it. **A malformed record inside a CRC-valid batch raises**
  :class:`~seglog.errors.CorruptRecordError` with the batch's position (as
  ``batch.records()`` does): the checksum says the bytes are what a writer wrote, so the
  writer was wrong, and silently truncating there would hide it. Undecodable compressed
  streams raise the same way. The first failing batch in buffer order is the one named.
* **Control batches** (transaction markers, KRaft records) keep their row in the per-batch
  columns but their records are skipped (not decompressed nor validated) unless
  ``include_control=True``.
* **Legacy v0/v1 entries** are framed by the kernel and then decoded by the Python legacy
  reader (:mod:`seglog.format.legacy`; CRC-32 checked, wrappers decompressed); their keys and
  values are copied into the arena. They are rare (brokers before 0.11) and never written.
* **Bounded memory**: output columns are allocated once from the batches' record counts after
  checking each count can fit its section (a record takes at least 7 bytes), each
  decompression is bounded by ``max_decompressed_bytes``, and entries above
  ``max_batch_bytes`` end the scan as corrupt. The arena reserves address space for the
  copied input (if any) and 4x the compressed bytes up front (pages are touched only as bytes
  are copied in), and grows by blocks when sections expand more. No Python object is made per
  record except for legacy entries.
* **Timestamps**: ``timestamp`` is the written value, so columns round-trip; Kafka reports a
  LogAppendTime batch's maxTimestamp for each of its records, which
  :meth:`RecordColumns.reported_timestamp` gives.

The loops run in :mod:`seglog.kernels` (numba, ``use_numba=True``) or its Python twin; both give
identical columns.

Why this module is longer than the house's ~500 lines: it is one decoding pipeline (entry
checks, a plan, the decompression arena, the outputs) whose stages share private plan types;
splitting it would make those types public for no reader's benefit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from crc32c import crc32c as _crc32c_c

from seglog import kernels
from seglog.errors import CorruptRecordError, UnsupportedCodecError
from seglog.format.batch import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    MAGIC_V2,
    MIN_BATCH_LENGTH,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    parse_batch_header,
)
from seglog.format.compression import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    CompressionType,
    decompress,
)
from seglog.format.crc import crc32c
from seglog.format.legacy import RECORD_OVERHEAD_V0, LegacyBatch, parse_legacy_entry
from seglog.format.reader import MAX_BATCH_BYTES_DEFAULT, EndKind, ReadEnd
from seglog.format.records import Record
from seglog.kernels import codes

Buffer = bytes | bytearray | memoryview
Int64Array = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
UInt8Array = npt.NDArray[np.uint8]

__all__ = ["BatchColumns", "RecordColumns", "scan_columns"]

_CRC_START = 21  # first byte covered by a v2 batch's CRC


@dataclass(frozen=True, slots=True)
class BatchColumns:
    """One row per valid entry read (v2 batches and legacy entries), in buffer order.

    Legacy entries have ``magic`` 0/1, their own attributes byte, the message (or wrapper)
    timestamp as both timestamps, -1 producer fields and leader epoch, ``base_offset`` = the
    first inner offset and ``last_offset`` = the entry's offset.
    """

    position: Int64Array  # byte position in the input (plus base_position)
    base_offset: Int64Array
    last_offset: Int64Array  # baseOffset + lastOffsetDelta (Java long arithmetic)
    batch_length: Int32Array  # bytes after the size field; the entry spans batch_length + 12
    magic: npt.NDArray[np.int8]
    attributes: npt.NDArray[np.int16]
    base_timestamp: Int64Array
    max_timestamp: Int64Array
    producer_id: Int64Array
    producer_epoch: npt.NDArray[np.int16]
    base_sequence: Int32Array
    partition_leader_epoch: Int32Array
    records_count: Int32Array  # as the header says (control batches too)
    record_start: Int64Array  # len + 1 entries: rows of each entry's records
    # Where a v2 batch's (decompressed) records section starts in ``RecordColumns.data``;
    # -1 for an entry whose records were not scanned (excluded control batch, legacy entry).
    records_position: Int64Array

    def __len__(self) -> int:
        return len(self.position)

    @property
    def is_control(self) -> npt.NDArray[np.bool_]:
        """Control batches (attribute bit 5 of a v2 batch)."""
        flags: npt.NDArray[np.bool_] = (self.magic == MAGIC_V2) & (
            (self.attributes & CONTROL_FLAG_MASK) != 0
        )
        return flags

    @property
    def is_log_append_time(self) -> npt.NDArray[np.bool_]:
        """v2 batches stamped with LogAppendTime (records report maxTimestamp)."""
        flags: npt.NDArray[np.bool_] = (self.magic == MAGIC_V2) & (
            (self.attributes & TIMESTAMP_TYPE_MASK) != 0
        )
        return flags


@dataclass(frozen=True, slots=True)
class RecordColumns:
    """The records of a buffer as numpy columns; see the module docstring for the invariants."""

    data: UInt8Array  # key/value positions index into this
    offset: Int64Array
    timestamp: Int64Array  # as written (baseTimestamp + timestampDelta)
    key_position: Int64Array  # -1 for a null key
    key_length: Int32Array  # -1 for a null key
    value_position: Int64Array  # -1 for a null value (a tombstone)
    value_length: Int32Array  # -1 for a null value
    header_count: Int32Array
    batch_index: Int32Array  # row in ``batches``
    batches: BatchColumns
    end: ReadEnd
    is_zero_copy: bool  # ``data`` is the input itself (every returned batch uncompressed)

    def __len__(self) -> int:
        return len(self.offset)

    def key(self, row: int) -> bytes | None:
        """The key of record ``row`` as bytes (None when null); for tests and tools."""
        return self._span(int(self.key_position[row]), int(self.key_length[row]))

    def value(self, row: int) -> bytes | None:
        """The value of record ``row`` as bytes (None when null); for tests and tools."""
        return self._span(int(self.value_position[row]), int(self.value_length[row]))

    def _span(self, position: int, length: int) -> bytes | None:
        if length < 0:
            return None
        return self.data[position : position + length].tobytes()

    def reported_timestamp(self) -> Int64Array:
        """Per record, the timestamp Kafka reports: maxTimestamp in LogAppendTime batches."""
        log_append = self.batches.is_log_append_time
        if not log_append.any():
            return self.timestamp.copy()
        index = self.batch_index
        return np.where(log_append[index], self.batches.max_timestamp[index], self.timestamp)

    def is_tombstone(self) -> npt.NDArray[np.bool_]:
        """Per record, True for a null value."""
        return self.value_length < 0


def scan_columns(
    buf: Buffer | UInt8Array | Any,
    *,
    verify_crc: bool = True,
    include_control: bool = False,
    use_numba: bool = True,
    check_offsets: bool = True,
    base_position: int = 0,
    max_batch_bytes: int = MAX_BATCH_BYTES_DEFAULT,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> RecordColumns:
    """Decode every valid entry of ``buf`` into columns (see the module docstring)."""
    data = _as_uint8(buf)
    view = memoryview(data)  # type: ignore[arg-type]  # numpy arrays export the buffer protocol
    walk = kernels.walk_batches(
        data, max_batch_bytes=max_batch_bytes, check_offsets=check_offsets, use_numba=use_numba
    )
    frames = walk.frames
    accepted, legacy, failure = _check_entries(view, frames, verify_crc)
    if failure is not None:
        end = ReadEnd(EndKind.CORRUPT, failure[0] + base_position, failure[1])
    else:
        end = _walk_end(view, walk, verify_crc, max_batch_bytes, base_position)
    frames = frames[:, :accepted]
    plan = _plan_records(data, view, frames, legacy, include_control, max_decompressed_bytes)
    rows = plan.total_rows
    outputs = _allocate_outputs(rows)
    code, section, position = kernels.scan_records(
        plan.buffer, plan.sections, outputs, use_numba=use_numba
    )
    if code != codes.REC_OK:
        raise plan.record_error(code, section, position, base_position)
    if plan.failure is not None:  # a later batch could not even be planned
        raise plan.failure.at(base_position=base_position)
    plan.fill_legacy(outputs)
    return RecordColumns(
        data=plan.buffer,
        offset=outputs["offset"],
        timestamp=outputs["timestamp"],
        key_position=outputs["key_position"],
        key_length=outputs["key_length"],
        value_position=outputs["value_position"],
        value_length=outputs["value_length"],
        header_count=outputs["header_count"],
        batch_index=outputs["batch_index"],
        batches=_batch_columns(frames, plan, base_position),
        end=end,
        is_zero_copy=plan.buffer is data,
    )


def _as_uint8(buf: Any) -> UInt8Array:
    """A 1-D uint8 view of any contiguous buffer (bytes, bytearray, memoryview, mmap, array)."""
    if isinstance(buf, np.ndarray):
        if not buf.flags.c_contiguous:
            raise ValueError("scan_columns needs a contiguous buffer")
        return buf.reshape(-1).view(np.uint8)
    return np.frombuffer(buf, dtype=np.uint8)


# --- entry checks (what BatchReader verifies beyond the framing) -----------------------------
def _check_entries(
    view: memoryview, frames: Int64Array, verify_crc: bool
) -> tuple[int, dict[int, LegacyBatch], tuple[int, str] | None]:
    """CRC of v2 batches, parse (and CRC-32) of legacy entries, in order.

    Returns ``(accepted, legacy, failure)``: entries before ``accepted`` passed, ``legacy``
    maps entry index to its parsed legacy entry, ``failure`` is ``(position, reason)`` of the
    first entry that failed.
    """
    count = frames.shape[1]
    magic = frames[codes.FRAME_MAGIC]
    legacy: dict[int, LegacyBatch] = {}
    if not (magic != MAGIC_V2).any():
        mismatch = _first_crc_mismatch(view, frames) if verify_crc else None
        if mismatch is None:
            return count, legacy, None
        position = int(frames[codes.FRAME_POSITION, mismatch])
        reason = _entry_failure(view, position, verify_crc)
        assert reason is not None, "CRC mismatch not confirmed by the batch decoder"
        return mismatch, legacy, (position, reason)
    positions = frames[codes.FRAME_POSITION].tolist()
    ends = frames[codes.FRAME_POSITION] + codes.LOG_OVERHEAD + frames[codes.FRAME_BATCH_LENGTH]
    ends_list = ends.tolist()
    crcs = frames[codes.FRAME_CRC].tolist()
    magics = magic.tolist()
    stop = len(view)
    for index in range(count):
        position = positions[index]
        if magics[index] == MAGIC_V2:
            # The exact reason of a mismatch is rebuilt by the batch decoder.
            if verify_crc and crc32c(view[position + _CRC_START : ends_list[index]]) != crcs[index]:
                reason = _entry_failure(view, position, verify_crc)
                assert reason is not None, "CRC mismatch not confirmed by the batch decoder"
                return index, legacy, (position, reason)
            continue
        try:
            entry = parse_legacy_entry(view, position, stop)
            if verify_crc:
                entry.ensure_valid()
        except CorruptRecordError as exc:
            return index, legacy, (position, exc.reason)
        legacy[index] = entry
    return count, legacy, None


def _first_crc_mismatch(view: memoryview, frames: Int64Array) -> int | None:
    """Index of the first v2 batch whose CRC-32C differs from the stored one, if any.

    One C call per batch in a bare comprehension (no per-batch wrapper nor branch), then one
    vectorised comparison: the interpreter's share per batch is a slice and a call.
    """
    positions = frames[codes.FRAME_POSITION]
    starts = (positions + _CRC_START).tolist()
    ends = (positions + codes.LOG_OVERHEAD + frames[codes.FRAME_BATCH_LENGTH]).tolist()
    checksum = _crc32c_c
    computed = np.array(
        [checksum(view[start:end]) for start, end in zip(starts, ends, strict=True)],
        dtype=np.int64,
    )
    mismatches = np.flatnonzero(computed != frames[codes.FRAME_CRC])
    return int(mismatches[0]) if len(mismatches) else None


def _entry_failure(view: memoryview, position: int, verify_crc: bool) -> str | None:
    """Why BatchReader's per-entry checks reject the framed entry at ``position``, if they do."""
    try:
        if view[position + 16] == MAGIC_V2:
            if verify_crc:
                parse_batch_header(view, position).ensure_valid()
        else:
            entry = parse_legacy_entry(view, position, len(view))
            if verify_crc:
                entry.ensure_valid()
    except CorruptRecordError as exc:
        return exc.reason
    return None


def _walk_end(
    view: memoryview,
    walk: kernels.FrameWalk,
    verify_crc: bool,
    max_batch_bytes: int,
    base_position: int,
) -> ReadEnd:
    """The kernel's ending in BatchReader's words (same kind, position and reason)."""
    code = walk.end_code
    position = walk.end_position
    at = position + base_position
    a, b = walk.detail_a, walk.detail_b
    if code == codes.END_CLEAN:
        return ReadEnd(EndKind.CLEAN, at, "end of data")
    if code == codes.END_TORN:
        remaining = len(view) - position
        return ReadEnd(
            EndKind.TORN_TAIL,
            at,
            f"torn tail: {remaining} bytes of an entry that needs {a}",
            a - remaining,
        )
    if code in codes.END_AFTER_ENTRY_CHECKS:
        # Kafka's reader checks the CRC (and parses legacy messages) before these rules.
        earlier = _entry_failure(view, position, verify_crc)
        if earlier is not None:
            return ReadEnd(EndKind.CORRUPT, at, earlier)
    reasons = {
        codes.END_ZERO_TAIL: f"zero-filled tail of {a} bytes",
        codes.END_SIZE_TOO_SMALL: f"impossible entry size {a} (below {RECORD_OVERHEAD_V0})",
        codes.END_SIZE_TOO_LARGE: f"entry size {a} is above the limit of {max_batch_bytes} bytes",
        codes.END_BAD_MAGIC: f"unknown magic byte {a}",
        codes.END_BATCH_TOO_SMALL: f"batch length {a} is below the v2 minimum {MIN_BATCH_LENGTH}",
        codes.END_NEGATIVE_COUNT: f"negative lastOffsetDelta {a} or record count {b}",
        codes.END_OFFSET_ORDER: f"offset {a} is not above the previous entry's last offset {b}",
        codes.END_OFFSET_OVERFLOW: f"baseOffset {a} + lastOffsetDelta {b} overflows int64",
    }
    return ReadEnd(EndKind.CORRUPT, at, reasons[code])


# --- planning the records walk -----------------------------------------------------------------
@dataclass
class _LegacyRows:
    """Rows of every legacy record (decoded in Python), as flat lists, one per column.

    ``entries`` keeps each decoded entry with its records, in buffer order, for the per-batch
    columns and to place its rows once every entry's row count is known.
    """

    entries: list[tuple[int, LegacyBatch, list[Record]]] = field(default_factory=list)
    columns: dict[str, list[int]] = field(
        default_factory=lambda: {name: [] for name in kernels.OUTPUT_FIELDS}
    )

    def add(self, batch: int, entry: LegacyBatch, arena: _Arena) -> int:
        """Decode ``entry``, place its keys and values in the arena; return its record count."""
        records = entry.records()
        self.entries.append((batch, entry, records))
        columns = self.columns
        for record in records:
            key, value = record.key, record.value
            columns["offset"].append(record.offset)
            columns["timestamp"].append(record.timestamp)
            columns["key_position"].append(-1 if key is None else arena.add(key))
            columns["key_length"].append(-1 if key is None else len(key))
            columns["value_position"].append(-1 if value is None else arena.add(value))
            columns["value_length"].append(-1 if value is None else len(value))
            columns["header_count"].append(0)
            columns["batch_index"].append(batch)
        return len(records)


@dataclass
class _Plan:
    """What the records kernel scans, and where each returned row comes from."""

    buffer: UInt8Array
    sections: dict[str, npt.NDArray[Any]]
    section_origin: Int64Array  # input position of a section, or -1 when decompressed
    record_start: Int64Array
    batch_positions: Int64Array
    batch_base_offsets: Int64Array
    legacy_rows: _LegacyRows
    failure: CorruptRecordError | None  # first batch that could not be planned (raise after)

    @property
    def total_rows(self) -> int:
        """Rows of the output columns."""
        return int(self.record_start[-1])

    def record_error(
        self, code: int, section: int, position: int, base_position: int
    ) -> CorruptRecordError:
        """The kernel's error as Kafka would name it: the batch position and the broken rule."""
        batch = int(self.sections["batch"][section])
        origin = int(self.section_origin[section])
        if origin >= 0:
            where = f"at byte {position + base_position}"
        else:
            start = int(self.sections["start"][section])
            where = f"at byte {position - start} of the decompressed records section"
        return CorruptRecordError(
            f"record batch at offset {int(self.batch_base_offsets[batch])}: "
            f"{codes.REC_NAMES[code]} {where}",
            position=int(self.batch_positions[batch]) + base_position,
        )

    def fill_legacy(self, outputs: dict[str, npt.NDArray[Any]]) -> None:
        """Write the rows of legacy records (decoded in Python) into the output columns."""
        rows: list[int] = []
        for batch, _entry, records in self.legacy_rows.entries:
            first_row = int(self.record_start[batch])
            rows.extend(range(first_row, first_row + len(records)))
        if rows:
            for name, values in self.legacy_rows.columns.items():
                outputs[name][rows] = values


@dataclass(frozen=True)
class _Entries:
    """The accepted entries' columns the planners need (views of the kernel's frames)."""

    frames: Int64Array
    wanted: npt.NDArray[np.bool_]  # v2 batches whose records are returned
    codec: Int64Array
    section_start: Int64Array  # where a v2 batch's records section lies in the input
    section_end: Int64Array

    @property
    def count(self) -> int:
        """Number of entries."""
        return int(self.frames.shape[1])

    def row(self, field: int) -> Int64Array:
        """One header field of every entry."""
        values: Int64Array = self.frames[field]
        return values


def _plan_records(
    data: UInt8Array,
    view: memoryview,
    frames: Int64Array,
    legacy: dict[int, LegacyBatch],
    include_control: bool,
    max_decompressed_bytes: int,
) -> _Plan:
    """Decide which bytes hold each batch's records, decompressing where needed."""
    positions = frames[codes.FRAME_POSITION]
    attributes = frames[codes.FRAME_ATTRIBUTES]
    wanted = frames[codes.FRAME_MAGIC] == MAGIC_V2
    if not include_control:
        wanted &= (attributes & CONTROL_FLAG_MASK) == 0
    entries = _Entries(
        frames=frames,
        wanted=wanted,
        codec=attributes & COMPRESSION_CODEC_MASK,
        section_start=positions + RECORD_BATCH_OVERHEAD,
        section_end=positions + codes.LOG_OVERHEAD + frames[codes.FRAME_BATCH_LENGTH],
    )
    if not legacy and not (wanted & (entries.codec != 0)).any():
        return _plan_in_place(data, entries)
    return _plan_arena(view, entries, legacy, max_decompressed_bytes)


def _count_error(
    count: int, section_bytes: int, base_offset: int, position: int
) -> CorruptRecordError:
    """A record takes at least 7 bytes: a larger count cannot be valid (nor be allocated)."""
    return CorruptRecordError(
        f"record batch at offset {base_offset}: record count {count} cannot fit in a "
        f"{section_bytes}-byte records section",
        position=position,
    )


def _record_start(rows_per_batch: Int64Array) -> Int64Array:
    """Prefix sums: entry ``i``'s records are rows ``[out[i], out[i + 1])``."""
    out = np.zeros(len(rows_per_batch) + 1, dtype=np.int64)
    np.cumsum(rows_per_batch, out=out[1:])
    return out


def _plan_in_place(data: UInt8Array, entries: _Entries) -> _Plan:
    """Every wanted batch is uncompressed v2: scan the input where it lies (zero copy)."""
    index = np.flatnonzero(entries.wanted)
    counts = entries.row(codes.FRAME_RECORDS_COUNT)[index]
    section_bytes = entries.section_end[index] - entries.section_start[index]
    impossible = np.flatnonzero(counts * codes.MIN_RECORD_BYTES > section_bytes)
    failure = None
    if len(impossible):
        # Plan (and so report errors in) only the batches before the first impossible count,
        # so the error named is the first one in buffer order.
        first = int(impossible[0])
        batch = int(index[first])
        failure = _count_error(
            int(counts[first]),
            int(section_bytes[first]),
            int(entries.row(codes.FRAME_BASE_OFFSET)[batch]),
            int(entries.row(codes.FRAME_POSITION)[batch]),
        )
        index = index[:first]
        counts = counts[:first]
    rows_per_batch = np.zeros(entries.count, dtype=np.int64)
    rows_per_batch[index] = counts
    record_start = _record_start(rows_per_batch)
    sections: dict[str, npt.NDArray[Any]] = {
        "start": entries.section_start[index],
        "end": entries.section_end[index],
        "base_offset": entries.row(codes.FRAME_BASE_OFFSET)[index],
        "base_timestamp": entries.row(codes.FRAME_BASE_TIMESTAMP)[index],
        "count": counts,
        "batch": index.astype(np.int32),
        "out_start": record_start[index],
    }
    return _Plan(
        buffer=data,
        sections=sections,
        section_origin=entries.section_start[index],
        record_start=record_start,
        batch_positions=entries.row(codes.FRAME_POSITION),
        batch_base_offsets=entries.row(codes.FRAME_BASE_OFFSET),
        legacy_rows=_LegacyRows(),
        failure=failure,
    )


def _plan_arena(
    view: memoryview,
    entries: _Entries,
    legacy: dict[int, LegacyBatch],
    max_decompressed_bytes: int,
) -> _Plan:
    """Some entries need decoding first: build an arena of what the records walk reads.

    The arena starts with a copy of the input when an uncompressed batch is scanned (so its
    positions stay input positions), then each decompressed section (and legacy key/value)
    as it is decoded. Only decompressing and legacy decoding loop in Python; everything else
    is vectorised over the entries.
    """
    positions = entries.row(codes.FRAME_POSITION)
    base_offsets = entries.row(codes.FRAME_BASE_OFFSET)
    counts = entries.row(codes.FRAME_RECORDS_COUNT)
    is_legacy = entries.row(codes.FRAME_MAGIC) != MAGIC_V2
    is_packed = entries.wanted & (entries.codec != 0)
    is_plain = entries.wanted & (entries.codec == 0)
    section_start = entries.section_start.copy()  # decompressed sections: arena positions
    section_end = entries.section_end.copy()
    # Planning stops at the first batch that cannot be planned (its error is raised after the
    # batches before it are scanned, so an earlier batch's error is still the one reported).
    # For an uncompressed batch that is an impossible record count, known without decoding.
    impossible = np.flatnonzero(
        is_plain & (counts * codes.MIN_RECORD_BYTES > section_end - section_start)
    )
    stop = int(impossible[0]) if len(impossible) else entries.count
    input_bytes = len(view) if is_plain[:stop].any() else 0
    # Compressed sections and legacy entries (whose wrappers may be compressed too).
    section_bytes = (section_end - section_start)[:stop]
    legacy_bytes = entries.row(codes.FRAME_BATCH_LENGTH)[:stop]
    encoded_bytes = int(
        section_bytes[is_packed[:stop]].sum() + legacy_bytes[is_legacy[:stop]].sum()
    )
    arena = _Arena(input_bytes + _ARENA_EXPANSION * encoded_bytes)
    if input_bytes:
        arena.add(view)
    rows_per_batch = np.zeros(entries.count, dtype=np.int64)
    legacy_rows = _LegacyRows()
    failure: CorruptRecordError | None = None
    decoded = np.flatnonzero((is_packed | is_legacy)[:stop])
    # The loop reads Python lists and appends to them (no numpy scalar per batch); the
    # arena positions of the decompressed sections are written back vectorised after it.
    unpacked: list[int] = []
    unpacked_start: list[int] = []
    unpacked_bytes: list[int] = []
    for batch, start, end, count, codec_id in zip(
        decoded.tolist(),
        section_start[decoded].tolist(),
        section_end[decoded].tolist(),
        counts[decoded].tolist(),
        entries.codec[decoded].tolist(),
        strict=True,
    ):
        try:
            entry = legacy.get(batch)
            if entry is not None:
                rows_per_batch[batch] = legacy_rows.add(batch, entry, arena)
                continue
            section = _decompress(view[start:end], codec_id, max_decompressed_bytes)
            if count * codes.MIN_RECORD_BYTES > len(section):
                raise _count_error(
                    count, len(section), int(base_offsets[batch]), int(positions[batch])
                )
        except CorruptRecordError as exc:
            failure = exc if exc.position is not None else _at(exc, int(positions[batch]))
            stop = batch
            break
        unpacked.append(batch)
        unpacked_start.append(arena.add(section))
        unpacked_bytes.append(len(section))
    else:
        if stop < entries.count:
            failure = _count_error(
                int(counts[stop]),
                int(section_end[stop] - section_start[stop]),
                int(base_offsets[stop]),
                int(positions[stop]),
            )
    if unpacked:
        section_start[unpacked] = unpacked_start
        section_end[unpacked] = section_start[unpacked] + unpacked_bytes
    index = np.flatnonzero(entries.wanted[:stop])
    rows_per_batch[index] = counts[index]
    record_start = _record_start(rows_per_batch)
    sections: dict[str, npt.NDArray[Any]] = {
        "start": section_start[index],
        "end": section_end[index],
        "base_offset": base_offsets[index],
        "base_timestamp": entries.row(codes.FRAME_BASE_TIMESTAMP)[index],
        "count": counts[index],
        "batch": index.astype(np.int32),
        "out_start": record_start[index],
    }
    return _Plan(
        buffer=arena.build(),
        sections=sections,
        section_origin=np.where(is_packed[index], -1, entries.section_start[index]),
        record_start=record_start,
        batch_positions=positions,
        batch_base_offsets=base_offsets,
        legacy_rows=legacy_rows,
        failure=failure,
    )


# First guess of how much larger decompressed sections are than their compressed bytes
# (Kafka's codecs give 2-5x on typical records). Only address space is reserved: pages are
# touched as sections are copied in, and a larger total just adds a block.
_ARENA_EXPANSION = 4


class _Arena:
    """Byte pieces copied, as they come, into large blocks; one array at the end.

    Each piece is copied once into a block allocated up front (numpy madvises huge pages for
    arrays of 4 MiB and more, so filling it faults rarely), and the piece itself can be freed
    at once: a decompressed section is then a short-lived, cache-warm ``bytes`` whose memory
    the next one reuses. Keeping every section alive until the end, as an earlier version did,
    page-faults each into fresh 4 KiB pages (measured on 100 MB of 16 KiB lz4 batches: about
    twice the time of the decompression itself). When the first block is too small, a new
    block (at least the size so far) is started, and :meth:`build` joins the blocks with one
    more copy.
    """

    def __init__(self, capacity: int) -> None:
        self._full: list[UInt8Array] = []  # earlier blocks, trimmed to what they hold
        self._block = np.empty(capacity, dtype=np.uint8)
        self._view = memoryview(self._block)  # type: ignore[arg-type]
        self._used = 0  # bytes of the current block in use
        self.size = 0  # bytes in the arena

    def add(self, piece: Buffer) -> int:
        """Copy ``piece`` in; return its position in the arena."""
        size = len(piece)
        position = self.size
        if self._used + size > len(self._block):
            self._full.append(self._block[: self._used])
            self._block = np.empty(max(size, position), dtype=np.uint8)
            self._view = memoryview(self._block)  # type: ignore[arg-type]
            self._used = 0
        self._view[self._used : self._used + size] = piece
        self._used += size
        self.size += size
        return position

    def build(self) -> UInt8Array:
        """The arena: a view of the only block, or the blocks joined."""
        last = self._block[: self._used]
        if not self._full:
            return last
        return np.concatenate([*self._full, last])


def _at(exc: CorruptRecordError, position: int) -> CorruptRecordError:
    return CorruptRecordError(exc.reason, position=position)


def _decompress(body: memoryview, codec_id: int, max_bytes: int) -> bytes:
    """The records section of a compressed batch, errors as ``CorruptRecordError``."""
    codec = _CODECS.get(codec_id)
    if codec is None:
        try:
            codec = CompressionType.from_id(codec_id)  # raises for ids 5-7
        except UnsupportedCodecError as exc:
            raise CorruptRecordError(str(exc)) from exc
    return decompress(codec, body, max_bytes)


_CODECS = {int(codec): codec for codec in CompressionType}


# --- output ------------------------------------------------------------------------------------
def _allocate_outputs(rows: int) -> dict[str, npt.NDArray[Any]]:
    """All record columns carved from one allocation (one page-fault-friendly region)."""
    widths = {name: dtype.itemsize for name, dtype in kernels.OUTPUT_DTYPES.items()}
    block = np.empty(rows * sum(widths.values()), dtype=np.uint8)
    outputs: dict[str, npt.NDArray[Any]] = {}
    cursor = 0
    # Widest first, so every column starts aligned to its item size.
    for name in sorted(widths, key=lambda n: -widths[n]):
        size = rows * widths[name]
        outputs[name] = block[cursor : cursor + size].view(kernels.OUTPUT_DTYPES[name])
        cursor += size
    return outputs


def _batch_columns(frames: Int64Array, plan: _Plan, base_position: int) -> BatchColumns:
    """Per-entry columns from the kernel's frames, legacy rows overwritten from their parse."""
    base_offset = frames[codes.FRAME_BASE_OFFSET].copy()
    # Java long arithmetic: wrap rather than fail for a hostile baseOffset near 2**63.
    with np.errstate(over="ignore"):
        last_offset = base_offset + frames[codes.FRAME_LAST_OFFSET_DELTA]
    columns = BatchColumns(
        position=frames[codes.FRAME_POSITION] + base_position,
        base_offset=base_offset,
        last_offset=last_offset,
        batch_length=frames[codes.FRAME_BATCH_LENGTH].astype(np.int32),
        magic=frames[codes.FRAME_MAGIC].astype(np.int8),
        attributes=frames[codes.FRAME_ATTRIBUTES].astype(np.int16),
        base_timestamp=frames[codes.FRAME_BASE_TIMESTAMP].copy(),
        max_timestamp=frames[codes.FRAME_MAX_TIMESTAMP].copy(),
        producer_id=frames[codes.FRAME_PRODUCER_ID].copy(),
        producer_epoch=frames[codes.FRAME_PRODUCER_EPOCH].astype(np.int16),
        base_sequence=frames[codes.FRAME_BASE_SEQUENCE].astype(np.int32),
        partition_leader_epoch=frames[codes.FRAME_PARTITION_LEADER_EPOCH].astype(np.int32),
        records_count=frames[codes.FRAME_RECORDS_COUNT].astype(np.int32),
        record_start=plan.record_start,
        records_position=np.full(frames.shape[1], -1, dtype=np.int64),
    )
    columns.records_position[plan.sections["batch"]] = plan.sections["start"]
    for index, entry, records in plan.legacy_rows.entries:
        columns.base_offset[index] = records[0].offset if records else entry.offset
        columns.last_offset[index] = entry.offset
        columns.attributes[index] = entry.attributes
        columns.base_timestamp[index] = entry.timestamp
        columns.max_timestamp[index] = entry.timestamp
        columns.producer_id[index] = -1
        columns.producer_epoch[index] = -1
        columns.base_sequence[index] = -1
        columns.partition_leader_epoch[index] = -1
        columns.records_count[index] = len(records)
    return columns
