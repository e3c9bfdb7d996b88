"""A driver for the group coordinator in tests: collects completions by ticket, acknowledges
persists on request, and checks on every step that no ticket is answered twice."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from seglog.broker.groups.coordinator import GroupCoordinator
from seglog.broker.groups.group_config import GroupConfig
from seglog.broker.groups.model import (
    DeleteGroupRecords,
    JoinRequest,
    JoinResult,
    PersistGroup,
    Step,
    SyncRequest,
    SyncResult,
)
from seglog.protocol.error_codes import ErrorCode

RANGE = ("range", b"range-meta")
ROUNDROBIN = ("roundrobin", b"rr-meta")


@dataclass
class Harness:
    """One coordinator and everything it has said."""

    config: GroupConfig = field(default_factory=lambda: GroupConfig(initial_rebalance_delay_ms=0))
    now: int = 0
    answers: dict[int, JoinResult | SyncResult] = field(default_factory=dict)
    persists: list[PersistGroup] = field(default_factory=list)
    deletes: list[DeleteGroupRecords] = field(default_factory=list)
    auto_persist: bool = True
    last_ticket: int = 0

    def __post_init__(self) -> None:
        counter = itertools.count(1)
        self.coord = GroupCoordinator(self.config, new_id=lambda: f"uuid{next(counter)}")

    def take(self, step: Step) -> None:
        """Records a step; acknowledges its persists when ``auto_persist``."""
        for completion in step.completions:
            assert completion.ticket not in self.answers, (
                f"ticket {completion.ticket} answered twice"
            )
            self.answers[completion.ticket] = completion.result
        for effect in step.effects:
            if isinstance(effect, PersistGroup):
                self.persists.append(effect)
                if self.auto_persist:
                    self.take(self.coord.persisted(effect.persist_id, ErrorCode.NONE, self.now))
            else:
                self.deletes.append(effect)

    def at(self, now: int) -> None:
        """Moves the clock to ``now`` and fires what fell due."""
        assert now >= self.now
        self.now = now
        self.take(self.coord.advance(now))

    def join(
        self,
        member_id: str = "",
        *,
        group: str = "g",
        client: str = "c",
        protocols: tuple[tuple[str, bytes], ...] = (RANGE,),
        session_ms: int = 10_000,
        rebalance_ms: int = 30_000,
        version: int = 5,
        instance: str | None = None,
        protocol_type: str = "consumer",
    ) -> int:
        """Sends a JoinGroup; returns its ticket."""
        request = JoinRequest(
            group_id=group,
            member_id=member_id,
            group_instance_id=instance,
            client_id=client,
            client_host="/127.0.0.1",
            session_timeout_ms=session_ms,
            rebalance_timeout_ms=rebalance_ms,
            protocol_type=protocol_type,
            protocols=protocols,
            api_version=version,
        )
        pending = self.coord.join(request, self.now)
        self.take(pending.step)
        return pending.ticket

    def join_result(self, ticket: int) -> JoinResult:
        """The answer to a JoinGroup ticket (it must have been answered)."""
        result = self.answers[ticket]
        assert isinstance(result, JoinResult)
        return result

    def sync_result(self, ticket: int) -> SyncResult:
        """The answer to a SyncGroup ticket (it must have been answered)."""
        result = self.answers[ticket]
        assert isinstance(result, SyncResult)
        return result

    def new_member(self, **kwargs: Any) -> str:
        """A v5 member through MEMBER_ID_REQUIRED: joins twice, returns its id (its join waits)."""
        first = self.join_result(self.join(**kwargs))
        assert first.error == ErrorCode.MEMBER_ID_REQUIRED
        self.last_ticket = self.join(first.member_id, **kwargs)
        return first.member_id

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        *,
        group: str = "g",
        instance: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> int:
        """Sends a SyncGroup; returns its ticket."""
        request = SyncRequest(
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance,
            assignments=tuple((assignments or {}).items()),
            protocol_type=protocol_type,
            protocol_name=protocol_name,
        )
        pending = self.coord.sync(request, self.now)
        self.take(pending.step)
        return pending.ticket

    def heartbeat(self, member_id: str, generation: int, group: str = "g") -> ErrorCode:
        """Sends a Heartbeat."""
        outcome = self.coord.heartbeat(group, generation, member_id, None, self.now)
        self.take(outcome.step)
        return outcome.error
