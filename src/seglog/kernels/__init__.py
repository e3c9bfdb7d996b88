"""Hot loops over whole buffers, compiled with numba, each with a plain-Python twin.

A leaf layer: imports numpy, numba and nothing of seglog's other layers, so ``format``,
``core`` and ``storage`` may all use it. Buffers are 1-D ``uint8`` numpy arrays (zero-copy
views of ``bytes``, ``bytearray``, ``mmap`` or memoryviews); outputs are numpy columns.

* :func:`walk_batches`: Kafka's batch framing over a buffer → one int64 column per header
  field per entry (:class:`FrameWalk`) and where/why the walk stopped.
* :func:`scan_records`: uncompressed v2 records of many sections → offset, timestamp,
  key/value position and length, header count and batch index columns.

The compiled kernels live in :mod:`seglog.kernels.scan`, their twins in
:mod:`seglog.kernels.scan_py`, the codes they return in :mod:`seglog.kernels.codes`.
``use_numba=False`` or the environment variable ``SEGLOG_DISABLE_NUMBA=1`` selects the twin
(and then numba is never imported, saving its ~0.25 s import).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from seglog.kernels import codes
from seglog.kernels.codes import END_FULL, FRAME_FIELDS
from seglog.kernels.scan_py import scan_records_py, walk_batches_py

__all__ = [
    "FrameWalk",
    "codes",
    "numba_enabled",
    "scan_records",
    "walk_batches",
]

DISABLE_NUMBA_ENV = "SEGLOG_DISABLE_NUMBA"
# First capacity of the frames matrix (entries); it doubles up to the maximum below, so a walk
# over a huge buffer of tiny batches allocates in steps instead of one worst-case guess.
INITIAL_FRAME_CAPACITY = 1024
MAX_FRAME_CHUNK = 1 << 20
MIN_ENTRY_BYTES = codes.LOG_OVERHEAD + codes.RECORD_OVERHEAD_V0  # 26

Int64Array = npt.NDArray[np.int64]


def numba_enabled() -> bool:
    """False when ``SEGLOG_DISABLE_NUMBA`` is set to a true value (1, true, yes)."""
    return os.environ.get(DISABLE_NUMBA_ENV, "").strip().lower() not in ("1", "true", "yes")


def _walk_impl(use_numba: bool) -> Callable[..., tuple[int, int, int, int, int, int]]:
    if use_numba and numba_enabled():
        from seglog.kernels.scan import walk_batches_nb

        return walk_batches_nb
    return walk_batches_py


def _scan_impl(use_numba: bool) -> Callable[..., tuple[int, int, int]]:
    if use_numba and numba_enabled():
        from seglog.kernels.scan import scan_records_nb

        return scan_records_nb
    return scan_records_py


@dataclass(frozen=True, slots=True)
class FrameWalk:
    """Result of :func:`walk_batches`.

    ``frames[FRAME_x, i]`` is header field ``x`` of entry ``i`` (see :mod:`.codes`);
    ``end_code`` is one of the ``END_*`` codes (never ``END_FULL``), ``end_position`` the
    first byte not framed, ``detail_a``/``detail_b`` the values named by the code.
    """

    frames: Int64Array
    end_code: int
    end_position: int
    detail_a: int
    detail_b: int

    @property
    def count(self) -> int:
        """Number of entries framed."""
        return int(self.frames.shape[1])


def _check_buffer(buf: Any) -> None:
    if not isinstance(buf, np.ndarray) or buf.dtype != np.uint8 or buf.ndim != 1:
        raise TypeError("kernels take a 1-D uint8 numpy array")
    if not buf.flags.c_contiguous:
        raise ValueError("kernels take a contiguous buffer")


def walk_batches(
    buf: npt.NDArray[np.uint8],
    *,
    start: int = 0,
    stop: int | None = None,
    max_batch_bytes: int = (1 << 31) - 1,
    check_offsets: bool = True,
    use_numba: bool = True,
) -> FrameWalk:
    """Frame every entry of ``buf[start:stop]`` (header fields as columns) and say how it ended."""
    _check_buffer(buf)
    stop = len(buf) if stop is None else stop
    if not 0 <= start <= stop <= len(buf):
        raise ValueError(f"bad range [{start}, {stop}) of a {len(buf)}-byte buffer")
    walk = _walk_impl(use_numba)
    chunks: list[Int64Array] = []
    capacity = min(INITIAL_FRAME_CAPACITY, (stop - start) // MIN_ENTRY_BYTES + 1)
    position = start
    last_offset = codes.INT64_MIN
    while True:
        frames = np.empty((FRAME_FIELDS, capacity), dtype=np.int64)
        count, end_code, position, detail_a, detail_b, last_offset = walk(
            buf, position, stop, last_offset, max_batch_bytes, check_offsets, frames
        )
        chunks.append(frames[:, :count])
        if end_code != END_FULL:
            break
        capacity = min(capacity * 2, MAX_FRAME_CHUNK)
    merged = chunks[0] if len(chunks) == 1 else np.concatenate(chunks, axis=1)
    return FrameWalk(
        np.ascontiguousarray(merged), int(end_code), int(position), int(detail_a), int(detail_b)
    )


def scan_records(
    buf: npt.NDArray[np.uint8],
    sections: dict[str, npt.NDArray[Any]],
    outputs: dict[str, npt.NDArray[Any]],
    *,
    use_numba: bool = True,
) -> tuple[int, int, int]:
    """Decode the records of every section into ``outputs``: ``(code, section, position)``.

    ``sections`` holds equal-length arrays ``start``, ``end`` (int64 byte bounds in ``buf``),
    ``base_offset``, ``base_timestamp`` (int64), ``count`` (int64), ``batch`` (int32) and
    ``out_start`` (int64, first output row). ``outputs`` holds ``offset``, ``timestamp``,
    ``key_position``, ``value_position`` (int64), ``key_length``, ``value_length``,
    ``header_count``, ``batch_index`` (int32), all of one length.
    """
    _check_buffer(buf)
    section_args = [sections[name] for name in SECTION_FIELDS]
    if len({len(a) for a in section_args}) != 1:
        raise ValueError("section arrays differ in length")
    output_args = [outputs[name] for name in OUTPUT_FIELDS]
    if len({len(a) for a in output_args}) != 1:
        raise ValueError("output arrays differ in length")
    for name, array in zip(OUTPUT_FIELDS, output_args, strict=True):
        if array.dtype != OUTPUT_DTYPES[name] or array.ndim != 1:
            raise TypeError(f"output {name} must be a 1-D {OUTPUT_DTYPES[name]} array")
    code, section, position = _scan_impl(use_numba)(buf, *section_args, *output_args)
    return int(code), int(section), int(position)


SECTION_FIELDS = ("start", "end", "base_offset", "base_timestamp", "count", "batch", "out_start")
OUTPUT_FIELDS = (
    "offset",
    "timestamp",
    "key_position",
    "key_length",
    "value_position",
    "value_length",
    "header_count",
    "batch_index",
)
OUTPUT_DTYPES: dict[str, np.dtype[Any]] = {
    "offset": np.dtype(np.int64),
    "timestamp": np.dtype(np.int64),
    "key_position": np.dtype(np.int64),
    "key_length": np.dtype(np.int32),
    "value_position": np.dtype(np.int64),
    "value_length": np.dtype(np.int32),
    "header_count": np.dtype(np.int32),
    "batch_index": np.dtype(np.int32),
}


def empty_outputs(rows: int) -> dict[str, npt.NDArray[Any]]:
    """Uninitialised output columns for ``rows`` records, with the dtypes scan_records wants."""
    return {name: np.empty(rows, dtype=dtype) for name, dtype in OUTPUT_DTYPES.items()}
