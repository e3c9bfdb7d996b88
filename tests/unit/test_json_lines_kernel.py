"""The JSON-lines kernel (numba) and its plain-Python twin write identical bytes, and those
bytes are the slow path's ``seglog consume --format json`` lines.

Records go through the real format: encoded as v2 batches (plain, compressed, LogAppendTime),
decoded by the columnar scan, then rendered three ways: the numba kernel, the twin, and one
``json_record_line`` per record (the slow path's renderer, ``json.dumps`` and ``base64``).
Covered: non-ASCII text, every character JSON escapes, invalid UTF-8 (truncated sequences,
surrogates, overlong forms, bytes above U+10FFFF), null keys and values, empty spans, headers
(null values, repeated keys, keys and values that are not UTF-8), negative and extreme
timestamps, and the two stops (headers without a known start, an output buffer too small).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seglog.cli.consume_output import json_record_line
from seglog.engine.log.record_scan import ConsumedRecord
from seglog.format.batch import encode_batch
from seglog.format.columnar import RecordColumns, scan_columns
from seglog.format.compression import CompressionType
from seglog.format.records import Header, Record, TimestampType
from seglog.kernels.json_lines import json_lines_nb
from seglog.kernels.json_lines_py import (
    STATUS_NO_HEADERS_START,
    STATUS_OK,
    STATUS_OUT_FULL,
    capacity,
    json_lines_py,
)

TOPIC = "t.é_1"
PARTITION = 3
HEAD = b'{"topic":"t.\xc3\xa9_1","partition":3,"offset":'
SPECIAL = 'q " b \\ t \t n \n r \r bell \x07 nul \x00 us \x1f del \x7f é € 😀 \u2028 </script>'
NOT_UTF8 = (
    b"\xff",
    b"\xc3\x28",
    b"\xe2\x82",  # truncated
    b"\xed\xa0\x80",  # a surrogate
    b"\xc0\xaf",  # overlong
    b"\xe0\x80\xaf",  # overlong
    b"\xf4\x90\x80\x80",  # above U+10FFFF
    b"\xf8\x88\x80\x80\x80",
    b"ok \xe2\x82\xac then \x80",
)


def _arrays(columns: RecordColumns) -> tuple[npt.NDArray[np.generic], ...]:
    log_append = columns.batches.is_log_append_time[columns.batch_index]
    return (
        columns.data,
        np.frombuffer(HEAD, dtype=np.uint8),
        columns.offset,
        columns.reported_timestamp(),
        log_append,
        columns.key_position,
        columns.key_length,
        columns.value_position,
        columns.value_length,
        columns.header_count,
    )


def render_both(columns: RecordColumns, room: int | None = None) -> tuple[bytes, bytes]:
    """The kernel's and the twin's output (asserting they return the same status)."""
    size = room
    if size is None:
        size = capacity(
            len(HEAD),
            columns.key_length,
            columns.value_length,
            columns.header_count,
            len(columns.data),
        )
    arrays = _arrays(columns)
    compiled = np.full(size + 64, 0xAA, dtype=np.uint8)
    twin = np.full(size + 64, 0xAA, dtype=np.uint8)
    status_nb = json_lines_nb(*arrays, compiled[:size])
    status_py = json_lines_py(*arrays, twin[:size])
    assert tuple(status_nb) == tuple(status_py)
    assert (compiled[size:] == 0xAA).all()  # nothing past the end of ``out``
    if status_nb[0] != STATUS_OK:
        return b"", b""
    return compiled[: status_nb[1]].tobytes(), twin[: status_py[1]].tobytes()


def reference(batches: Sequence[tuple[list[Record], TimestampType]], data: bytes) -> bytes:
    """The slow path's lines for the same records (timestamps as Kafka reports them)."""
    columns = scan_columns(data)
    reported = columns.reported_timestamp()
    lines: list[bytes] = []
    row = 0
    for records, kind in batches:
        for record in records:
            consumed = ConsumedRecord(
                offset=record.offset,
                timestamp=int(reported[row]),
                timestamp_type=kind,
                key=record.key,
                value=record.value,
                headers=record.headers,
            )
            lines.append(json_record_line(TOPIC, PARTITION, consumed))
            row += 1
    return b"".join(lines)


def check(
    batches: Sequence[tuple[list[Record], TimestampType]],
    compression: CompressionType = CompressionType.NONE,
) -> bytes:
    data = b"".join(
        encode_batch(records, timestamp_type=kind, compression=compression)
        for records, kind in batches
    )
    compiled, twin = render_both(scan_columns(data))
    assert compiled == twin
    assert compiled == reference(batches, data)
    return compiled


def numbered(
    items: Sequence[tuple[bytes | None, bytes | None, tuple[Header, ...]]], first: int = 0
) -> list[Record]:
    return [
        Record(first + i, 1_700_000_000_000 + i, key, value, headers)
        for i, (key, value, headers) in enumerate(items)
    ]


def hkey(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


EDGE_CASES: list[tuple[bytes | None, bytes | None, tuple[Header, ...]]] = [
    (b"k", b"v", ()),
    (None, b"no key", ()),
    (b"tomb", None, ()),
    (None, None, ()),
    (b"", b"", ()),
    (SPECIAL.encode(), SPECIAL.encode(), ()),
    *[(bad, bad, ()) for bad in NOT_UTF8],
    (b"k", b"v", (Header("h", b"x"), Header("n", None))),
    (b"k", b"v", (Header("h", b"x"), Header("h", b"y"))),  # a repeated key
    (b"k", None, (Header(hkey(b"\xff"), b"x"),)),  # a key that is not UTF-8, null value
    (None, b"v", (Header("h", b"\xc3\x28"),)),  # a value that is not UTF-8
    (b"k", b"v", (Header(SPECIAL, SPECIAL.encode()), Header("", b""))),
    (b"k", b"v", tuple(Header(f"h{i}", b"x" * i) for i in range(40))),
]


@pytest.mark.parametrize("compression", [CompressionType.NONE, CompressionType.GZIP])
def test_edge_cases_match_the_slow_path(compression: CompressionType) -> None:
    out = check(
        [
            (numbered(EDGE_CASES), TimestampType.CREATE_TIME),
            (numbered(EDGE_CASES, len(EDGE_CASES)), TimestampType.LOG_APPEND_TIME),
        ],
        compression,
    )
    assert b'"key_base64":"/w=="' in out
    assert b'"headers_base64":[["aA==","eA=="],["aA==","eQ=="]]' in out
    assert b'"timestampType":"LogAppendTime"' in out


def test_every_code_point_is_escaped_as_json_dumps() -> None:
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    pieces = [text[i : i + 5000].encode() for i in range(0, len(text), 5000)]
    items = [
        (piece, piece, (Header(piece[:50].decode("utf-8", "ignore"), piece),)) for piece in pieces
    ]
    check([(numbered(items), TimestampType.CREATE_TIME)])


def test_extreme_numbers() -> None:
    low = -(1 << 63)
    first = [Record(0, low, b"a", b"b"), Record(1, -1, b"a", b"b")]
    second = [Record(2, 0, b"a", b"b"), Record(3, (1 << 63) - 1, b"a", b"b")]
    out = check(
        [(first, TimestampType.CREATE_TIME), (second, TimestampType.CREATE_TIME)],
    )
    assert b'"timestamp":-9223372036854775808,' in out
    assert b'"timestamp":9223372036854775807,' in out


def test_headers_without_a_known_start_stop_both() -> None:
    records = numbered([(b"k", b"v", ()), (None, None, (Header("h", b"x"),)), (b"k", b"v", ())])
    columns = scan_columns(encode_batch(records))
    arrays = _arrays(columns)
    room = 4096
    assert tuple(json_lines_nb(*arrays, np.empty(room, np.uint8))) == (
        STATUS_NO_HEADERS_START,
        1,
    )
    assert json_lines_py(*arrays, np.empty(room, np.uint8)) == (STATUS_NO_HEADERS_START, 1)


def test_a_small_output_buffer_stops_both_at_the_same_row() -> None:
    columns = scan_columns(encode_batch(numbered(EDGE_CASES)))
    full = capacity(
        len(HEAD), columns.key_length, columns.value_length, columns.header_count, len(columns.data)
    )
    for room in (0, 10, 300, full // 3, full // 2):
        arrays = _arrays(columns)
        status_nb = json_lines_nb(*arrays, np.zeros(room, np.uint8))
        assert status_nb[0] == STATUS_OUT_FULL
        render_both(columns, room)  # same status, nothing written past the end


span = st.one_of(
    st.none(),
    st.binary(max_size=30),
    st.text(max_size=30).map(str.encode),
    st.sampled_from(NOT_UTF8),
)
header = st.builds(
    Header,
    st.one_of(st.sampled_from(["a", "b", "é"]), st.binary(max_size=4).map(hkey)),
    st.one_of(st.none(), st.binary(max_size=8), st.text(max_size=8).map(str.encode)),
)
item = st.tuples(span, span, st.lists(header, max_size=4).map(tuple)).filter(
    # headers on a record whose key and value are both null stop the kernels (tested above)
    lambda x: x[0] is not None or x[1] is not None or not x[2]
)


@settings(max_examples=150, deadline=None)
@given(
    items=st.lists(item, min_size=1, max_size=25),
    log_append=st.booleans(),
    compression=st.sampled_from([CompressionType.NONE, CompressionType.LZ4]),
)
def test_random_records_match_the_slow_path(
    items: list[tuple[bytes | None, bytes | None, tuple[Header, ...]]],
    log_append: bool,
    compression: CompressionType,
) -> None:
    kind = TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME
    check([(numbered(items), kind)], compression)
