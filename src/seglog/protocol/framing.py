"""Kafka's framing and headers, sans I/O: bytes in, requests out; responses in, bytes out.

A frame is ``int32 size`` (big-endian, not counting itself) then ``size`` bytes: a header and a
body. Request headers are v1 (``api_key int16, api_version int16, correlation_id int32,
client_id`` as an int16-length nullable string) or, when the request version is flexible, v2 (v1
plus a tag buffer; ``client_id`` stays non-compact). Response headers are v0 (``correlation_id``)
or v1 (plus a tag buffer) when the response version is flexible, except ApiVersions, whose
response header is always v0 (KIP-511) so that a client can read it whatever version it sent.

:class:`FrameReader` splits a byte stream into frames and refuses one larger than the limit
(``socket.request.max.bytes``) before buffering it: the size prefix alone decides.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from seglog.errors import FrameTooLargeError, ProtocolDecodeError
from seglog.protocol import codec, messages
from seglog.protocol.schema import ExternalRecords, MessageSpec

_SIZE = struct.Struct(">i")
_KEY_VERSION = struct.Struct(">hh")
API_VERSIONS_KEY = 18

REQUESTS: dict[int, MessageSpec] = {
    s.api_key: s for s in messages.SPECS.values() if s.type == "request"
}
RESPONSES: dict[int, MessageSpec] = {
    s.api_key: s for s in messages.SPECS.values() if s.type == "response"
}


class FrameReader:
    """Splits a byte stream into request frames (sans I/O: feed it what the socket read).

    Invariant: at most one partial frame is buffered, and never more than ``max_frame_bytes``
    of it; a size prefix above the limit (or negative) raises :class:`FrameTooLargeError` at once.
    """

    def __init__(self, max_frame_bytes: int) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as a frame (a partial frame)."""
        return len(self._buffer)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add received bytes; return every frame now complete (without its size prefix)."""
        buffer = self._buffer
        buffer += data
        frames: list[bytes] = []
        start = 0
        while len(buffer) - start >= 4:
            (size,) = _SIZE.unpack_from(buffer, start)
            if size < 0 or size > self.max_frame_bytes:
                raise FrameTooLargeError(size, self.max_frame_bytes)
            end = start + 4 + size
            if end > len(buffer):
                break
            frames.append(bytes(buffer[start + 4 : end]))
            start = end
        if start:
            del buffer[:start]
        return frames


@dataclass(slots=True)
class Request:
    """A decoded request header, the body's position in the frame, and the frame itself."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    frame: bytes | memoryview
    body_offset: int

    def decode_body(self) -> Any:
        """The request body as its message value (raises ProtocolDecodeError when malformed).

        Bytes after the body are ignored, as Kafka's request parsing ignores them (librdkafka
        2.16 sends some Metadata v12 requests with trailing bytes that Kafka accepts).
        """
        spec = REQUESTS[self.api_key]
        value, _ = codec.decode(
            spec.cls, self.frame, self.api_version, offset=self.body_offset, whole=False
        )
        return value


class UnknownApiError(ProtocolDecodeError):
    """A request naming an API key seglog has no message definition for."""


def peek_header(frame: bytes | memoryview) -> tuple[int, int, int]:
    """``(api_key, api_version, correlation_id)`` of a frame, without parsing the rest.

    Raises:
        ProtocolDecodeError: the frame is shorter than the fixed part of a request header.
    """
    if len(frame) < 8:
        raise ProtocolDecodeError(
            "RequestHeader", 1, 0, f"frame of {len(frame)} bytes has no header"
        )
    api_key, api_version = _KEY_VERSION.unpack_from(frame, 0)
    (correlation_id,) = _SIZE.unpack_from(frame, 4)
    return api_key, api_version, correlation_id


def decode_request(frame: bytes | memoryview, version_known: bool = True) -> Request:
    """Parse a request frame's header (v1 or v2 as the request version says).

    The header version is chosen by the request's flexibility, which is only defined for API
    versions in Kafka's definitions; with ``version_known`` False (an ApiVersions version newer
    than seglog knows), header v1 is parsed and the caller answers from the header alone.

    Raises:
        UnknownApiError: the API key is not one seglog knows.
        ProtocolDecodeError: the header is truncated or malformed.
    """
    api_key, api_version, _ = peek_header(frame)
    spec = REQUESTS.get(api_key)
    if spec is None:
        raise UnknownApiError("RequestHeader", 1, 0, f"unknown API key {api_key}")
    flexible = version_known and spec.is_flexible(api_version)
    header, end = codec.decode(messages.RequestHeader, frame, 2 if flexible else 1, whole=False)
    return Request(api_key, api_version, header.correlation_id, header.client_id, frame, end)


def response_header_version(api_key: int, api_version: int) -> int:
    """0 or 1: v1 when the response version is flexible, except ApiVersions (always v0)."""
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if RESPONSES[api_key].is_flexible(api_version) else 0


def encode_response(
    api_key: int, api_version: int, correlation_id: int, body: Any
) -> list[bytes | ExternalRecords]:
    """A whole response frame: size prefix, header, body; external records as separate parts."""
    out = bytearray(4)
    header_version = response_header_version(api_key, api_version)
    codec.struct_writer(messages.ResponseHeader, header_version, header_version == 1)(
        out, [], messages.ResponseHeader(correlation_id=correlation_id)
    )
    parts = codec.encode_parts(body, api_version, out)
    size = sum(len(p) if isinstance(p, bytes) else p.size for p in parts) - 4
    first = parts[0]
    assert isinstance(first, bytes)
    parts[0] = _SIZE.pack(size) + first[4:]
    return parts
