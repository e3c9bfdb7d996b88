"""``seglog acls`` offline, on the data directory's ACL file: kafka-acls.sh's options and output."""

from __future__ import annotations

from pathlib import Path

from cli_support import Cli

from seglog.broker.acl.acl_file import read_acls
from seglog.broker.acl.model import AclBinding, PatternType, Permission
from seglog.broker.authorization import Operation, ResourceType


def test_add_list_remove(cli: Cli, data_dir: Path) -> None:
    cli.ok("topics", "create", "orders")
    added = cli.ok(
        "acls", "--add", "--allow-principal", "User:alice", "--allow-principal", "User:bob",
        "--allow-host", "10.0.0.1", "--operation", "read", "--topic", "orders",
    )  # fmt: skip
    assert added.out == (
        "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, "
        "patternType=LITERAL)`: \n \t(principal=User:alice, host=10.0.0.1, operation=READ, "
        "permissionType=ALLOW)\n\t(principal=User:bob, host=10.0.0.1, operation=READ, "
        "permissionType=ALLOW) \n\n"
    )
    cli.ok(
        "acls", "--add", "--deny-principal", "User:*", "--operation", "DESCRIBE_CONFIGS",
        "--operation", "AlterConfigs", "--cluster",
    )  # fmt: skip
    cli.ok("acls", "--add", "--allow-principal", "User:carol", "--producer", "--idempotent",
           "--transactional-id", "tx-", "--resource-pattern-type", "prefixed")  # fmt: skip
    cluster = ResourceType.CLUSTER
    assert set(read_acls(data_dir)) == {
        AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL, f"User:{who}", "10.0.0.1",
                   Operation.READ, Permission.ALLOW)
        for who in ("alice", "bob")
    } | {
        AclBinding(
            cluster, "kafka-cluster", PatternType.LITERAL, "User:*", "*", op, Permission.DENY
        )
        for op in (Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS)
    } | {
        AclBinding(ResourceType.TRANSACTIONAL_ID, "tx-", PatternType.PREFIXED, "User:carol", "*",
                   op, Permission.ALLOW)
        for op in (Operation.WRITE, Operation.DESCRIBE)
    }  # fmt: skip
    # With PREFIXED, --idempotent adds no cluster ACL (the cluster is a LITERAL resource).
    listed = cli.ok("acls", "--list", "--principal", "User:bob")
    assert listed.lines[0] == "ACLs for principal `User:bob`"
    assert listed.out.count("principal=") == 1
    matched = cli.ok(
        "acls", "--list", "--transactional-id", "tx-1", "--resource-pattern-type", "match"
    )
    assert matched.out.count("principal=User:carol") == 2
    # Remove one entry, then every ACL of the topic.
    cli.ok("acls", "--remove", "--allow-principal", "User:alice", "--allow-host", "10.0.0.1",
           "--operation", "Read", "--topic", "orders", "--force")  # fmt: skip
    assert cli.ok("acls", "--list", "--topic", "orders").out.count("principal=") == 1
    removed = cli.ok("acls", "--remove", "--topic", "orders", "--force")
    assert "principal=User:bob" in removed.out
    assert cli.ok("acls", "--list", "--topic", "orders").out == ""


def test_kafka_acls_rules_are_usage_errors(cli: Cli) -> None:
    cli.ok("topics", "create", "orders")
    refusals = {
        ("--add", "--topic", "orders"): "--add needs --allow-principal or --deny-principal",
        ("--add", "--allow-principal", "User:a"): "--add needs a resource",
        ("--add", "--allow-principal", "a", "--topic", "t"): "is not of the form Type:Name",
        ("--add", "--allow-principal", "User:a", "--operation", "IdempotentWrite",
         "--topic", "t"): "ResourceType Topic only supports operations",
        ("--add", "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t"):
            "is not an operation",
        ("--add", "--allow-principal", "User:a", "--cluster", "--resource-pattern-type",
         "prefixed"): "--cluster takes --resource-pattern-type LITERAL only",
        ("--add", "--allow-principal", "User:a", "--idempotent", "--topic", "t"):
            "only available if --producer is set",
        ("--list", "--consumer"): "--list takes no",
        ("--add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type",
         "match"): "--add needs --resource-pattern-type LITERAL or PREFIXED",
        ("--remove", "--force"): "--remove needs a resource",
        ("--add", "--allow-principal", "User:a", "--consumer", "--topic", "t"):
            "--consumer needs --topic and --group",
    }  # fmt: skip
    for args, message in refusals.items():
        result = cli.run("acls", *args)
        assert result.status == 2, (args, result.err)
        assert message in result.err, (args, result.err)
    assert cli.ok("acls", "--list").out == ""  # nothing was written
