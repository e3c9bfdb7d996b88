"""Kafka's classic consumer-group coordinator as a sans-I/O state machine (no sockets, no files).

The caller (the broker's event loop) feeds requests with the current time and gets back values:

* ``join`` and ``sync`` may wait: they return a :class:`Pending` ticket; the answer arrives as a
  :class:`Completion` in the :class:`Step` of this or a later call. ``heartbeat``, ``leave``,
  ``validate_offset_commit``, ``list_groups``, ``describe_groups`` and ``delete_groups`` answer
  at once.
* Timers (initial rebalance delay, rebalance timeout, SyncGroup timeout, session expiry, the
  deadline of a MEMBER_ID_REQUIRED member) are deadlines: the caller wakes up at
  ``next_deadline_ms()`` and calls ``advance(now_ms)``. Every request-handling call first fires
  the timers already due at its ``now_ms``, so a late wake-up never lets an expired member in.
  Timers fire at their own deadline time, in deadline order.
* Effects in a Step are ``__consumer_offsets`` writes: :class:`PersistGroup` must be appended and
  then acknowledged with ``persisted(persist_id, error, now_ms)`` (the leader's SyncGroup answers,
  and a static member's replacement, are released only by that call); :class:`DeleteGroupRecords`
  must be written before the DeleteGroups response is sent.

Invariants: each ticket is answered exactly once; every waiting ticket is answered after enough
``advance`` (plus acknowledging outstanding persists); generations only grow; at most one leader,
always a member; in Stable every member holds its assignment. See ``group.py`` for the states.

Decisions where Kafka is silent or loose: a second JoinGroup (or SyncGroup) from a member that
already waits answers the older one REBALANCE_IN_PROGRESS (Kafka drops it unanswered); protocol
votes that tie go to the protocol the earliest member voted for; a static member that rejoins
with new timeouts keeps the new ones (as Kafka does).
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Callable, Iterable

from seglog.broker.groups import rebalance as rb
from seglog.broker.groups.group import Group, GroupState, Member
from seglog.broker.groups.group_config import GroupConfig
from seglog.broker.groups.joining import Joiner
from seglog.broker.groups.model import (
    UNKNOWN_MEMBER_ID,
    DeleteOutcome,
    GroupDescription,
    GroupSnapshot,
    HeartbeatOutcome,
    JoinRequest,
    LeaveOutcome,
    LeavingMember,
    ListedGroup,
    MemberLeaveResult,
    Pending,
    Step,
    SyncRequest,
)
from seglog.broker.groups.static_members import StaticMembership
from seglog.broker.groups.syncing import on_assignment_persisted, sync_group
from seglog.broker.groups.views import describe, listed
from seglog.protocol.error_codes import ErrorCode

#: How a failed ``__consumer_offsets`` append is reported to group members (Kafka's storeGroup).
_STORE_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


def _uuid() -> str:
    return str(uuid.uuid4())


class GroupCoordinator:
    """Every classic group of one broker; see the module docstring for the calling protocol."""

    def __init__(
        self, config: GroupConfig | None = None, *, new_id: Callable[[], str] = _uuid
    ) -> None:
        self.config = config or GroupConfig()
        self._groups: dict[str, Group] = {}
        self._out = rb.Outbox(self.config)
        self._joiner = Joiner(self._out, self._groups, new_id)
        self._static = StaticMembership(self._out)
        #: (deadline, group id) entries; one is current when it equals ``_group_next[group id]``
        self._timer_heap: list[tuple[int, str]] = []
        self._group_next: dict[str, int] = {}

    # -- inspection ----------------------------------------------------------------------------

    def group(self, group_id: str) -> Group | None:
        """The group's live state (read it, do not change it), or None."""
        return self._groups.get(group_id)

    def group_ids(self) -> list[str]:
        """Every known group id."""
        return list(self._groups)

    def open_tickets(self) -> frozenset[int]:
        """Tickets issued and not answered yet."""
        return frozenset(self._out.open_tickets)

    def unacknowledged_persists(self) -> frozenset[int]:
        """``PersistGroup`` ids not acknowledged yet."""
        return frozenset(self._out.waits)

    # -- JoinGroup -----------------------------------------------------------------------------

    def join(self, request: JoinRequest, now_ms: int) -> Pending:
        """JoinGroup: the ticket is answered when the join phase completes (at once on errors)."""
        self._fire_due(now_ms)
        ticket = self._out.new_ticket()
        result = self._joiner.join(request, ticket, now_ms)
        if result is not None:
            self._out.complete(ticket, result)
        self._settle(request.group_id, now_ms)
        return Pending(ticket, self._out.take())

    # -- SyncGroup -----------------------------------------------------------------------------

    def sync(self, request: SyncRequest, now_ms: int) -> Pending:
        """SyncGroup: followers wait for the leader's assignment, which waits for its persist."""
        self._fire_due(now_ms)
        ticket = self._out.new_ticket()
        result = sync_group(self._out, self._groups.get(request.group_id), request, ticket, now_ms)
        if result is not None:
            self._out.complete(ticket, result)
        self._settle(request.group_id, now_ms)
        return Pending(ticket, self._out.take())

    # -- persistence acknowledgements ------------------------------------------------------------

    def persisted(self, persist_id: int, error: ErrorCode, now_ms: int) -> Step:
        """The caller appended (``error`` NONE) or failed to append the named ``PersistGroup``."""
        self._fire_due(now_ms)
        if persist_id not in self._out.waits:
            raise KeyError(f"persist {persist_id} is unknown or already acknowledged")
        wait = self._out.waits.pop(persist_id)
        error = _STORE_ERRORS.get(error, error)
        if isinstance(wait, rb.SyncWait):
            group = self._groups.get(wait.group_id)
            if group is not None:
                on_assignment_persisted(self._out, group, wait, error, now_ms)
        elif isinstance(wait, rb.StaticJoinWait):
            group = self._groups.get(wait.group_id)
            if group is not None:
                self._static.on_persisted(group, wait, error, now_ms)
        if wait is not None:
            self._settle(wait.group_id, now_ms)
        return self._out.take()

    # -- Heartbeat and LeaveGroup --------------------------------------------------------------

    def heartbeat(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        now_ms: int,
    ) -> HeartbeatOutcome:
        """Heartbeat: restarts the member's session; tells it about a rebalance."""
        self._fire_due(now_ms)
        error = self._heartbeat(group_id, generation_id, member_id, group_instance_id, now_ms)
        self._settle(group_id, now_ms)
        return HeartbeatOutcome(error, self._out.take())

    def _heartbeat(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        now_ms: int,
    ) -> ErrorCode:
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = group.validate_current_member(member_id, group_instance_id)
        if error != ErrorCode.NONE:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.is_(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        rb.schedule_session(group.members[member_id], now_ms)
        if group.is_(GroupState.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(self, group_id: str, members: Iterable[LeavingMember], now_ms: int) -> LeaveOutcome:
        """LeaveGroup (v3+ batch; v0-2: one member, read ``single_error()``)."""
        self._fire_due(now_ms)
        leaving = list(members)
        if not group_id:
            return LeaveOutcome(ErrorCode.INVALID_GROUP_ID, (), self._out.take())
        group = self._groups.get(group_id)
        if group is None:
            results = tuple(
                MemberLeaveResult(m.member_id, m.group_instance_id, ErrorCode.UNKNOWN_MEMBER_ID)
                for m in leaving
            )
            return LeaveOutcome(ErrorCode.NONE, results, self._out.take())
        if group.is_(GroupState.DEAD):
            return LeaveOutcome(ErrorCode.COORDINATOR_NOT_AVAILABLE, (), self._out.take())
        out = [
            MemberLeaveResult(m.member_id, m.group_instance_id, self._leave_one(group, m, now_ms))
            for m in leaving
        ]
        self._settle(group_id, now_ms)
        return LeaveOutcome(ErrorCode.NONE, tuple(out), self._out.take())

    def _leave_one(self, group: Group, leaving: LeavingMember, now_ms: int) -> ErrorCode:
        if leaving.member_id == UNKNOWN_MEMBER_ID:
            # an administrative removal by group.instance.id
            current = group.static_members.get(leaving.group_instance_id or "")
            if leaving.group_instance_id is None or current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            rb.remove_member_and_update(self._out, group, group.members[current], now_ms)
            return ErrorCode.NONE
        if leaving.member_id in group.pending_members:
            rb.remove_pending_member_and_update(self._out, group, leaving.member_id, now_ms)
            return ErrorCode.NONE
        error = group.validate_current_member(leaving.member_id, leaving.group_instance_id)
        if error == ErrorCode.NONE:
            rb.remove_member_and_update(self._out, group, group.members[leaving.member_id], now_ms)
        return error

    # -- OffsetCommit ----------------------------------------------------------------------------

    def validate_offset_commit(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        now_ms: int,
        *,
        transactional: bool = False,
    ) -> ErrorCode:
        """Whether an OffsetCommit may be written (NONE), else the error for every partition.

        A "simple" commit (generation < 0, no member id, no instance id) is accepted only while
        the group has no members, and creates the group (Empty) when it does not exist. A member's
        commit restarts its session. Timers are not fired here: the caller keeps ``advance`` on
        time. ``transactional`` (TxnOffsetCommit, Kafka's rules): a simple commit is accepted
        whatever the group's state (v0-2 carry no member), CompletingRebalance does not refuse
        it, and no session is restarted.
        """
        group = self._groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return ErrorCode.ILLEGAL_GENERATION
            group = Group(group_id, GroupState.EMPTY, now_ms)
            self._groups[group_id] = group
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or group_instance_id is not None:
            error = group.validate_current_member(member_id, group_instance_id)
            if error != ErrorCode.NONE:
                return error
            if generation_id != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        elif not transactional and not group.is_(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if transactional:
            return ErrorCode.NONE
        if group.is_(GroupState.COMPLETING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        member = group.members.get(member_id)
        if member is not None:
            rb.schedule_session(member, now_ms)
            self._touch(group_id)
        return ErrorCode.NONE

    # -- ListGroups, DescribeGroups, DeleteGroups ------------------------------------------------

    def list_groups(
        self, states: Iterable[str] = (), types: Iterable[str] = ()
    ) -> list[ListedGroup]:
        """ListGroups: every group, filtered by state names and group types (case-insensitive)."""
        wanted_states = {s.lower() for s in states}
        wanted_types = {t.lower() for t in types}
        if wanted_types and "classic" not in wanted_types:
            return []
        return [
            listed(g)
            for g in self._groups.values()
            if not wanted_states or g.state.value.lower() in wanted_states
        ]

    def describe_groups(self, group_ids: Iterable[str]) -> list[GroupDescription]:
        """DescribeGroups, one entry per id in request order."""
        return [describe(gid, self._groups.get(gid)) for gid in group_ids]

    def delete_groups(self, group_ids: Iterable[str], now_ms: int) -> DeleteOutcome:
        """DeleteGroups: only Empty groups go (tombstones in the Step); others NON_EMPTY_GROUP."""
        self._fire_due(now_ms)
        results: list[tuple[str, ErrorCode]] = []
        for group_id in group_ids:
            group = self._groups.get(group_id)
            if group is None or group.is_(GroupState.DEAD):
                results.append((group_id, ErrorCode.GROUP_ID_NOT_FOUND))
            elif group.is_(GroupState.EMPTY):
                group.transition(GroupState.DEAD, now_ms)
                group.pending_members.clear()
                del self._groups[group_id]
                self._out.forget_group(group_id)
                self._touch(group_id)
                self._out.delete(group_id)
                results.append((group_id, ErrorCode.NONE))
            else:
                results.append((group_id, ErrorCode.NON_EMPTY_GROUP))
        return DeleteOutcome(tuple(results), self._out.take())

    def drop_empty_group(self, group_id: str, now_ms: int) -> bool:
        """Offset expiry removed the last offsets of an Empty group: forget it (the caller writes
        the group's tombstone). False when the group is absent or not Empty."""
        group = self._groups.get(group_id)
        if group is None or not group.is_(GroupState.EMPTY):
            return False
        group.transition(GroupState.DEAD, now_ms)
        del self._groups[group_id]
        self._out.forget_group(group_id)
        self._touch(group_id)
        return True

    # -- start-up --------------------------------------------------------------------------------

    def restore(self, group_id: str, snapshot: GroupSnapshot | None, now_ms: int) -> Step:
        """Rebuilds a group from its last GroupMetadata (None: a group known only by its offsets).

        Members come back Stable with their assignment and a session deadline of now + their
        session timeout, so a client that is gone expires and a live one keeps heartbeating.
        Call it at start-up, before any request for the group; the Step is empty unless
        ``group.max.size`` shrank below the group's size (then a rebalance starts, as in Kafka).
        """
        group = Group(group_id, GroupState.EMPTY, now_ms)
        if snapshot is not None:
            group.generation_id = snapshot.generation
            group.protocol_type = snapshot.protocol_type or None
            if snapshot.current_state_timestamp_ms >= 0:
                group.state_timestamp_ms = snapshot.current_state_timestamp_ms
            if snapshot.members and snapshot.protocol is not None:
                group.protocol_name = snapshot.protocol
                for m in snapshot.members:
                    member = Member(
                        m.member_id,
                        m.group_instance_id,
                        m.client_id,
                        m.client_host,
                        # GroupMetadataValue v0 has no rebalance timeout (-1): the session's
                        m.rebalance_timeout_ms
                        if m.rebalance_timeout_ms >= 0
                        else m.session_timeout_ms,
                        m.session_timeout_ms,
                        ((snapshot.protocol, m.subscription),),
                        assignment=m.assignment,
                    )
                    group.add(member, snapshot.protocol_type)
                    rb.schedule_session(member, now_ms)
                if snapshot.leader in group.members:
                    group.leader_id = snapshot.leader
                group.state = GroupState.STABLE
        self._groups[group_id] = group
        if len(group.members) > self.config.max_size:
            # group.max.size shrank since the group was written: rebalance so members can commit
            rb.prepare_rebalance(self._out, group, now_ms)
        self._touch(group_id)
        return self._out.take()

    # -- timers ----------------------------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        """The earliest timer, or None when nothing is scheduled."""
        heap = self._timer_heap
        while heap and self._group_next.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)  # stale: the group's next deadline moved
        return heap[0][0] if heap else None

    def advance(self, now_ms: int) -> Step:
        """Fires every timer due at ``now_ms``, in deadline order."""
        self._fire_due(now_ms)
        return self._out.take()

    def _touch(self, group_id: str) -> None:
        """Re-indexes the group's earliest timer after its state changed."""
        group = self._groups.get(group_id)
        earliest = min((d for d, _, _ in _timers(group)), default=None) if group else None
        if earliest is None:
            self._group_next.pop(group_id, None)
        elif self._group_next.get(group_id) != earliest:
            self._group_next[group_id] = earliest
            heapq.heappush(self._timer_heap, (earliest, group_id))
        if len(self._timer_heap) > 2 * len(self._group_next) + 64:
            # mostly stale entries (sessions moved by heartbeats): rebuild from the current ones
            self._timer_heap = [(d, g) for g, d in self._group_next.items()]
            heapq.heapify(self._timer_heap)

    def _settle(self, group_id: str, now_ms: int) -> None:
        """After a request changed ``group_id``: re-index it and fire whatever is due."""
        self._touch(group_id)
        self._fire_due(now_ms)

    def _fire_due(self, now_ms: int) -> None:
        """Fires due timers one at a time, earliest first (a group's ties: join, sync, pending
        members, sessions), each at its own deadline."""
        while (deadline := self.next_deadline_ms()) is not None and deadline <= now_ms:
            _, group_id = heapq.heappop(self._timer_heap)
            del self._group_next[group_id]
            group = self._groups[group_id]
            at, kind, key = min(_timers(group), key=lambda timer: timer[0])
            if kind == "join":
                rb.on_join_deadline(self._out, group, at)
            elif kind == "sync":
                rb.on_sync_deadline(self._out, group, at)
            elif kind == "pending":
                rb.remove_pending_member_and_update(self._out, group, key, at)
            else:
                rb.on_session_deadline(self._out, group, group.members[key], at)
            self._touch(group_id)


def _timers(group: Group) -> Iterable[tuple[int, str, str]]:
    """(deadline, kind, member id) of every timer the group has."""
    if group.join_deadline_ms is not None:
        yield group.join_deadline_ms, "join", ""
    if group.sync_deadline_ms is not None:
        yield group.sync_deadline_ms, "sync", ""
    for member_id, deadline in group.pending_members.items():
        yield deadline, "pending", member_id
    for member_id, member in group.members.items():
        if member.session_deadline_ms is not None:
            yield member.session_deadline_ms, "session", member_id
