"""JoinGroup: who may join, MEMBER_ID_REQUIRED, new and known members, the join phase they start.

Rules (Kafka's ``GroupCoordinator.handleJoinGroup``):

* An empty group id is INVALID_GROUP_ID; a session timeout outside
  [``group.min.session.timeout.ms``, ``group.max.session.timeout.ms``] is INVALID_SESSION_TIMEOUT.
* An unknown member id creates the group if needed (its empty metadata is persisted); a known
  member id of an absent group is UNKNOWN_MEMBER_ID.
* ``group.max.size``: while preparing a rebalance, members not yet rejoined count against it only
  once they rejoin; otherwise every member counts. A member refused is removed.
* A protocol type must match the group's and at least one protocol must be one every member
  supports, else INCONSISTENT_GROUP_PROTOCOL.
* From JoinGroup v4 a dynamic member without an id is told MEMBER_ID_REQUIRED with the id
  ``client_id-UUID`` and must rejoin with it within its session timeout; until then it holds up
  the join phase. Static members (``group.instance.id``) get ``instance_id-UUID`` at once.
* A known member rejoining with the same protocols during CompletingRebalance (or as a follower
  during Stable) gets the current generation back without a rebalance; anything else updates the
  member and starts (or joins) a join phase.
"""

from __future__ import annotations

from collections.abc import Callable

from seglog.broker.groups import rebalance as rb
from seglog.broker.groups.group import Group, GroupState, Member
from seglog.broker.groups.group_config import GroupConfig
from seglog.broker.groups.model import UNKNOWN_MEMBER_ID, JoinRequest, JoinResult
from seglog.broker.groups.static_members import StaticMembership
from seglog.protocol.error_codes import ErrorCode


class Joiner:
    """Handles JoinGroup requests against the coordinator's groups."""

    def __init__(
        self,
        out: rb.Outbox,
        groups: dict[str, Group],
        new_id: Callable[[], str],
    ) -> None:
        self._out = out
        self._config: GroupConfig = out.config
        self._groups = groups
        self._new_id = new_id
        self._static = StaticMembership(out)

    def join(self, req: JoinRequest, ticket: int, now_ms: int) -> JoinResult | None:
        """The immediate answer, or None when ``ticket`` waits for the join phase."""
        return self._join(req, ticket, now_ms)

    def _join(self, req: JoinRequest, ticket: int, now_ms: int) -> JoinResult | None:
        if not req.group_id:
            return JoinResult(ErrorCode.INVALID_GROUP_ID, req.member_id)
        if (
            not self._config.min_session_timeout_ms
            <= req.session_timeout_ms
            <= self._config.max_session_timeout_ms
        ):
            return JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, req.member_id)
        is_unknown = req.member_id == UNKNOWN_MEMBER_ID
        group = self._groups.get(req.group_id)
        if group is None:
            if not is_unknown:
                return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, req.member_id)
            group = Group(req.group_id, GroupState.EMPTY, now_ms)
            self._groups[req.group_id] = group
            self._out.persist(group.group_id, group.snapshot(), None)
        if not self._accept_joining_member(group, req.member_id):
            member = group.members.get(req.member_id)
            if member is not None:
                rb.drop_member(self._out, group, member, ErrorCode.GROUP_MAX_SIZE_REACHED, now_ms)
            rb.try_complete_join(self._out, group, now_ms)
            return JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID)
        if is_unknown:
            result = self._new_member_join(group, req, ticket, now_ms)
        else:
            result = self._current_member_join(group, req, ticket, now_ms)
        rb.try_complete_join(self._out, group, now_ms)
        return result

    def _accept_joining_member(self, group: Group, member_id: str) -> bool:
        max_size = self._config.max_size
        if group.state in (GroupState.EMPTY, GroupState.DEAD):
            return True
        member = group.members.get(member_id)
        if group.is_(GroupState.PREPARING_REBALANCE):
            return (
                member is not None and member.join_ticket is not None
            ) or group.awaiting_join_count() < max_size
        return member is not None or len(group.members) < max_size

    def _new_member_join(
        self, group: Group, req: JoinRequest, ticket: int, now_ms: int
    ) -> JoinResult | None:
        if group.is_(GroupState.DEAD):
            return JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, UNKNOWN_MEMBER_ID)
        if not group.supports_protocols(req.protocol_type, req.protocols):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, UNKNOWN_MEMBER_ID)
        prefix = req.group_instance_id if req.group_instance_id is not None else req.client_id
        new_member_id = f"{prefix}-{self._new_id()}"
        if req.group_instance_id is not None:
            old_member_id = group.static_members.get(req.group_instance_id)
            if old_member_id is not None:
                self._static.replace_and_rebalance(
                    group, old_member_id, new_member_id, req, ticket, now_ms
                )
                return None
        elif req.api_version >= 4:
            group.pending_members[new_member_id] = now_ms + req.session_timeout_ms
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_member_id)
        self._add_member_and_rebalance(group, req, new_member_id, ticket, now_ms)
        return None

    def _add_member_and_rebalance(
        self, group: Group, req: JoinRequest, member_id: str, ticket: int, now_ms: int
    ) -> None:
        member = Member(
            member_id,
            req.group_instance_id,
            req.client_id,
            req.client_host,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            req.protocols,
            join_ticket=ticket,
            is_new=True,
        )
        if group.is_(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member, req.protocol_type)
        member.session_deadline_ms = now_ms + self._config.new_member_join_timeout_ms
        group.pending_members.pop(member_id, None)
        rb.maybe_prepare_rebalance(self._out, group, now_ms)

    def _current_member_join(
        self, group: Group, req: JoinRequest, ticket: int, now_ms: int
    ) -> JoinResult | None:
        member_id = req.member_id
        if group.is_(GroupState.DEAD):
            return JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id)
        if not group.supports_protocols(req.protocol_type, req.protocols):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        if member_id in group.pending_members:
            if req.group_instance_id is not None:
                return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
            self._add_member_and_rebalance(group, req, member_id, ticket, now_ms)
            return None
        error = group.validate_current_member(member_id, req.group_instance_id)
        if error != ErrorCode.NONE:
            return JoinResult(error, member_id)
        member = group.members[member_id]
        if group.state in (GroupState.EMPTY, GroupState.DEAD):
            return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
        unchanged = member.protocols == req.protocols
        is_leader = group.leader_id == member_id
        if group.is_(GroupState.COMPLETING_REBALANCE) and unchanged:
            return self._current_generation(group, member_id, with_members=is_leader)
        if group.is_(GroupState.STABLE) and unchanged and not is_leader:
            return self._current_generation(group, member_id, with_members=False)
        self._update_member_and_rebalance(group, member, req, ticket, now_ms)
        return None

    def _update_member_and_rebalance(
        self, group: Group, member: Member, req: JoinRequest, ticket: int, now_ms: int
    ) -> None:
        member.protocols = req.protocols
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        rb.answer_join(
            self._out, member, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id), now_ms
        )
        member.join_ticket = ticket
        rb.maybe_prepare_rebalance(self._out, group, now_ms)

    @staticmethod
    def _current_generation(group: Group, member_id: str, *, with_members: bool) -> JoinResult:
        return JoinResult(
            error=ErrorCode.NONE,
            member_id=member_id,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            members=group.current_member_metadata() if with_members else (),
        )
