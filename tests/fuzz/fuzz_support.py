"""Shared pieces of the fuzz tests: byte mutations, legacy message builders, guards.

The fuzz tests check one rule on hostile input: a parser either returns data or raises one of
seglog's typed errors (``SeglogError`` subclasses), never anything else, never hangs and never
allocates without bound. Helpers here:

* :func:`mutations` / :func:`apply_mutations`: bit flips, byte sets, insertions, deletions,
  truncations, zero-filled tails and boundary integers written over length/offset fields,
  at uniform positions or at the header fields of the entries of a buffer;
* :func:`legacy_message` / :func:`legacy_entries`: Kafka v0/v1 messages and compressed
  wrappers (seglog only reads them, so the tests build them);
* :func:`time_limit`: a SIGALRM guard that turns a hang into a failing test;
* :func:`first_difference`: where a mutated buffer starts to differ from the original.
"""

from __future__ import annotations

import os
import signal
import struct
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from seglog.format.compression import CompressionType, compress
from seglog.format.crc import crc32_ieee

TS = 1_700_000_000_000
INT32_MAX = (1 << 31) - 1
INT64_MAX = (1 << 63) - 1

# Every fuzz test: a few hundred examples (SEGLOG_FUZZ_EXAMPLES=5000 for a long local hunt), no
# per-example deadline (the first numba call and codec imports are slow), hangs caught by
# time_limit instead.
EXAMPLES = int(os.environ.get("SEGLOG_FUZZ_EXAMPLES", "250"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FUZZ_FEW = settings(FUZZ, max_examples=max(EXAMPLES // 2, 1))

# Integers that break length and offset fields: signs, int32/int64 limits, off-by-ones around
# Kafka's minimum entry sizes (14, 22, 49, 61).
BOUNDARY_INT32 = (
    0,
    1,
    -1,
    13,
    14,
    21,
    22,
    48,
    49,
    60,
    61,
    62,
    0x7F,
    0x80,
    0xFFFF,
    1 << 20,
    1 << 30,
    INT32_MAX,
    INT32_MAX - 11,
    -(1 << 31),
)
BOUNDARY_INT64 = (0, 1, -1, INT64_MAX, INT64_MAX - 1, -(1 << 63), 1 << 32, 1 << 62)

# Byte offsets inside an entry worth aiming at: v2 header fields (baseOffset, batchLength,
# partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta, baseTimestamp, maxTimestamp,
# producerId, producerEpoch, baseSequence, recordsCount, first record) and the legacy layout
# (offset, size, crc, magic, attributes, timestamp / key length, ...).
FIELD_OFFSETS = (0, 7, 8, 11, 12, 16, 17, 18, 21, 22, 23, 26, 27, 35, 43, 51, 53, 57, 60, 61, 62)


class FuzzTimeout(BaseException):
    """A call under test ran past its time limit (a hang). BaseException on purpose: the code
    under test catches ``Exception`` in places and must not turn a hang into a typed error."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`FuzzTimeout` in the block after ``seconds`` (main thread, POSIX only)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "setitimer"
    ):
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise FuzzTimeout(f"call did not finish within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def first_difference(original: bytes, mutated: bytes) -> int:
    """Index of the first byte where the buffers differ (the shorter length if one is a
    prefix of the other; the common length when they are equal)."""
    common = min(len(original), len(mutated))
    for index in range(common):
        if original[index] != mutated[index]:
            return index
    return common


# --- mutations -----------------------------------------------------------------------------------

Mutation = tuple[Any, ...]


@st.composite
def mutations(
    draw: st.DrawFn, size: int, anchors: Sequence[int] = (), *, max_ops: int = 3
) -> list[Mutation]:
    """Mutations of a ``size``-byte buffer; positions uniform or at ``anchors`` + a field."""
    upper = max(size - 1, 0)

    def position() -> int:
        if anchors and draw(st.booleans()):
            return draw(st.sampled_from(list(anchors))) + draw(st.sampled_from(FIELD_OFFSETS))
        return draw(st.integers(0, upper))

    ops: list[Mutation] = []
    for _ in range(draw(st.integers(1, max_ops))):
        kind = draw(
            st.sampled_from(
                ["flip", "set", "insert", "delete", "truncate", "zero_tail", "int32", "int64"]
            )
        )
        if kind == "flip":
            ops.append(("flip", position(), draw(st.integers(0, 7))))
        elif kind == "set":
            ops.append(("set", position(), draw(st.integers(0, 255))))
        elif kind == "insert":
            ops.append(("insert", position(), draw(st.binary(min_size=1, max_size=16))))
        elif kind == "delete":
            ops.append(("delete", position(), draw(st.integers(1, 16))))
        elif kind == "truncate":
            ops.append(("truncate", position()))
        elif kind == "zero_tail":
            ops.append(("zero_tail", position(), draw(st.integers(0, 64))))
        elif kind == "int32":
            ops.append(("int32", position(), draw(st.sampled_from(BOUNDARY_INT32))))
        else:
            ops.append(("int64", position(), draw(st.sampled_from(BOUNDARY_INT64))))
    return ops


def apply_mutations(data: bytes, ops: Sequence[Mutation], *, low: int = 0) -> bytes:
    """``data`` with every op applied in order; positions below ``low`` are moved up to it."""
    out = bytearray(data)
    for op in ops:
        kind, where = op[0], op[1]
        span = len(out) - low
        if span <= 0:
            if kind == "insert":
                out[len(out) : len(out)] = op[2]
            continue
        at = low + (where - low) % span if where >= low else low + where % span
        if kind == "flip":
            out[at] ^= 1 << op[2]
        elif kind == "set":
            out[at] = op[2]
        elif kind == "insert":
            out[at:at] = op[2]
        elif kind == "delete":
            del out[at : at + op[2]]
        elif kind == "truncate":
            del out[at:]
        elif kind == "zero_tail":
            # Zeros from ``at`` to the end, plus some more: a preallocated file's tail.
            out[at:] = bytes(len(out) - at + op[2])
        elif kind == "int32" and at + 4 <= len(out):
            struct.pack_into(">i", out, at, op[2])
        elif kind == "int64" and at + 8 <= len(out):
            struct.pack_into(">q", out, at, op[2])
    return bytes(out)


# --- legacy (v0/v1) messages ---------------------------------------------------------------------


def _bytes_field(value: bytes | None) -> bytes:
    return struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value


def legacy_message(
    offset: int,
    magic: int,
    key: bytes | None,
    value: bytes | None,
    *,
    attributes: int = 0,
    timestamp: int = -1,
) -> bytes:
    """One framed v0/v1 message (offset, size, CRC-32, magic, attributes, [ts], key, value)."""
    body = bytes((magic, attributes))
    if magic == 1:
        body += struct.pack(">q", timestamp)
    body += _bytes_field(key) + _bytes_field(value)
    message = struct.pack(">I", crc32_ieee(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


def recrc_legacy(entry: bytearray) -> bytes:
    """Fix a legacy entry's size field and CRC-32 after its bytes were changed."""
    struct.pack_into(">i", entry, 8, len(entry) - 12)
    struct.pack_into(">I", entry, 12, crc32_ieee(memoryview(entry)[16:]))
    return bytes(entry)


maybe_bytes = st.none() | st.binary(max_size=12)


@st.composite
def legacy_entries(draw: st.DrawFn, first_offset: int = 0) -> tuple[bytes, int]:
    """A plain legacy message or a compressed wrapper (gzip, snappy, lz4) of 1-4 messages;
    returns its bytes and the next free offset."""
    magic = draw(st.sampled_from([0, 1]))
    codec = draw(st.sampled_from([0, 0, 1, 2, 3]))
    if codec == 0:
        entry = legacy_message(
            first_offset,
            magic,
            draw(maybe_bytes),
            draw(maybe_bytes),
            timestamp=TS + draw(st.integers(0, 1000)),
        )
        return entry, first_offset + 1
    count = draw(st.integers(1, 4))
    stamps = [TS + draw(st.integers(0, 1000)) for _ in range(count)]
    inner = b"".join(
        legacy_message(
            index if magic == 1 else first_offset + index,
            magic,
            draw(maybe_bytes),
            draw(maybe_bytes),
            timestamp=stamps[index],
        )
        for index in range(count)
    )
    attributes = codec | (0x08 if magic == 1 and draw(st.booleans()) else 0)
    wrapper = legacy_message(
        first_offset + count - 1,
        magic,
        None,
        compress(CompressionType(codec), inner),
        attributes=attributes,
        timestamp=max(stamps),
    )
    return wrapper, first_offset + count


@st.composite
def legacy_logs(draw: st.DrawFn, max_entries: int = 3) -> bytes:
    """Consecutive legacy entries with increasing offsets, as a pre-0.11 segment holds them."""
    offset = draw(st.integers(0, 1 << 20))
    parts = []
    for _ in range(draw(st.integers(1, max_entries))):
        entry, offset = draw(legacy_entries(offset))
        parts.append(entry)
        offset += draw(st.integers(0, 3))
    return b"".join(parts)
