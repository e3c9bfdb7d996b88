"""Checksums: CRC-32C for v2 batches, CRC-32 (IEEE) for legacy messages (spec §3.1, §4.1)."""

from __future__ import annotations

import zlib

from hypothesis import given
from hypothesis import strategies as st

from seglog.format.crc import crc32_ieee, crc32c

CHECK_INPUT = b"123456789"


def test_crc32c_check_value() -> None:
    assert crc32c(CHECK_INPUT) == 0xE3069283


def test_crc32c_known_vectors() -> None:
    # RFC 3720 (iSCSI) appendix B.4 test vectors.
    assert crc32c(b"") == 0
    assert crc32c(bytes(32)) == 0x8A9136AA
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E


def test_crc32c_accepts_memoryview_bytearray_and_slices() -> None:
    data = b"xx" + CHECK_INPUT + b"yy"
    assert crc32c(memoryview(data)[2:-2]) == 0xE3069283
    assert crc32c(bytearray(CHECK_INPUT)) == 0xE3069283
    assert crc32c(memoryview(bytearray(data))[2:11]) == 0xE3069283


def test_crc32_ieee_check_value_and_unsigned() -> None:
    assert crc32_ieee(CHECK_INPUT) == 0xCBF43926
    assert crc32_ieee(memoryview(b"a" + CHECK_INPUT)[1:]) == 0xCBF43926
    assert crc32_ieee(b"\xff" * 7) >= 0


@given(st.binary(max_size=300))
def test_crc32c_is_unsigned_and_detects_single_byte_changes(data: bytes) -> None:
    value = crc32c(data)
    assert 0 <= value <= 0xFFFFFFFF
    assert crc32_ieee(data) == zlib.crc32(data) & 0xFFFFFFFF
    if data:
        flipped = bytearray(data)
        flipped[len(data) // 2] ^= 0x5A
        assert crc32c(flipped) != value
