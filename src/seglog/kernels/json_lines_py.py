"""Plain-Python twin of :mod:`seglog.kernels.json_lines`: ``seglog consume --format json``
lines of many records, written into one output buffer.

Written independently of the numba source: Python's own UTF-8 decoder, ``json.dumps`` and
``base64`` instead of byte loops, so a differential test compares two implementations of one
specification. Same arguments, same return value, same bytes in ``out[:written]``.

**The line of one record** (the ``--format json`` object of ``seglog consume``)::

    HEAD OFFSET ,"timestamp": TS ,"timestampType":"CreateTime"|"LogAppendTime"
    ,"key": K ,"value": V ,"headers": H }\\n

``HEAD`` is the caller's ``{"topic":"...","partition":P,"offset":`` bytes. ``K`` is ``null``
for a null key, the key's text as a JSON string when its bytes are valid UTF-8 (escaped
exactly as ``json.dumps(..., ensure_ascii=False)`` does: ``\\"`` ``\\\\`` ``\\b`` ``\\f``
``\\n`` ``\\r`` ``\\t``, other characters below U+0020 as ``\\u00xx`` with lowercase hex,
everything else as is), and otherwise the field becomes ``"key_base64":"..."`` (standard
base64 with padding); the same for the value. ``H`` is ``{}`` without headers, an object of
header key -> text or ``null``, or, when a header key repeats or a header key or value is
not UTF-8, the field becomes ``"headers_base64":[[key_b64, value_b64 or null], ...]``.

**Headers** are read from the record bytes: the header section follows the value (or, for a
null value, the one-byte null value length after the key), so a record with headers, a null
value *and* a null key has no position to start from: the kernels then stop and return
``-(row + 1)`` (the caller renders the chunk another way). The record bytes were validated by
the columnar scan, so the varints are read without checks.

``out`` must hold at least :func:`capacity` bytes for the same rows.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np
import numpy.typing as npt

#: Bytes of one line besides HEAD and the escaped key, value and headers (field names, the
#: two decimal numbers and punctuation), rounded up.
LINE_OVERHEAD = 192
#: Worst growth of a span: one byte escaped as ``\\u00xx`` (base64 grows by 4/3 only).
ESCAPE_GROWTH = 6
#: Per header, besides its escaped key and value: quotes, separators, ``null``.
HEADER_OVERHEAD = 16

STATUS_OK = 0
STATUS_NO_HEADERS_START = 1
STATUS_OUT_FULL = 2

_CREATE = b',"timestampType":"CreateTime"'
_APPEND = b',"timestampType":"LogAppendTime"'


def capacity(
    head_length: int,
    key_length: npt.NDArray[np.int32],
    value_length: npt.NDArray[np.int32],
    header_count: npt.NDArray[np.int32],
    data_length: int,
) -> int:
    """Output bytes enough for the rows (the sum of :func:`row_need` over them: header
    sections are disjoint parts of the ``data_length`` bytes of the chunk)."""
    spans = int(np.maximum(key_length, 0).sum()) + int(np.maximum(value_length, 0).sum())
    headers = int(header_count.sum())
    section_bytes = data_length if headers else 0
    return (
        len(key_length) * (head_length + LINE_OVERHEAD)
        + ESCAPE_GROWTH * spans
        + headers * HEADER_OVERHEAD
        + ESCAPE_GROWTH * section_bytes
    )


def row_need(
    head_length: int, key_length: int, value_length: int, header_count: int, section: int
) -> int:
    """The most bytes one row's line can take (``section``: its header section's bytes)."""
    spans = max(key_length, 0) + max(value_length, 0)
    return (
        head_length
        + LINE_OVERHEAD
        + ESCAPE_GROWTH * spans
        + header_count * HEADER_OVERHEAD
        + ESCAPE_GROWTH * section
    )


def _text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _string(text: str) -> bytes:
    return json.dumps(text, ensure_ascii=False).encode("utf-8")


def _b64(data: bytes) -> bytes:
    return b'"' + base64.b64encode(data) + b'"'


def _field(name: bytes, data: bytes | None) -> bytes:
    if data is None:
        return b',"' + name + b'":null'
    text = _text(data)
    if text is None:
        return b',"' + name + b'_base64":' + _b64(data)
    return b',"' + name + b'":' + _string(text)


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


Pairs = list[tuple[bytes, bytes | None]]


def _header_pairs(buf: bytes, start: int) -> tuple[Pairs, int]:
    """The headers of the section at ``start``, and the section's length in bytes."""
    count, pos = _varint(buf, start)
    pairs: Pairs = []
    for _ in range(count):
        key_length, pos = _varint(buf, pos)
        key = buf[pos : pos + key_length]
        pos += key_length
        value_length, pos = _varint(buf, pos)
        value = None if value_length < 0 else buf[pos : pos + value_length]
        pos += max(value_length, 0)
        pairs.append((key, value))
    return pairs, pos - start


def _headers(pairs: Pairs) -> bytes:
    keys = [_text(key) for key, _ in pairs]
    texts = [None if value is None else _text(value) for _, value in pairs]
    plain = (
        None not in keys
        and len(set(keys)) == len(keys)
        and all(
            text is not None or value is None for text, (_, value) in zip(texts, pairs, strict=True)
        )
    )
    if plain:
        items = [
            _string(key or "") + b":" + (b"null" if text is None else _string(text))
            for key, text in zip(keys, texts, strict=True)
        ]
        return b',"headers":{' + b",".join(items) + b"}}\n"
    items = [
        b"[" + _b64(key) + b"," + (b"null" if value is None else _b64(value)) + b"]"
        for key, value in pairs
    ]
    return b',"headers_base64":[' + b",".join(items) + b"]}\n"


def json_lines_py(
    data: npt.NDArray[np.uint8],
    head: npt.NDArray[np.uint8],
    offset: npt.NDArray[np.int64],
    timestamp: npt.NDArray[np.int64],
    log_append: npt.NDArray[np.bool_],
    key_position: npt.NDArray[np.int64],
    key_length: npt.NDArray[np.int32],
    value_position: npt.NDArray[np.int64],
    value_length: npt.NDArray[np.int32],
    header_count: npt.NDArray[np.int32],
    out: npt.NDArray[np.uint8],
) -> tuple[int, int]:
    """Write the JSON line of every row into ``out``: ``(status, value)`` (module
    docstring)."""
    buf = data.tobytes()
    prefix = head.tobytes()
    at = 0
    for row in range(len(offset)):
        key = _span(buf, key_position[row], key_length[row])
        value = _span(buf, value_position[row], value_length[row])
        section = 0
        headers = b',"headers":{}}\n'
        if header_count[row] != 0:
            if value is not None:
                start = int(value_position[row]) + len(value)
            elif key is not None:
                start = int(key_position[row]) + len(key) + 1
            else:
                return STATUS_NO_HEADERS_START, row
            pairs, section = _header_pairs(buf, start)
            headers = _headers(pairs)
        need = row_need(
            len(prefix),
            int(key_length[row]),
            int(value_length[row]),
            int(header_count[row]),
            section,
        )
        if len(out) - at < need:
            return STATUS_OUT_FULL, row
        line = b'%s%d,"timestamp":%d%s%s%s%s' % (
            prefix,
            int(offset[row]),
            int(timestamp[row]),
            _APPEND if log_append[row] else _CREATE,
            _field(b"key", key),
            _field(b"value", value),
            headers,
        )
        out[at : at + len(line)] = np.frombuffer(line, dtype=np.uint8)
        at += len(line)
    return STATUS_OK, at


def _span(buf: bytes, position: Any, length: Any) -> bytes | None:
    if length < 0:
        return None
    return buf[int(position) : int(position) + int(length)]
