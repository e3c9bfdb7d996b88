"""Numba kernel: the ``seglog consume --format json`` lines of many records in one pass.

``json_lines_nb(data, head, offset, timestamp, log_append, key_position, key_length,
value_position, value_length, header_count, out) -> (status, value)`` writes, row after row,
the JSON line of each record into the ``uint8`` buffer ``out``, straight from the columns of
the columnar scan and the chunk's bytes ``data``: no Python object per record. The line, its
escaping (``json.dumps(..., ensure_ascii=False)``'s), the base64 fields for bytes that are not
UTF-8, the headers and the result codes are specified in :mod:`seglog.kernels.json_lines_py`,
the plain-Python twin that a differential test compares byte for byte.

UTF-8 is validated as Python's strict decoder does (no overlong forms, no surrogates
U+D800..U+DFFF, nothing above U+10FFFF, no truncated sequence): a span is written as text
optimistically and, at the first invalid byte, the output is rewound to the field's name and
the span is written again as ``NAME_base64``. Headers are written the same way: optimistically
as an object, rewound to ``headers_base64`` when a key repeats or a key or value is not UTF-8.

Before each row the kernel checks ``out`` has :func:`~seglog.kernels.json_lines_py.row_need`
bytes left (the header section is measured first), so it never writes past ``out``.

``nogil`` (callers may run it in a thread) and ``cache=True`` (compiled once per machine,
then loaded from ``__pycache__``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np

from seglog.kernels.json_lines_py import (
    ESCAPE_GROWTH,
    HEADER_OVERHEAD,
    LINE_OVERHEAD,
    STATUS_NO_HEADERS_START,
    STATUS_OK,
    STATUS_OUT_FULL,
)

_F = TypeVar("_F", bound=Callable[..., Any])
_int64 = cast("Callable[[Any], int]", np.int64)


def _jit(fn: _F) -> _F:
    """``numba.njit(nogil=True, cache=True)`` that keeps the function's type for mypy."""
    return cast(_F, numba.njit(nogil=True, cache=True)(fn))


def _jit_inline(fn: _F) -> _F:
    """:func:`_jit`, inlined by numba into every caller."""
    return cast(_F, numba.njit(nogil=True, cache=True, inline="always")(fn))


def _bytes(text: bytes) -> Any:
    return np.frombuffer(text, dtype=np.uint8).copy()


# Byte classes: 0 written as is, 1 escaped, 2 the lead byte of a multi-byte UTF-8 sequence
# (or an invalid byte: the UTF-8 check decides).
_CLASS = np.zeros(256, dtype=np.uint8)
_CLASS[:0x20] = 1
_CLASS[ord('"')] = 1
_CLASS[ord("\\")] = 1
_CLASS[0x80:] = 2
# The letter of a two-character escape, 0 for ``\u00xx``.
_SHORT = np.zeros(256, dtype=np.uint8)
for _char, _letter in (('"', '"'), ("\\", "\\"), ("\b", "b"), ("\f", "f"), ("\n", "n")):
    _SHORT[ord(_char)] = ord(_letter)
for _char, _letter in (("\r", "r"), ("\t", "t")):
    _SHORT[ord(_char)] = ord(_letter)
_HEX = _bytes(b"0123456789abcdef")
_B64 = _bytes(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")

_TIMESTAMP = _bytes(b',"timestamp":')
_CREATE = _bytes(b',"timestampType":"CreateTime"')
_APPEND = _bytes(b',"timestampType":"LogAppendTime"')
_KEY = _bytes(b',"key":')
_KEY_B64 = _bytes(b',"key_base64":')
_VALUE = _bytes(b',"value":')
_VALUE_B64 = _bytes(b',"value_base64":')
_HEADERS = _bytes(b',"headers":{')
_HEADERS_B64 = _bytes(b',"headers_base64":[')
_NULL = _bytes(b"null")
_INT64_MIN = _bytes(b"-9223372036854775808")


@_jit_inline
def _put(out: Any, at: int, piece: Any) -> int:
    for i in range(len(piece)):
        out[at + i] = piece[i]
    return at + len(piece)


@_jit_inline
def _put_int(out: Any, at: int, value: int) -> int:
    if value == -9223372036854775808:
        return _put(out, at, _INT64_MIN)
    if value < 0:
        out[at] = 45  # "-"
        at += 1
        value = -value
    digits = 1
    rest = value
    while rest >= 10:
        rest //= 10
        digits += 1
    for k in range(digits - 1, -1, -1):
        out[at + k] = 48 + value % 10
        value //= 10
    return at + digits


@_jit_inline
def _utf8_length(data: Any, pos: int, end: int) -> int:
    """Bytes of the valid UTF-8 sequence starting at ``pos`` (a byte >= 0x80), 0 if none."""
    lead = _int64(data[pos])
    if lead < 0xC2:
        return 0
    low, high = 0x80, 0xBF
    if lead < 0xE0:
        follow = 1
    elif lead < 0xF0:
        follow = 2
        if lead == 0xE0:
            low = 0xA0
        elif lead == 0xED:
            high = 0x9F
    elif lead < 0xF5:
        follow = 3
        if lead == 0xF0:
            low = 0x90
        elif lead == 0xF4:
            high = 0x8F
    else:
        return 0
    if pos + follow >= end:
        return 0
    second = _int64(data[pos + 1])
    if second < low or second > high:
        return 0
    for i in range(2, follow + 1):
        if (_int64(data[pos + i]) & 0xC0) != 0x80:
            return 0
    return follow + 1


@_jit
def _put_string(data: Any, pos: int, length: int, out: Any, at: int) -> int:
    """``"text"`` escaped; -1 when the bytes are not UTF-8."""
    out[at] = 34  # '"'
    at += 1
    i = pos
    end = pos + length
    while i < end:
        byte = data[i]
        kind = _CLASS[byte]
        if kind == 0:
            out[at] = byte
            at += 1
            i += 1
        elif kind == 1:
            out[at] = 92  # "\"
            letter = _SHORT[byte]
            if letter != 0:
                out[at + 1] = letter
                at += 2
            else:
                out[at + 1] = 117  # "u"
                out[at + 2] = 48
                out[at + 3] = 48
                out[at + 4] = _HEX[byte >> 4]
                out[at + 5] = _HEX[byte & 15]
                at += 6
            i += 1
        else:
            size = _utf8_length(data, i, end)
            if size == 0:
                return -1
            for k in range(size):
                out[at + k] = data[i + k]
            at += size
            i += size
    out[at] = 34
    return at + 1


@_jit
def _put_base64(data: Any, pos: int, length: int, out: Any, at: int) -> int:
    """``"base64"`` (standard alphabet, ``=`` padding)."""
    out[at] = 34
    at += 1
    end = pos + length
    i = pos
    while i + 3 <= end:
        chunk = (_int64(data[i]) << 16) | (_int64(data[i + 1]) << 8) | _int64(data[i + 2])
        out[at] = _B64[(chunk >> 18) & 63]
        out[at + 1] = _B64[(chunk >> 12) & 63]
        out[at + 2] = _B64[(chunk >> 6) & 63]
        out[at + 3] = _B64[chunk & 63]
        at += 4
        i += 3
    left = end - i
    if left > 0:
        chunk = _int64(data[i]) << 16
        if left == 2:
            chunk |= _int64(data[i + 1]) << 8
        out[at] = _B64[(chunk >> 18) & 63]
        out[at + 1] = _B64[(chunk >> 12) & 63]
        out[at + 2] = _B64[(chunk >> 6) & 63] if left == 2 else 61  # "="
        out[at + 3] = 61
        at += 4
    out[at] = 34
    return at + 1


@_jit
def _put_field(data: Any, pos: int, length: int, out: Any, at: int, name: Any, b64: Any) -> int:
    if length < 0:
        return _put(out, _put(out, at, name), _NULL)
    written = _put_string(data, pos, length, out, _put(out, at, name))
    if written >= 0:
        return written
    return _put_base64(data, pos, length, out, _put(out, at, b64))


@_jit_inline
def _varint(data: Any, pos: int) -> tuple[int, int]:
    """A zig-zag varint the scan already validated: ``(value, next_pos)``."""
    result = 0
    shift = 0
    while True:
        byte = _int64(data[pos])
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


@_jit
def _section_length(data: Any, start: int) -> int:
    count, pos = _varint(data, start)
    for _ in range(count):
        key_length, pos = _varint(data, pos)
        pos += key_length
        value_length, pos = _varint(data, pos)
        pos += max(value_length, 0)
    return pos - start


@_jit
def _repeats(data: Any, start: int, before: int, key_pos: int, key_length: int) -> bool:
    """Whether one of the first ``before`` header keys of the section equals the key."""
    _, pos = _varint(data, start)
    for _ in range(before):
        length, pos = _varint(data, pos)
        if length == key_length:
            same = True
            for k in range(length):
                if data[pos + k] != data[key_pos + k]:
                    same = False
                    break
            if same:
                return True
        pos += length
        value_length, pos = _varint(data, pos)
        pos += max(value_length, 0)
    return False


@_jit
def _put_headers(data: Any, start: int, out: Any, at: int) -> int:
    """``,"headers":{...}`` or ``,"headers_base64":[...]`` (without the closing ``}``)."""
    first = at
    count, pos = _varint(data, start)
    at = _put(out, at, _HEADERS)
    plain = True
    for h in range(count):
        key_length, pos = _varint(data, pos)
        key_pos = pos
        pos += key_length
        value_length, pos = _varint(data, pos)
        value_pos = pos
        pos += max(value_length, 0)
        if h > 0:
            out[at] = 44  # ","
            at += 1
        at = _put_string(data, key_pos, key_length, out, at)
        if at < 0 or _repeats(data, start, h, key_pos, key_length):
            plain = False
            break
        out[at] = 58  # ":"
        at += 1
        if value_length < 0:
            at = _put(out, at, _NULL)
        else:
            at = _put_string(data, value_pos, value_length, out, at)
            if at < 0:
                plain = False
                break
    if plain:
        out[at] = 125  # "}"
        return at + 1
    at = _put(out, first, _HEADERS_B64)
    count, pos = _varint(data, start)
    for h in range(count):
        key_length, pos = _varint(data, pos)
        if h > 0:
            out[at] = 44
            at += 1
        out[at] = 91  # "["
        at = _put_base64(data, pos, key_length, out, at + 1)
        pos += key_length
        value_length, pos = _varint(data, pos)
        out[at] = 44
        at += 1
        if value_length < 0:
            at = _put(out, at, _NULL)
        else:
            at = _put_base64(data, pos, value_length, out, at)
            pos += value_length
        out[at] = 93  # "]"
        at += 1
    out[at] = 93
    return at + 1


@_jit
def json_lines_nb(
    data: Any,
    head: Any,
    offset: Any,
    timestamp: Any,
    log_append: Any,
    key_position: Any,
    key_length: Any,
    value_position: Any,
    value_length: Any,
    header_count: Any,
    out: Any,
) -> tuple[int, int]:
    """The JSON lines of every row into ``out``: ``(status, value)`` (module docstring)."""
    at = 0
    room = len(out)
    for row in range(len(offset)):
        klen = _int64(key_length[row])
        vlen = _int64(value_length[row])
        headers = _int64(header_count[row])
        start = -1
        section = 0
        if headers != 0:
            if vlen >= 0:
                start = _int64(value_position[row]) + vlen
            elif klen >= 0:
                start = _int64(key_position[row]) + klen + 1
            else:
                return STATUS_NO_HEADERS_START, row
            section = _section_length(data, start)
        need = (
            len(head)
            + LINE_OVERHEAD
            + ESCAPE_GROWTH * (max(klen, 0) + max(vlen, 0))
            + headers * HEADER_OVERHEAD
            + ESCAPE_GROWTH * section
        )
        if room - at < need:
            return STATUS_OUT_FULL, row
        at = _put(out, at, head)
        at = _put_int(out, at, offset[row])
        at = _put(out, at, _TIMESTAMP)
        at = _put_int(out, at, timestamp[row])
        at = _put(out, at, _APPEND if log_append[row] else _CREATE)
        at = _put_field(data, key_position[row], klen, out, at, _KEY, _KEY_B64)
        at = _put_field(data, value_position[row], vlen, out, at, _VALUE, _VALUE_B64)
        if headers == 0:
            at = _put(out, at, _HEADERS)
            out[at] = 125
            at += 1
        else:
            at = _put_headers(data, start, out, at)
        out[at] = 125
        out[at + 1] = 10  # "\n"
        at += 2
    return STATUS_OK, at
