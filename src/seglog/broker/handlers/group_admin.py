"""ListGroups (key 16, v0-5), DescribeGroups (15, v0-5), DeleteGroups (42, v0-2).

Answered from the group coordinator's live state (groups restored at start-up included).
DescribeGroups of an unknown group answers state ``Dead`` with no members and no error, as Kafka
does before v6; member metadata and assignments are the opaque bytes the clients sent.
DeleteGroups removes only Empty groups (NON_EMPTY_GROUP otherwise, GROUP_ID_NOT_FOUND for an
unknown one) and writes tombstones for the group and all its offsets before answering.

Authorization (Kafka's ``KafkaApis``): ListGroups lists every group with DESCRIBE on the
cluster, else only the groups the principal may DESCRIBE (no error); DescribeGroups needs
DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED in its entry) and fills
``authorized_operations`` (v3+) when asked; DeleteGroups needs DELETE on each group.
"""

from __future__ import annotations

from seglog.broker.authorization import CLUSTER_NAME, Operation, ResourceType
from seglog.broker.groups.model import GroupDescription
from seglog.broker.registry import ApiHandler
from seglog.broker.state import INT32_MIN, BrokerState, RequestContext
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteGroupsResponseDeletableGroupResult,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeGroupsResponseDescribedGroup,
    DescribeGroupsResponseDescribedGroupMember,
    ListGroupsRequest,
    ListGroupsResponse,
    ListGroupsResponseListedGroup,
)


async def list_groups(
    state: BrokerState, context: RequestContext, request: ListGroupsRequest
) -> ListGroupsResponse:
    listed = state.groups.coordinator.list_groups(request.states_filter, request.types_filter)
    if not state.authorize(context, Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        visible = state.authorized_names(
            context, Operation.DESCRIBE, ResourceType.GROUP, (g.group_id for g in listed)
        )
        listed = [g for g in listed if g.group_id in visible]
    return ListGroupsResponse(
        groups=[
            ListGroupsResponseListedGroup(
                group_id=g.group_id,
                protocol_type=g.protocol_type,
                group_state=g.state,
                group_type=g.group_type,
            )
            for g in listed
        ]
    )


async def describe_groups(
    state: BrokerState, context: RequestContext, request: DescribeGroupsRequest
) -> DescribeGroupsResponse:
    visible = state.authorized_names(
        context, Operation.DESCRIBE, ResourceType.GROUP, request.groups
    )
    described = state.groups.coordinator.describe_groups(
        [g for g in request.groups if g in visible]
    )
    by_id = {d.group_id: d for d in described}
    refused = DescribeGroupsResponseDescribedGroup
    return DescribeGroupsResponse(
        groups=[
            refused(
                error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED),
                group_id=group_id,
                group_state="",
                protocol_type="",
                protocol_data="",
                authorized_operations=INT32_MIN,
            )
            if group_id not in visible
            else _described(state, context, by_id[group_id], request.include_authorized_operations)
            for group_id in request.groups
        ]
    )


def _described(
    state: BrokerState, context: RequestContext, d: GroupDescription, operations: bool
) -> DescribeGroupsResponseDescribedGroup:
    return DescribeGroupsResponseDescribedGroup(
        error_code=int(d.error),
        group_id=d.group_id,
        group_state=d.state,
        protocol_type=d.protocol_type,
        protocol_data=d.protocol_data,
        members=[
            DescribeGroupsResponseDescribedGroupMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata,
                member_assignment=m.assignment,
            )
            for m in d.members
        ],
        authorized_operations=state.authorized_operations(context, ResourceType.GROUP, d.group_id)
        if operations
        else INT32_MIN,
    )


async def delete_groups(
    state: BrokerState, context: RequestContext, request: DeleteGroupsRequest
) -> DeleteGroupsResponse:
    service = state.groups
    deletable = state.authorized_names(
        context, Operation.DELETE, ResourceType.GROUP, request.groups_names
    )
    outcome = service.coordinator.delete_groups(
        [g for g in request.groups_names if g in deletable], service.now_ms()
    )
    service.apply(outcome.step)
    refused = [
        (group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED)
        for group_id in request.groups_names
        if group_id not in deletable
    ]
    return DeleteGroupsResponse(
        results=[
            DeleteGroupsResponseDeletableGroupResult(group_id=group_id, error_code=int(error))
            for group_id, error in [*outcome.results, *refused]
        ]
    )


HANDLERS = [
    ApiHandler(16, 0, 5, list_groups),
    ApiHandler(15, 0, 5, describe_groups),
    ApiHandler(42, 0, 2, delete_groups),
]
