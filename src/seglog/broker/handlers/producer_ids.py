"""InitProducerId (key 22, v0-4): producer ids for idempotent producers.

Without a ``transactional_id`` Kafka always hands out a **new** producer id with epoch 0, even
when a v3+ request names its current id and epoch (``TransactionCoordinator.handleInitProducerId``);
so does this server. Ids come from the log manager's :class:`ProducerIdManager`: blocks reserved
durably before use, above every id already in the logs, so an id never repeats across restarts
or collides with a copied broker's producers.

A ``transactional_id`` needs the transaction coordinator, which this server does not run: the
answer is COORDINATOR_NOT_AVAILABLE (the transaction APIs are not advertised either, so clients
learn it before they get here).
"""

from __future__ import annotations

import logging

from seglog.broker.registry import ApiHandler
from seglog.broker.state import BrokerState, RequestContext
from seglog.errors import SeglogError
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import InitProducerIdRequest, InitProducerIdResponse

API_KEY = 22
LOG = logging.getLogger("seglog.serve")


async def handle(
    state: BrokerState, context: RequestContext, request: InitProducerIdRequest
) -> InitProducerIdResponse:
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
