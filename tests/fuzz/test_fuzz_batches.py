"""Fuzzing the record-batch decoders: BatchReader, decode_records, scan_columns, legacy.

Rule under test: hostile bytes (arbitrary, or a valid log with bit flips, insertions,
deletions, truncations, zero tails and boundary integers over its length/offset fields) never
make a decoder raise anything but seglog's typed errors, and a decoder never hands back a
batch that differs from what the log held:

* the reader returns the untouched batches before the first damaged byte, then stops; every
  entry it returns is byte for byte an entry of the original log in its CRC-covered part (only
  baseOffset, batchLength, partitionLeaderEpoch lie outside the CRC);
* a batch whose CRC-covered bytes were changed *and* re-checksummed (what a buggy or hostile
  writer produces) decodes or raises ``CorruptRecordError``, in the reader and in
  ``scan_columns`` (numba kernel and Python twin) alike, with the same rows when it decodes.

Existing tests already cover single-byte flips per region (tests/unit/test_reader.py), random
byte replacement for kernel-vs-twin (tests/unit/test_kernels.py) and arbitrary bytes fed to
the codecs (tests/unit/test_compression.py); these go further (multi-op mutations, legacy
entries, re-checksummed damage, mutated codec streams).
"""

from __future__ import annotations

import contextlib
import struct
import tracemalloc
from typing import Any

import pytest
from fuzz_support import (
    FUZZ,
    FUZZ_FEW,
    INT64_MAX,
    TS,
    apply_mutations,
    first_difference,
    legacy_entries,
    legacy_logs,
    mutations,
    recrc_legacy,
    time_limit,
)
from hypothesis import example, given
from hypothesis import strategies as st

from seglog.errors import CorruptRecordError, SeglogError
from seglog.format.batch import (
    RecordBatch,
    decode_records,
    encode_batch,
    set_base_offset,
)
from seglog.format.columnar import scan_columns
from seglog.format.compression import CompressionType, compress, decompress
from seglog.format.crc import crc32c
from seglog.format.legacy import LegacyBatch
from seglog.format.reader import Batch, EndKind, iter_batches_strict, read_batches
from seglog.format.records import Record
from seglog.testing.strategies import batch_specs, log_buffers

# Compile (or load from cache) the numba kernels now, not inside a time-limited example.
scan_columns(encode_batch([Record(0, TS, b"k", b"v")]), use_numba=True)

LIMIT_S = 20.0
MASK64 = (1 << 64) - 1


def wrap64(value: int) -> int:
    """Java long arithmetic (what the columnar decoder does with offsets and timestamps)."""
    value &= MASK64
    return value - (1 << 64) if value > INT64_MAX else value


def projection(batch: Batch) -> list[tuple[Any, ...]]:
    """What a batch's records hold besides their offsets (which move with baseOffset)."""
    return [(r.timestamp, r.key, r.value, r.headers) for r in batch.records()]


def exercise(batch: Batch) -> None:
    """Everything a caller may ask of a returned batch; only typed errors may come out."""
    batch.records()
    _ = (batch.last_offset, batch.next_offset, batch.size_in_bytes, batch.timestamp_type)
    if isinstance(batch, LegacyBatch):
        _ = (batch.base_offset, batch.records_count, batch.compression, batch.is_valid())
        batch.record_checksums()
    else:
        _ = (batch.compression, batch.last_sequence, batch.delete_horizon_ms, batch.is_valid())


def reader_view(buf: bytes, *, verify_crc: bool) -> tuple[list[Batch], Any, tuple[Any, ...]]:
    """Reader batches, ending, and ("rows", rows) or ("raises", position) of their records."""
    batches, end = read_batches(buf, verify_crc=verify_crc)
    rows: list[tuple[Any, ...]] = []
    for batch in batches:
        try:
            records = batch.records()
        except CorruptRecordError as exc:
            return batches, end, ("raises", exc.position)
        rows.extend(
            (wrap64(r.offset), wrap64(r.timestamp), r.key, r.value, len(r.headers)) for r in records
        )
    return batches, end, ("rows", rows)


def columns_view(buf: bytes, *, use_numba: bool, verify_crc: bool) -> tuple[Any, tuple[Any, ...]]:
    """scan_columns' ending and ("rows", rows) or ("raises", position)."""
    try:
        columns = scan_columns(
            buf, use_numba=use_numba, verify_crc=verify_crc, include_control=True
        )
    except CorruptRecordError as exc:
        return None, ("raises", exc.position)
    rows = [
        (
            int(columns.offset[i]),
            int(columns.timestamp[i]),
            columns.key(i),
            columns.value(i),
            int(columns.header_count[i]),
        )
        for i in range(len(columns))
    ]
    return columns.end, ("rows", rows)


def check_columns_agree(buf: bytes, *, verify_crc: bool) -> None:
    """Both scan_columns implementations raise only CorruptRecordError and agree with the
    reader (same rows, or a raise naming the same batch; the same ending)."""
    _, end, expected = reader_view(buf, verify_crc=verify_crc)
    for use_numba in (True, False):
        columns_end, got = columns_view(buf, use_numba=use_numba, verify_crc=verify_crc)
        assert got == expected, use_numba
        if columns_end is not None:
            assert (columns_end.kind, columns_end.position, columns_end.reason) == (
                end.kind,
                end.position,
                end.reason,
            ), use_numba


def check_reader_framing(batches: list[Batch], end: Any) -> None:
    """Returned entries are contiguous from 0 and ``end.position`` is the first byte not
    returned as data."""
    position = 0
    for batch in batches:
        assert batch.position == position
        position += batch.size_in_bytes
    assert end.position == position


# --- strategies ----------------------------------------------------------------------------------


def rebase(buf: bytes, shift: int) -> bytes:
    """Move every batch's baseOffset up by ``shift`` (outside the CRC: no re-checksum)."""
    out = bytearray(buf)
    batches, end = read_batches(buf)
    assert end.is_clean
    for batch in batches:
        set_base_offset(memoryview(out)[batch.position :], batch.base_offset + shift)
    return bytes(out)


@st.composite
def logs(draw: st.DrawFn) -> bytes:
    """A valid log: v2 batches (every codec, control batches), legacy entries, or legacy
    entries followed by v2 batches (a log written across the 0.11 upgrade)."""
    kind = draw(st.sampled_from(["v2", "v2", "legacy", "mixed"]))
    if kind == "v2":
        return draw(log_buffers(max_batches=3))[0]
    if kind == "legacy":
        return draw(legacy_logs())
    legacy = draw(legacy_logs(max_entries=2))
    last = read_batches(legacy)[0][-1].last_offset
    return legacy + rebase(draw(log_buffers(max_batches=2))[0], last + 1)


@st.composite
def damaged_logs(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """(original, mutated) where the mutations aim at uniform bytes or entry header fields."""
    original = draw(logs())
    anchors = [b.position for b in read_batches(original)[0]]
    ops = draw(mutations(len(original), anchors))
    return original, apply_mutations(original, ops)


@st.composite
def framed_garbage(draw: st.DrawFn) -> bytes:
    """Random bytes behind a plausible frame (offset, size = the rest, magic 0-2), so the
    reader gets past the framing checks and into header, CRC and record parsing."""
    rest = draw(st.binary(min_size=2, max_size=300))
    magic = draw(st.sampled_from([0, 1, 2]))
    offset = draw(st.integers(-(1 << 63), INT64_MAX))
    body = struct.pack(">i", draw(st.integers(-(1 << 31), (1 << 31) - 1))) + bytes((magic,)) + rest
    return struct.pack(">qi", offset, len(body)) + body


# --- arbitrary bytes -----------------------------------------------------------------------------


@FUZZ
@given(st.binary(max_size=400) | framed_garbage(), st.booleans(), st.booleans())
def test_arbitrary_bytes_end_the_read_or_raise_typed(
    data: bytes, verify_crc: bool, check_offsets: bool
) -> None:
    with time_limit(LIMIT_S):
        batches, end = read_batches(data, verify_crc=verify_crc, check_offsets=check_offsets)
        check_reader_framing(batches, end)
        assert end.kind is not EndKind.CLEAN or end.position == len(data)
        for batch in batches:
            try:
                exercise(batch)
            except CorruptRecordError as exc:
                assert exc.position == batch.position
        try:
            list(iter_batches_strict(data))
        except CorruptRecordError:
            assert not end.is_clean or not check_offsets or not verify_crc
        check_columns_agree(data, verify_crc=verify_crc)


@FUZZ
@given(
    st.binary(max_size=200),
    st.integers(-(1 << 31), (1 << 31) - 1),
    st.integers(-(1 << 63), INT64_MAX),
    st.integers(-(1 << 63), INT64_MAX),
)
def test_decode_records_on_arbitrary_sections(
    section: bytes, count: int, base_offset: int, base_timestamp: int
) -> None:
    with time_limit(LIMIT_S):
        try:
            records = decode_records(section, count, base_offset, base_timestamp)
        except CorruptRecordError:
            return
    assert len(records) == count


# --- damaged valid logs --------------------------------------------------------------------------


@FUZZ
@given(damaged_logs())
def test_damaged_log_returns_only_original_batches(drawn: tuple[bytes, bytes]) -> None:
    original, damaged = drawn
    originals, original_end = read_batches(original)
    assert original_end.is_clean
    # The CRC-covered part of every original entry (magic on): what a returned entry must be.
    covered = {bytes(b.raw[16:]): projection(b) for b in originals}
    diff = first_difference(original, damaged)
    intact = [b for b in originals if b.position + b.size_in_bytes <= diff]

    with time_limit(LIMIT_S):
        batches, end = read_batches(damaged)
        check_reader_framing(batches, end)
        # Every whole batch before the first damaged byte comes back untouched ...
        assert [(b.position, bytes(b.raw)) for b in batches[: len(intact)]] == [
            (b.position, bytes(b.raw)) for b in intact
        ]
        # ... and nothing else comes back unless it is an original entry (moved by an
        # insertion or deletion, or with a changed baseOffset / leader epoch).
        for batch in batches:
            signature = bytes(batch.raw[16:])
            assert signature in covered, (batch.position, end)
            assert projection(batch) == covered[signature]
            exercise(batch)
        check_columns_agree(damaged, verify_crc=True)


@FUZZ
@given(damaged_logs(), st.booleans())
def test_damaged_log_without_crc_check_raises_only_typed(
    drawn: tuple[bytes, bytes], check_offsets: bool
) -> None:
    _, damaged = drawn
    with time_limit(LIMIT_S):
        batches, end = read_batches(damaged, verify_crc=False, check_offsets=check_offsets)
        check_reader_framing(batches, end)
        for batch in batches:
            try:
                exercise(batch)
            except CorruptRecordError as exc:
                assert exc.position == batch.position
        if check_offsets:
            check_columns_agree(damaged, verify_crc=False)


# --- damage a writer checksummed (inside the CRC) ------------------------------------------------


def recrc_v2(batch: bytearray) -> bytes:
    """Fix a v2 batch's batchLength and CRC-32C after its covered bytes were changed."""
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    if len(batch) >= 21:
        struct.pack_into(">I", batch, 17, crc32c(memoryview(batch)[21:]))
    return bytes(batch)


@st.composite
def checksummed_damage(draw: st.DrawFn) -> bytes:
    """One entry (v2 of any codec, control, or legacy, plain or a compressed wrapper) whose
    CRC-covered bytes were mutated, then given a correct length and checksum again."""
    if draw(st.booleans()):
        entry = draw(batch_specs()).encode()
        ops = draw(mutations(len(entry), [0], max_ops=2))
        return recrc_v2(bytearray(apply_mutations(entry, ops, low=21)))
    entry, _ = draw(legacy_entries(draw(st.integers(0, 1 << 20))))
    ops = draw(mutations(len(entry), [0], max_ops=2))
    return recrc_legacy(bytearray(apply_mutations(entry, ops, low=17)))


@FUZZ
@given(checksummed_damage())
def test_checksummed_damage_decodes_or_raises_corrupt_record(entry: bytes) -> None:
    with time_limit(LIMIT_S):
        batches, end = read_batches(entry)
        check_reader_framing(batches, end)
        for batch in batches:
            assert batch.is_valid()
            try:
                exercise(batch)
            except CorruptRecordError as exc:
                assert exc.position == batch.position
        check_columns_agree(entry, verify_crc=True)


# --- codec streams -------------------------------------------------------------------------------


@FUZZ
@given(
    st.sampled_from([c for c in CompressionType if c is not CompressionType.NONE]),
    st.binary(max_size=600) | st.binary(max_size=40).map(lambda b: b * 30),
    st.data(),
)
def test_mutated_codec_streams_raise_only_corrupt_record(
    codec: CompressionType, data: bytes, draw: st.DataObject
) -> None:
    stream = compress(codec, data)
    damaged = apply_mutations(stream, draw.draw(mutations(len(stream))))
    with time_limit(LIMIT_S):
        try:
            out = decompress(codec, damaged, max_bytes=1 << 20)
        except CorruptRecordError:
            return
    assert len(out) <= 1 << 20


# --- bugs found ----------------------------------------------------------------------------------


@FUZZ_FEW
@example(base_offset=INT64_MAX, count=2, base_timestamp=5, delta=1)
@given(
    st.integers(INT64_MAX - 8, INT64_MAX) | st.integers(0, 1 << 40),
    st.integers(1, 3),
    st.integers(INT64_MAX - 4, INT64_MAX) | st.integers(0, 1 << 41),
    st.integers(0, 3),
)
def test_decoded_offsets_and_timestamps_stay_within_int64(
    base_offset: int, count: int, base_timestamp: int, delta: int
) -> None:
    # Record i > 0 is ``delta`` ms after the first: past 2**63 - 1 near the top of the range
    # (a timestamp overflow needs a writer's help, since timestamps are under the CRC).
    records = [
        Record(i, base_timestamp + min(i, 1) * delta, b"k%d" % i, b"v") for i in range(count)
    ]
    max_timestamp = min(base_timestamp + delta, INT64_MAX)
    raw = bytearray(encode_batch(records, max_timestamp=max_timestamp))
    set_base_offset(raw, base_offset)  # a flip of baseOffset's bits: no CRC notices it
    buf = bytes(raw)
    batches, end = read_batches(buf)
    if not batches:
        assert end.kind is EndKind.CORRUPT
        return
    batch = batches[0]
    assert isinstance(batch, RecordBatch)
    decoded = batch.records()
    for record in decoded:
        assert -(1 << 63) <= record.offset <= INT64_MAX, record.offset
        assert -(1 << 63) <= record.timestamp <= INT64_MAX, record.timestamp
    for use_numba in (True, False):
        columns = scan_columns(buf, use_numba=use_numba)
        assert [int(o) for o in columns.offset] == [r.offset for r in decoded]


def _zstd_rle_frame(blocks: int) -> bytes:
    """A zstd frame of ``blocks`` RLE blocks of 128 KiB each: 4 bytes in, 128 KiB out."""
    out = bytearray(b"\x28\xb5\x2f\xfd\x00\x58")  # magic, no content size, 2 MiB window
    for index in range(blocks):
        last = 1 if index == blocks - 1 else 0
        out += (last | (1 << 1) | ((128 * 1024) << 3)).to_bytes(3, "little") + b"\x00"
    return bytes(out)


@FUZZ_FEW
@example(blocks=256, max_bytes=1 << 20)
@given(st.integers(1, 300), st.integers(1 << 10, 1 << 20))
def test_zstd_output_is_bounded_while_decompressing(blocks: int, max_bytes: int) -> None:
    frame = _zstd_rle_frame(blocks)
    tracemalloc.start()
    try:
        with contextlib.suppress(CorruptRecordError):
            decompress(CompressionType.ZSTD, frame, max_bytes=max_bytes)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # Allow the output itself, one copy of it, and a block of slack.
    assert peak <= 2 * max_bytes + (1 << 20), (peak, max_bytes)


def test_reader_rejects_mutated_batches_even_at_the_end_of_a_segment() -> None:
    """Sanity anchor for the properties above (a fixed case, always run)."""
    buf = encode_batch([Record(7, TS, b"k", b"v")])
    damaged = bytearray(buf)
    damaged[-1] ^= 0x40
    batches, end = read_batches(bytes(damaged))
    assert batches == [] and end.kind is EndKind.CORRUPT and end.position == 0
    with pytest.raises(SeglogError):
        list(iter_batches_strict(bytes(damaged)))
