"""A raw Kafka connection for hostile SASL tests: exact frames, cut-short exchanges, garbage."""

from __future__ import annotations

import socket
import struct
from typing import Any

from seglog.protocol import codec, messages
from seglog.protocol.framing import RESPONSES, response_header_version

_SIZE = struct.Struct(">i")


def request_frame(api_key: int, version: int, body: Any, correlation_id: int = 1) -> bytes:
    """A whole request frame (size prefix, header v1/v2 as the version says, body)."""
    flexible = messages.SPECS[type(body).__name__].is_flexible(version)
    header = messages.RequestHeader(
        request_api_key=api_key,
        request_api_version=version,
        correlation_id=correlation_id,
        client_id="hostile",
    )
    payload = codec.encode(header, 2 if flexible else 1) + codec.encode(body, version)
    return _SIZE.pack(len(payload)) + payload


class RawConnection:
    """One socket to the server."""

    def __init__(self, host_port: tuple[str, int], timeout_s: float = 30.0) -> None:
        self.sock = socket.create_connection(host_port, timeout=timeout_s)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_exact(self, size: int) -> bytes:
        out = bytearray()
        while len(out) < size:
            chunk = self.sock.recv(size - len(out))
            if not chunk:
                raise ConnectionError(f"closed after {len(out)} of {size} bytes")
            out += chunk
        return bytes(out)

    def call(self, api_key: int, version: int, body: Any) -> Any:
        """Send one request and decode its answer."""
        self.sock.sendall(request_frame(api_key, version, body))
        (size,) = _SIZE.unpack(self._read_exact(4))
        data = self._read_exact(size)
        _, end = codec.decode(
            messages.ResponseHeader, data, response_header_version(api_key, version), whole=False
        )
        value, _ = codec.decode(RESPONSES[api_key].cls, data, version, offset=end)
        return value

    def closed_by_peer(self) -> bool:
        """Whether the server closes the connection (reads until EOF or the timeout)."""
        try:
            while self.sock.recv(65536):
                pass
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
        return True
