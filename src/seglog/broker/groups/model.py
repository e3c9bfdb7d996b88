"""The group coordinator's inputs and outputs: plain values, not wire messages.

The wire handlers map a decoded request onto one of the ``*Request`` values here, call the
:class:`~seglog.broker.groups.coordinator.GroupCoordinator`, and map the results back onto the
protocol's response messages. Error numbers are Kafka's (:class:`ErrorCode`).

Waiting operations (JoinGroup, SyncGroup) get a *ticket*; their answer arrives later as a
:class:`Completion` carrying that ticket, either in the same call's :class:`Step` or in the
``Step`` of a later call (another member's request, :meth:`advance`, :meth:`persisted`). Every
ticket is completed exactly once.

*Effects* are writes the caller must make to ``__consumer_offsets``: :class:`PersistGroup`
(a GroupMetadata record with the snapshot as its value) and :class:`DeleteGroupRecords`
(tombstones for the group's metadata and all its offsets). The caller acknowledges every
``PersistGroup`` with ``persisted(persist_id, error)`` once the append is durable (or failed);
the SyncGroup answers of a generation are released only by that acknowledgement, as Kafka
sends them only after the append.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from seglog.protocol.error_codes import ErrorCode

#: JoinGroup's unknown member id.
UNKNOWN_MEMBER_ID = ""
#: Generation answered with errors (Kafka's ``NoGeneration``).
NO_GENERATION = -1


@dataclass(frozen=True, slots=True)
class JoinRequest:
    """A JoinGroup request (any version). For v0 the caller passes ``rebalance_timeout_ms =
    session_timeout_ms``, as Kafka does; ``protocols`` are (name, metadata) in preference order."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    api_version: int


@dataclass(frozen=True, slots=True)
class SyncRequest:
    """A SyncGroup request; ``protocol_type``/``protocol_name`` are None before v5."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    assignments: tuple[tuple[str, bytes], ...]
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(frozen=True, slots=True)
class LeavingMember:
    """One member of a LeaveGroup request (v3+ batches them; v0-2 carry one with no instance id)."""

    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class JoinMember:
    """One entry of the leader's member list: its chosen protocol's metadata."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResult:
    """A JoinGroup response's values. ``members`` is non-empty only for the leader."""

    error: ErrorCode
    member_id: str
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    members: tuple[JoinMember, ...] = ()


@dataclass(frozen=True, slots=True)
class SyncResult:
    """A SyncGroup response's values."""

    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class Completion:
    """The answer to a waiting JoinGroup or SyncGroup, named by its ticket."""

    ticket: int
    result: JoinResult | SyncResult


@dataclass(frozen=True, slots=True)
class MemberSnapshot:
    """A member as GroupMetadataValue stores it (``subscription``: the chosen protocol's)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """A GroupMetadataValue's fields: what survives a restart of the coordinator.

    ``protocol_type`` is ``""`` when the group has none; ``current_state_timestamp_ms`` is -1 when
    unknown."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp_ms: int
    members: tuple[MemberSnapshot, ...] = ()


@dataclass(frozen=True, slots=True)
class PersistGroup:
    """Write a GroupMetadata record (key: the group id, value: ``snapshot``) and acknowledge it."""

    persist_id: int
    group_id: str
    snapshot: GroupSnapshot


@dataclass(frozen=True, slots=True)
class DeleteGroupRecords:
    """Write tombstones for the group's metadata key and for every offset key the group has."""

    group_id: str


Effect = PersistGroup | DeleteGroupRecords


@dataclass(slots=True)
class Step:
    """What one call caused: answers to earlier (or this call's) tickets and writes to make."""

    completions: list[Completion] = field(default_factory=list)
    effects: list[Effect] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Pending:
    """A waiting operation's ticket and what the call caused (the ticket's answer may be among
    ``step.completions`` already)."""

    ticket: int
    step: Step


@dataclass(frozen=True, slots=True)
class HeartbeatOutcome:
    """A Heartbeat's error and what the call caused (timers that fell due first)."""

    error: ErrorCode
    step: Step


@dataclass(frozen=True, slots=True)
class MemberLeaveResult:
    """One member's LeaveGroup outcome (v3+ response ``members``)."""

    member_id: str
    group_instance_id: str | None
    error: ErrorCode


@dataclass(frozen=True, slots=True)
class LeaveOutcome:
    """A LeaveGroup's top-level error, per-member errors and what the call caused."""

    error: ErrorCode
    members: tuple[MemberLeaveResult, ...]
    step: Step

    def single_error(self) -> ErrorCode:
        """The one error a v0-2 response carries: the top-level one, else the single member's."""
        if self.error != ErrorCode.NONE or not self.members:
            return self.error
        return self.members[0].error


@dataclass(frozen=True, slots=True)
class ListedGroup:
    """A ListGroups entry (``group_type`` is always ``"classic"``)."""

    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"


@dataclass(frozen=True, slots=True)
class DescribedMember:
    """A DescribeGroups member; metadata and assignment are empty unless the group is Stable."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """A DescribeGroups entry. An unknown group is ``Dead`` with no members and error NONE
    (Kafka's answer before DescribeGroups v6; the handler maps it to GROUP_ID_NOT_FOUND for v6+)."""

    group_id: str
    error: ErrorCode
    state: str
    protocol_type: str
    protocol_data: str
    members: tuple[DescribedMember, ...]
    found: bool


@dataclass(frozen=True, slots=True)
class DeleteOutcome:
    """DeleteGroups: per-group errors in request order; the tombstones to write before answering."""

    results: tuple[tuple[str, ErrorCode], ...]
    step: Step
