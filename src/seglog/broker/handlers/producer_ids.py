"""InitProducerId (key 22, v0-4): producer ids for idempotent producers.

Without a ``transactional_id`` Kafka always hands out a **new** producer id with epoch 0, even
when a v3+ request names its current id and epoch (``TransactionCoordinator.handleInitProducerId``);
so does this server. Ids come from the log manager's :class:`ProducerIdManager`: blocks reserved
durably before use, above every id already in the logs, so an id never repeats across restarts
or collides with a copied broker's producers.

A ``transactional_id`` needs the transaction coordinator, which this server does not run: the
answer is COORDINATOR_NOT_AVAILABLE (the transaction APIs are not advertised either, so clients
learn it before they get here).

Authorization comes first (Kafka's ``handleInitProducerIdRequest``): a transactional id needs
WRITE on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent producer IDEMPOTENT_WRITE on
the cluster or WRITE on at least one topic (CLUSTER_AUTHORIZATION_FAILED).
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
        return InitProducerIdResponse(
            error_code=int(ErrorCode.COORDINATOR_NOT_AVAILABLE), producer_id=-1, producer_epoch=-1
        )
    try:
        producer_id = state.manager.producer_ids.next_producer_id()
    except SeglogError as error:
        LOG.error("InitProducerId: cannot reserve producer ids: %s", error)
        return InitProducerIdResponse(
            error_code=int(ErrorCode.KAFKA_STORAGE_ERROR), producer_id=-1, producer_epoch=-1
        )
    return InitProducerIdResponse(error_code=0, producer_id=producer_id, producer_epoch=0)


HANDLERS = [ApiHandler(API_KEY, 0, 4, handle)]
