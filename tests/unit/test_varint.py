"""Zig-zag varints exactly as Kafka's ByteUtils writes them (spec §3.3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seglog.format.varint import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    MAX_VARINT_BYTES,
    MAX_VARLONG_BYTES,
    VarintError,
    decode_varint,
    encode_varint,
    size_of_varint,
)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (-1, b"\x01"),
        (0, b"\x00"),
        (1, b"\x02"),
        (-2, b"\x03"),
        (63, b"\x7e"),
        (-64, b"\x7f"),
        (64, b"\x80\x01"),
        (-65, b"\x81\x01"),
        (300, b"\xd8\x04"),
    ],
)
def test_kafka_examples(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encoded
    assert decode_varint(encoded, 0, len(encoded)) == (value, len(encoded))
    assert decode_varint(encoded, 0, len(encoded), MAX_VARINT_BYTES) == (value, len(encoded))
    assert size_of_varint(value) == len(encoded)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (INT32_MAX, b"\xfe\xff\xff\xff\x0f"),
        (INT32_MIN, b"\xff\xff\xff\xff\x0f"),
    ],
)
def test_int32_bounds_take_five_bytes(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encoded
    assert decode_varint(encoded, 0, 5, MAX_VARINT_BYTES) == (value, 5)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (INT64_MAX, b"\xfe" + b"\xff" * 8 + b"\x01"),
        (INT64_MIN, b"\xff" * 9 + b"\x01"),
    ],
)
def test_int64_bounds_take_ten_bytes(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encoded
    assert decode_varint(encoded, 0, 10, MAX_VARLONG_BYTES) == (value, 10)


def test_int32_varint_rejects_values_outside_int32() -> None:
    # 2**31 zig-zags to a 5-byte group sequence that fits the byte budget but not the type.
    encoded = encode_varint(INT32_MAX + 1)
    assert len(encoded) == 5
    with pytest.raises(VarintError):
        decode_varint(encoded, 0, len(encoded), MAX_VARINT_BYTES)
    assert decode_varint(encoded, 0, len(encoded))[0] == INT32_MAX + 1


def test_encode_rejects_values_outside_int64() -> None:
    with pytest.raises(VarintError):
        encode_varint(INT64_MAX + 1)
    with pytest.raises(VarintError):
        encode_varint(INT64_MIN - 1)


@given(st.integers(INT64_MIN, INT64_MAX), st.binary(max_size=4), st.binary(max_size=4))
def test_round_trip_int64(value: int, before: bytes, after: bytes) -> None:
    encoded = encode_varint(value)
    assert len(encoded) == size_of_varint(value) <= MAX_VARLONG_BYTES
    buf = before + encoded + after
    assert decode_varint(buf, len(before), len(buf)) == (value, len(before) + len(encoded))
    # A memoryview decodes the same.
    assert decode_varint(memoryview(buf), len(before), len(buf))[0] == value


@given(st.integers(INT32_MIN, INT32_MAX))
def test_round_trip_int32_fits_five_bytes(value: int) -> None:
    encoded = encode_varint(value)
    assert len(encoded) <= MAX_VARINT_BYTES
    assert decode_varint(encoded, 0, len(encoded), MAX_VARINT_BYTES) == (value, len(encoded))


@given(st.integers(INT64_MIN, INT64_MAX).filter(lambda v: not -64 <= v <= 63))
def test_every_truncation_raises(value: int) -> None:
    encoded = encode_varint(value)
    for cut in range(len(encoded)):
        with pytest.raises(VarintError):
            decode_varint(encoded, 0, cut)


def test_decode_never_reads_past_end() -> None:
    # The byte at `end` would complete the varint; the decoder must not look at it.
    buf = b"\x80\x01"
    with pytest.raises(VarintError, match="truncated"):
        decode_varint(buf, 0, 1)
    with pytest.raises(VarintError, match="truncated"):
        decode_varint(buf, 2, 2)


def test_over_long_varint_raises() -> None:
    six = b"\x80\x80\x80\x80\x80\x00"
    with pytest.raises(VarintError, match="longer than 5"):
        decode_varint(six, 0, len(six), MAX_VARINT_BYTES)
    # Still fine as a varlong (padding groups are legal within 10 bytes).
    assert decode_varint(six, 0, len(six)) == (0, 6)
    eleven = b"\x80" * 10 + b"\x00"
    with pytest.raises(VarintError, match="longer than 10"):
        decode_varint(eleven, 0, len(eleven), MAX_VARLONG_BYTES)


def test_ten_byte_varlong_above_int64_raises() -> None:
    # Ten groups carry 70 bits; anything past 64 bits is not an int64.
    too_big = b"\xff" * 9 + b"\x7f"
    with pytest.raises(VarintError):
        decode_varint(too_big, 0, len(too_big))
