"""``seglog acls --bootstrap-server``: DescribeAcls, CreateAcls and DeleteAcls over the wire.

A minimal blocking Kafka client over PLAINTEXT: one connection, one request at a time, each
framed with Kafka's request header (v1, or v2 for flexible versions) and decoded with seglog's
generated messages. It speaks to any Kafka broker (or ``seglog serve``) serving the ACL APIs at
version 1 (every broker since Kafka 2.0). An error code in a response raises
:class:`~seglog.errors.BrokerResponseError` with Kafka's name for it; a closed connection or a
timeout an ``OSError``.

Limits: ``--bootstrap-server`` names one broker (the first of a comma-separated list is used,
the others are tried when it cannot be reached); no TLS or SASL (use the offline mode on the
data directory, or a Kafka client, against a secured listener).
"""

from __future__ import annotations

import socket
import struct
from typing import Any, TypeVar

from seglog.broker.acl.model import AclBinding, AclFilter, PatternType, Permission
from seglog.broker.authorization import Operation, ResourceType
from seglog.errors import BrokerResponseError, InvalidConfigError
from seglog.protocol import codec, messages
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.framing import response_header_version

T = TypeVar("T")
_SIZE = struct.Struct(">i")
VERSION = 1
TIMEOUT_S = 30.0
MAX_RESPONSE_BYTES = 100 * 1024 * 1024


def _address(entry: str) -> tuple[str, int]:
    host, colon, port = entry.strip().rpartition(":")
    if not colon or not port.isdigit() or not host:
        raise InvalidConfigError(f"--bootstrap-server: {entry!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error code {code}"


class AclClient:
    """One connection to a broker (see the module docstring)."""

    def __init__(self, bootstrap: str, client_id: str = "seglog-acls") -> None:
        failures: list[str] = []
        self._sock: socket.socket | None = None
        for entry in bootstrap.split(","):
            host, port = _address(entry)
            try:
                self._sock = socket.create_connection((host, port), timeout=TIMEOUT_S)
                break
            except OSError as error:
                failures.append(f"{host}:{port}: {error.strerror or error}")
        if self._sock is None:
            raise ConnectionError(f"cannot connect to {bootstrap}: {'; '.join(failures)}")
        self._client_id = client_id
        self._correlation = 0

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()

    def __enter__(self) -> AclClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self, size: int) -> bytes:
        assert self._sock is not None
        data = bytearray()
        while len(data) < size:
            chunk = self._sock.recv(min(size - len(data), 1 << 20))
            if not chunk:
                raise ConnectionError(
                    f"the broker closed the connection ({len(data)} of {size} bytes read)"
                )
            data += chunk
        return bytes(data)

    def call(self, request: Any, response_cls: type[T]) -> T:
        assert self._sock is not None
        spec = codec.spec_of(type(request))
        self._correlation += 1
        header = messages.RequestHeader(
            request_api_key=spec.api_key,
            request_api_version=VERSION,
            correlation_id=self._correlation,
            client_id=self._client_id,
        )
        header_version = 2 if spec.is_flexible(VERSION) else 1
        frame = codec.encode(header, header_version) + codec.encode(request, VERSION)
        self._sock.sendall(_SIZE.pack(len(frame)) + frame)
        (size,) = _SIZE.unpack(self._read(4))
        if not 0 <= size <= MAX_RESPONSE_BYTES:
            raise ConnectionError(f"response frame of {size} bytes from the broker")
        data = self._read(size)
        answer, end = codec.decode(
            messages.ResponseHeader,
            data,
            response_header_version(spec.api_key, VERSION),
            whole=False,
        )
        if answer.correlation_id != self._correlation:
            raise ConnectionError(
                f"response correlation id {answer.correlation_id}, expected {self._correlation}"
            )
        body, _ = codec.decode(response_cls, data, VERSION, offset=end)
        return body

    # --- the three ACL APIs -------------------------------------------------------------------

    def describe(self, selection: AclFilter) -> list[AclBinding]:
        response = self.call(
            messages.DescribeAclsRequest(
                resource_type_filter=int(selection.resource_type),
                resource_name_filter=selection.resource_name,
                pattern_type_filter=int(selection.pattern_type),
                principal_filter=selection.principal,
                host_filter=selection.host,
                operation=int(selection.operation),
                permission_type=int(selection.permission),
            ),
            messages.DescribeAclsResponse,
        )
        if response.error_code:
            raise BrokerResponseError(
                "DescribeAcls", _error_name(response.error_code), response.error_message
            )
        return sorted(
            AclBinding(
                ResourceType(resource.resource_type),
                resource.resource_name,
                PatternType(resource.pattern_type),
                acl.principal,
                acl.host,
                Operation(acl.operation),
                Permission(acl.permission_type),
            )
            for resource in response.resources
            for acl in resource.acls
        )

    def create(self, bindings: list[AclBinding]) -> None:
        response = self.call(
            messages.CreateAclsRequest(
                creations=[
                    messages.CreateAclsRequestAclCreation(
                        resource_type=int(acl.resource_type),
                        resource_name=acl.resource_name,
                        resource_pattern_type=int(acl.pattern_type),
                        principal=acl.principal,
                        host=acl.host,
                        operation=int(acl.operation),
                        permission_type=int(acl.permission),
                    )
                    for acl in bindings
                ]
            ),
            messages.CreateAclsResponse,
        )
        for result in response.results:
            if result.error_code:
                raise BrokerResponseError(
                    "CreateAcls", _error_name(result.error_code), result.error_message
                )

    def delete(self, selections: list[AclFilter]) -> list[list[AclBinding]]:
        response = self.call(
            messages.DeleteAclsRequest(
                filters=[
                    messages.DeleteAclsRequestDeleteAclsFilter(
                        resource_type_filter=int(s.resource_type),
                        resource_name_filter=s.resource_name,
                        pattern_type_filter=int(s.pattern_type),
                        principal_filter=s.principal,
                        host_filter=s.host,
                        operation=int(s.operation),
                        permission_type=int(s.permission),
                    )
                    for s in selections
                ]
            ),
            messages.DeleteAclsResponse,
        )
        removed: list[list[AclBinding]] = []
        for result in response.filter_results:
            if result.error_code:
                raise BrokerResponseError(
                    "DeleteAcls", _error_name(result.error_code), result.error_message
                )
            removed.append(
                [
                    AclBinding(
                        ResourceType(m.resource_type),
                        m.resource_name,
                        PatternType(m.pattern_type),
                        m.principal,
                        m.host,
                        Operation(m.operation),
                        Permission(m.permission_type),
                    )
                    for m in result.matching_acls
                ]
            )
        return removed
