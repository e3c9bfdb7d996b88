"""Who may do what: the authorizer seam every handler asks before it acts.

Kafka's operations and resource types carry Kafka's wire codes (``AclOperation``,
``ResourceType``), so they go onto the wire (DescribeAcls, ``*_authorized_operations``) as they
are. A handler asks ``state.authorize(context, operation, resource_type, name)``; the server's
:class:`Authorizer` answers. Without ``authorizer.class.name`` the server runs
:class:`AllowEverything`, as Kafka does without an authorizer.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Protocol

from seglog.broker.session import Session


class Operation(enum.IntEnum):
    """Kafka's ``AclOperation`` codes."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class ResourceType(enum.IntEnum):
    """Kafka's ``ResourceType`` codes."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


CLUSTER_NAME = "kafka-cluster"

#: The operations each resource type supports (Kafka's ``AclEntry.supportedOperations``): the
#: bits of ``*_authorized_operations`` and what ``seglog acls`` accepts besides ALL.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[Operation, ...]] = {
    ResourceType.TOPIC: (
        Operation.READ,
        Operation.WRITE,
        Operation.CREATE,
        Operation.DESCRIBE,
        Operation.DELETE,
        Operation.ALTER,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (
        Operation.READ,
        Operation.DESCRIBE,
        Operation.DELETE,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    ResourceType.CLUSTER: (
        Operation.CREATE,
        Operation.CLUSTER_ACTION,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
        Operation.IDEMPOTENT_WRITE,
        Operation.ALTER,
        Operation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (Operation.DESCRIBE, Operation.WRITE),
    ResourceType.DELEGATION_TOKEN: (Operation.DESCRIBE,),
    ResourceType.USER: (Operation.CREATE_TOKENS, Operation.DESCRIBE_TOKENS),
}


def operations_bitfield(operations: Iterable[Operation]) -> int:
    """Kafka's ``*_authorized_operations`` int32: bit ``1 << code`` per operation."""
    bits = 0
    for operation in operations:
        bits |= 1 << int(operation)
    return bits - (1 << 32) if bits >= 1 << 31 else bits


class Authorizer(Protocol):
    """Decides whether a session may perform an operation on a resource."""

    def authorize(
        self, session: Session, operation: Operation, resource_type: ResourceType, name: str
    ) -> bool: ...

    def authorize_by_resource_type(
        self, session: Session, operation: Operation, resource_type: ResourceType
    ) -> bool:
        """May the session perform ``operation`` on *some* resource of the type (Kafka's
        ``authorizeByResourceType``: InitProducerId asks for WRITE on any topic)."""
        ...


class AllowEverything:
    """The authorizer of a server without ``authorizer.class.name``: every request is allowed."""

    def authorize(
        self, session: Session, operation: Operation, resource_type: ResourceType, name: str
    ) -> bool:
        return True

    def authorize_by_resource_type(
        self, session: Session, operation: Operation, resource_type: ResourceType
    ) -> bool:
        return True
