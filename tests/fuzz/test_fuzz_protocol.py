"""Fuzzing the request decoder: frames from the network are hostile.

Rule: ``FrameReader.feed`` returns frames or raises ``FrameTooLargeError``; ``decode_request(
frame).decode_body()`` returns a message or raises ``ProtocolDecodeError`` (``UnknownApiError``
included). Nothing else escapes (no ``IndexError``, ``struct.error``, ``UnicodeDecodeError``,
``MemoryError``, ``RecursionError``), nothing hangs, and a lying length or array count never
makes the decoder allocate more than a small multiple of the frame it was given.

Inputs: valid request frames of every API and version the server serves (random values of
the generated messages, header v1 or v2 as the version says) mutated by bit flips, byte sets,
insertions, deletions, truncations, boundary int32/int64 values and huge uvarints written over
lengths and counts; random bytes behind a served ``(api_key, api_version)``; pure random bytes;
byte streams cut into random chunks for ``FrameReader``.
"""

from __future__ import annotations

import struct
import tracemalloc
from typing import Any

from fuzz_support import FUZZ, FUZZ_FEW, apply_mutations, mutations, time_limit
from hypothesis import given
from hypothesis import strategies as st

from seglog.broker.app import all_handlers
from seglog.errors import FrameTooLargeError, ProtocolDecodeError
from seglog.protocol import codec, messages
from seglog.protocol.framing import REQUESTS, FrameReader, decode_request
from support.protocol_messages import message_values

LIMIT_S = 10.0
# Decoding may build Python objects for what the frame holds (an int32 becomes a 28-byte int,
# a struct a slotted object): linear in the frame, never in a length the frame claims.
ALLOWED_GROWTH = 128
ALLOWED_BASE = 1 << 20

SERVED = [
    (REQUESTS[h.api_key], version)
    for h in all_handlers()
    for version in range(
        max(h.min_version, REQUESTS[h.api_key].valid_versions[0]),
        min(h.max_version, REQUESTS[h.api_key].valid_versions[1]) + 1,
    )
]
# uvarints that claim lengths/counts far beyond any frame (compact strings, arrays, tag counts)
HUGE_UVARINTS = [b"\xff\xff\xff\xff\x0f", b"\xfe\xff\xff\xff\x07", b"\x80\x80\x80\x80\x10"]
HUGE_UVARINTS += [b"\xff\xff\xff\xff\xff\x01", b"\x81\x80\x80\x01"]


@st.composite
def request_frames(draw: st.DrawFn) -> bytes:
    """A valid request frame (no size prefix) of a served API and version."""
    spec, version = draw(st.sampled_from(SERVED))
    flexible = spec.is_flexible(version)
    body = draw(message_values(spec.cls, version, flexible))
    header = messages.RequestHeader(
        request_api_key=spec.api_key,
        request_api_version=version,
        correlation_id=draw(st.integers(-(2**31), 2**31 - 1)),
        client_id=draw(st.none() | st.text(max_size=8)),
    )
    return codec.encode(header, 2 if flexible else 1) + codec.encode(body, version)


@st.composite
def hostile_frames(draw: st.DrawFn) -> bytes:
    """A valid frame mutated, with huge uvarints sometimes inserted where lengths are."""
    frame = draw(request_frames())
    ops = draw(mutations(len(frame), max_ops=4))
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, max(len(frame) - 1, 0)))
        ops.append(("insert", at, draw(st.sampled_from(HUGE_UVARINTS))))
    return apply_mutations(frame, ops)


def decode_only_typed(frame: bytes) -> Any:
    """Decode a frame as the server does; return the body or None on a typed refusal.

    Fails the test on any other exception, a hang, or an allocation out of proportion."""
    tracemalloc.start()
    try:
        with time_limit(LIMIT_S):
            try:
                return decode_request(frame).decode_body()
            except ProtocolDecodeError:
                return None
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak <= ALLOWED_BASE + ALLOWED_GROWTH * len(frame), (
            f"decoding {len(frame)} bytes allocated {peak} bytes"
        )


@FUZZ
@given(request_frames())
def test_valid_frames_decode(frame: bytes) -> None:
    request = decode_request(frame)
    assert decode_only_typed(frame) is not None
    assert request.api_key in REQUESTS


@FUZZ
@given(hostile_frames())
def test_mutated_frames_raise_only_protocol_errors(frame: bytes) -> None:
    decode_only_typed(frame)


@FUZZ
@given(st.sampled_from(SERVED), st.integers(-(2**31), 2**31 - 1), st.binary(max_size=300))
def test_random_bodies_behind_a_served_header(served: Any, correlation: int, tail: bytes) -> None:
    spec, version = served
    decode_only_typed(struct.pack(">hhi", spec.api_key, version, correlation) + tail)


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes(frame: bytes) -> None:
    decode_only_typed(frame)


@FUZZ_FEW
@given(
    st.integers(-(2**15), 2**15 - 1),
    st.integers(-(2**15), 2**15 - 1),
    st.binary(max_size=64),
)
def test_any_api_key_and_version(api_key: int, version: int, tail: bytes) -> None:
    """Unknown keys, negative and unknown versions: typed refusals, never a crash."""
    decode_only_typed(struct.pack(">hhi", api_key, version, 1) + b"\x00\x00" + tail)


# --- FrameReader -------------------------------------------------------------------------------


@FUZZ
@given(st.lists(request_frames(), min_size=1, max_size=4), st.data())
def test_frame_reader_splits_any_chunking(frames: list[bytes], data: st.DataObject) -> None:
    stream = b"".join(struct.pack(">i", len(f)) + f for f in frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    reader = FrameReader(max(len(f) for f in frames))
    out: list[bytes] = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        out.extend(reader.feed(stream[start:end]))
    assert out == frames
    assert reader.buffered == 0


@FUZZ
@given(st.binary(max_size=400), st.integers(0, 4096), st.data())
def test_frame_reader_raises_only_frame_too_large(
    stream: bytes, limit: int, data: st.DataObject
) -> None:
    reader = FrameReader(limit)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    with time_limit(LIMIT_S):
        try:
            for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
                for frame in reader.feed(stream[start:end]):
                    assert len(frame) <= limit
                    decode_only_typed(frame)
        except FrameTooLargeError as error:
            assert error.size < 0 or error.size > limit
    assert reader.buffered <= len(stream)


def test_lying_size_prefix_is_refused_before_buffering() -> None:
    """A size prefix above the limit fails as soon as its 4 bytes arrive, body unread."""
    reader = FrameReader(1024)
    assert reader.feed(b"\x7f\xff") == []
    try:
        reader.feed(b"\xff\xff")
    except FrameTooLargeError as error:
        assert (error.size, error.limit) == (2**31 - 1, 1024)
    else:
        raise AssertionError("a 2 GiB size prefix was accepted")


def test_versions_outside_kafkas_are_refused_without_compiling_readers() -> None:
    """A frame may claim any of 65 536 versions; only Kafka's valid ones get a reader."""
    compiled = -1
    for version in range(100, 1100):
        frame = struct.pack(">hhi", 3, version, 1) + b"\x00\x00\x00"  # header v2
        try:
            decode_request(frame).decode_body()
        except ProtocolDecodeError as error:
            assert error.version == version
        else:
            raise AssertionError(f"MetadataRequest v{version} decoded")
        if compiled < 0:
            compiled = len(codec._READERS)  # the header readers, compiled by the first frame
    assert len(codec._READERS) == compiled
