"""Kafka's authorizer decisions over ACL bindings, ported from Kafka's own tests.

The cases come from ``StandardAuthorizerTest`` (KRaft's authorizer) and ``BaseAuthorizerTest``
(``authorizeByResourceType``) of apache/kafka: the same bindings, principals, hosts and
actions, with Kafka's expected answers. Then the filters of DescribeAcls/DeleteAcls
(``ResourcePatternFilter.matches``), the ``*_authorized_operations`` bits and the checks of
new bindings.
"""

from __future__ import annotations

import pytest

from seglog.broker.acl.matching import (
    AclTable,
    authorized_operations,
    decide,
    decide_by_resource_type,
)
from seglog.broker.acl.model import (
    AclBinding,
    AclFilter,
    PatternType,
    Permission,
    binding_of,
    check_new_binding,
    filter_of,
    java_host_address,
)
from seglog.broker.acl.settings import AuthorizerSettings
from seglog.broker.authorization import Operation, ResourceType, operations_bitfield
from seglog.errors import InvalidAclError, InvalidConfigError

TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY
Op = Operation
LOCAL = "127.0.0.1"


def acl(
    resource_type: ResourceType,
    name: str,
    pattern: PatternType,
    principal: str,
    host: str,
    operation: Operation,
    permission: Permission,
) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, host, operation, permission)


def foo_acl(operation: Operation, permission: Permission) -> AclBinding:
    """Kafka's ``newFooAcl``: topic prefix ``foo_`` for User:bob."""
    return acl(TOPIC, "foo_", PREFIXED, "User:bob", "*", operation, permission)


def bar_acl(operation: Operation, permission: Permission) -> AclBinding:
    """Kafka's ``newBarAcl``: literal group ``bar`` for everyone."""
    return acl(GROUP, "bar", LITERAL, "User:*", "*", operation, permission)


def answers(
    table: AclTable,
    user: str,
    actions: list[tuple[Operation, ResourceType, str]],
    host: str = LOCAL,
    **settings: object,
) -> list[bool]:
    return [
        decide(table, f"User:{user}", host, op, kind, name, **settings)  # type: ignore[arg-type]
        for op, kind, name in actions
    ]


def test_allow_everyone_if_no_acl_found() -> None:
    """testAllowEveryoneIfNoAclFoundConfigEnabled / Disabled: an ACL on topic1 for Alice
    closes topic1 to Bob; topic2, with no ACL, is open only with the setting."""
    table = AclTable([acl(TOPIC, "topic1", LITERAL, "User:Alice", "*", Op.READ, ALLOW)])
    actions = [(Op.READ, TOPIC, "topic1"), (Op.READ, TOPIC, "topic2")]
    assert answers(table, "Bob", actions, allow_if_no_acl=True) == [False, True]
    assert answers(table, "Bob", actions, allow_if_no_acl=False) == [False, False]


def test_super_users_are_allowed_everything() -> None:
    table = AclTable([acl(TOPIC, "t", LITERAL, "User:alice", "*", Op.ALL, DENY)])
    users = frozenset({"User:alice", "User:chris"})
    assert answers(table, "alice", [(Op.WRITE, TOPIC, "t")], super_users=users) == [True]
    assert answers(table, "chris", [(Op.ALTER, CLUSTER, "kafka-cluster")], super_users=users)
    assert answers(table, "bob", [(Op.READ, TOPIC, "t")], super_users=users) == [False]


@pytest.mark.parametrize("granted", [Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER])
def test_allow_of_these_implies_describe(granted: Operation) -> None:
    """testFindResultImplication: READ, WRITE, DELETE, ALTER allowed imply DESCRIBE."""
    table = AclTable([foo_acl(granted, ALLOW)])
    assert answers(table, "bob", [(Op.DESCRIBE, TOPIC, "foo_bar")]) == [True]


def test_create_does_not_imply_describe_and_deny_does_not_imply() -> None:
    assert answers(
        AclTable([foo_acl(Op.CREATE, ALLOW)]), "bob", [(Op.DESCRIBE, TOPIC, "foo_bar")]
    ) == [False]
    for denied in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        # A DENY of READ does not deny DESCRIBE: with an ALLOW of DESCRIBE beside it, allowed.
        table = AclTable([foo_acl(denied, DENY), foo_acl(Op.DESCRIBE, ALLOW)])
        assert answers(table, "bob", [(Op.DESCRIBE, TOPIC, "foo_bar")]) == [True]
    table = AclTable([foo_acl(Op.DESCRIBE, DENY), foo_acl(Op.READ, ALLOW)])
    assert answers(table, "bob", [(Op.DESCRIBE, TOPIC, "foo_bar")]) == [False]


def test_alter_configs_implies_describe_configs_for_allow_only() -> None:
    for granted in (Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS):
        table = AclTable([foo_acl(granted, ALLOW)])
        assert answers(table, "bob", [(Op.DESCRIBE_CONFIGS, TOPIC, "foo_bar")]) == [True]
    table = AclTable([foo_acl(Op.ALTER_CONFIGS, DENY), foo_acl(Op.DESCRIBE_CONFIGS, ALLOW)])
    assert answers(table, "bob", [(Op.DESCRIBE_CONFIGS, TOPIC, "foo_bar")]) == [True]
    assert answers(table, "bob", [(Op.ALTER_CONFIGS, TOPIC, "foo_bar")]) == [False]


def test_principal_matching() -> None:
    """testFindResultPrincipalMatching: the principal must match, ``User:*`` matches all."""
    assert answers(AclTable([foo_acl(Op.READ, ALLOW)]), "bob", [(Op.READ, TOPIC, "foo_bar")]) == [
        True
    ]
    assert answers(AclTable([foo_acl(Op.READ, ALLOW)]), "alice", [(Op.READ, TOPIC, "foo_bar")]) == [
        False
    ]
    table = AclTable([bar_acl(Op.READ, DENY), bar_acl(Op.READ, ALLOW)])
    assert answers(table, "alice", [(Op.READ, GROUP, "bar")]) == [False]


def test_simple_authorizations() -> None:
    table = AclTable(
        [
            foo_acl(Op.READ, ALLOW),
            foo_acl(Op.WRITE, ALLOW),
            bar_acl(Op.DESCRIBE_CONFIGS, ALLOW),
            bar_acl(Op.ALTER_CONFIGS, ALLOW),
        ]
    )
    assert answers(table, "bob", [(Op.READ, TOPIC, "foo_")]) == [True]
    assert answers(table, "fred", [(Op.ALTER_CONFIGS, GROUP, "bar")]) == [True]


def test_deny_precedence_with_operation_all() -> None:
    table = AclTable(
        [
            acl(TOPIC, "foo", LITERAL, "User:alice", "*", Op.ALL, DENY),
            acl(TOPIC, "foo", PREFIXED, "User:alice", "*", Op.READ, ALLOW),
            acl(TOPIC, "foo", LITERAL, "User:*", "*", Op.ALL, DENY),
            acl(TOPIC, "foo", PREFIXED, "User:*", "*", Op.DESCRIBE, ALLOW),
        ]
    )
    assert answers(
        table,
        "alice",
        [
            (Op.WRITE, TOPIC, "foo"),
            (Op.READ, TOPIC, "foo"),
            (Op.DESCRIBE, TOPIC, "foo"),
            (Op.READ, TOPIC, "foobar"),
        ],
    ) == [False, False, False, True]
    assert answers(
        table,
        "bob",
        [
            (Op.DESCRIBE, TOPIC, "foo"),
            (Op.READ, TOPIC, "foo"),
            (Op.WRITE, TOPIC, "foo"),
            (Op.DESCRIBE, TOPIC, "foobaz"),
            (Op.READ, TOPIC, "foobaz"),
        ],
    ) == [False, False, False, True, False]


def test_topic_acl_with_operation_all() -> None:
    table = AclTable(
        [
            acl(TOPIC, "foo", LITERAL, "User:*", "*", Op.ALL, ALLOW),
            acl(TOPIC, "bar", PREFIXED, "User:alice", "*", Op.ALL, ALLOW),
            acl(TOPIC, "baz", LITERAL, "User:bob", "*", Op.ALL, ALLOW),
        ]
    )
    actions = [
        (Op.WRITE, TOPIC, "foo"),
        (Op.DESCRIBE_CONFIGS, TOPIC, "bar"),
        (Op.DESCRIBE, TOPIC, "baz"),
    ]
    assert answers(table, "alice", actions) == [True, True, False]
    actions = [(Op.WRITE, TOPIC, "foo"), (Op.READ, TOPIC, "bar"), (Op.DESCRIBE, TOPIC, "baz")]
    assert answers(table, "bob", actions) == [True, False, True]
    actions = [(Op.DESCRIBE, TOPIC, "foo"), (Op.WRITE, TOPIC, "bar"), (Op.READ, TOPIC, "baz")]
    assert answers(table, "malory", actions) == [True, False, False]


def test_host_address_acls() -> None:
    """testHostAddressAclValidation, with 127.0.0.1 as Kafka's local host."""
    host1, host2 = "192.168.1.1", "192.168.1.2"
    table = AclTable(
        [
            acl(TOPIC, "foo", LITERAL, "User:alice", host1, Op.READ, DENY),
            acl(TOPIC, "foo", LITERAL, "User:alice", "*", Op.READ, ALLOW),
            acl(TOPIC, "bar", LITERAL, "User:bob", host2, Op.READ, ALLOW),
            acl(TOPIC, "bar", LITERAL, "User:*", LOCAL, Op.DESCRIBE, ALLOW),
        ]
    )
    actions = [(Op.READ, TOPIC, "foo"), (Op.READ, TOPIC, "bar"), (Op.DESCRIBE, TOPIC, "bar")]
    assert answers(table, "alice", actions, LOCAL) == [True, False, True]
    assert answers(table, "alice", actions, host1) == [False, False, False]
    assert answers(table, "alice", actions, host2) == [True, False, False]
    assert answers(table, "bob", actions, LOCAL) == [False, False, True]
    assert answers(table, "bob", actions, host1) == [False, False, False]
    assert answers(table, "bob", actions, host2) == [False, True, True]


def test_many_acls() -> None:
    table = AclTable(
        [
            acl(TOPIC, "green2", LITERAL, "User:*", "*", Op.READ, ALLOW),
            acl(TOPIC, "green", PREFIXED, "User:bob", "*", Op.READ, ALLOW),
            acl(TOPIC, "betamax4", LITERAL, "User:bob", "*", Op.READ, ALLOW),
            acl(TOPIC, "betamax", LITERAL, "User:bob", "*", Op.READ, ALLOW),
            acl(TOPIC, "beta", PREFIXED, "User:*", "*", Op.READ, ALLOW),
            acl(TOPIC, "alpha", PREFIXED, "User:*", "*", Op.READ, ALLOW),
            acl(TOPIC, "alp", PREFIXED, "User:bob", "*", Op.READ, DENY),
            acl(GROUP, "*", LITERAL, "User:bob", "*", Op.WRITE, ALLOW),
            acl(GROUP, "wheel", LITERAL, "User:*", "*", Op.WRITE, DENY),
        ]
    )
    assert answers(table, "bob", [(Op.READ, TOPIC, "green1"), (Op.WRITE, GROUP, "wheel")]) == [
        True,
        False,
    ]
    assert answers(
        table,
        "bob",
        [(Op.READ, TOPIC, "alpha"), (Op.WRITE, GROUP, "arbitrary"), (Op.READ, TOPIC, "ala")],
    ) == [False, True, False]


def test_prefix_acls() -> None:
    table = AclTable(
        [
            acl(TOPIC, "fooa", PREFIXED, "User:alice", "*", Op.ALL, ALLOW),
            acl(TOPIC, "foobar", LITERAL, "User:bob", "*", Op.ALL, ALLOW),
            acl(TOPIC, "f", PREFIXED, "User:bob", "*", Op.ALL, ALLOW),
        ]
    )
    actions = [(Op.WRITE, TOPIC, "foobarr"), (Op.READ, TOPIC, "goobar"), (Op.READ, TOPIC, "fooa")]
    assert answers(table, "bob", actions) == [True, False, True]
    actions = [(Op.DESCRIBE, TOPIC, "fooa"), (Op.WRITE, TOPIC, "bar"), (Op.READ, TOPIC, "baz")]
    assert answers(table, "alice", actions) == [True, False, False]


def test_by_resource_type_deny_takes_precedence() -> None:
    host1 = "192.168.1.1"
    allow = acl(TOPIC, "sb1", LITERAL, "User:user1", host1, Op.WRITE, ALLOW)
    deny = acl(TOPIC, "sb1", LITERAL, "User:user1", host1, Op.WRITE, DENY)
    assert decide_by_resource_type(AclTable([allow]), "User:user1", host1, Op.WRITE, TOPIC)
    assert not decide_by_resource_type(
        AclTable([allow, deny]), "User:user1", host1, Op.WRITE, TOPIC
    )


def test_by_resource_type_prefixed_deny_dominates() -> None:
    host1 = "192.168.1.1"

    def allow(name: str) -> AclBinding:
        return acl(GROUP, name, PREFIXED, "User:user1", host1, Op.READ, ALLOW)

    def deny(name: str) -> AclBinding:
        return acl(GROUP, name, PREFIXED, "User:user1", host1, Op.READ, DENY)

    steps = [
        (allow("abcde"), True),
        (deny("abcd"), False),
        (allow("abc"), True),
        (deny("a"), False),
        (allow("ab"), False),
    ]
    bindings: list[AclBinding] = []
    for binding, expected in steps:
        bindings.append(binding)
        table = AclTable(bindings)
        assert decide_by_resource_type(table, "User:user1", host1, Op.READ, GROUP) is expected


def test_by_resource_type_wildcard_deny_dominates() -> None:
    host1 = "192.168.1.1"
    entry = {"principal": "User:user1", "host": host1, "operation": Op.WRITE}

    def binding(name: str, pattern: PatternType, permission: Permission) -> AclBinding:
        return AclBinding(GROUP, name, pattern, permission=permission, **entry)  # type: ignore[arg-type]

    steps = [
        (binding("hello", PREFIXED, ALLOW), True),
        (binding("*", LITERAL, DENY), False),
        (binding("*", LITERAL, ALLOW), False),
        (binding("aloha", LITERAL, ALLOW), False),
    ]
    bindings: list[AclBinding] = []
    for step, expected in steps:
        bindings.append(step)
        table = AclTable(bindings)
        assert decide_by_resource_type(table, "User:user1", host1, Op.WRITE, GROUP) is expected


def test_authorized_operations_bits() -> None:
    table = AclTable([acl(TOPIC, "t", LITERAL, "User:*", "*", Op.READ, ALLOW)])
    ops = authorized_operations(table, "User:bob", LOCAL, TOPIC, "t")
    assert ops == [Op.READ, Op.DESCRIBE]
    assert operations_bitfield(ops) == (1 << 3) | (1 << 8)
    every = authorized_operations(
        AclTable(), "User:bob", LOCAL, CLUSTER, "kafka-cluster", allow_if_no_acl=True
    )
    assert operations_bitfield(every) == sum(1 << op for op in (5, 9, 10, 11, 12, 7, 8))


def test_filters_select_as_kafka() -> None:
    literal = acl(TOPIC, "orders", LITERAL, "User:alice", "*", Op.READ, ALLOW)
    wildcard = acl(TOPIC, "*", LITERAL, "User:bob", "*", Op.WRITE, DENY)
    prefixed = acl(TOPIC, "ord", PREFIXED, "User:*", "10.0.0.1", Op.DESCRIBE, ALLOW)
    group = acl(GROUP, "orders", LITERAL, "User:alice", "*", Op.READ, ALLOW)
    table = AclTable([literal, wildcard, prefixed, group])
    assert table.select(AclFilter()) == sorted([literal, wildcard, prefixed, group])
    assert table.select(AclFilter(TOPIC)) == sorted([literal, wildcard, prefixed])
    # ANY with a name: that exact name, whatever the pattern type.
    assert table.select(AclFilter(ResourceType.ANY, "orders")) == sorted([literal, group])
    # MATCH: every binding that applies to topic "orders".
    assert table.select(AclFilter(TOPIC, "orders", PatternType.MATCH)) == sorted(
        [literal, wildcard, prefixed]
    )
    assert table.select(AclFilter(TOPIC, "ord", PREFIXED)) == [prefixed]
    assert table.select(AclFilter(TOPIC, "ord", LITERAL)) == []
    # Principal and host match exactly, ``User:*`` selects the wildcard binding only.
    assert table.select(AclFilter(principal="User:*")) == [prefixed]
    assert table.select(AclFilter(host="10.0.0.1")) == [prefixed]
    assert table.select(AclFilter(operation=Op.WRITE, permission=DENY)) == [wildcard]


def test_new_bindings_are_checked_as_kafka() -> None:
    good = binding_of(2, "orders", 3, "User:alice", "*", 3, 3)
    assert good == acl(TOPIC, "orders", LITERAL, "User:alice", "*", Op.READ, ALLOW)
    refusals = {
        "resource type ANY": (1, "orders", 3, "User:alice", "*", 3, 3),
        "pattern type MATCH": (2, "orders", 2, "User:alice", "*", 3, 3),
        "operation ANY": (2, "orders", 3, "User:alice", "*", 1, 3),
        "permission type ANY": (2, "orders", 3, "User:alice", "*", 3, 1),
        "empty resource name": (2, "", 3, "User:alice", "*", 3, 3),
        "kafka-cluster": (4, "other", 3, "User:alice", "*", 7, 3),
        "Type:Name": (2, "orders", 3, "alice", "*", 3, 3),
        "unknown operation code 99": (2, "orders", 3, "User:alice", "*", 99, 3),
    }
    for expected, codes in refusals.items():
        with pytest.raises(InvalidAclError, match=expected):
            binding_of(*codes)
    with pytest.raises(InvalidAclError, match="UNKNOWN"):
        filter_of(0, None, 1, None, None, 1, 1)
    check_new_binding(acl(CLUSTER, "kafka-cluster", LITERAL, "User:a", "*", Op.ALTER, DENY))


def test_authorizer_settings() -> None:
    settings = AuthorizerSettings.from_properties(
        {
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:alice; User:chris;",
            "allow.everyone.if.no.acl.found": "TRUE",
        }
    )
    assert settings.enabled
    assert settings.super_users == {"User:alice", "User:chris"}
    assert settings.allow_everyone_if_no_acl_found
    assert not AuthorizerSettings.from_properties({}).enabled
    with pytest.raises(InvalidConfigError, match=r"authorizer\.class\.name"):
        AuthorizerSettings.from_properties({"authorizer.class.name": "com.example.Mine"})
    with pytest.raises(InvalidConfigError, match=r"super\.users"):
        AuthorizerSettings.from_properties({"super.users": "alice"})
    with pytest.raises(InvalidConfigError, match=r"allow\.everyone\.if\.no\.acl\.found"):
        AuthorizerSettings.from_properties({"allow.everyone.if.no.acl.found": "yes"})


def test_client_addresses_compare_as_javas_host_address() -> None:
    assert java_host_address("127.0.0.1") == "127.0.0.1"
    assert java_host_address("::1") == "0:0:0:0:0:0:0:1"
    assert java_host_address("2001:db8::ff00:42:8329") == "2001:db8:0:0:0:ff00:42:8329"
    assert java_host_address("::ffff:10.0.0.1") == "10.0.0.1"
    assert java_host_address("fe80::1%eth0") == "fe80:0:0:0:0:0:0:1"
    table = AclTable([acl(TOPIC, "t", LITERAL, "User:a", "0:0:0:0:0:0:0:1", Op.READ, ALLOW)])
    assert decide(table, "User:a", java_host_address("::1"), Op.READ, TOPIC, "t")
