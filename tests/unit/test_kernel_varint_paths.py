"""The records kernel's two varint paths agree with the Python twin.

The numba kernel returns one- and two-byte varints without bound checks when at least two
bytes lie before the bound (the record's end, or the section's end for the record length),
and reads everything else with the checked loop. These cases put every varint field of a
record at every distance from its bound up to past the 10-byte varlong limit, with every
length from 1 to 12 bytes and last bytes that are valid, out of range or missing, and check
that the kernel and its Python twin (unchanged, and checked against the Python decoder by
``test_kernels.py``) return the same code, position and rows.
"""

from __future__ import annotations

import numpy as np
import pytest

from seglog import kernels
from seglog.format.varint import encode_varint
from seglog.kernels import codes

TS = 1_700_000_000_000
# Continuation bytes before the last byte (0-11), and last bytes: in range for any length,
# carrying bits past int32 / int64 at the maximum length, or none (the varint runs on).
CONTINUATIONS = range(12)
LAST_BYTES = (0x01, 0x02, 0x10, None)
FILLERS = range(13)  # bytes after the varint before the bound


def varint(continuations: int, last: int | None) -> bytes:
    """``continuations`` bytes with the high bit set, then ``last`` (if any)."""
    head = bytes([0x80 | (i % 3) for i in range(continuations)])
    return head if last is None else head + bytes([last])


def scan_both(section: bytes, count: int) -> tuple[tuple[int, int, int], dict[str, object]]:
    """Scan one section with the kernel and the twin; assert identical results and rows."""
    rows = max(0, min(count, len(section) // codes.MIN_RECORD_BYTES + 1))
    sections = {
        "start": np.array([0], dtype=np.int64),
        "end": np.array([len(section)], dtype=np.int64),
        "base_offset": np.array([1000], dtype=np.int64),
        "base_timestamp": np.array([TS], dtype=np.int64),
        "count": np.array([count], dtype=np.int64),
        "batch": np.array([0], dtype=np.int32),
        "out_start": np.array([0], dtype=np.int64),
    }
    buffer = np.frombuffer(section, dtype=np.uint8)
    results = []
    seen = []
    for use_numba in (True, False):
        outputs = {
            name: np.full(rows, -7, dtype=dtype) for name, dtype in kernels.OUTPUT_DTYPES.items()
        }
        results.append(kernels.scan_records(buffer, sections, outputs, use_numba=use_numba))
        seen.append(outputs)
    assert results[0] == results[1], (section.hex(), results)
    for name in kernels.OUTPUT_FIELDS:  # plain comparisons: thousands of cases
        assert seen[0][name].tobytes() == seen[1][name].tobytes(), (section.hex(), name)
    return results[0], dict(seen[0])


def check(section: bytes, count: int = 1) -> None:
    """Kernel == twin (code, position and every output row)."""
    scan_both(section, count)


def record(body: bytes) -> bytes:
    """A record: its length varint, then ``body`` (attributes byte first)."""
    return encode_varint(len(body)) + body


@pytest.mark.parametrize("continuations", CONTINUATIONS)
def test_record_length_varint_at_every_distance_from_the_section_end(continuations: int) -> None:
    for last in LAST_BYTES:
        for filler in FILLERS:
            check(varint(continuations, last) + b"\x00" * filler)
            # The same bytes after a valid record: the bound is still the section's end.
            check(record(b"\x00\x00\x00\x01\x01\x00") + varint(continuations, last), 2)


# Where each varint of a record sits: the fields before it (all valid and minimal), and the
# fields after it that a valid record still needs.
FIELDS = {
    "timestamp_delta": (b"\x00", b"\x00\x01\x01\x00"),
    "offset_delta": (b"\x00\x00", b"\x01\x01\x00"),
    "key_length": (b"\x00\x00\x00", b"\x01\x00"),
    "value_length": (b"\x00\x00\x00\x01", b"\x00"),
    "header_count": (b"\x00\x00\x00\x01\x01", b""),
    "header_key_length": (b"\x00\x00\x00\x01\x01\x02", b"\x01"),
    "header_value_length": (b"\x00\x00\x00\x01\x01\x02\x00", b""),
}


@pytest.mark.parametrize("field", sorted(FIELDS))
@pytest.mark.parametrize("continuations", CONTINUATIONS)
def test_record_varints_at_every_distance_from_the_record_end(
    field: str, continuations: int
) -> None:
    before, after = FIELDS[field]
    for last in LAST_BYTES:
        for filler in FILLERS:
            body = before + varint(continuations, last)
            # Bound right after the varint plus ``filler`` zero bytes (which a valid varint
            # then leaves as a length mismatch, or reads as the fields still to come).
            check(record(body + b"\x00" * filler))
            check(record(body + after + b"\x00" * filler))
            # The record's declared length ends inside the section: more bytes follow it.
            check(record(body + after)[: 1 + len(body)] + b"\x00" * (filler + 12))


def test_fast_and_checked_paths_decode_the_same_values() -> None:
    """Every length of a valid varint, read with the bound far away and right after it."""
    for value in (0, 1, -1, 63, -64, 64, 8191, -8192, 8192, 1 << 20, -(1 << 27), (1 << 31) - 1):
        offset_delta = encode_varint(value)
        for filler in FILLERS:
            body = b"\x00\x00" + offset_delta + b"\x01\x01\x00"
            section = record(body) + b"\x00" * filler
            result, outputs = scan_both(section, 1)
            expected = (codes.REC_OK, -1, -1) if filler == 0 else codes.REC_BYTES_LEFT
            if filler == 0:
                assert result == expected
                assert outputs["offset"][0] == 1000 + value  # type: ignore[index]
            else:
                assert result[0] == expected
