"""One blocking Kafka client connection for the CLI's ``--bootstrap-server`` modes.

``seglog acls --bootstrap-server`` and ``seglog transactions --bootstrap-server`` talk to a running
broker (``seglog serve`` or Kafka) through :class:`KafkaConnection`: one TCP connection to the first
reachable ``HOST:PORT`` of a comma-separated list, secured as ``--command-config`` says
(:class:`~seglog.cli.client_security.ClientSecurity`: TLS around the socket for SSL/SASL_SSL, the
host name checked unless disabled), ApiVersions first, then for SASL_* SaslHandshake v1 and
SaslAuthenticate v1 (PLAIN: one token; SCRAM: two, the server's signature verified), then one
request at a time, each framed with Kafka's request header (v1, or v2 for flexible versions) and
decoded with seglog's generated messages (:mod:`seglog.protocol`). :meth:`KafkaConnection.request`
sends at the highest version both sides know; :meth:`KafkaConnection.call` at a version the caller
names.

Every failure below the answer itself (no broker reachable, a closed connection, a frame larger than
:data:`MAX_RESPONSE_BYTES`, a response that does not decode or answers another request, an API the
broker does not serve) raises :class:`~seglog.errors.BrokerConnectionError` naming the address.
Error codes inside an answer are the caller's to read.

A refused login raises :class:`~seglog.errors.BrokerConnectionError` with the server's message
(never the password). Limits: no re-authentication (one short-lived command does not outlive a
session), no OAUTHBEARER or GSSAPI.
"""

from __future__ import annotations

import socket
import ssl
import struct
from typing import Any, TypeVar

from seglog.broker.security.scram_client import ScramClientExchange
from seglog.cli.client_security import ClientSecurity
from seglog.errors import BrokerConnectionError, ProtocolDecodeError
from seglog.protocol import codec, messages
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.framing import response_header_version

T = TypeVar("T")
_SIZE = struct.Struct(">i")
CONNECT_TIMEOUT_S = 30.0
MAX_RESPONSE_BYTES = 100 * 1024 * 1024


def error_name(code: int) -> str:
    """Kafka's name of an error code (``error code N`` for one seglog does not know)."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error code {code}"


def _address(entry: str) -> tuple[str, int]:
    host, colon, port = entry.strip().rpartition(":")
    if not colon or not port.isdigit() or not host:
        raise BrokerConnectionError(f"--bootstrap-server: {entry.strip()!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


class KafkaConnection:
    """One connection to a broker (see the module docstring)."""

    def __init__(
        self, bootstrap: str, client_id: str, security: ClientSecurity | None = None
    ) -> None:
        security = security or ClientSecurity()
        self.address = ""
        self._client_id = client_id
        self._correlation = 0
        self._received = 0
        problems: list[str] = []
        for entry in (e for e in bootstrap.split(",") if e.strip()):
            host, port = _address(entry)
            try:
                self._sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
            except OSError as error:
                problems.append(f"{entry.strip()}: {error.strerror or error}")
                continue
            try:
                if security.ssl_context is not None:
                    self._sock = security.ssl_context.wrap_socket(self._sock, server_hostname=host)
            except (OSError, ssl.SSLError) as error:
                self._sock.close()
                problems.append(f"{entry.strip()}: TLS handshake failed: {error}")
                continue
            self.address = entry.strip()
            break
        if not self.address:
            raise BrokerConnectionError(
                "cannot connect to " + "; ".join(problems or [repr(bootstrap)])
            )
        try:
            versions = self._first_call(security)
            self._versions = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
            if security.mechanism is not None:
                self._authenticate(security)
        except BrokerConnectionError:
            self.close()
            raise

    def _first_call(self, security: ClientSecurity) -> messages.ApiVersionsResponse:
        """ApiVersions v0. Over TLS 1.3 the server checks the client's certificate after the
        client's side of the handshake is done, so its refusal arrives with this answer: a TLS
        alert (``seglog serve`` and Kafka send one: ``certificate required``, ``unknown ca``) or,
        from a server that sends none, the connection closing. Either, before the first byte of
        the answer, gets a hint naming the keystore settings."""
        try:
            return self.call(messages.ApiVersionsRequest(), 0, messages.ApiVersionsResponse)
        except BrokerConnectionError as error:
            if security.ssl_context is None or self._received:
                raise
            raise BrokerConnectionError(
                f"{error} (the TLS session was refused after the handshake: does the server "
                "require a client certificate it was not shown or does not trust? "
                "see ssl.keystore.location or ssl.keystore.key)"
            ) from None

    def _authenticate(self, security: ClientSecurity) -> None:
        """SaslHandshake v1, then SaslAuthenticate v1 with the mechanism's tokens."""
        mechanism = security.mechanism
        assert mechanism is not None
        handshake = self.call(
            messages.SaslHandshakeRequest(mechanism=mechanism), 1, messages.SaslHandshakeResponse
        )
        if handshake.error_code:
            raise BrokerConnectionError(
                f"{self.address} does not accept SASL mechanism {mechanism} "
                f"({error_name(handshake.error_code)}; enabled: "
                f"{', '.join(handshake.mechanisms) or 'none'})"
            )
        if mechanism == "PLAIN":
            token = f"\0{security.username}\0{security.password}".encode()
            self._sasl_token(token, mechanism)
            return
        scram = ScramClientExchange(mechanism, security.username, security.password)
        server_first = self._sasl_token(scram.first(), mechanism)
        server_final = self._sasl_token(scram.final(server_first), mechanism)
        scram.verify(server_final)

    def _sasl_token(self, token: bytes, mechanism: str) -> bytes:
        answer = self.call(
            messages.SaslAuthenticateRequest(auth_bytes=token), 1, messages.SaslAuthenticateResponse
        )
        if answer.error_code:
            raise BrokerConnectionError(
                f"{self.address} refused the {mechanism} login: "
                f"{error_name(answer.error_code)}: {answer.error_message or 'no message'}"
            )
        return answer.auth_bytes

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> KafkaConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def version_of(self, request_cls: type) -> int:
        """The highest version of ``request_cls`` both the broker and seglog's codec know."""
        spec = codec.spec_of(request_cls)
        served = self._versions.get(spec.api_key)
        name = spec.name.removesuffix("Request")
        if served is None:
            raise BrokerConnectionError(
                f"the server at {self.address} does not serve {name} (API key {spec.api_key})"
            )
        low, high = max(served[0], spec.valid_versions[0]), min(served[1], spec.valid_versions[1])
        if low > high:
            raise BrokerConnectionError(
                f"the server at {self.address} serves {name} v{served[0]}-{served[1]}, "
                f"none of v{spec.valid_versions[0]}-{spec.valid_versions[1]}"
            )
        return high

    def request(self, request: Any, response_cls: type[T]) -> T:
        """Send ``request`` at the best common version; the decoded response."""
        return self.call(request, self.version_of(type(request)), response_cls)

    def call(self, request: Any, version: int, response_cls: type[T]) -> T:
        """Send ``request`` at ``version``; the decoded response."""
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
        try:
            self._sock.sendall(_SIZE.pack(len(frame)) + frame)
            (size,) = _SIZE.unpack(self._read(4))
            if not 0 < size <= MAX_RESPONSE_BYTES:
                raise BrokerConnectionError(f"a response of {size} bytes from {self.address}")
            data = self._read(size)
        except OSError as error:
            raise BrokerConnectionError(f"{self.address}: {error.strerror or error}") from None
        try:
            answer, end = codec.decode(
                messages.ResponseHeader,
                data,
                response_header_version(spec.api_key, version),
                whole=False,
            )
            body, _ = codec.decode(response_cls, data, version, offset=end)
        except ProtocolDecodeError as error:
            raise BrokerConnectionError(
                f"{self.address} answered with a malformed response: {error}"
            ) from None
        if answer.correlation_id != self._correlation:
            raise BrokerConnectionError(f"{self.address} answered another request")
        return body

    def _read(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self._sock.recv(min(size - len(data), 1 << 20))
            if not chunk:
                raise BrokerConnectionError(
                    f"{self.address} closed the connection after {len(data)} of {size} bytes"
                )
            data += chunk
            self._received += len(chunk)
        return bytes(data)
