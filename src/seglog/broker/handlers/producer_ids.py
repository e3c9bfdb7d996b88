"""InitProducerId (key 22, v0-4): producer ids for idempotent producers.

Without a ``transactional_id`` Kafka always hands out a **new** producer id with epoch 0, even
when a v3+ request names its current id and epoch (``TransactionCoordinator.handleInitProducerId``);
so does this server. Ids come from the log manager's :class:`ProducerIdManager`: blocks reserved
durably before use, above every id already in the logs, so an id never repeats across restarts
or collides with a copied broker's producers.

A ``transactional_id`` goes to the transaction coordinator (``state.txns``; WRITE on the id is
required, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED): a new producer id at epoch 0, an epoch
bump that fences older producers of the id, CONCURRENT_TRANSACTIONS while an open transaction
of the id is being aborted (the client retries), INVALID_TRANSACTION_TIMEOUT for a
``transaction_timeout_ms`` above ``transaction.max.timeout.ms``. A v3+ request naming only one
of producer id and epoch is INVALID_REQUEST; PRODUCER_FENCED is answered
INVALID_PRODUCER_EPOCH before v4, as Kafka does.

An idempotent producer (no transactional id) needs IDEMPOTENT_WRITE on the cluster or WRITE
on at least one topic (CLUSTER_AUTHORIZATION_FAILED), as Kafka's ``handleInitProducerIdRequest``.
"""

from __future__ import annotations

import logging

from seglog.broker.authorization import CLUSTER_NAME, Operation, ResourceType
from seglog.broker.registry import ApiHandler
from seglog.broker.state import BrokerState, RequestContext
from seglog.errors import SeglogError
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import InitProducerIdRequest, InitProducerIdResponse

API_KEY = 22
LOG = logging.getLogger("seglog.serve")


def _refusal(
    state: BrokerState, context: RequestContext, request: InitProducerIdRequest
) -> ErrorCode | None:
    """Kafka's authorization: WRITE on the transactional id (else
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED); without one, IDEMPOTENT_WRITE on the cluster or
    WRITE on some topic (else CLUSTER_AUTHORIZATION_FAILED)."""
    transactional_id = request.transactional_id
    if transactional_id is not None:
        if state.authorize(
            context, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
        ):
            return None
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if state.authorize(
        context, Operation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME
    ) or state.authorize_by_resource_type(context, Operation.WRITE, ResourceType.TOPIC):
        return None
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED


async def handle(
    state: BrokerState, context: RequestContext, request: InitProducerIdRequest
) -> InitProducerIdResponse:
    refusal = _refusal(state, context, request)
    if refusal is not None:
        return InitProducerIdResponse(error_code=int(refusal), producer_id=-1, producer_epoch=-1)
    if request.transactional_id is not None:
        return await _transactional(state, context, request, request.transactional_id)
    try:
        producer_id = state.manager.producer_ids.next_producer_id()
    except SeglogError as error:
        LOG.error("InitProducerId: cannot reserve producer ids: %s", error)
        return InitProducerIdResponse(
            error_code=int(ErrorCode.KAFKA_STORAGE_ERROR), producer_id=-1, producer_epoch=-1
        )
    return InitProducerIdResponse(error_code=0, producer_id=producer_id, producer_epoch=0)


def _refused(error: ErrorCode) -> InitProducerIdResponse:
    return InitProducerIdResponse(error_code=int(error), producer_id=-1, producer_epoch=-1)


async def _transactional(
    state: BrokerState,
    context: RequestContext,
    request: InitProducerIdRequest,
    transactional_id: str,
) -> InitProducerIdResponse:
    service = state.txns
    if service is None:
        return _refused(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if not state.authorize(
        context, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
    ):
        return _refused(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    named = (request.producer_id, request.producer_epoch)
    if named == (-1, -1):
        expected = None
    elif -1 in named:
        return _refused(ErrorCode.INVALID_REQUEST)
    else:
        expected = named
    result = await service.init_producer_id(
        transactional_id, request.transaction_timeout_ms, expected
    )
    error = result.error
    if error is ErrorCode.PRODUCER_FENCED and context.api_version < 4:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    if error is not ErrorCode.NONE:
        return _refused(error)
    return InitProducerIdResponse(
        error_code=0, producer_id=result.producer_id, producer_epoch=result.producer_epoch
    )


HANDLERS = [ApiHandler(API_KEY, 0, 4, handle)]
