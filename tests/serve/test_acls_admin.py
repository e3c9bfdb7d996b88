"""DescribeAcls, CreateAcls and DeleteAcls against a real ``seglog serve``, through kafka-python's
and confluent-kafka's admin clients and ``seglog acls --bootstrap-server``.

The admin principal is PLAINTEXT's ``User:ANONYMOUS`` named in ``super.users``; ACLs created
on the wire must survive a restart (the ACL file) and be what ``seglog acls`` lists offline.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
)
from confluent_kafka.admin import ResourceType as CResourceType
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.errors import SecurityDisabledError
from serve_clients import seglog_cli
from serve_harness import ServeFactory

ADMIN = {
    "authorizer.class.name": "seglog.broker.acl.AclAuthorizer",
    "super.users": "User:ANONYMOUS",
}


def _python_acl(
    name: str,
    pattern: ACLResourcePatternType,
    op: ACLOperation,
    perm: ACLPermissionType,
    principal: str,
) -> ACL:
    return ACL(principal, "*", op, perm, ResourcePattern(ResourceType.TOPIC, name, pattern))


def test_kafka_python_admin_creates_describes_deletes(
    serve_factory: ServeFactory, tmp_path: Path
) -> None:
    server = serve_factory(properties=ADMIN, data_dir=tmp_path / "data")
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap)
    literal, prefixed = ACLResourcePatternType.LITERAL, ACLResourcePatternType.PREFIXED
    allow, refuse = ACLPermissionType.ALLOW, ACLPermissionType.DENY
    read = _python_acl("orders", literal, ACLOperation.READ, allow, "User:alice")
    deny = _python_acl("ord", prefixed, ACLOperation.WRITE, refuse, "User:*")
    try:
        result = admin.create_acls([read, deny])
        assert result["failed"] == [] and len(result["succeeded"]) == 2
        every = ACLFilter(
            None, None, ACLOperation.ANY, ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
        )  # fmt: skip
        found, error = admin.describe_acls(every)
        assert error.errno == 0
        assert {(a.principal, a.resource_pattern.resource_name) for a in found} == {
            ("User:alice", "orders"),
            ("User:*", "ord"),
        }
        matching = ACLFilter(
            None, None, ACLOperation.ANY, ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.TOPIC, "orders", ACLResourcePatternType.MATCH),
        )  # fmt: skip
        found, _ = admin.describe_acls(matching)
        assert len(found) == 2  # the literal and the prefix both apply to topic "orders"
        only_alice = ACLFilter(
            "User:alice", None, ACLOperation.ANY, ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
        )  # fmt: skip
        deleted = admin.delete_acls([only_alice])
        (_filter, matches, filter_error) = deleted[0]
        assert filter_error.errno == 0
        assert [(acl.principal, acl.operation) for acl in matches] == [
            ("User:alice", ACLOperation.READ)
        ]
    finally:
        admin.close()
    server.restart()  # what is left is durable
    listed = seglog_cli(server.data_dir, "acls", "--list")
    assert listed.returncode == 0, listed.stderr.decode()
    assert listed.stdout.decode() == (
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=ord, "
        "patternType=PREFIXED)`: \n \t(principal=User:*, host=*, operation=WRITE, "
        "permissionType=DENY) \n\n"
    )


def test_confluent_admin_creates_describes_deletes(
    serve_factory: ServeFactory, tmp_path: Path
) -> None:
    server = serve_factory(properties=ADMIN, data_dir=tmp_path / "data")
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    group_read = AclBinding(
        CResourceType.GROUP, "billing", ResourcePatternType.LITERAL,
        "User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW,
    )  # fmt: skip
    cluster = AclBinding(
        CResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL,
        "User:bob", "10.1.2.3", AclOperation.IDEMPOTENT_WRITE, AclPermissionType.ALLOW,
    )  # fmt: skip
    bad_cluster = AclBinding(
        CResourceType.BROKER, "my-cluster", ResourcePatternType.LITERAL,
        "User:bob", "*", AclOperation.ALTER, AclPermissionType.ALLOW,
    )  # fmt: skip
    futures = admin.create_acls([group_read, cluster, bad_cluster])
    assert futures[group_read].result(timeout=30) is None
    assert futures[cluster].result(timeout=30) is None
    with pytest.raises(KafkaException) as refused:
        futures[bad_cluster].result(timeout=30)
    assert refused.value.args[0].code() == KafkaError.INVALID_REQUEST

    every = AclBindingFilter(
        CResourceType.ANY, None, ResourcePatternType.ANY,
        None, None, AclOperation.ANY, AclPermissionType.ANY,
    )  # fmt: skip
    found = admin.describe_acls(every).result(timeout=30)
    assert sorted(found, key=str) == sorted([group_read, cluster], key=str)
    by_host = AclBindingFilter(
        CResourceType.ANY, None, ResourcePatternType.ANY,
        None, "10.1.2.3", AclOperation.ANY, AclPermissionType.ANY,
    )  # fmt: skip
    deleted = admin.delete_acls([by_host])[by_host].result(timeout=30)
    assert deleted == [cluster]
    assert admin.describe_acls(every).result(timeout=30) == [group_read]


def test_without_an_authorizer_the_acl_apis_say_security_disabled(
    serve_factory: ServeFactory, tmp_path: Path
) -> None:
    server = serve_factory(data_dir=tmp_path / "data")
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap)
    try:
        every = ACLFilter(
            None, None, ACLOperation.ANY, ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
        )  # fmt: skip
        with pytest.raises(SecurityDisabledError):
            admin.describe_acls(every)
    finally:
        admin.close()
    added = seglog_cli(
        server.data_dir, "acls", "--bootstrap-server", server.bootstrap,
        "--add", "--allow-principal", "User:alice", "--topic", "orders",
    )  # fmt: skip
    assert added.returncode == 1
    assert "CreateAcls refused by the broker with SECURITY_DISABLED" in added.stderr.decode()


def test_seglog_acls_through_the_broker(serve_factory: ServeFactory, tmp_path: Path) -> None:
    server = serve_factory(properties=ADMIN, data_dir=tmp_path / "data")
    wire = ["acls", "--bootstrap-server", server.bootstrap]
    added = seglog_cli(
        server.data_dir, *wire, "--add", "--allow-principal", "User:carol",
        "--consumer", "--topic", "orders", "--group", "billing",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr.decode()
    listed = seglog_cli(server.data_dir, *wire, "--list", "--topic", "orders")
    assert listed.stdout.decode() == (
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, "
        "patternType=LITERAL)`: \n \t(principal=User:carol, host=*, operation=READ, "
        "permissionType=ALLOW)\n\t(principal=User:carol, host=*, operation=DESCRIBE, "
        "permissionType=ALLOW) \n\n"
    )
    # Offline listing reads the same file beside the running server (no lock needed).
    offline = seglog_cli(server.data_dir, "acls", "--list")
    assert offline.stdout.decode().count("principal=User:carol") == 3
    removed = seglog_cli(server.data_dir, *wire, "--remove", "--group", "billing", "--force")
    assert removed.returncode == 0, removed.stderr.decode()
    assert "operation=READ" in removed.stdout.decode()
    # Changing the file offline while the server holds the directory is refused.
    locked = seglog_cli(
        server.data_dir, "--lock-wait-ms", "0", "acls", "--add",
        "--allow-principal", "User:dave", "--topic", "orders",
    )  # fmt: skip
    assert locked.returncode == 1
    assert "locked" in locked.stderr.decode()
    server.stop()
    final = seglog_cli(server.data_dir, "acls", "--list", "--principal", "User:carol")
    assert final.stdout.decode().count("principal=User:carol") == 2
