"""The fast path's ``--format json`` lines without numba (``SEGLOG_DISABLE_NUMBA=1``).

The same bytes as the slow path's ``json_record_line`` per record, for chunks whose records
have no headers and whose keys and values are UTF-8 (the caller checks the headers; a key or
value that is not UTF-8 makes :func:`orjson_lines` return None, and the caller hands over to
the slow path). How:

* the key and value texts of a chunk are escaped by one orjson call per column (a list of
  strings, cut again at the ``","`` between elements); orjson and the slow path's
  ``json.dumps(ensure_ascii=False, separators=(",", ":"))`` escape strings identically;
* offsets and timestamps are printed by one orjson call on a numpy array;
* each line is joined from six pieces (the constant parts picked per record from small
  tables by timestamp type and null key/value) in one ``bytes.join`` per chunk.

With numba (the default) the compiled kernel :mod:`seglog.kernels.json_lines` writes the
lines instead, headers and bytes that are not UTF-8 included.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import orjson

from seglog.format.columnar import RecordColumns


def _span_texts(
    raw: bytes,
    latin: str,
    high: npt.NDArray[np.int64],
    position: npt.NDArray[np.int64],
    length: npt.NDArray[np.int32],
) -> list[str] | None:
    """Each span as text ("" for a null), or None when a span is not UTF-8.

    ``latin`` is the chunk decoded as Latin-1 (one character per byte, so byte positions are
    character positions) and ``high`` the sorted positions of its bytes >= 0x80: a span
    without one is ASCII, and its Latin-1 slice is its UTF-8 text; the others are decoded as
    UTF-8 one by one.
    """
    valid = length >= 0
    starts = np.where(valid, position, 0)
    ends = starts + np.maximum(length, 0)
    texts = [latin[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
    if len(high):
        not_ascii = np.searchsorted(high, ends) != np.searchsorted(high, starts)
        for row in np.flatnonzero(not_ascii).tolist():
            start = int(starts[row])
            try:
                texts[row] = raw[start : int(ends[row])].decode()
            except UnicodeDecodeError:
                return None
    return texts


def _escaped(texts: list[str]) -> list[bytes]:
    """Each text as the inside of a JSON string: one orjson call on the list, cut at the
    ``","`` between elements (inside a JSON string every ``"`` is escaped, so a ``"`` that
    follows a ``,`` is always structural)."""
    return orjson.dumps(texts)[2:-2].split(b'","')


def _numbers(
    head: bytes, offsets: npt.NDArray[np.int64], timestamps: npt.NDArray[np.int64], tail: bytes
) -> list[bytes]:
    """``HEAD N,"timestamp":T TAIL`` per record, from one orjson call, two replaces and a
    split (orjson never writes a 0 byte: control characters are escaped)."""
    pairs = np.column_stack((offsets, timestamps))
    body = orjson.dumps(pairs, option=orjson.OPT_SERIALIZE_NUMPY)[2:-2]
    body = body.replace(b",", b',"timestamp":').replace(b'],"timestamp":[', tail + b"\x00" + head)
    return (head + body + tail).split(b"\x00")


def orjson_lines(columns: RecordColumns, rows: slice, raw: bytes, head: bytes) -> bytes | None:
    """The JSON lines of ``rows`` (module docstring), each starting with ``head``
    (``{"topic":...,"partition":P,"offset":``); None when a key or value is not UTF-8."""
    key_length = columns.key_length[rows]
    value_length = columns.value_length[rows]
    latin = raw.decode("latin-1")
    high = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8) >= 0x80)
    keys = _span_texts(raw, latin, high, columns.key_position[rows], key_length)
    values = _span_texts(raw, latin, high, columns.value_position[rows], value_length)
    if keys is None or values is None:
        return None
    batch_index = columns.batch_index[rows]
    log_append = columns.batches.is_log_append_time[batch_index]
    timestamps = columns.timestamp[rows]
    if log_append.any():
        timestamps = np.where(log_append, columns.batches.max_timestamp[batch_index], timestamps)
    key_null = (key_length < 0).astype(np.int64)
    value_null = (value_length < 0).astype(np.int64)
    kinds = log_append.astype(np.int64)
    count = len(keys)
    parts: list[bytes] = [b""] * (6 * count)
    parts[0::6] = _numbers(head, columns.offset[rows], timestamps, b"")
    parts[1::6] = _KEY_OPENINGS[kinds * 2 + key_null].tolist()
    parts[2::6] = _escaped(keys)
    parts[3::6] = _VALUE_OPENINGS[key_null * 2 + value_null].tolist()
    parts[4::6] = _escaped(values)
    parts[5::6] = _CLOSINGS[value_null].tolist()
    return b"".join(parts)


def _object_table(items: list[bytes]) -> npt.NDArray[np.object_]:
    table = np.empty(len(items), dtype=object)
    table[:] = items
    return table


# Index: timestamp type (0 CreateTime, 1 LogAppendTime) * 2 + key is null.
_KEY_OPENINGS = _object_table(
    [
        b',"timestampType":"%s","key":%s' % (kind, opening)
        for kind in (b"CreateTime", b"LogAppendTime")
        for opening in (b'"', b"null")
    ]
)
# Index: key is null * 2 + value is null.
_VALUE_OPENINGS = _object_table(
    [
        b'%s,"value":%s' % (closing, opening)
        for closing in (b'"', b"")
        for opening in (b'"', b"null")
    ]
)
_CLOSINGS = _object_table([b'","headers":{}}\n', b',"headers":{}}\n'])
