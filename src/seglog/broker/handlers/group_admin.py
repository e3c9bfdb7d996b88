"""ListGroups (key 16, v0-5), DescribeGroups (15, v0-5), DeleteGroups (42, v0-2).

Answered from the group coordinator's live state (groups restored at start-up included).
DescribeGroups of an unknown group answers state ``Dead`` with no members and no error, as Kafka
does before v6; member metadata and assignments are the opaque bytes the clients sent.
DeleteGroups removes only Empty groups (NON_EMPTY_GROUP otherwise, GROUP_ID_NOT_FOUND for an
unknown one) and writes tombstones for the group and all its offsets before answering.
"""

from __future__ import annotations

from seglog.broker.registry import ApiHandler
from seglog.broker.state import INT32_MIN, BrokerState, RequestContext
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
    described = state.groups.coordinator.describe_groups(request.groups)
    return DescribeGroupsResponse(
        groups=[
            DescribeGroupsResponseDescribedGroup(
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
                authorized_operations=INT32_MIN,
            )
            for d in described
        ]
    )


async def delete_groups(
    state: BrokerState, context: RequestContext, request: DeleteGroupsRequest
) -> DeleteGroupsResponse:
    service = state.groups
    outcome = service.coordinator.delete_groups(request.groups_names, service.now_ms())
    service.apply(outcome.step)
    return DeleteGroupsResponse(
        results=[
            DeleteGroupsResponseDeletableGroupResult(group_id=group_id, error_code=int(error))
            for group_id, error in outcome.results
        ]
    )


HANDLERS = [
    ApiHandler(16, 0, 5, list_groups),
    ApiHandler(15, 0, 5, describe_groups),
    ApiHandler(42, 0, 2, delete_groups),
]
