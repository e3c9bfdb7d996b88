"""The ACL file: its format, its refusals of damage, and crash safety of every change.

Real files in a temporary data directory; crashes are injected at every file operation of a
CreateAcls/DeleteAcls change (before and after each), and the file must then hold the whole
old set or the whole new one, and a server starting there (``LogManager``) must remove the
stray ``.tmp`` and load it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from seglog.broker.acl.acl_file import ACL_FILE, decode_acls, encode_acls, read_acls, write_acls
from seglog.broker.acl.authorizer import AclAuthorizer
from seglog.broker.acl.model import AclBinding, AclFilter, PatternType, Permission
from seglog.broker.acl.settings import AuthorizerSettings
from seglog.broker.authorization import Operation, ResourceType
from seglog.broker.session import Session
from seglog.engine.log_manager import open_log_dirs
from seglog.errors import CorruptAclFileError, InvalidAclError
from seglog.testing.crash import SimulatedCrash, count_operations, crash_at

SETTINGS = AuthorizerSettings("seglog.broker.acl.AclAuthorizer")
READ_ORDERS = AclBinding(
    ResourceType.TOPIC,
    "orders",
    PatternType.LITERAL,
    "User:alice",
    "*",
    Operation.READ,
    Permission.ALLOW,
)
DENY_PREFIX = AclBinding(
    ResourceType.TOPIC,
    "secret-",
    PatternType.PREFIXED,
    "User:*",
    "10.0.0.1",
    Operation.ALL,
    Permission.DENY,
)
GROUP_SUMMER = AclBinding(
    ResourceType.GROUP,
    "été",
    PatternType.LITERAL,
    "User:bob",
    "*",
    Operation.READ,
    Permission.ALLOW,
)


def test_round_trip_sorted_and_unique(tmp_path: Path) -> None:
    assert read_acls(tmp_path) == []  # a missing file: no ACLs
    write_acls(tmp_path, [GROUP_SUMMER, READ_ORDERS, DENY_PREFIX, READ_ORDERS])
    assert read_acls(tmp_path) == sorted([READ_ORDERS, DENY_PREFIX, GROUP_SUMMER])
    text = (tmp_path / ACL_FILE).read_text("utf-8")
    assert text.splitlines()[0] == '{"version": 1, "acls": ['
    assert '"operation": "READ", "permissionType": "ALLOW"' in text
    assert len(text.splitlines()) == 5  # header, three bindings, footer
    write_acls(tmp_path, [])
    assert read_acls(tmp_path) == []
    assert decode_acls(encode_acls([]), "x") == []


@pytest.mark.parametrize(
    ("data", "reason", "line"),
    [
        (b"\xff\xfe", "not UTF-8", None),
        (b'{"version": 1, "acls": [\n{"resourceType": "TOPIC",\n', "not JSON", 3),
        (b'{"version": 2, "acls": []}', "version 1", 1),
        (b'{"version": 1, "acls": [], "more": 1}', "exactly the keys", 1),
        (b'{"version": 1, "acls": [\n{"name": "x"}\n]}', "binding must be an object", 2),
    ],
)
def test_damage_is_refused_with_file_and_line(
    tmp_path: Path, data: bytes, reason: str, line: int | None
) -> None:
    (tmp_path / ACL_FILE).write_bytes(data)
    with pytest.raises(CorruptAclFileError, match=reason) as caught:
        read_acls(tmp_path)
    assert caught.value.line == line
    assert str(tmp_path / ACL_FILE) in str(caught.value)


def test_a_binding_kafka_refuses_is_damage(tmp_path: Path) -> None:
    good = encode_acls([READ_ORDERS, DENY_PREFIX]).decode()
    bad = good.replace('"name": "secret-"', '"name": ""').replace('"READ"', '"READING"')
    (tmp_path / ACL_FILE).write_text(bad)
    with pytest.raises(CorruptAclFileError, match="line 2: unknown name 'READING'"):
        read_acls(tmp_path)
    (tmp_path / ACL_FILE).write_text(good.replace('"name": "secret-"', '"name": ""'))
    with pytest.raises(CorruptAclFileError, match="line 3: empty resource name"):
        read_acls(tmp_path)


def test_authorizer_changes_are_durable(tmp_path: Path) -> None:
    authorizer = AclAuthorizer(tmp_path, SETTINGS)
    alice = Session("127.0.0.1", principal="User:alice")
    assert not authorizer.authorize(alice, Operation.READ, ResourceType.TOPIC, "orders")
    authorizer.create([READ_ORDERS, DENY_PREFIX])
    assert authorizer.authorize(alice, Operation.READ, ResourceType.TOPIC, "orders")
    assert authorizer.authorize(alice, Operation.DESCRIBE, ResourceType.TOPIC, "orders")
    reopened = AclAuthorizer(tmp_path, SETTINGS)
    assert reopened.describe(AclFilter()) == sorted([READ_ORDERS, DENY_PREFIX])
    removed = reopened.delete([AclFilter(ResourceType.TOPIC, "orders"), AclFilter()])
    assert removed == [[READ_ORDERS], [DENY_PREFIX]]  # each binding under the first filter
    assert read_acls(tmp_path) == []
    assert not reopened.authorize(alice, Operation.READ, ResourceType.TOPIC, "orders")


def _create(directory: Path) -> None:
    AclAuthorizer(directory, SETTINGS).create([DENY_PREFIX, GROUP_SUMMER])


def test_a_crash_at_any_operation_leaves_the_old_or_the_new_set(tmp_path: Path) -> None:
    template = tmp_path / "template"
    with open_log_dirs([template]):
        pass  # a real data directory (meta.properties, checkpoints)
    write_acls(template, [READ_ORDERS])
    old = [READ_ORDERS]
    new = sorted([READ_ORDERS, DENY_PREFIX, GROUP_SUMMER])
    counting = tmp_path / "count"
    shutil.copytree(template, counting)
    with count_operations() as ops:
        _create(counting)
    assert [op for op, _ in ops.operations] == [
        "open",
        "create",
        "write",
        "fsync",
        "rename",
        "fsync-dir",
    ]
    seen = []
    for n in range(1, ops.count + 1):
        for after in (False, True):
            trial = tmp_path / f"crash-{n}-{int(after)}"
            shutil.copytree(template, trial)
            with crash_at(n, after=after), pytest.raises(SimulatedCrash):
                _create(trial)
            found = read_acls(trial)
            assert found in (old, new), (n, after, found)
            seen.append(found == new)
            with open_log_dirs([trial]):  # a server starting here: the stray .tmp goes
                pass
            assert not (trial / f"{ACL_FILE}.tmp").exists()
            assert AclAuthorizer(trial, SETTINGS).describe(AclFilter()) == found
    assert any(seen) and not all(seen)


def test_the_number_of_bindings_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from seglog.broker.acl import authorizer as module

    monkeypatch.setattr(module, "MAX_BINDINGS", 2)
    authorizer = AclAuthorizer(tmp_path, SETTINGS)
    authorizer.create([READ_ORDERS, DENY_PREFIX])
    with pytest.raises(InvalidAclError, match="above the limit of 2"):
        authorizer.create([GROUP_SUMMER])
    assert read_acls(tmp_path) == sorted([READ_ORDERS, DENY_PREFIX])  # nothing written
