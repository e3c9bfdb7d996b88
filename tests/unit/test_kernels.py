"""The numba kernels equal their Python twins, and the columns equal the Python decoder.

Three oracles, compared on hypothesis-generated logs and on corrupted variants of them:

* numba kernel vs Python twin (:mod:`seglog.kernels`): every output array byte for byte
  (rows filled before an error included), codes, positions and details;
* ``scan_columns`` vs ``read_batches`` + ``batch.records()``: offsets, written and reported
  timestamps, keys, values, header counts, batch of each record, and how the buffer ended;
* the records kernel vs ``decode_records`` on raw records sections: same accept/reject.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog import kernels
from seglog.errors import CorruptRecordError
from seglog.format.batch import (
    assemble_batch,
    decode_records,
    encode_batch,
    encode_record,
    set_base_offset,
)
from seglog.format.columnar import RecordColumns, scan_columns
from seglog.format.compression import CompressionType
from seglog.format.reader import EndKind, iter_batches_strict, read_batches
from seglog.format.records import Header, Record, TimestampType
from seglog.format.varint import encode_varint
from seglog.kernels import codes
from seglog.kernels.codes import (
    FRAME_ATTRIBUTES,
    FRAME_BASE_OFFSET,
    FRAME_BASE_TIMESTAMP,
    FRAME_BATCH_LENGTH,
    FRAME_MAGIC,
    FRAME_POSITION,
    FRAME_RECORDS_COUNT,
)
from seglog.testing.strategies import batch_specs, log_buffers

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Generating logs (compression included) costs more than checking them: fewer examples.
LOGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BOTH = pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "twin"])
TS = 1_700_000_000_000
INT64_MAX_OFFSET = (1 << 63) - 1


def as_array(data: bytes) -> npt.NDArray[np.uint8]:
    return np.frombuffer(data, dtype=np.uint8)


# --- reference: the Python decoder ----------------------------------------------------------------
def reference_rows(data: bytes, *, include_control: bool = False, verify_crc: bool = True) -> Any:
    """``(rows, end)`` as the Python reader decodes them, or ``("raises", position)``."""
    batches, end = read_batches(data, verify_crc=verify_crc)
    rows = []
    for index, batch in enumerate(batches):
        if batch.is_control and not include_control:
            continue
        try:
            records = batch.records()
        except CorruptRecordError as exc:
            return "raises", exc.position
        for r in records:
            rows.append(
                (
                    r.offset,
                    r.timestamp,
                    batch.reported_timestamp(r),
                    r.key,
                    r.value,
                    len(r.headers),
                    index,
                )
            )
    return rows, end


def column_rows(columns: RecordColumns) -> list[tuple[Any, ...]]:
    reported = columns.reported_timestamp()
    return [
        (
            int(columns.offset[i]),
            int(columns.timestamp[i]),
            int(reported[i]),
            columns.key(i),
            columns.value(i),
            int(columns.header_count[i]),
            int(columns.batch_index[i]),
        )
        for i in range(len(columns))
    ]


def scanned(data: bytes, **options: Any) -> Any:
    """``(rows, end)`` from scan_columns, or ``("raises", position)``."""
    try:
        columns = scan_columns(data, **options)
    except CorruptRecordError as exc:
        return "raises", exc.position
    return column_rows(columns), columns.end


# --- kernel vs twin -----------------------------------------------------------------------------
def walk_both(data: bytes, **options: Any) -> kernels.FrameWalk:
    """Walk with numba and with the twin; assert identical; return the walk."""
    array = as_array(data)
    compiled = kernels.walk_batches(array, use_numba=True, **options)
    twin = kernels.walk_batches(array, use_numba=False, **options)
    assert (compiled.end_code, compiled.end_position, compiled.detail_a, compiled.detail_b) == (
        twin.end_code,
        twin.end_position,
        twin.detail_a,
        twin.detail_b,
    )
    np.testing.assert_array_equal(compiled.frames, twin.frames)
    return compiled


def sections_of(walk: kernels.FrameWalk) -> dict[str, npt.NDArray[Any]]:
    """Records sections of every framed uncompressed v2 batch (CRC not checked)."""
    f = walk.frames
    keep = np.flatnonzero((f[FRAME_MAGIC] == 2) & ((f[FRAME_ATTRIBUTES] & 7) == 0))
    counts = f[FRAME_RECORDS_COUNT, keep]
    # Cap each batch's output rows at what its bytes could hold, so hostile counts cannot
    # make the test allocate; the kernel still sees (and rejects) the real count.
    section_bytes = f[FRAME_BATCH_LENGTH, keep] + 12 - 61
    room = np.minimum(counts, section_bytes // 7 + 1)
    out_start = (np.cumsum(room) - room).astype(np.int64)
    return {
        "start": f[FRAME_POSITION, keep] + 61,
        "end": f[FRAME_POSITION, keep] + 12 + f[FRAME_BATCH_LENGTH, keep],
        "base_offset": f[FRAME_BASE_OFFSET, keep],
        "base_timestamp": f[FRAME_BASE_TIMESTAMP, keep],
        "count": counts,
        "batch": keep.astype(np.int32),
        "out_start": out_start,
        "_rows": np.array([int(room.sum())]),
    }


def scan_both(buffer: npt.NDArray[np.uint8], sections: dict[str, Any]) -> tuple[int, int, int]:
    """Scan with numba and with the twin into sentinel-filled outputs; assert identical."""
    rows = int(sections.pop("_rows", [sum(int(c) for c in sections["count"])])[0])
    results = []
    outputs_seen = []
    for use_numba in (True, False):
        outputs = {
            name: np.full(rows, -7, dtype=dtype) for name, dtype in kernels.OUTPUT_DTYPES.items()
        }
        results.append(kernels.scan_records(buffer, sections, outputs, use_numba=use_numba))
        outputs_seen.append(outputs)
    assert results[0] == results[1]
    for name in kernels.OUTPUT_FIELDS:
        np.testing.assert_array_equal(outputs_seen[0][name], outputs_seen[1][name], err_msg=name)
    return results[0]


mutations = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4)


def mutate(data: bytes, changes: list[tuple[int, int]], cut: int | None) -> bytes:
    out = bytearray(data)
    for where, byte in changes:
        if out:
            out[where % len(out)] = byte
    if cut is not None and out:
        del out[cut % len(out) :]
    return bytes(out)


@LOGS
@given(log_buffers(), st.booleans())
def test_valid_logs_kernel_twin_and_decoder_agree(
    generated: tuple[bytes, Any], include_control: bool
) -> None:
    data, specs = generated
    walk = walk_both(data)
    assert walk.end_code == codes.END_CLEAN
    assert walk.count == len(specs)
    assert scan_both(as_array(data), sections_of(walk))[0] == codes.REC_OK
    expected = reference_rows(data, include_control=include_control)
    for use_numba in (True, False):
        assert scanned(data, use_numba=use_numba, include_control=include_control) == expected


@LOGS
@given(log_buffers(), mutations, st.none() | st.integers(0, 10_000), st.booleans(), st.booleans())
def test_corrupted_logs_kernel_twin_and_decoder_agree(
    generated: tuple[bytes, Any],
    changes: list[tuple[int, int]],
    cut: int | None,
    verify_crc: bool,
    check_offsets: bool,
) -> None:
    data = mutate(generated[0], changes, cut)
    walk = walk_both(data, check_offsets=check_offsets)
    scan_both(as_array(data), sections_of(walk))
    expected = reference_rows(data, verify_crc=verify_crc)
    for use_numba in (True, False):
        assert scanned(data, use_numba=use_numba, verify_crc=verify_crc) == expected


@FAST
@given(st.binary(max_size=300), st.integers(14, 400), st.booleans())
def test_kernel_equals_twin_on_random_bytes(data: bytes, limit: int, offsets: bool) -> None:
    walk = walk_both(data, max_batch_bytes=limit, check_offsets=offsets)
    scan_both(as_array(data), sections_of(walk))


def test_walk_resumes_when_the_frames_matrix_fills(monkeypatch: pytest.MonkeyPatch) -> None:
    records = [Record(i, TS + i, b"k", b"v") for i in range(50)]
    data = b"".join(encode_batch([r]) for r in records)
    whole = walk_both(data)
    monkeypatch.setattr(kernels, "INITIAL_FRAME_CAPACITY", 3)
    chunked = walk_both(data)
    assert chunked.count == whole.count == 50
    np.testing.assert_array_equal(chunked.frames, whole.frames)


def test_disable_numba_selects_the_twin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(kernels.DISABLE_NUMBA_ENV, "1")
    assert not kernels.numba_enabled()
    assert kernels._walk_impl(True) is kernels.walk_batches_py
    assert kernels._scan_impl(True) is kernels.scan_records_py
    monkeypatch.setenv(kernels.DISABLE_NUMBA_ENV, "0")
    assert kernels.numba_enabled()


def test_kernels_check_their_arguments() -> None:
    with pytest.raises(TypeError):
        kernels.walk_batches(np.zeros(4, dtype=np.int32))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bad range"):
        kernels.walk_batches(np.zeros(4, dtype=np.uint8), start=2, stop=9)


# --- records kernel vs decode_records on raw sections ------------------------------------------
def scan_section(section: bytes, count: int) -> tuple[tuple[int, int, int], dict[str, Any]]:
    """Scan one raw records section with both implementations (asserted equal)."""
    rows = max(0, min(count, len(section) // 7 + 1))
    sections = {
        "start": np.array([0], dtype=np.int64),
        "end": np.array([len(section)], dtype=np.int64),
        "base_offset": np.array([1000], dtype=np.int64),
        "base_timestamp": np.array([TS], dtype=np.int64),
        "count": np.array([count], dtype=np.int64),
        "batch": np.array([0], dtype=np.int32),
        "out_start": np.array([0], dtype=np.int64),
        "_rows": np.array([rows]),
    }
    result = scan_both(as_array(section), dict(sections))
    outputs = kernels.empty_outputs(rows)
    kernels.scan_records(as_array(section), sections, outputs)
    return result, outputs


def assert_agrees_with_decode_records(section: bytes, count: int) -> tuple[int, int, int]:
    result, outputs = scan_section(section, count)
    try:
        records = decode_records(section, count, 1000, TS)
    except CorruptRecordError:
        assert result[0] != codes.REC_OK, "the kernel accepted what decode_records rejects"
        return result
    assert result == (codes.REC_OK, -1, -1), f"kernel rejected a valid section: {result}"
    for row, record in enumerate(records):
        assert outputs["offset"][row] == record.offset
        assert outputs["timestamp"][row] == record.timestamp
        assert outputs["header_count"][row] == len(record.headers)
        for what, value in (("key", record.key), ("value", record.value)):
            position = int(outputs[f"{what}_position"][row])
            length = int(outputs[f"{what}_length"][row])
            got = None if length < 0 else section[position : position + length]
            assert got == value
            assert (position == -1) == (value is None)
    return result


record_specs = st.lists(
    st.tuples(
        st.integers(-(1 << 40), 1 << 40),  # timestamp delta
        st.integers(0, 1 << 31 - 1),  # offset delta
        st.none() | st.binary(max_size=12),
        st.none() | st.binary(max_size=12),
        st.lists(st.tuples(st.text(max_size=4), st.none() | st.binary(max_size=4)), max_size=2),
    ),
    max_size=5,
)


def encode_section(specs: list[Any]) -> bytes:
    return b"".join(
        encode_record(od, td, k, v, [Header(hk, hv) for hk, hv in hs]) for td, od, k, v, hs in specs
    )


@FAST
@given(record_specs)
def test_records_kernel_decodes_valid_sections(specs: list[Any]) -> None:
    section = encode_section(specs)
    assert assert_agrees_with_decode_records(section, len(specs))[0] == codes.REC_OK


@FAST
@given(record_specs, mutations, st.none() | st.integers(0, 10_000), st.integers(-1, 2))
def test_records_kernel_rejects_what_decode_records_rejects(
    specs: list[Any], changes: list[tuple[int, int]], cut: int | None, extra: int
) -> None:
    section = mutate(encode_section(specs), changes, cut)
    assert_agrees_with_decode_records(section, max(0, len(specs) + extra))


def varint_bytes(*groups: int) -> bytes:
    return bytes(groups)


# A record: length, attributes 0, tsDelta, offsetDelta, key -1, value -1, 0 headers.
def raw_record(
    ts_delta: bytes = b"\x00", offset_delta: bytes = b"\x00", tail: bytes = b""
) -> bytes:
    body = b"\x00" + ts_delta + offset_delta + b"\x01\x01\x00" + tail
    return encode_varint(len(body)) + body


@pytest.mark.parametrize(
    ("section", "count", "code", "position"),
    [
        # valid edge cases
        (raw_record(ts_delta=varint_bytes(*[0xFF] * 9, 0x01)), 1, codes.REC_OK, -1),
        (raw_record(offset_delta=varint_bytes(0xFE, 0xFF, 0xFF, 0xFF, 0x0F)), 1, codes.REC_OK, -1),
        (raw_record(offset_delta=b"\x80\x80\x00"), 1, codes.REC_OK, -1),  # over-long zero
        (b"", 0, codes.REC_OK, -1),
        # varlong whose 10th byte carries more than the sign bit
        (raw_record(ts_delta=varint_bytes(*[0xFF] * 9, 0x02)), 1, codes.REC_VARINT_OUT_OF_RANGE, 2),
        # varint whose 5th byte carries bits above int32
        (
            raw_record(offset_delta=varint_bytes(0xFF, 0xFF, 0xFF, 0xFF, 0x10)),
            1,
            codes.REC_VARINT_OUT_OF_RANGE,
            3,
        ),
        # six-byte varint (over-long for an int32)
        (
            raw_record(offset_delta=varint_bytes(0x80, 0x80, 0x80, 0x80, 0x80, 0x00)),
            1,
            codes.REC_VARINT_TOO_LONG,
            3,
        ),
        (raw_record(ts_delta=varint_bytes(*[0x80] * 10, 0x00)), 1, codes.REC_VARINT_TOO_LONG, 2),
        (b"\x80", 1, codes.REC_COUNT_IMPOSSIBLE, 0),
        (b"\x80" * 7, 1, codes.REC_VARINT_TOO_LONG, 0),
        (b"\x8c\x80\x80\x80\x80\x80\x80", 1, codes.REC_VARINT_TOO_LONG, 0),
        (b"\x0a" + b"\x00" * 6, 1, codes.REC_LENGTH_INVALID, 0),  # length 5 < 6
        (b"\x0e\x00\x00\x00\x01\x01\x00\x00", 1, codes.REC_LENGTH_MISMATCH, 0),  # 7 != 6
        (b"\x0c\x00\x00\x00\x03\x01\x00", 1, codes.REC_KEY_LENGTH_INVALID, 4),  # key -2
        (b"\x0c\x00\x00\x00\x0a\x01\x00", 1, codes.REC_KEY_LENGTH_INVALID, 4),  # 5 > 2 left
        (b"\x0c\x00\x00\x00\x01\x03\x00", 1, codes.REC_VALUE_LENGTH_INVALID, 5),  # value -2
        (b"\x0c\x00\x00\x00\x01\x01\x01", 1, codes.REC_HEADER_COUNT_INVALID, 6),  # -1 headers
        (b"\x0c\x00\x00\x00\x01\x01\x02", 1, codes.REC_HEADER_COUNT_INVALID, 6),  # 1 > 0 left
        (raw_record(tail=b"") + b"\x00" * 7, 1, codes.REC_BYTES_LEFT, 7),
        # length 8: attributes, ts, offset, key -1, value -1, 1 header whose key length is -1
        (b"\x10\x00\x00\x00\x01\x01\x02\x01\x00", 1, codes.REC_HEADER_KEY_LENGTH_INVALID, 7),
        # the header value length runs past the record
        (b"\x10\x00\x00\x00\x01\x01\x02\x00\x08", 1, codes.REC_HEADER_VALUE_LENGTH_INVALID, 8),
    ],
)
def test_records_kernel_codes_and_positions(
    section: bytes, count: int, code: int, position: int
) -> None:
    result = assert_agrees_with_decode_records(section, count)
    assert (result[0], result[2]) == (code, position), codes.REC_NAMES[result[0]]


# --- columns vs the Python decoder ------------------------------------------------------------
@LOGS
@given(log_buffers(), st.integers(0, 10_000))
def test_any_prefix_ends_torn_after_whole_batches(generated: tuple[bytes, Any], cut: int) -> None:
    data, _ = generated
    prefix = data[: cut % (len(data) + 1)]
    rows, end = scanned(prefix)
    assert end.kind in (EndKind.CLEAN, EndKind.TORN_TAIL)
    assert (rows, end) == reference_rows(prefix)


def test_zero_copy_for_uncompressed_batches() -> None:
    data = bytearray(encode_batch([Record(5, TS, b"key", b"value")]))
    columns = scan_columns(data)
    assert columns.is_zero_copy
    assert np.shares_memory(columns.data, np.frombuffer(data, dtype=np.uint8))
    assert columns.value(0) == b"value"


def test_arena_holds_decompressed_sections() -> None:
    plain = encode_batch([Record(0, TS, b"a", b"1"), Record(1, TS + 1, None, b"2")])
    packed = encode_batch(
        [Record(2, TS + 2, b"c", None), Record(3, TS + 3, b"d", b"4" * 300)],
        compression=CompressionType.ZSTD,
    )
    columns = scan_columns(plain + packed)
    assert not columns.is_zero_copy
    assert columns.offset.tolist() == [0, 1, 2, 3]
    assert [columns.key(i) for i in range(4)] == [b"a", None, b"c", b"d"]
    assert [columns.value(i) for i in range(4)] == [b"1", b"2", None, b"4" * 300]
    assert columns.is_tombstone().tolist() == [False, False, True, False]
    assert columns.batches.record_start.tolist() == [0, 2, 4]
    # uncompressed batches keep their input positions in the arena
    assert columns.key_position[0] == plain.index(b"\x02a") + 1


def test_control_batches_keep_a_row_but_no_records_unless_asked() -> None:
    data_batch = encode_batch(
        [Record(0, TS, b"k", b"v")],
        producer_id=7,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    marker = encode_batch(
        [Record(1, TS, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x03")],
        is_control=True,
        is_transactional=True,
        producer_id=7,
        producer_epoch=0,
    )
    columns = scan_columns(data_batch + marker)
    assert len(columns) == 1
    assert columns.batches.is_control.tolist() == [False, True]
    assert columns.batches.record_start.tolist() == [0, 1, 1]
    assert columns.batches.producer_id.tolist() == [7, 7]
    with_control = scan_columns(data_batch + marker, include_control=True)
    assert with_control.offset.tolist() == [0, 1]
    assert with_control.batch_index.tolist() == [0, 1]


def test_log_append_time_reports_max_timestamp() -> None:
    data = encode_batch(
        [Record(0, TS, b"k", b"v"), Record(1, TS + 9, b"k", b"w")],
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        max_timestamp=TS + 1000,
    )
    columns = scan_columns(data)
    assert columns.timestamp.tolist() == [TS, TS + 9]
    assert columns.reported_timestamp().tolist() == [TS + 1000, TS + 1000]


def test_bad_crc_ends_the_scan_like_the_reader() -> None:
    first = encode_batch([Record(0, TS, b"a", b"1")])
    second = bytearray(encode_batch([Record(1, TS, b"b", b"2")]))
    second[-1] ^= 0xFF
    data = first + bytes(second) + encode_batch([Record(2, TS, b"c", b"3")])
    columns = scan_columns(data, base_position=1000)
    assert columns.offset.tolist() == [0]
    assert columns.end.kind is EndKind.CORRUPT
    assert columns.end.position == 1000 + len(first)
    assert "CRC" in columns.end.reason
    assert columns.end == read_batches(data, base_position=1000)[1]
    assert columns.batches.position.tolist() == [1000]


def test_malformed_records_in_a_crc_valid_batch_raise() -> None:
    good = encode_batch([Record(0, TS, b"a", b"1")])
    section = encode_record(0, 0, b"k", b"v") + b"\x00"  # one byte too many
    bad = assemble_batch(
        section,
        base_offset=1,
        partition_leader_epoch=0,
        attributes=0,
        last_offset_delta=0,
        base_timestamp=TS,
        max_timestamp=TS,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        records_count=1,
    )
    for use_numba in (True, False):
        with pytest.raises(CorruptRecordError, match="bytes left") as caught:
            scan_columns(good + bad, base_position=10, use_numba=use_numba)
        assert caught.value.position == 10 + len(good)


def test_impossible_record_count_raises_before_allocating() -> None:
    bad = assemble_batch(
        encode_record(0, 0, b"k", b"v"),
        base_offset=0,
        partition_leader_epoch=0,
        attributes=int(CompressionType.NONE),
        last_offset_delta=0,
        base_timestamp=TS,
        max_timestamp=TS,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        records_count=(1 << 31) - 1,
    )
    for compression in (CompressionType.NONE, CompressionType.LZ4):
        data = bad
        if compression is not CompressionType.NONE:
            data = encode_batch([Record(5, TS, b"x", b"y")], compression=compression)
            data = bytearray(data)
            struct.pack_into(">i", data, 57, (1 << 31) - 1)
            data = assemble_batch(
                bytes(data[61:]),
                base_offset=5,
                partition_leader_epoch=0,
                attributes=int(compression),
                last_offset_delta=0,
                base_timestamp=TS,
                max_timestamp=TS,
                producer_id=-1,
                producer_epoch=-1,
                base_sequence=-1,
                records_count=(1 << 31) - 1,
            )
        with pytest.raises(CorruptRecordError, match="cannot fit") as caught:
            scan_columns(data)
        assert caught.value.position == 0


def test_empty_buffer_and_zero_tail() -> None:
    assert len(scan_columns(b"")) == 0
    assert scan_columns(b"").end.kind is EndKind.CLEAN
    data = encode_batch([Record(0, TS, b"a", b"1")]) + bytes(100)
    columns = scan_columns(data)
    assert columns.end == read_batches(data)[1]
    assert columns.end.reason == "zero-filled tail of 100 bytes"


def legacy_message(offset: int, magic: int, key: bytes | None, value: bytes | None) -> bytes:
    body = bytes([magic, 0])
    if magic == 1:
        body += struct.pack(">q", TS)
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


@BOTH
def test_legacy_entries_are_decoded_in_python_and_placed_in_the_arena(use_numba: bool) -> None:
    data = (
        legacy_message(0, 0, b"k0", b"v0")
        + legacy_message(1, 1, None, b"v1")
        + encode_batch([Record(2, TS, b"k2", None)])
    )
    columns = scan_columns(data, use_numba=use_numba)
    assert column_rows(columns) == reference_rows(data)[0]
    assert columns.batches.magic.tolist() == [0, 1, 2]
    assert columns.timestamp.tolist() == [-1, TS, TS]
    assert columns.end.kind is EndKind.CLEAN


@FAST
@given(batch_specs())
def test_single_batch_any_codec(spec: Any) -> None:
    data = spec.encode()
    assert scanned(data, include_control=True) == reference_rows(data, include_control=True)


@pytest.mark.parametrize(
    ("base_offset", "overflows"),
    [(INT64_MAX_OFFSET - 2, True), (INT64_MAX_OFFSET - 3, False), (INT64_MAX_OFFSET, True)],
)
def test_last_offset_past_int64_is_corrupt_in_every_reader(
    base_offset: int, overflows: bool
) -> None:
    # baseOffset is outside the CRC: a batch of 4 records (lastOffsetDelta 3) rebased near
    # 2**63 must end the read as corrupt at its position, the same in the Python reader, the
    # kernel, its twin and scan_columns; one offset lower it is still a valid batch.
    first = encode_batch([Record(0, TS, b"k", b"v")])
    raw = bytearray(encode_batch([Record(i, TS + i, b"k%d" % i, b"v") for i in range(4)]))
    set_base_offset(raw, base_offset)
    data = first + bytes(raw)
    batches, end = read_batches(data)
    walk = walk_both(data)
    if overflows:
        assert len(batches) == 1
        assert end.kind is EndKind.CORRUPT and end.position == len(first)
        assert "overflows int64" in end.reason
        assert walk.end_code == codes.END_OFFSET_OVERFLOW and walk.end_position == len(first)
        with pytest.raises(CorruptRecordError, match="overflows int64") as raised:
            list(iter_batches_strict(data))
        assert raised.value.position == len(first)
    else:
        assert end.kind is EndKind.CLEAN and walk.end_code == codes.END_CLEAN
        assert batches[1].records()[-1].offset == INT64_MAX_OFFSET
    for use_numba in (True, False):
        assert scanned(data, use_numba=use_numba) == reference_rows(data)
