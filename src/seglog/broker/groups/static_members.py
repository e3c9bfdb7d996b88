"""Static membership (KIP-345): a ``group.instance.id`` that rejoins replaces its old member id.

Rules (Kafka's ``updateStaticMemberAndRebalance``):

* The old member id is fenced: its waiting JoinGroup or SyncGroup is answered FENCED_INSTANCE_ID
  and later requests with it get FENCED_INSTANCE_ID. The member keeps its assignment and, if it
  led, the leadership, under the new id.
* In Stable, if the protocol the group would select is unchanged, there is no rebalance: the
  group's metadata is persisted with the new member id and only then is the JoinGroup answered
  with the current generation. Before JoinGroup v9 the answer names the *old* leader id, so a
  replaced leader does not run the assignor; from v9 a replaced leader is told it leads with
  ``skip_assignment``. If the append fails, the replacement is undone and the error returned.
* In CompletingRebalance a new join phase starts (the leader may have assigned the old id); in
  PreparingRebalance the member simply waits in the running phase.
* Static members that do not rejoin within a join phase are kept (they leave by session expiry
  or an explicit LeaveGroup).
"""

from __future__ import annotations

from seglog.broker.groups import rebalance as rb
from seglog.broker.groups.group import Group, GroupState, IllegalGroupTransitionError
from seglog.broker.groups.model import UNKNOWN_MEMBER_ID, JoinRequest, JoinResult, SyncResult
from seglog.protocol.error_codes import ErrorCode


class StaticMembership:
    """Replaces static members' ids; writes through the coordinator's outbox."""

    def __init__(self, out: rb.Outbox) -> None:
        self._out = out

    def replace_and_rebalance(
        self,
        group: Group,
        old_member_id: str,
        new_member_id: str,
        req: JoinRequest,
        ticket: int,
        now_ms: int,
    ) -> None:
        """A known ``group.instance.id`` joined with an unknown member id; the ticket may wait."""
        instance_id = req.group_instance_id
        if instance_id is None:
            raise IllegalGroupTransitionError("a static replacement needs a group.instance.id")
        out = self._out
        old_leader = group.leader_id
        old = group.members[old_member_id]
        rb.answer_join(out, old, JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_member_id), now_ms)
        rb.answer_sync(out, old, SyncResult(ErrorCode.FENCED_INSTANCE_ID), now_ms)
        member = group.replace_static_member(instance_id, old_member_id, new_member_id)
        wait = rb.StaticJoinWait(
            group_id=group.group_id,
            group_instance_id=instance_id,
            new_member_id=new_member_id,
            old_member_id=old_member_id,
            ticket=ticket,
            old_protocols=member.protocols,
            old_rebalance_timeout_ms=member.rebalance_timeout_ms,
            old_session_timeout_ms=member.session_timeout_ms,
            old_leader=old_leader,
            skip_assignment_supported=req.api_version >= 9,
        )
        member.protocols = req.protocols
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        member.join_ticket = ticket
        rb.schedule_session(member, now_ms)
        if group.is_(GroupState.STABLE):
            if group.protocol_name == group.select_protocol():
                out.persist(group.group_id, group.snapshot(), wait)
            else:
                rb.maybe_prepare_rebalance(out, group, now_ms)
        elif group.is_(GroupState.COMPLETING_REBALANCE):
            rb.prepare_rebalance(out, group, now_ms)
        elif not group.is_(GroupState.PREPARING_REBALANCE):
            raise IllegalGroupTransitionError(
                f"group {group.group_id!r} has a static member while {group.state.value}"
            )

    def on_persisted(
        self, group: Group, wait: rb.StaticJoinWait, error: ErrorCode, now_ms: int
    ) -> None:
        """The replacement's GroupMetadata append finished: answer the join, or undo on error."""
        member = group.members.get(wait.new_member_id)
        if member is None or member.join_ticket != wait.ticket:
            return  # a rebalance or a removal answered the join meanwhile
        out = self._out
        if error != ErrorCode.NONE:
            member.protocols = wait.old_protocols
            member.rebalance_timeout_ms = wait.old_rebalance_timeout_ms
            member.session_timeout_ms = wait.old_session_timeout_ms
            ticket, member.join_ticket = member.join_ticket, None
            group.replace_static_member(
                wait.group_instance_id, wait.new_member_id, wait.old_member_id
            )
            rb.schedule_session(member, now_ms)
            out.complete(
                ticket,
                JoinResult(
                    error,
                    UNKNOWN_MEMBER_ID,
                    group.generation_id,
                    group.protocol_type,
                    group.protocol_name,
                    wait.old_leader or "",
                ),
            )
            return
        if wait.skip_assignment_supported:
            is_leader = group.leader_id == member.member_id
            result = JoinResult(
                ErrorCode.NONE,
                member.member_id,
                group.generation_id,
                group.protocol_type,
                group.protocol_name,
                group.leader_id or "",
                skip_assignment=is_leader,
                members=group.current_member_metadata() if is_leader else (),
            )
        else:
            result = JoinResult(
                ErrorCode.NONE,
                member.member_id,
                group.generation_id,
                group.protocol_type,
                group.protocol_name,
                wait.old_leader or "",
            )
        rb.answer_join(out, member, result, now_ms)
