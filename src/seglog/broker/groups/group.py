"""One classic consumer group's state: its members, generation, protocol, leader and timers.

States and the only transitions allowed (Kafka's ``ClassicGroupState``)::

    Empty ----------------> PreparingRebalance <---------------+
      ^                        |        |                      |
      +-- (no member joined) --+        v                      |
                              CompletingRebalance ---> Stable -+
    any state ----> Dead (deleted)

Invariants (checked by the stateful test):

* ``leader_id`` is None or the id of a member; with members and no leader only transiently.
* ``generation_id`` never decreases; it grows by one at every completed join phase.
* In Stable every member holds the assignment the leader gave it (possibly empty bytes) and
  ``protocol_name`` is set; in Empty there are no members.
* ``static_members`` maps each member's ``group.instance.id`` to that member's id, both ways.
* A member has at most one waiting JoinGroup ticket and one waiting SyncGroup ticket.

Timers are plain deadlines (``*_deadline_ms``); the coordinator fires them. This module holds
state and the rules that read only it; the rebalance steps that answer tickets live in
``rebalance.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from seglog.broker.groups.model import GroupSnapshot, JoinMember, MemberSnapshot
from seglog.protocol.error_codes import ErrorCode


class GroupState(Enum):
    """A classic group's state; the value is the name ListGroups and DescribeGroups report."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalGroupTransitionError(RuntimeError):
    """A bug: the coordinator tried a transition Kafka's state machine forbids."""


Protocols = tuple[tuple[str, bytes], ...]


@dataclass(slots=True)
class Member:
    """A member of the group (not a pending one): identity, timeouts, protocols, tickets."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: Protocols
    assignment: bytes = b""
    join_ticket: int | None = None
    sync_ticket: int | None = None
    session_deadline_ms: int | None = None
    is_new: bool = False

    def metadata(self, protocol: str) -> bytes:
        """The metadata this member sent with ``protocol`` (empty when it does not support it)."""
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def vote(self, candidates: frozenset[str]) -> str:
        """The member's most preferred protocol among ``candidates`` (Kafka's ``vote``)."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise IllegalGroupTransitionError(
            f"member {self.member_id} supports none of {sorted(candidates)}"
        )

    def snapshot(self, protocol: str | None) -> MemberSnapshot:
        """The member as GroupMetadataValue stores it."""
        return MemberSnapshot(
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            client_id=self.client_id,
            client_host=self.client_host,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            session_timeout_ms=self.session_timeout_ms,
            subscription=self.metadata(protocol) if protocol is not None else b"",
            assignment=self.assignment,
        )


@dataclass(slots=True)
class Group:
    """One group's full state (see the module docstring for the invariants)."""

    group_id: str
    state: GroupState
    state_timestamp_ms: int
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    #: members told MEMBER_ID_REQUIRED, by id -> deadline for their second JoinGroup
    pending_members: dict[str, int] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    #: members that got their JoinGroup answer and have not synced yet this generation
    pending_sync: set[str] = field(default_factory=set)
    join_deadline_ms: int | None = None
    #: while the initial delay runs: the delay of each extension, and the time left to extend by
    initial_delay_ms: int | None = None
    initial_remaining_ms: int = 0
    new_member_added: bool = False
    sync_deadline_ms: int | None = None

    # -- state ---------------------------------------------------------------------------------

    def transition(self, target: GroupState, now_ms: int) -> None:
        """Moves to ``target`` if Kafka allows it from the current state; stamps the time."""
        if self.state not in _VALID_PREVIOUS[target]:
            raise IllegalGroupTransitionError(
                f"group {self.group_id!r}: {self.state.value} -> {target.value} "
                "is not a valid transition"
            )
        self.state = target
        self.state_timestamp_ms = now_ms

    def is_(self, state: GroupState) -> bool:
        """Whether the group is in ``state``."""
        return self.state == state

    def can_rebalance(self) -> bool:
        """Whether a new join phase may start now (Stable, CompletingRebalance or Empty)."""
        return self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY)

    # -- members -------------------------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        """Whether ``member_id`` is a member (pending members are not)."""
        return member_id in self.members

    def is_static_member_fenced(self, group_instance_id: str | None, member_id: str) -> bool:
        """Whether ``group_instance_id`` belongs to a member with another member id."""
        if group_instance_id is None:
            return False
        current = self.static_members.get(group_instance_id)
        return current is not None and current != member_id

    def validate_current_member(self, member_id: str, group_instance_id: str | None) -> ErrorCode:
        """FENCED_INSTANCE_ID when the instance id belongs to another member id; UNKNOWN_MEMBER_ID
        when the instance id or the member id is unknown; else NONE (``validateCurrentMember``)."""
        if group_instance_id is not None:
            current = self.static_members.get(group_instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        return ErrorCode.NONE if member_id in self.members else ErrorCode.UNKNOWN_MEMBER_ID

    def add(self, member: Member, protocol_type: str) -> None:
        """Adds a member; the first one fixes the protocol type, and without a leader it leads."""
        if not self.members:
            self.protocol_type = protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id

    def remove(self, member_id: str) -> Member | None:
        """Removes a member (the caller answers its tickets); the next member leads if it led."""
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if (
            member.group_instance_id is not None
            and self.static_members.get(member.group_instance_id) == member_id
        ):
            del self.static_members[member.group_instance_id]
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static_member(
        self, group_instance_id: str, old_member_id: str, new_member_id: str
    ) -> Member:
        """Gives the static member ``old_member_id`` the id ``new_member_id`` (the caller
        answers the old id's tickets)."""
        member = self.members.pop(old_member_id)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        if old_member_id in self.pending_sync:
            self.pending_sync.discard(old_member_id)
            self.pending_sync.add(new_member_id)
        return member

    def awaiting_join_count(self) -> int:
        """How many members have a waiting JoinGroup."""
        return sum(1 for m in self.members.values() if m.join_ticket is not None)

    def has_all_members_joined(self) -> bool:
        """Every member waits in JoinGroup and no MEMBER_ID_REQUIRED member is outstanding."""
        return self.awaiting_join_count() == len(self.members) and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        """The join phase's timeout: the largest member rebalance timeout (0 without members)."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keeps a leader that rejoined, else picks any member that rejoined; False if none did."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.join_ticket is not None:
            return True
        for member_id, member in self.members.items():
            if member.join_ticket is not None:
                self.leader_id = member_id
                return True
        return False

    # -- protocols -----------------------------------------------------------------------------

    def supports_protocols(self, protocol_type: str, protocols: Protocols) -> bool:
        """Whether a member offering ``protocols`` of ``protocol_type`` may join (Kafka's rule)."""
        names = {name for name, _ in protocols}
        if not self.members:
            return protocol_type != "" and bool(names)
        if self.protocol_type != protocol_type:
            return False
        return bool(names & self.candidate_protocols())

    def candidate_protocols(self) -> frozenset[str]:
        """The protocols every member supports."""
        sets = [frozenset(name for name, _ in m.protocols) for m in self.members.values()]
        return frozenset.intersection(*sets) if sets else frozenset()

    def select_protocol(self) -> str:
        """Each member votes for its most preferred candidate; most votes wins, ties go to the
        protocol the earliest member voted for (Kafka leaves ties to hash order)."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    def current_member_metadata(self) -> tuple[JoinMember, ...]:
        """The leader's member list: each member's metadata for the selected protocol."""
        protocol = self.protocol_name or ""
        return tuple(
            JoinMember(m.member_id, m.group_instance_id, m.metadata(protocol))
            for m in self.members.values()
        )

    # -- persistence ---------------------------------------------------------------------------

    def snapshot(self, assignment: dict[str, bytes] | None = None) -> GroupSnapshot:
        """The GroupMetadataValue of the group now; ``assignment`` overrides the members' own."""
        members = []
        for member in self.members.values():
            snap = member.snapshot(self.protocol_name)
            if assignment is not None:
                snap = MemberSnapshot(
                    snap.member_id,
                    snap.group_instance_id,
                    snap.client_id,
                    snap.client_host,
                    snap.rebalance_timeout_ms,
                    snap.session_timeout_ms,
                    snap.subscription,
                    assignment.get(member.member_id, b""),
                )
            members.append(snap)
        return GroupSnapshot(
            protocol_type=self.protocol_type or "",
            generation=self.generation_id,
            protocol=self.protocol_name,
            leader=self.leader_id,
            current_state_timestamp_ms=self.state_timestamp_ms,
            members=tuple(members),
        )
