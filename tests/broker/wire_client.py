"""A minimal blocking Kafka client for tests: one request, one response, over a real socket.

For requests the real clients cannot express (manual assignments, topic ids, bad operations):
the request is a value of ``seglog.protocol.messages``, framed with header v1 or v2 as its
version's flexibility says; the response is decoded at the same version.
"""

from __future__ import annotations

import socket
import struct
from typing import Any, TypeVar

from seglog.protocol import codec, messages
from seglog.protocol.framing import response_header_version

T = TypeVar("T")
_SIZE = struct.Struct(">i")


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(data)} of {size} bytes")
        data += chunk
    return bytes(data)


class WireClient:
    """One connection to ``host:port``; :meth:`call` sends a request and decodes the answer."""

    def __init__(self, bootstrap: str, client_id: str = "seglog-test") -> None:
        host, port = bootstrap.rsplit(":", 1)
        self._sock = socket.create_connection((host, int(port)), timeout=30)
        self._client_id = client_id
        self._correlation = 0

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, request: Any, version: int, response_cls: type[T]) -> T:
        spec = codec.spec_of(type(request))
        self._correlation += 1
        header = messages.RequestHeader(
            request_api_key=spec.api_key,
            request_api_version=version,
            correlation_id=self._correlation,
            client_id=self._client_id,
        )
        header_version = 2 if spec.is_flexible(version) else 1
        frame = codec.encode(header, header_version) + codec.encode(request, version)
        self._sock.sendall(_SIZE.pack(len(frame)) + frame)
        (size,) = _SIZE.unpack(_read_exactly(self._sock, 4))
        data = _read_exactly(self._sock, size)
        answer_header, end = codec.decode(
            messages.ResponseHeader,
            data,
            response_header_version(spec.api_key, version),
            whole=False,
        )
        assert answer_header.correlation_id == self._correlation
        body, _ = codec.decode(response_cls, data, version, offset=end)
        return body
