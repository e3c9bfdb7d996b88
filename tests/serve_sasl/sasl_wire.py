"""A raw Kafka connection for hostile SASL tests: exact frames, cut-short exchanges, garbage,
over plain TCP (``SASL_PLAINTEXT``) or inside TLS (``SASL_SSL``), and TLS half-done.

:func:`tls_client_context` trusts the test CA (and checks the server's name, 127.0.0.1);
:func:`partial_client_hello` is the first part of a real ClientHello, for a client that stops
half-way through the TLS handshake.
"""

from __future__ import annotations

import socket
import ssl
import struct
from pathlib import Path
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


def tls_client_context(ca: Path) -> ssl.SSLContext:
    """A client TLS context trusting only ``ca``, checking the server's certificate and name."""
    return ssl.create_default_context(cafile=str(ca))


def partial_client_hello(context: ssl.SSLContext, host: str) -> bytes:
    """The first half of the ClientHello ``context`` would send to ``host`` (a TLS record
    header and part of its handshake message: never a whole record)."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=host)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:  # it waits for the ServerHello: the ClientHello is out
        hello = outgoing.read()
    else:
        raise AssertionError("a TLS handshake finished without a server")
    assert hello[:1] == b"\x16", "a TLS handshake record"
    return hello[: len(hello) // 2]


class RawConnection:
    """One socket to the server; inside TLS when given a client ``tls`` context (the handshake
    is made here, so the server has accepted the connection as TLS before any Kafka byte)."""

    def __init__(
        self,
        host_port: tuple[str, int],
        timeout_s: float = 30.0,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        sock = socket.create_connection(host_port, timeout=timeout_s)
        if tls is not None:
            try:
                sock = tls.wrap_socket(sock, server_hostname=host_port[0])
            except BaseException:
                sock.close()
                raise
        self.sock: socket.socket = sock

    def raw_tcp(self) -> socket.socket:
        """The TCP socket under the TLS layer, the TLS state dropped (no close_notify sent):
        what is written to it next reaches the server's TLS layer as is."""
        assert isinstance(self.sock, ssl.SSLSocket)
        timeout = self.sock.gettimeout()
        self.sock = socket.socket(fileno=self.sock.detach())
        self.sock.settimeout(timeout)
        return self.sock

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
        except (ConnectionResetError, ssl.SSLEOFError):
            return True
        return True
