"""The ACL file: ``seglog-acls.json`` at the root of the first data directory.

**Format** (UTF-8 JSON text, one binding per line so a diff reads well)::

    {"version": 1, "acls": [
    {"resourceType": "TOPIC", "name": "orders", "patternType": "LITERAL",
     "principal": "User:alice", "host": "*", "operation": "READ", "permissionType": "ALLOW"},
    ...
    ]}

(each binding is one line in the file; wrapped here).

Names are Kafka's enum names (``ResourceType``, ``PatternType``, ``AclOperation``,
``AclPermissionType``), the same words ``kafka-acls.sh`` prints. Bindings are sorted and
unique; every one passes :func:`~seglog.broker.acl.model.check_new_binding`. A missing file
means no ACLs. Anything else (not JSON, an unknown version or name, a binding Kafka would
refuse) raises :class:`~seglog.errors.CorruptAclFileError` naming the file and line: a damaged
file is never taken for an empty one, which would change who may do what.

**Writing** (:func:`write_acls`) replaces the whole file with
:func:`~seglog.storage.atomic.write_file_atomically`:

1. the new text goes to ``seglog-acls.json.tmp``, fsynced. Crash: the old file is intact;
   the server's start-up removes the stray ``.tmp`` (every ``*.tmp`` at a data directory's
   root is a leftover of an interrupted atomic write);
2. rename over ``seglog-acls.json``. Crash before: as 1; after: the new file is complete;
3. fsync the directory, so the rename survives a power loss.

A reader sees the whole old set or the whole new one, never a mix. The file is a plain file at
the directory's root, which a Kafka broker ignores (it takes sub-directories for partitions).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from seglog.broker.acl.model import AclBinding, PatternType, Permission, check_new_binding
from seglog.broker.authorization import Operation, ResourceType
from seglog.errors import CorruptAclFileError, InvalidAclError, UnreadableFileError
from seglog.storage import fileops
from seglog.storage.atomic import write_file_atomically

ACL_FILE = "seglog-acls.json"
VERSION = 1
_KEYS = ("resourceType", "name", "patternType", "principal", "host", "operation", "permissionType")


def _entry(acl: AclBinding) -> dict[str, str]:
    return {
        "resourceType": acl.resource_type.name,
        "name": acl.resource_name,
        "patternType": acl.pattern_type.name,
        "principal": acl.principal,
        "host": acl.host,
        "operation": acl.operation.name,
        "permissionType": acl.permission.name,
    }


def encode_acls(bindings: Iterable[AclBinding]) -> bytes:
    """The file's bytes for ``bindings`` (sorted, duplicates dropped)."""
    lines = [json.dumps(_entry(acl), ensure_ascii=False) for acl in sorted(set(bindings))]
    body = ",\n".join(lines)
    text = f'{{"version": {VERSION}, "acls": [\n{body}{chr(10) if lines else ""}]}}\n'
    return text.encode("utf-8")


def _line_of(text: str, index: int) -> int:
    """The 1-based line of binding ``index`` (bindings start on line 2, one per line)."""
    return min(index + 2, text.count("\n") + 1)


def _binding(item: Any, path: str, line: int) -> AclBinding:
    if not isinstance(item, dict) or set(item) != set(_KEYS):
        raise CorruptAclFileError(
            f"a binding must be an object with keys {_KEYS}", line=line, path=path
        )
    if not all(isinstance(item[key], str) for key in _KEYS):
        raise CorruptAclFileError("every value of a binding must be a string", line=line, path=path)
    try:
        acl = AclBinding(
            ResourceType[item["resourceType"]],
            item["name"],
            PatternType[item["patternType"]],
            item["principal"],
            item["host"],
            Operation[item["operation"]],
            Permission[item["permissionType"]],
        )
    except KeyError as error:
        raise CorruptAclFileError(f"unknown name {error}", line=line, path=path) from None
    try:
        check_new_binding(acl)
    except InvalidAclError as error:
        raise CorruptAclFileError(str(error), line=line, path=path) from None
    return acl


def decode_acls(data: bytes, path: str) -> list[AclBinding]:
    """The bindings in ``data`` (the file at ``path``); see the module docstring."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CorruptAclFileError(f"not UTF-8 text: {error}", path=path) from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise CorruptAclFileError(f"not JSON: {error.msg}", line=error.lineno, path=path) from None
    if not isinstance(document, dict) or document.get("version") != VERSION:
        raise CorruptAclFileError(
            f"expected an object with version {VERSION} and acls", line=1, path=path
        )
    acls = document.get("acls")
    if not isinstance(acls, list) or set(document) != {"version", "acls"}:
        raise CorruptAclFileError("expected exactly the keys version and acls", line=1, path=path)
    return [_binding(item, path, _line_of(text, i)) for i, item in enumerate(acls)]


def read_acls(directory: Path) -> list[AclBinding]:
    """The bindings of ``directory``'s ACL file (none when it is missing)."""
    path = directory / ACL_FILE
    try:
        data = fileops.read_bytes(path)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise UnreadableFileError(exc.strerror or str(exc), path=str(path)) from exc
    return decode_acls(data, str(path))


def write_acls(directory: Path, bindings: Iterable[AclBinding]) -> None:
    """Replace ``directory``'s ACL file with ``bindings``, durably (module docstring)."""
    write_file_atomically(directory / ACL_FILE, encode_acls(bindings))
