"""``seglog acls --bootstrap-server``: DescribeAcls, CreateAcls and DeleteAcls over the wire.

:class:`AclClient` sends the three ACL APIs at version 1 (every broker since Kafka 2.0 serves it)
over a :class:`~seglog.cli.kafka_connection.KafkaConnection` (secured as ``--command-config`` says,
one request at a time). An error code in a response raises
:class:`~seglog.errors.BrokerResponseError` with Kafka's name for it; a broker that cannot be
reached, closes the connection or does not serve the ACL APIs raises
:class:`~seglog.errors.BrokerConnectionError`.
"""

from __future__ import annotations

from typing import Any, TypeVar

from seglog.broker.acl.model import AclBinding, AclFilter, PatternType, Permission
from seglog.broker.authorization import Operation, ResourceType
from seglog.cli.client_security import ClientSecurity
from seglog.cli.kafka_connection import KafkaConnection, error_name
from seglog.errors import BrokerResponseError
from seglog.protocol import messages

T = TypeVar("T")
VERSION = 1


class AclClient:
    """The ACL APIs of one broker (see the module docstring)."""

    def __init__(
        self,
        bootstrap: str,
        client_id: str = "seglog-acls",
        security: ClientSecurity | None = None,
    ) -> None:
        self._connection = KafkaConnection(bootstrap, client_id, security)

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> AclClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, request: Any, response_cls: type[T]) -> T:
        return self._connection.call(request, VERSION, response_cls)

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
                "DescribeAcls", error_name(response.error_code), response.error_message
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
                    "CreateAcls", error_name(result.error_code), result.error_message
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
                    "DeleteAcls", error_name(result.error_code), result.error_message
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
