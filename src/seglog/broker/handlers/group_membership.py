"""The classic consumer-group protocol's membership APIs, mapped onto the group coordinator.

FindCoordinator (key 10, v0-4), JoinGroup (11, v0-9), SyncGroup (14, v0-5), Heartbeat (12,
v0-4), LeaveGroup (13, v0-5). The rules live in :mod:`seglog.broker.groups` (pure); this module
turns wire messages into its inputs and its results into responses:

* FindCoordinator: this node for every group (v4+ batches keys in ``coordinator_keys``);
  ``__consumer_offsets`` is created on first use, with its own settings. A transaction
  coordinator (``key_type`` 1) is this node too (DESCRIBE on the transactional id needed, else
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED); ``__transaction_state`` is created on first use.
* JoinGroup v0 has no rebalance timeout: the session timeout stands in, as in Kafka. From v4 a
  join without a member id gets MEMBER_ID_REQUIRED and the id to rejoin with.
* LeaveGroup before v3 names one member; from v3 a batch with an answer per member.
* Authorization, before anything else (Kafka's ``KafkaApis``): FindCoordinator needs DESCRIBE
  on the group (GROUP_AUTHORIZATION_FAILED) or the transactional id
  (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), per key; JoinGroup, SyncGroup, Heartbeat and
  LeaveGroup need READ on the group (GROUP_AUTHORIZATION_FAILED, the group untouched).
"""

from __future__ import annotations

from seglog.broker.authorization import Operation, ResourceType
from seglog.broker.groups.model import JoinRequest, LeavingMember, SyncRequest
from seglog.broker.registry import ApiHandler
from seglog.broker.state import BrokerState, RequestContext
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinator,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseJoinGroupResponseMember,
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeaveGroupResponseMemberResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


def _coordinator_error(state: BrokerState, key_type: int) -> ErrorCode:
    """Whether this node can coordinate keys of ``key_type`` now (creating the coordinator's
    internal topic on first use)."""
    if key_type == TRANSACTION_KEY_TYPE:
        if state.txns is None or not state.txns.ensure_topic():
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return ErrorCode.NONE
    if key_type != GROUP_KEY_TYPE:
        return ErrorCode.INVALID_REQUEST
    if not state.groups.ensure_offsets_topic():
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return ErrorCode.NONE


def _why_not(key_type: int, error: ErrorCode) -> str:
    if error is ErrorCode.INVALID_REQUEST:
        return f"unknown coordinator key type {key_type}"
    if key_type == TRANSACTION_KEY_TYPE:
        return "__transaction_state cannot be created here (see the server's log)"
    return "__consumer_offsets cannot be created here (see the server's log)"


def _key_refusal(
    state: BrokerState, context: RequestContext, key_type: int, key: str
) -> ErrorCode | None:
    """Kafka's check of a coordinator key: DESCRIBE on the group or transactional id."""
    if key_type == GROUP_KEY_TYPE:
        if state.authorize(context, Operation.DESCRIBE, ResourceType.GROUP, key):
            return None
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    if key_type == TRANSACTION_KEY_TYPE:
        if state.authorize(context, Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
            return None
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    return None


def _refused_coordinator(key: str, code: ErrorCode) -> FindCoordinatorResponseCoordinator:
    return FindCoordinatorResponseCoordinator(
        key=key, node_id=-1, host="", port=-1, error_code=int(code), error_message=None
    )


async def find_coordinator(
    state: BrokerState, context: RequestContext, request: FindCoordinatorRequest
) -> FindCoordinatorResponse:
    endpoint = state.endpoint_for(context)
    key_type = request.key_type
    if context.api_version >= 4:
        refusals = {
            key: _key_refusal(state, context, key_type, key) for key in request.coordinator_keys
        }
        allowed = [key for key in request.coordinator_keys if refusals[key] is None]
        error = _coordinator_error(state, key_type) if allowed else ErrorCode.NONE
        found = error is ErrorCode.NONE
        coordinators = []
        for key in request.coordinator_keys:
            refusal = refusals[key]
            if refusal is not None:
                coordinators.append(_refused_coordinator(key, refusal))
                continue
            coordinators.append(
                FindCoordinatorResponseCoordinator(
                    key=key,
                    node_id=state.node_id if found else -1,
                    host=endpoint.host if found else "",
                    port=endpoint.port if found else -1,
                    error_code=int(error),
                    error_message=None if found else _why_not(key_type, error),
                )
            )
        return FindCoordinatorResponse(coordinators=coordinators)
    refusal = _key_refusal(state, context, key_type, request.key)
    if refusal is not None:
        return FindCoordinatorResponse(
            error_code=int(refusal), error_message=None, node_id=-1, host="", port=-1
        )
    error = _coordinator_error(state, key_type)
    found = error is ErrorCode.NONE
    return FindCoordinatorResponse(
        error_code=int(error),
        error_message=None,
        node_id=state.node_id if found else -1,
        host=endpoint.host if found else "",
        port=endpoint.port if found else -1,
    )


def _may_read(state: BrokerState, context: RequestContext, group_id: str) -> bool:
    """JoinGroup, SyncGroup, Heartbeat and LeaveGroup need READ on the group (Kafka)."""
    return state.authorize(context, Operation.READ, ResourceType.GROUP, group_id)


async def join_group(
    state: BrokerState, context: RequestContext, request: JoinGroupRequest
) -> JoinGroupResponse:
    version = context.api_version
    if not _may_read(state, context, request.group_id):
        return JoinGroupResponse(
            error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED),
            generation_id=-1,
            protocol_name=None if version >= 7 else "",
            leader="",
            member_id="",
        )
    rebalance_timeout = request.session_timeout_ms if version == 0 else request.rebalance_timeout_ms
    result = await state.groups.join(
        JoinRequest(
            group_id=request.group_id,
            member_id=request.member_id,
            group_instance_id=request.group_instance_id,
            client_id=context.client_id or "",
            client_host="/" + context.client_host,
            session_timeout_ms=request.session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout,
            protocol_type=request.protocol_type,
            protocols=tuple((p.name, p.metadata) for p in request.protocols),
            api_version=version,
        )
    )
    return JoinGroupResponse(
        error_code=int(result.error),
        generation_id=result.generation_id,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name if version >= 7 else (result.protocol_name or ""),
        leader=result.leader,
        skip_assignment=result.skip_assignment,
        member_id=result.member_id,
        members=[
            JoinGroupResponseJoinGroupResponseMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=m.metadata
            )
            for m in result.members
        ],
    )


async def sync_group(
    state: BrokerState, context: RequestContext, request: SyncGroupRequest
) -> SyncGroupResponse:
    if not _may_read(state, context, request.group_id):
        return SyncGroupResponse(
            error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED),
            protocol_type=None,
            protocol_name=None,
            assignment=b"",
        )
    result = await state.groups.sync(
        SyncRequest(
            group_id=request.group_id,
            generation_id=request.generation_id,
            member_id=request.member_id,
            group_instance_id=request.group_instance_id,
            assignments=tuple((a.member_id, a.assignment) for a in request.assignments),
            protocol_type=request.protocol_type if context.api_version >= 5 else None,
            protocol_name=request.protocol_name if context.api_version >= 5 else None,
        )
    )
    return SyncGroupResponse(
        error_code=int(result.error),
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        assignment=result.assignment,
    )


async def heartbeat(
    state: BrokerState, context: RequestContext, request: HeartbeatRequest
) -> HeartbeatResponse:
    if not _may_read(state, context, request.group_id):
        return HeartbeatResponse(error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    service = state.groups
    outcome = service.coordinator.heartbeat(
        request.group_id,
        request.generation_id,
        request.member_id,
        request.group_instance_id,
        service.now_ms(),
    )
    service.apply(outcome.step)
    return HeartbeatResponse(error_code=int(outcome.error))


async def leave_group(
    state: BrokerState, context: RequestContext, request: LeaveGroupRequest
) -> LeaveGroupResponse:
    if not _may_read(state, context, request.group_id):
        return LeaveGroupResponse(error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    service = state.groups
    if context.api_version >= 3:
        leaving = [LeavingMember(m.member_id, m.group_instance_id) for m in request.members]
    else:
        leaving = [LeavingMember(request.member_id)]
    outcome = service.coordinator.leave(request.group_id, leaving, service.now_ms())
    service.apply(outcome.step)
    if context.api_version < 3:
        return LeaveGroupResponse(error_code=int(outcome.single_error()))
    return LeaveGroupResponse(
        error_code=int(outcome.error),
        members=[
            LeaveGroupResponseMemberResponse(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                error_code=int(m.error),
            )
            for m in outcome.members
        ],
    )


HANDLERS = [
    ApiHandler(10, 0, 4, find_coordinator),
    ApiHandler(11, 0, 9, join_group),
    ApiHandler(14, 0, 5, sync_group),
    ApiHandler(12, 0, 4, heartbeat),
    ApiHandler(13, 0, 5, leave_group),
]
