"""seglog's authorizer: ACLs from the first data directory, decided as Kafka decides.

:class:`AclAuthorizer` holds the bindings as an immutable :class:`AclTable` loaded from the ACL
file at start-up (:mod:`seglog.broker.acl.acl_file`) and answers every handler's question with
:func:`~seglog.broker.acl.matching.decide` (the session's principal and client address).
CreateAcls and DeleteAcls change the set: the new file is written durably first, and only then
does the table in memory change, so an answer given to a client always matches the file.

Everything runs on the server's event loop thread, so a change is one table swap; the file is
small (a write is a few milliseconds). While the server runs it holds the data directory's
lock, so ``seglog acls`` without ``--bootstrap-server`` (which takes the lock) cannot change
the file behind its back.

Denials are logged at DEBUG on the ``seglog.authorizer`` logger in the words of Kafka's
authorizer log (``Principal = User:bob is Denied operation = READ from host = ...``); Kafka
logs them at INFO, which a client retrying a refused request turns into a flood.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from seglog.broker.acl.acl_file import read_acls, write_acls
from seglog.broker.acl.matching import (
    AclTable,
    authorized_operations,
    decide,
    decide_by_resource_type,
)
from seglog.broker.acl.model import AclBinding, AclFilter, java_host_address
from seglog.broker.acl.settings import AuthorizerSettings
from seglog.broker.authorization import Operation, ResourceType
from seglog.broker.session import Session
from seglog.errors import InvalidAclError

LOG = logging.getLogger("seglog.authorizer")

#: At most this many bindings (a bound on the file, the table and every decision's work; Kafka
#: has none but its metadata log's size). A CreateAcls past it is refused whole.
MAX_BINDINGS = 100_000


class AclAuthorizer:
    """The ACLs of a data directory and the decisions over them (see the module docstring)."""

    def __init__(self, directory: Path, settings: AuthorizerSettings) -> None:
        self.directory = directory
        self.settings = settings
        self.table = AclTable(read_acls(directory))

    def authorize(
        self, session: Session, operation: Operation, resource_type: ResourceType, name: str
    ) -> bool:
        allowed = decide(
            self.table,
            session.principal,
            java_host_address(session.client_host),
            operation,
            resource_type,
            name,
            super_users=self.settings.super_users,
            allow_if_no_acl=self.settings.allow_everyone_if_no_acl_found,
        )
        if not allowed and LOG.isEnabledFor(logging.DEBUG):
            LOG.debug(
                "Principal = %s is Denied operation = %s from host = %s on resource = %s:%s",
                session.principal,
                operation.name,
                session.client_host,
                resource_type.name,
                name,
            )
        return allowed

    def authorize_by_resource_type(
        self, session: Session, operation: Operation, resource_type: ResourceType
    ) -> bool:
        return decide_by_resource_type(
            self.table,
            session.principal,
            java_host_address(session.client_host),
            operation,
            resource_type,
            super_users=self.settings.super_users,
            allow_if_no_acl=self.settings.allow_everyone_if_no_acl_found,
        )

    def authorized_operations(
        self, session: Session, resource_type: ResourceType, name: str
    ) -> list[Operation]:
        return authorized_operations(
            self.table,
            session.principal,
            java_host_address(session.client_host),
            resource_type,
            name,
            super_users=self.settings.super_users,
            allow_if_no_acl=self.settings.allow_everyone_if_no_acl_found,
        )

    def describe(self, selection: AclFilter) -> list[AclBinding]:
        """The bindings ``selection`` matches (DescribeAcls)."""
        return self.table.select(selection)

    def create(self, bindings: Iterable[AclBinding]) -> None:
        """Add ``bindings`` (already checked; present ones are kept once), durably;
        :class:`InvalidAclError` past :data:`MAX_BINDINGS`."""
        new = self.table.bindings | frozenset(bindings)
        if len(new) > MAX_BINDINGS:
            raise InvalidAclError(
                f"{len(new)} ACL bindings would be above the limit of {MAX_BINDINGS}"
            )
        if new != self.table.bindings:
            write_acls(self.directory, new)
            self.table = AclTable(new)

    def delete(self, selections: list[AclFilter]) -> list[list[AclBinding]]:
        """Remove every binding some filter matches, durably; per filter, the bindings it
        removed (a binding two filters match is reported under the first)."""
        removed: set[AclBinding] = set()
        results: list[list[AclBinding]] = []
        for selection in selections:
            matched = [acl for acl in self.table.select(selection) if acl not in removed]
            removed.update(matched)
            results.append(matched)
        if removed:
            kept = self.table.bindings - removed
            write_acls(self.directory, kept)
            self.table = AclTable(kept)
        return results
