"""SyncGroup: followers wait for the leader, whose assignment waits for its GroupMetadata append.

Rules (Kafka's ``GroupCoordinator.handleSyncGroup``), checked in this order: an empty group id
is INVALID_GROUP_ID; an absent group or unknown member UNKNOWN_MEMBER_ID (FENCED_INSTANCE_ID for
a replaced static member); another generation ILLEGAL_GENERATION; from v5 a protocol type or
name other than the group's INCONSISTENT_GROUP_PROTOCOL; Empty UNKNOWN_MEMBER_ID;
PreparingRebalance REBALANCE_IN_PROGRESS. In Stable the member's assignment is returned at once.
In CompletingRebalance the request waits; the leader's assignment (members it left out get empty
bytes) is persisted, and only the acknowledgement of that append hands every waiting member its
assignment and makes the group Stable, if the group is still in that generation. A failed
append answers every waiting member with the error and starts a new join phase.
"""

from __future__ import annotations

from seglog.broker.groups import rebalance as rb
from seglog.broker.groups.group import Group, GroupState
from seglog.broker.groups.model import SyncRequest, SyncResult
from seglog.protocol.error_codes import ErrorCode


def sync_group(
    out: rb.Outbox, group: Group | None, req: SyncRequest, ticket: int, now_ms: int
) -> SyncResult | None:
    """The immediate answer, or None when ``ticket`` waits for the leader's assignment."""
    if not req.group_id:
        return SyncResult(ErrorCode.INVALID_GROUP_ID)
    if group is None:
        return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
    if group.is_(GroupState.DEAD):
        return SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    error = group.validate_current_member(req.member_id, req.group_instance_id)
    if error != ErrorCode.NONE:
        return SyncResult(error)
    if req.generation_id != group.generation_id:
        return SyncResult(ErrorCode.ILLEGAL_GENERATION)
    if req.protocol_type is not None and req.protocol_type != group.protocol_type:
        return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    if req.protocol_name is not None and req.protocol_name != group.protocol_name:
        return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    if group.is_(GroupState.EMPTY):
        return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
    if group.is_(GroupState.PREPARING_REBALANCE):
        return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
    member = group.members[req.member_id]
    rb.mark_synced(group, req.member_id)
    if group.is_(GroupState.STABLE):
        rb.schedule_session(member, now_ms)
        return SyncResult(
            ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment
        )
    rb.answer_sync(out, member, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS), now_ms)
    member.sync_ticket = ticket
    if group.leader_id == req.member_id:
        given = dict(req.assignments)
        assignment = {mid: given.get(mid, b"") for mid in group.members}
        wait = rb.SyncWait(group.group_id, group.generation_id, assignment)
        out.persist(group.group_id, group.snapshot(assignment), wait)
    return None


def on_assignment_persisted(
    out: rb.Outbox, group: Group, wait: rb.SyncWait, error: ErrorCode, now_ms: int
) -> None:
    """The leader's assignment was appended (or not): release or fail the waiting SyncGroups."""
    if not group.is_(GroupState.COMPLETING_REBALANCE) or group.generation_id != wait.generation_id:
        return  # a new join phase already answered them
    if error != ErrorCode.NONE:
        rb.reset_and_propagate_assignment_error(out, group, error, now_ms)
        rb.maybe_prepare_rebalance(out, group, now_ms)
    else:
        rb.set_and_propagate_assignment(out, group, wait.assignment, now_ms)
        group.transition(GroupState.STABLE, now_ms)
