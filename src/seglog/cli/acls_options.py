"""What ``seglog acls`` options mean: resource patterns, entries and filters (as ``kafka-acls.sh``).

Pure: the parsed options in, :class:`AclBinding` and :class:`AclFilter` values out, following
Kafka's ``AclCommand``:

* resources: each ``--topic``, ``--group``, ``--transactional-id`` (repeatable) and
  ``--cluster`` (``kafka-cluster``), with ``--resource-pattern-type`` (default LITERAL;
  ``--add`` needs LITERAL or PREFIXED, ``--list``/``--remove`` also take ANY and MATCH). The
  cluster is a LITERAL resource: ``--cluster`` with another pattern type is refused (decision:
  kafka-acls.sh silently leaves the cluster out then, which hides a mistake), while
  ``--producer --idempotent`` with PREFIXED topics leaves IdempotentWrite out, as Kafka does;
* entries: every ``--allow-principal`` from every ``--allow-host`` (default ``*``) and every
  ``--deny-principal`` from every ``--deny-host``, for every ``--operation`` (default ALL);
* ``--producer``: WRITE, DESCRIBE, CREATE on the topics, WRITE and DESCRIBE on the
  transactional ids, IDEMPOTENT_WRITE on the cluster with ``--idempotent``; ``--consumer``:
  READ and DESCRIBE on the topics, READ on the groups;
* an operation a resource type does not support is refused, naming the supported ones.

Operation names are accepted as Kafka prints them (``DescribeConfigs``) or as its enum names
(``DESCRIBE_CONFIGS``), in any case.
"""

from __future__ import annotations

import argparse

from seglog.broker.acl.model import (
    WILDCARD,
    AclBinding,
    AclFilter,
    PatternType,
    Permission,
    parse_principal,
)
from seglog.broker.authorization import CLUSTER_NAME, SUPPORTED_OPERATIONS, Operation, ResourceType
from seglog.errors import InvalidAclError

Resource = tuple[ResourceType, str, PatternType]
SETTABLE_OPERATIONS = [op for op in Operation if op not in (Operation.UNKNOWN, Operation.ANY)]


def operation_of(text: str) -> Operation:
    """``Read``/``READ``/``describe-configs``/``DescribeConfigs`` -> :class:`Operation`."""
    wanted = text.replace("_", "").replace("-", "").lower()
    for operation in SETTABLE_OPERATIONS:
        if operation.name.replace("_", "").lower() == wanted:
            return operation
    names = ", ".join(_camel(op) for op in SETTABLE_OPERATIONS)
    raise InvalidAclError(f"--operation {text!r} is not an operation; valid: {names}")


def _camel(operation: Operation) -> str:
    return "".join(part.capitalize() for part in operation.name.split("_"))


def pattern_type_of(text: str) -> PatternType:
    try:
        kind = PatternType[text.upper()]
    except KeyError:
        kind = PatternType.UNKNOWN
    if kind is PatternType.UNKNOWN:
        raise InvalidAclError(
            f"--resource-pattern-type {text!r}: use LITERAL, PREFIXED, MATCH or ANY"
        )
    return kind


def resources(args: argparse.Namespace, pattern: PatternType) -> list[Resource]:
    """The resource patterns (or pattern filters) the options name."""
    found: list[Resource] = [(ResourceType.TOPIC, t, pattern) for t in args.topics]
    found += [(ResourceType.GROUP, g, pattern) for g in args.groups]
    found += [(ResourceType.TRANSACTIONAL_ID, t, pattern) for t in args.transactional_ids]
    if args.cluster and pattern is not PatternType.LITERAL:
        raise InvalidAclError("--cluster takes --resource-pattern-type LITERAL only")
    if pattern is PatternType.LITERAL and (args.cluster or (args.producer and args.idempotent)):
        found.append((ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL))
    return found


def _principals(texts: list[str], option: str) -> list[str]:
    for text in texts:
        try:
            parse_principal(text)
        except InvalidAclError as error:
            raise InvalidAclError(f"{option}: {error}") from None
    return texts


def _role_operations(args: argparse.Namespace, kind: ResourceType) -> list[Operation]:
    if args.producer:
        return {
            ResourceType.TOPIC: [Operation.WRITE, Operation.DESCRIBE, Operation.CREATE],
            ResourceType.TRANSACTIONAL_ID: [Operation.WRITE, Operation.DESCRIBE],
            ResourceType.CLUSTER: [Operation.IDEMPOTENT_WRITE],
        }.get(kind, [])
    return {
        ResourceType.TOPIC: [Operation.READ, Operation.DESCRIBE],
        ResourceType.GROUP: [Operation.READ],
    }.get(kind, [])


def operations_for(args: argparse.Namespace, kind: ResourceType) -> list[Operation]:
    """The operations of ``--operation`` (or the role's) for one resource type, checked."""
    if args.producer or args.consumer:
        return _role_operations(args, kind)
    operations = [operation_of(text) for text in args.operations] or [Operation.ALL]
    supported = SUPPORTED_OPERATIONS[kind]
    for operation in operations:
        if operation is not Operation.ALL and operation not in supported:
            names = ", ".join(_camel(op) for op in (*supported, Operation.ALL))
            raise InvalidAclError(
                f"ResourceType {_camel_type(kind)} only supports operations {names}"
            )
    return operations


def _camel_type(kind: ResourceType) -> str:
    return "".join(part.capitalize() for part in kind.name.split("_"))


def entries(
    args: argparse.Namespace, kind: ResourceType
) -> list[tuple[str, str, Operation, Permission]]:
    """``(principal, host, operation, permission)`` of every entry the options describe."""
    allow = _principals(args.allow_principals, "--allow-principal")
    deny = _principals(args.deny_principals, "--deny-principal")
    allow_hosts = args.allow_hosts or [WILDCARD]
    deny_hosts = args.deny_hosts or [WILDCARD]
    found = []
    for operation in operations_for(args, kind):
        found += [(p, h, operation, Permission.ALLOW) for p in allow for h in allow_hosts]
        found += [(p, h, operation, Permission.DENY) for p in deny for h in deny_hosts]
    return found


def bindings_to_add(args: argparse.Namespace) -> list[AclBinding]:
    """``--add``: every resource times every entry (at least one principal is needed)."""
    pattern = pattern_type_of(args.resource_pattern_type)
    if pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAclError(
            f"--add needs --resource-pattern-type LITERAL or PREFIXED, not {pattern.name}"
        )
    if not (args.allow_principals or args.deny_principals):
        raise InvalidAclError("--add needs --allow-principal or --deny-principal")
    found = resources(args, pattern)
    if not found:
        raise InvalidAclError(
            "--add needs a resource: --topic, --group, --transactional-id or --cluster"
        )
    return [
        AclBinding(kind, name, kind_pattern, principal, host, operation, permission)
        for kind, name, kind_pattern in found
        for principal, host, operation, permission in entries(args, kind)
    ]


def filters_to_remove(args: argparse.Namespace) -> list[AclFilter]:
    """``--remove``: per resource filter, its named entries, or every entry when no principal
    is given (Kafka removes all ACLs of the resource then)."""
    pattern = pattern_type_of(args.resource_pattern_type)
    found = resources(args, pattern)
    if not found:
        raise InvalidAclError(
            "--remove needs a resource: --topic, --group, --transactional-id or --cluster"
        )
    selections: list[AclFilter] = []
    for kind, name, kind_pattern in found:
        named = entries(args, kind)
        if not named:
            selections.append(AclFilter(kind, name, kind_pattern))
        selections += [
            AclFilter(kind, name, kind_pattern, principal, host, operation, permission)
            for principal, host, operation, permission in named
        ]
    return selections


def filters_to_list(args: argparse.Namespace) -> list[AclFilter]:
    """``--list``: the resources named (every ACL without one)."""
    pattern = pattern_type_of(args.resource_pattern_type)
    return [AclFilter(kind, name, p) for kind, name, p in resources(args, pattern)] or [AclFilter()]


def pattern_text(kind: ResourceType, name: str, pattern: PatternType) -> str:
    """Kafka's ``ResourcePattern.toString``."""
    return f"ResourcePattern(resourceType={kind.name}, name={name}, patternType={pattern.name})"


def entry_text(acl: AclBinding) -> str:
    """Kafka's ``AccessControlEntry.toString``."""
    return (
        f"(principal={acl.principal}, host={acl.host}, operation={acl.operation.name}, "
        f"permissionType={acl.permission.name})"
    )
