"""What ListGroups and DescribeGroups report about a group (Kafka's ``GroupSummary``).

Member metadata and assignments are shown only while the group is Stable (with the selected
protocol's metadata); in any other state members are listed with empty bytes and the protocol
is ``""``. An unknown group describes as Dead with no members.
"""

from __future__ import annotations

from seglog.broker.groups.group import Group, GroupState
from seglog.broker.groups.model import DescribedMember, GroupDescription, ListedGroup
from seglog.protocol.error_codes import ErrorCode


def listed(group: Group) -> ListedGroup:
    """The group's ListGroups entry."""
    return ListedGroup(group.group_id, group.protocol_type or "", group.state.value)


def describe(group_id: str, group: Group | None) -> GroupDescription:
    """The group's DescribeGroups entry (Dead and empty when ``group`` is None)."""
    if group is None:
        return GroupDescription(
            group_id, ErrorCode.NONE, GroupState.DEAD.value, "", "", (), found=False
        )
    stable = group.is_(GroupState.STABLE)
    protocol = group.protocol_name or "" if stable else ""
    members = tuple(
        DescribedMember(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            metadata=m.metadata(protocol) if stable else b"",
            assignment=m.assignment if stable else b"",
        )
        for m in group.members.values()
    )
    return GroupDescription(
        group_id,
        ErrorCode.NONE,
        group.state.value,
        group.protocol_type or "",
        protocol,
        members,
        found=True,
    )
