"""DescribeAcls (key 29), CreateAcls (30), DeleteAcls (31), v1-3: the ACLs on the wire.

As Kafka's ``AclApis``:

* DescribeAcls needs DESCRIBE on the cluster, CreateAcls and DeleteAcls ALTER on the cluster;
  without it the answer is CLUSTER_AUTHORIZATION_FAILED (the top-level error of DescribeAcls,
  every creation's or filter's error of the others) and nothing changes;
* a server without ``authorizer.class.name`` answers SECURITY_DISABLED;
* a binding Kafka refuses (ANY resource type, MATCH/ANY pattern, ANY operation or permission,
  empty name, a cluster not named ``kafka-cluster``, a principal without ``Type:``) gets
  INVALID_REQUEST with the reason, per creation; the others of the request are created;
* more than ``MAX_BINDINGS`` bindings in all: INVALID_REQUEST for the request's creations;
* a filter with an UNKNOWN code gets INVALID_REQUEST (DescribeAcls: the whole answer);
* DescribeAcls groups the matching bindings by resource pattern.

Creations and deletions are durable when the response is sent (see
:class:`~seglog.broker.acl.authorizer.AclAuthorizer`).
"""

from __future__ import annotations

import logging

from seglog.broker.acl.model import AclBinding, AclFilter, binding_of, filter_of
from seglog.broker.authorization import CLUSTER_NAME, Operation, ResourceType
from seglog.broker.registry import ApiHandler
from seglog.broker.state import BrokerState, RequestContext
from seglog.errors import InvalidAclError, SeglogError
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    CreateAclsRequest,
    CreateAclsResponse,
    CreateAclsResponseAclCreationResult,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DeleteAclsResponseDeleteAclsFilterResult,
    DeleteAclsResponseDeleteAclsMatchingAcl,
    DescribeAclsRequest,
    DescribeAclsResponse,
    DescribeAclsResponseAclDescription,
    DescribeAclsResponseDescribeAclsResource,
)

LOG = logging.getLogger("seglog.serve")
DISABLED = "No Authorizer is configured on the broker"


def _denied(operation: Operation) -> str:
    return f"the principal may not {operation.name} the cluster"


async def describe_acls(
    state: BrokerState, context: RequestContext, request: DescribeAclsRequest
) -> DescribeAclsResponse:
    if not state.authorize(context, Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return DescribeAclsResponse(
            error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
            error_message=_denied(Operation.DESCRIBE),
        )
    authorizer = state.acls
    if authorizer is None:
        return DescribeAclsResponse(
            error_code=int(ErrorCode.SECURITY_DISABLED), error_message=DISABLED
        )
    try:
        selection = filter_of(
            request.resource_type_filter,
            request.resource_name_filter,
            request.pattern_type_filter,
            request.principal_filter,
            request.host_filter,
            request.operation,
            request.permission_type,
        )
    except InvalidAclError as error:
        return DescribeAclsResponse(
            error_code=int(ErrorCode.INVALID_REQUEST), error_message=str(error)
        )
    grouped: dict[tuple[int, str, int], list[AclBinding]] = {}
    for acl in authorizer.describe(selection):
        key = (int(acl.resource_type), acl.resource_name, int(acl.pattern_type))
        grouped.setdefault(key, []).append(acl)
    return DescribeAclsResponse(
        error_code=0,
        error_message=None,
        resources=[
            DescribeAclsResponseDescribeAclsResource(
                resource_type=resource_type,
                resource_name=name,
                pattern_type=pattern_type,
                acls=[
                    DescribeAclsResponseAclDescription(
                        principal=acl.principal,
                        host=acl.host,
                        operation=int(acl.operation),
                        permission_type=int(acl.permission),
                    )
                    for acl in acls
                ],
            )
            for (resource_type, name, pattern_type), acls in grouped.items()
        ],
    )


def _creation_result(
    code: ErrorCode, message: str | None = None
) -> CreateAclsResponseAclCreationResult:
    return CreateAclsResponseAclCreationResult(error_code=int(code), error_message=message)


async def create_acls(
    state: BrokerState, context: RequestContext, request: CreateAclsRequest
) -> CreateAclsResponse:
    creations = request.creations
    if not state.authorize(context, Operation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        refusal = _denied(Operation.ALTER)
        return CreateAclsResponse(
            results=[
                _creation_result(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, refusal) for _ in creations
            ]
        )
    authorizer = state.acls
    if authorizer is None:
        return CreateAclsResponse(
            results=[_creation_result(ErrorCode.SECURITY_DISABLED, DISABLED) for _ in creations]
        )
    results: list[CreateAclsResponseAclCreationResult] = []
    valid: list[AclBinding] = []
    for creation in creations:
        try:
            acl = binding_of(
                creation.resource_type,
                creation.resource_name,
                creation.resource_pattern_type,
                creation.principal,
                creation.host,
                creation.operation,
                creation.permission_type,
            )
        except InvalidAclError as error:
            results.append(_creation_result(ErrorCode.INVALID_REQUEST, str(error)))
            continue
        valid.append(acl)
        results.append(_creation_result(ErrorCode.NONE))
    if valid:
        try:
            authorizer.create(valid)
        except SeglogError as error:
            code = ErrorCode.UNKNOWN_SERVER_ERROR
            if isinstance(error, InvalidAclError):
                code = ErrorCode.INVALID_REQUEST
            else:
                LOG.error("CreateAcls from %s failed: %s", context.principal, error)
            return CreateAclsResponse(
                results=[r if r.error_code else _creation_result(code, str(error)) for r in results]
            )
        for acl in valid:
            LOG.info("ACL created by %s: %s", context.principal, acl)
    return CreateAclsResponse(results=results)


def _filter_error(code: ErrorCode, message: str) -> DeleteAclsResponseDeleteAclsFilterResult:
    return DeleteAclsResponseDeleteAclsFilterResult(error_code=int(code), error_message=message)


async def delete_acls(
    state: BrokerState, context: RequestContext, request: DeleteAclsRequest
) -> DeleteAclsResponse:
    filters = request.filters
    if not state.authorize(context, Operation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        refusal = _denied(Operation.ALTER)
        return DeleteAclsResponse(
            filter_results=[
                _filter_error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, refusal) for _ in filters
            ]
        )
    authorizer = state.acls
    if authorizer is None:
        return DeleteAclsResponse(
            filter_results=[_filter_error(ErrorCode.SECURITY_DISABLED, DISABLED) for _ in filters]
        )
    selections: list[AclFilter | InvalidAclError] = []
    for wanted in filters:
        try:
            selections.append(
                filter_of(
                    wanted.resource_type_filter,
                    wanted.resource_name_filter,
                    wanted.pattern_type_filter,
                    wanted.principal_filter,
                    wanted.host_filter,
                    wanted.operation,
                    wanted.permission_type,
                )
            )
        except InvalidAclError as error:
            selections.append(error)
    valid = [s for s in selections if isinstance(s, AclFilter)]
    try:
        removed = iter(authorizer.delete(valid))
    except SeglogError as error:
        LOG.error("DeleteAcls from %s failed: %s", context.principal, error)
        return DeleteAclsResponse(
            filter_results=[
                _filter_error(ErrorCode.UNKNOWN_SERVER_ERROR, str(error)) for _ in filters
            ]
        )
    results: list[DeleteAclsResponseDeleteAclsFilterResult] = []
    for selection in selections:
        if isinstance(selection, InvalidAclError):
            results.append(_filter_error(ErrorCode.INVALID_REQUEST, str(selection)))
            continue
        matched = next(removed)
        for acl in matched:
            LOG.info("ACL deleted by %s: %s", context.principal, acl)
        results.append(
            DeleteAclsResponseDeleteAclsFilterResult(
                error_code=0,
                error_message=None,
                matching_acls=[
                    DeleteAclsResponseDeleteAclsMatchingAcl(
                        error_code=0,
                        error_message=None,
                        resource_type=int(acl.resource_type),
                        resource_name=acl.resource_name,
                        pattern_type=int(acl.pattern_type),
                        principal=acl.principal,
                        host=acl.host,
                        operation=int(acl.operation),
                        permission_type=int(acl.permission),
                    )
                    for acl in matched
                ],
            )
        )
    return DeleteAclsResponse(filter_results=results)


HANDLERS = [
    ApiHandler(29, 1, 3, describe_acls),
    ApiHandler(30, 1, 3, create_acls),
    ApiHandler(31, 1, 3, delete_acls),
]
