"""Who may do what: Kafka's ``StandardAuthorizer`` decision over a set of ACL bindings (pure).

:func:`decide` answers one question (principal, host, operation, resource) as Kafka does:

1. a super user (``super.users``) is allowed everything;
2. the bindings that *apply* to the resource are those of its type whose pattern covers its
   name: LITERAL with the same name, LITERAL ``*``, PREFIXED with a prefix of the name;
3. of those, a binding *matches* when its principal is the session's or ``User:*``, its host
   is the client's address or ``*``, and its operation is the one asked, or ALL, or (ALLOW
   bindings only) one that implies it: READ, WRITE, DELETE and ALTER imply DESCRIBE;
   ALTER_CONFIGS implies DESCRIBE_CONFIGS. A DENY of READ does not deny DESCRIBE;
4. a matching DENY wins over any ALLOW; else a matching ALLOW allows; else, when some
   binding applies to the resource (whoever it names) the answer is no; when none applies
   at all, ``allow.everyone.if.no.acl.found`` decides (default: no).

:func:`decide_by_resource_type` is Kafka's ``Authorizer.authorizeByResourceType`` (may the
principal perform the operation on *some* resource of the type; InitProducerId asks it for
WRITE on any topic): allowed when allowed on a hypothetical resource, else when an ALLOW
binding (literal ``*``, or a literal/prefixed name not dominated by a DENY of the same
literal name or of one of its prefixes) exists and no DENY of literal ``*`` does.

:class:`AclTable` indexes bindings so a decision costs a few dictionary lookups: per resource
type, literal names, the wildcard, and prefixed patterns grouped by prefix length (a name is
looked up once per distinct prefix length). Nothing here reads a clock or a file.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from seglog.broker.acl.model import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclFilter,
    PatternType,
    Permission,
)
from seglog.broker.authorization import SUPPORTED_OPERATIONS, Operation, ResourceType

IMPLIES_DESCRIBE = frozenset(
    {Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}
)
IMPLIES_DESCRIBE_CONFIGS = frozenset({Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS})


class _TypeIndex:
    """The bindings of one resource type."""

    __slots__ = ("literal", "prefix_lengths", "prefixed", "wildcard")

    def __init__(self) -> None:
        self.literal: dict[str, list[AclBinding]] = {}
        self.wildcard: list[AclBinding] = []
        self.prefixed: dict[str, list[AclBinding]] = {}
        self.prefix_lengths: list[int] = []

    def applying(self, name: str) -> Iterator[AclBinding]:
        yield from self.literal.get(name, ())
        yield from self.wildcard
        for length in self.prefix_lengths:
            if length > len(name):
                break
            yield from self.prefixed.get(name[:length], ())


class AclTable:
    """An immutable set of bindings, indexed for :func:`decide` (see the module docstring)."""

    def __init__(self, bindings: Iterable[AclBinding] = ()) -> None:
        self.bindings: frozenset[AclBinding] = frozenset(bindings)
        self._types: dict[ResourceType, _TypeIndex] = {}
        for acl in self.bindings:
            index = self._types.setdefault(acl.resource_type, _TypeIndex())
            if acl.pattern_type is PatternType.PREFIXED:
                index.prefixed.setdefault(acl.resource_name, []).append(acl)
            elif acl.resource_name == WILDCARD:
                index.wildcard.append(acl)
            else:
                index.literal.setdefault(acl.resource_name, []).append(acl)
        for index in self._types.values():
            index.prefix_lengths = sorted({len(prefix) for prefix in index.prefixed})

    def __len__(self) -> int:
        return len(self.bindings)

    def applying(self, resource_type: ResourceType, name: str) -> Iterator[AclBinding]:
        """The bindings whose pattern covers the resource (step 2 of the module docstring)."""
        index = self._types.get(resource_type)
        if index is not None:
            yield from index.applying(name)

    def of_type(self, resource_type: ResourceType) -> Iterator[AclBinding]:
        index = self._types.get(resource_type)
        if index is None:
            return
        for group in index.literal.values():
            yield from group
        yield from index.wildcard
        for group in index.prefixed.values():
            yield from group

    def select(self, selection: AclFilter) -> list[AclBinding]:
        """The bindings ``selection`` matches, in a stable order."""
        return sorted(acl for acl in self.bindings if selection.matches(acl))


def entry_matches(acl: AclBinding, principal: str, host: str, operation: Operation) -> bool:
    """Step 3 of the module docstring: does ``acl`` speak about this principal, host and
    operation (its pattern already applies)?"""
    if acl.principal not in (principal, WILDCARD_PRINCIPAL):
        return False
    if acl.host not in (WILDCARD, host):
        return False
    granted = acl.operation
    if granted is Operation.ALL or granted == operation:
        return True
    if acl.permission is not Permission.ALLOW:
        return False
    if operation is Operation.DESCRIBE:
        return granted in IMPLIES_DESCRIBE
    if operation is Operation.DESCRIBE_CONFIGS:
        return granted in IMPLIES_DESCRIBE_CONFIGS
    return False


def decide(
    table: AclTable,
    principal: str,
    host: str,
    operation: Operation,
    resource_type: ResourceType,
    name: str,
    *,
    super_users: frozenset[str] = frozenset(),
    allow_if_no_acl: bool = False,
) -> bool:
    """Whether ``principal`` from ``host`` may perform ``operation`` on the resource."""
    if principal in super_users:
        return True
    applied = False
    allowed = False
    for acl in table.applying(resource_type, name):
        applied = True
        if entry_matches(acl, principal, host, operation):
            if acl.permission is Permission.DENY:
                return False
            allowed = True
    if allowed:
        return True
    return not applied and allow_if_no_acl


def decide_by_resource_type(
    table: AclTable,
    principal: str,
    host: str,
    operation: Operation,
    resource_type: ResourceType,
    *,
    super_users: frozenset[str] = frozenset(),
    allow_if_no_acl: bool = False,
) -> bool:
    """Whether ``principal`` may perform ``operation`` on some resource of the type (module
    docstring)."""
    if decide(
        table,
        principal,
        host,
        operation,
        resource_type,
        "hardcode",
        super_users=super_users,
        allow_if_no_acl=allow_if_no_acl,
    ):
        return True
    deny_literal: set[str] = set()
    deny_prefixed: set[str] = set()
    allow: list[AclBinding] = []
    for acl in table.of_type(resource_type):
        if acl.host not in (WILDCARD, host):
            continue
        if acl.principal not in (principal, WILDCARD_PRINCIPAL):
            continue
        if acl.operation != operation and acl.operation is not Operation.ALL:
            continue
        if acl.permission is Permission.DENY:
            if acl.pattern_type is PatternType.PREFIXED:
                deny_prefixed.add(acl.resource_name)
            elif acl.resource_name == WILDCARD:
                return False
            else:
                deny_literal.add(acl.resource_name)
        else:
            allow.append(acl)
    if any(
        acl.pattern_type is PatternType.LITERAL and acl.resource_name == WILDCARD for acl in allow
    ):
        return True
    for acl in allow:
        name = acl.resource_name
        if acl.pattern_type is PatternType.LITERAL and name in deny_literal:
            continue
        if not any(name[:length] in deny_prefixed for length in range(1, len(name) + 1)):
            return True
    return False


def authorized_operations(
    table: AclTable,
    principal: str,
    host: str,
    resource_type: ResourceType,
    name: str,
    *,
    super_users: frozenset[str] = frozenset(),
    allow_if_no_acl: bool = False,
) -> list[Operation]:
    """The supported operations of the resource the principal may perform (the bits of
    ``*_authorized_operations``)."""
    return [
        operation
        for operation in SUPPORTED_OPERATIONS.get(resource_type, ())
        if decide(
            table,
            principal,
            host,
            operation,
            resource_type,
            name,
            super_users=super_users,
            allow_if_no_acl=allow_if_no_acl,
        )
    ]
