"""The rebalance steps of a classic group: start a join phase, complete it, hand out assignments.

These functions change one :class:`Group` and record what that causes in an :class:`Outbox`:
answers to waiting tickets and ``__consumer_offsets`` writes. They never block and read the
time only from their ``now_ms`` argument.

Rules kept here (Kafka's ``GroupCoordinator``):

* A join phase starts (PreparingRebalance) from Empty, Stable or CompletingRebalance; starting
  one during CompletingRebalance answers every waiting SyncGroup with REBALANCE_IN_PROGRESS.
* From Empty the phase lasts ``group.initial.rebalance.delay.ms`` and is extended by that delay
  (never past the rebalance timeout) each time a new member joins generation 0; otherwise it ends
  as soon as every member and no MEMBER_ID_REQUIRED member is waiting, or at the group's
  rebalance timeout (the largest member's).
* Completing the phase drops dynamic members that did not rejoin, keeps or re-elects the leader,
  increments the generation, selects the protocol, answers every JoinGroup (the leader gets the
  member list) and gives each member a rebalance timeout to SyncGroup; members that miss it are
  removed and a new phase starts. With no member left the group becomes Empty and its metadata is
  persisted.
* A member answered (join or sync) gets a fresh session deadline; a member waiting in JoinGroup
  or SyncGroup does not expire (the wait is bounded by the phase timers), except a new member,
  which must complete its first join within the new-member join timeout.
"""

from __future__ import annotations

from dataclasses import dataclass

from seglog.broker.groups.group import Group, GroupState, Member
from seglog.broker.groups.group_config import GroupConfig
from seglog.broker.groups.model import (
    Completion,
    DeleteGroupRecords,
    GroupSnapshot,
    JoinResult,
    PersistGroup,
    Step,
    SyncResult,
)
from seglog.protocol.error_codes import ErrorCode


class TicketError(RuntimeError):
    """A bug: a ticket was answered twice or was never issued."""


@dataclass(frozen=True, slots=True)
class SyncWait:
    """A leader's SyncGroup assignment waiting for its GroupMetadata append."""

    group_id: str
    generation_id: int
    assignment: dict[str, bytes]


@dataclass(frozen=True, slots=True)
class StaticJoinWait:
    """A static member's replacement in a Stable group waiting for its GroupMetadata append."""

    group_id: str
    group_instance_id: str
    new_member_id: str
    old_member_id: str
    ticket: int
    old_protocols: tuple[tuple[str, bytes], ...]
    old_rebalance_timeout_ms: int
    old_session_timeout_ms: int
    old_leader: str | None
    skip_assignment_supported: bool


PersistWait = SyncWait | StaticJoinWait | None


class Outbox:
    """Tickets issued and not yet answered, persists not yet acknowledged, and the current Step."""

    def __init__(self, config: GroupConfig) -> None:
        self.config = config
        self.step = Step()
        self.open_tickets: set[int] = set()
        self.waits: dict[int, PersistWait] = {}
        self._next_ticket = 1
        self._next_persist = 1

    def new_ticket(self) -> int:
        """Issues a ticket."""
        ticket = self._next_ticket
        self._next_ticket += 1
        self.open_tickets.add(ticket)
        return ticket

    def complete(self, ticket: int, result: JoinResult | SyncResult) -> None:
        """Answers ``ticket``; answering twice is a bug."""
        if ticket not in self.open_tickets:
            raise TicketError(f"ticket {ticket} answered twice or never issued")
        self.open_tickets.discard(ticket)
        self.step.completions.append(Completion(ticket, result))

    def persist(self, group_id: str, snapshot: GroupSnapshot, wait: PersistWait) -> int:
        """Asks the caller to write ``snapshot``; ``wait`` is resumed by its acknowledgement."""
        persist_id = self._next_persist
        self._next_persist += 1
        self.waits[persist_id] = wait
        self.step.effects.append(PersistGroup(persist_id, group_id, snapshot))
        return persist_id

    def forget_group(self, group_id: str) -> None:
        """The group is gone (deleted, or dropped by offset expiry): its persists still waiting
        resume nothing when acknowledged, so a group created anew under the same id (whose
        generations restart) never takes an old generation's acknowledgement for its own."""
        for persist_id, wait in self.waits.items():
            if wait is not None and wait.group_id == group_id:
                self.waits[persist_id] = None

    def delete(self, group_id: str) -> None:
        """Asks the caller to write the group's tombstones."""
        self.step.effects.append(DeleteGroupRecords(group_id))

    def take(self) -> Step:
        """The Step collected so far; starts a new one."""
        step, self.step = self.step, Step()
        return step


def schedule_session(member: Member, now_ms: int) -> None:
    """The member's next heartbeat is due within its session timeout."""
    member.session_deadline_ms = now_ms + member.session_timeout_ms


def answer_join(out: Outbox, member: Member, result: JoinResult, now_ms: int) -> None:
    """Answers the member's waiting JoinGroup, if any, and restarts its session."""
    if member.join_ticket is None:
        return
    ticket, member.join_ticket = member.join_ticket, None
    out.complete(ticket, result)
    schedule_session(member, now_ms)


def answer_sync(out: Outbox, member: Member, result: SyncResult, now_ms: int) -> None:
    """Answers the member's waiting SyncGroup, if any, and restarts its session."""
    if member.sync_ticket is None:
        return
    ticket, member.sync_ticket = member.sync_ticket, None
    out.complete(ticket, result)
    schedule_session(member, now_ms)


def drop_member(out: Outbox, group: Group, member: Member, error: ErrorCode, now_ms: int) -> None:
    """Removes the member, answering its waiting requests with ``error``; no rebalance."""
    answer_join(out, member, JoinResult(error, member.member_id), now_ms)
    answer_sync(out, member, SyncResult(error), now_ms)
    group.remove(member.member_id)


def remove_member_and_update(out: Outbox, group: Group, member: Member, now_ms: int) -> None:
    """A member left or expired: removes it and starts or finishes the join phase it affects."""
    drop_member(out, group, member, ErrorCode.UNKNOWN_MEMBER_ID, now_ms)
    if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
        maybe_prepare_rebalance(out, group, now_ms)
    elif group.is_(GroupState.PREPARING_REBALANCE):
        try_complete_join(out, group, now_ms)


def remove_pending_member_and_update(
    out: Outbox, group: Group, member_id: str, now_ms: int
) -> None:
    """A MEMBER_ID_REQUIRED member left or did not come back: it no longer holds up the join."""
    group.pending_members.pop(member_id, None)
    if group.is_(GroupState.PREPARING_REBALANCE):
        try_complete_join(out, group, now_ms)


def maybe_prepare_rebalance(out: Outbox, group: Group, now_ms: int) -> None:
    """Starts a join phase unless one is running (or the group is dead)."""
    if group.can_rebalance():
        prepare_rebalance(out, group, now_ms)


def prepare_rebalance(out: Outbox, group: Group, now_ms: int) -> None:
    """Enters PreparingRebalance with the initial delay (from Empty) or the rebalance timeout."""
    if group.is_(GroupState.COMPLETING_REBALANCE):
        reset_and_propagate_assignment_error(out, group, ErrorCode.REBALANCE_IN_PROGRESS, now_ms)
    group.pending_sync.clear()
    group.sync_deadline_ms = None
    if group.is_(GroupState.EMPTY):
        delay = out.config.initial_rebalance_delay_ms
        group.initial_delay_ms = delay
        group.initial_remaining_ms = max(group.rebalance_timeout_ms() - delay, 0)
        group.join_deadline_ms = now_ms + delay
    else:
        group.initial_delay_ms = None
        group.join_deadline_ms = now_ms + group.rebalance_timeout_ms()
    group.transition(GroupState.PREPARING_REBALANCE, now_ms)
    try_complete_join(out, group, now_ms)


def try_complete_join(out: Outbox, group: Group, now_ms: int) -> None:
    """Completes the join phase early when everyone is in (never during the initial delay)."""
    if (
        group.is_(GroupState.PREPARING_REBALANCE)
        and group.initial_delay_ms is None
        and group.has_all_members_joined()
    ):
        complete_join(out, group, now_ms)


def on_join_deadline(out: Outbox, group: Group, now_ms: int) -> None:
    """The join phase's timer fired: extend the initial delay or complete the phase."""
    group.join_deadline_ms = None
    if not group.is_(GroupState.PREPARING_REBALANCE):
        return
    current = group.initial_delay_ms
    if current is not None and group.new_member_added and group.initial_remaining_ms != 0:
        group.new_member_added = False
        delay = min(out.config.initial_rebalance_delay_ms, group.initial_remaining_ms)
        group.initial_remaining_ms = max(group.initial_remaining_ms - current, 0)
        group.initial_delay_ms = delay
        group.join_deadline_ms = now_ms + delay
        return
    complete_join(out, group, now_ms)


def complete_join(out: Outbox, group: Group, now_ms: int) -> None:
    """Ends the join phase: a new generation in CompletingRebalance, or Empty with no members."""
    group.join_deadline_ms = None
    group.initial_delay_ms = None
    for member in [
        m for m in group.members.values() if m.join_ticket is None and m.group_instance_id is None
    ]:
        drop_member(out, group, member, ErrorCode.UNKNOWN_MEMBER_ID, now_ms)
    if group.members and not group.maybe_elect_new_joined_leader():
        # only static members that did not rejoin remain: wait another rebalance timeout (with a
        # zero timeout, until the next session expiry, where Kafka would retry at once)
        timeout = group.rebalance_timeout_ms()
        sessions = [
            m.session_deadline_ms
            for m in group.members.values()
            if m.session_deadline_ms is not None
        ]
        retry = max(min(sessions, default=now_ms), now_ms + 1)
        group.join_deadline_ms = now_ms + timeout if timeout > 0 else retry
        return
    group.generation_id += 1
    group.pending_sync.clear()
    if not group.members:
        group.protocol_name = None
        group.transition(GroupState.EMPTY, now_ms)
        out.persist(group.group_id, group.snapshot(), None)
        return
    group.protocol_name = group.select_protocol()
    group.transition(GroupState.COMPLETING_REBALANCE, now_ms)
    leader_view = group.current_member_metadata()
    for member in list(group.members.values()):
        result = JoinResult(
            error=ErrorCode.NONE,
            member_id=member.member_id,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            members=leader_view if member.member_id == group.leader_id else (),
        )
        answer_join(out, member, result, now_ms)
        schedule_session(member, now_ms)
        member.is_new = False
        group.pending_sync.add(member.member_id)
    group.sync_deadline_ms = now_ms + group.rebalance_timeout_ms()


def on_sync_deadline(out: Outbox, group: Group, now_ms: int) -> None:
    """Members that did not SyncGroup within the rebalance timeout go; a new phase starts."""
    group.sync_deadline_ms = None
    if (
        group.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE)
        or not group.pending_sync
    ):
        return
    for member_id in sorted(group.pending_sync):
        member = group.members.get(member_id)
        if member is not None:
            drop_member(out, group, member, ErrorCode.UNKNOWN_MEMBER_ID, now_ms)
    group.pending_sync.clear()
    prepare_rebalance(out, group, now_ms)


def mark_synced(group: Group, member_id: str) -> None:
    """The member sent its SyncGroup for this generation."""
    group.pending_sync.discard(member_id)
    if not group.pending_sync:
        group.sync_deadline_ms = None


def reset_and_propagate_assignment_error(
    out: Outbox, group: Group, error: ErrorCode, now_ms: int
) -> None:
    """Clears every assignment and answers every waiting SyncGroup with ``error``."""
    for member in group.members.values():
        member.assignment = b""
        answer_sync(out, member, SyncResult(error), now_ms)


def set_and_propagate_assignment(
    out: Outbox, group: Group, assignment: dict[str, bytes], now_ms: int
) -> None:
    """Gives every member its assignment and answers every waiting SyncGroup with it."""
    for member in group.members.values():
        member.assignment = assignment.get(member.member_id, b"")
        result = SyncResult(
            ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment
        )
        answer_sync(out, member, result, now_ms)


def on_session_deadline(out: Outbox, group: Group, member: Member, now_ms: int) -> None:
    """A member's session deadline passed: it expires unless it waits in a join or sync."""
    member.session_deadline_ms = None
    if not member.is_new and (member.join_ticket is not None or member.sync_ticket is not None):
        return
    remove_member_and_update(out, group, member, now_ms)
