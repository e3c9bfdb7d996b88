"""ACL bindings and filters, as Kafka defines them (``AclBinding``, ``AclBindingFilter``).

An :class:`AclBinding` says: principal ``P`` connecting from host ``H`` is ALLOWED (or DENIED)
operation ``O`` on resources of type ``T`` whose name is ``N`` (pattern LITERAL: exactly
``N``, or every name when ``N`` is ``*``) or starts with ``N`` (pattern PREFIXED). Every code
is Kafka's wire code (``ResourceType``, ``PatternType``, ``AclOperation``,
``AclPermissionType``), so bindings go onto the wire and into the ACL file as they are.

An :class:`AclFilter` selects bindings (DescribeAcls, DeleteAcls, ``seglog acls --list``):
``None`` fields and the ANY codes match everything; pattern type MATCH selects every binding
that *applies* to the named resource (the literal name, the ``*`` wildcard, every prefix of
it), as Kafka's ``ResourcePatternFilter.matches``. Principal and host in a filter match
exactly (``User:*`` in a filter selects the wildcard bindings, not every principal).

Validation (:func:`check_new_binding`, :func:`check_filter`) follows Kafka's
``AclControlManager.validateNewAcl`` and ``AclApis``: a stored binding has a concrete resource
type, pattern LITERAL or PREFIXED, a concrete operation, ALLOW or DENY, a non-empty name
(``kafka-cluster`` for the cluster), and a principal ``Type:Name``.
"""

from __future__ import annotations

import enum
import functools
import ipaddress
from dataclasses import dataclass
from typing import TypeVar

from seglog.broker.authorization import CLUSTER_NAME, Operation, ResourceType
from seglog.errors import InvalidAclError

E = TypeVar("E", bound=enum.IntEnum)
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"


class PatternType(enum.IntEnum):
    """Kafka's ``PatternType`` codes."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Permission(enum.IntEnum):
    """Kafka's ``AclPermissionType`` codes."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


@functools.lru_cache(maxsize=4096)
def java_host_address(host: str) -> str:
    """The client address as Kafka's authorizer compares it (Java's
    ``InetAddress.getHostAddress``): IPv4 dotted, IPv6 as eight uncompressed lowercase groups
    (``::1`` -> ``0:0:0:0:0:0:0:1``), an IPv4-mapped IPv6 address as its IPv4 form. An ACL's
    host must be written that way to match, as in Kafka; text that is no address is kept.
    Cached (a bounded LRU): a connection's address is converted once, not per decision."""
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return ":".join(f"{int(group, 16):x}" for group in address.exploded.split(":"))
    return str(address)


def parse_principal(text: str) -> tuple[str, str]:
    """``"User:alice"`` -> ``("User", "alice")``; :class:`InvalidAclError` without a ``:``
    or with an empty type or name (Kafka's ``SecurityUtils.parseKafkaPrincipal``)."""
    kind, sep, name = text.partition(":")
    if not sep or not kind or not name:
        raise InvalidAclError(f"principal {text!r} is not of the form Type:Name (e.g. User:alice)")
    return kind, name


@dataclass(frozen=True, slots=True, order=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry (see the module docstring)."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    def __str__(self) -> str:
        return (
            f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, "
            f"permissionType={self.permission.name}) on ResourcePattern(resourceType="
            f"{self.resource_type.name}, name={self.resource_name}, "
            f"patternType={self.pattern_type.name})"
        )


@dataclass(frozen=True, slots=True)
class AclFilter:
    """Selects bindings (see the module docstring); the default selects every binding."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: Operation = Operation.ANY
    permission: Permission = Permission.ANY

    def matches(self, acl: AclBinding) -> bool:
        """Whether ``acl`` is selected (Kafka's ``AclBindingFilter.matches``)."""
        return self.matches_pattern(acl) and self.matches_entry(acl)

    def matches_pattern(self, acl: AclBinding) -> bool:
        if self.resource_type is not ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        wanted = self.pattern_type
        if wanted not in (PatternType.ANY, PatternType.MATCH) and wanted != acl.pattern_type:
            return False
        name = self.resource_name
        if name is None:
            return True
        if wanted is PatternType.ANY or wanted == acl.pattern_type:
            return name == acl.resource_name
        # MATCH: the bindings that apply to the resource ``name``.
        if acl.pattern_type is PatternType.LITERAL:
            return acl.resource_name in (name, WILDCARD)
        return name.startswith(acl.resource_name)

    def matches_entry(self, acl: AclBinding) -> bool:
        return (
            (self.principal is None or self.principal == acl.principal)
            and (self.host is None or self.host == acl.host)
            and (self.operation is Operation.ANY or self.operation == acl.operation)
            and (self.permission is Permission.ANY or self.permission == acl.permission)
        )


def _enum(kind: type[E], code: int, what: str) -> E:
    try:
        return kind(code)
    except ValueError:
        raise InvalidAclError(f"unknown {what} code {code}") from None


def binding_of(
    resource_type: int,
    resource_name: str,
    pattern_type: int,
    principal: str,
    host: str,
    operation: int,
    permission: int,
) -> AclBinding:
    """A binding from wire codes, checked with :func:`check_new_binding`."""
    acl = AclBinding(
        _enum(ResourceType, resource_type, "resource type"),
        resource_name,
        _enum(PatternType, pattern_type, "pattern type"),
        principal,
        host,
        _enum(Operation, operation, "operation"),
        _enum(Permission, permission, "permission type"),
    )
    check_new_binding(acl)
    return acl


def check_new_binding(acl: AclBinding) -> None:
    """Raise :class:`InvalidAclError` when ``acl`` cannot be stored (module docstring)."""
    if acl.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
        raise InvalidAclError(f"invalid resource type {acl.resource_type.name} in {acl}")
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAclError(f"invalid pattern type {acl.pattern_type.name} in {acl}")
    if acl.operation in (Operation.ANY, Operation.UNKNOWN):
        raise InvalidAclError(f"invalid operation {acl.operation.name} in {acl}")
    if acl.permission not in (Permission.ALLOW, Permission.DENY):
        raise InvalidAclError(f"invalid permission type {acl.permission.name} in {acl}")
    if not acl.resource_name:
        raise InvalidAclError(f"empty resource name in {acl}")
    if acl.resource_type is ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME:
        raise InvalidAclError(f"the only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not acl.host:
        raise InvalidAclError(f"empty host in {acl} (use * for every host)")
    parse_principal(acl.principal)


def filter_of(
    resource_type: int,
    resource_name: str | None,
    pattern_type: int,
    principal: str | None,
    host: str | None,
    operation: int,
    permission: int,
) -> AclFilter:
    """A filter from wire codes, checked with :func:`check_filter`."""
    selection = AclFilter(
        _enum(ResourceType, resource_type, "resource type"),
        resource_name,
        _enum(PatternType, pattern_type, "pattern type"),
        principal,
        host,
        _enum(Operation, operation, "operation"),
        _enum(Permission, permission, "permission type"),
    )
    check_filter(selection)
    return selection


def check_filter(selection: AclFilter) -> None:
    """Raise :class:`InvalidAclError` for a filter with an UNKNOWN code (Kafka refuses them)."""
    unknown = [
        what
        for what, value in (
            ("resource type", selection.resource_type is ResourceType.UNKNOWN),
            ("pattern type", selection.pattern_type is PatternType.UNKNOWN),
            ("operation", selection.operation is Operation.UNKNOWN),
            ("permission type", selection.permission is Permission.UNKNOWN),
        )
        if value
    ]
    if unknown:
        raise InvalidAclError(f"ACL filter with an UNKNOWN {' and '.join(unknown)}")
