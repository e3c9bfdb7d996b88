"""AddPartitionsToTxn (key 24, v0-3), AddOffsetsToTxn (25, v0-3), EndTxn (26, v0-3),
DescribeTransactions (65, v0), ListTransactions (66, v0-1).

The rules live in :mod:`seglog.broker.txns` (pure) and :mod:`seglog.broker.txn_service`; this
module turns wire messages into their inputs, checks what Kafka's ``KafkaApis`` checks before
the coordinator sees a request, and turns results into responses:

* every request needs WRITE on the transactional id (DESCRIBE for the two inspection APIs),
  else TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
* AddPartitionsToTxn: a partition of a topic the principal may not WRITE (or of an internal
  topic) gets
  TOPIC_AUTHORIZATION_FAILED, one that does not exist UNKNOWN_TOPIC_OR_PARTITION, and then the
  others OPERATION_NOT_ATTEMPTED (nothing is added); otherwise every partition carries the
  coordinator's answer;
* AddOffsetsToTxn needs READ on the group (GROUP_AUTHORIZATION_FAILED) and adds the group's
  ``__consumer_offsets`` partition to the transaction;
* DescribeTransactions shows only the partitions of topics the principal may DESCRIBE (the
  others are left out, not refused), as Kafka filters them;
* ListTransactions lists only ids the principal may DESCRIBE;
* PRODUCER_FENCED is answered INVALID_PRODUCER_EPOCH to versions 0-1 (they predate it).

Version 4+ of AddPartitionsToTxn (broker-to-broker verification batches) and EndTxn v4+
(transactions version 2, an epoch bump per transaction) are not served: clients fall back to
the versions here, whose rules the coordinator implements.
"""

from __future__ import annotations

from seglog.broker.authorization import Operation, ResourceType
from seglog.broker.groups.offsets_store import OFFSETS_TOPIC
from seglog.broker.registry import ApiHandler
from seglog.broker.state import INTERNAL_TOPICS, BrokerState, RequestContext
from seglog.broker.txn_service import TxnService
from seglog.format.topic_names import TopicPartition
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResponseAddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnResponseAddPartitionsToTxnTopicResult,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    DescribeTransactionsResponseTopicData,
    DescribeTransactionsResponseTransactionState,
    EndTxnRequest,
    EndTxnResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
    ListTransactionsResponseTransactionState,
)


def _write_allowed(state: BrokerState, context: RequestContext, transactional_id: str) -> bool:
    return state.authorize(
        context, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
    )


def _service(state: BrokerState) -> TxnService | None:
    return state.txns


def _for_version(error: ErrorCode, version: int, fenced_from: int) -> ErrorCode:
    """Clients older than ``fenced_from`` know no PRODUCER_FENCED: Kafka answers them
    INVALID_PRODUCER_EPOCH instead."""
    if error is ErrorCode.PRODUCER_FENCED and version < fenced_from:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


def _partition_results(
    errors: dict[TopicPartition, ErrorCode],
) -> list[AddPartitionsToTxnResponseAddPartitionsToTxnTopicResult]:
    by_topic: dict[str, list[AddPartitionsToTxnResponseAddPartitionsToTxnPartitionResult]] = {}
    for tp, error in errors.items():
        by_topic.setdefault(tp.topic, []).append(
            AddPartitionsToTxnResponseAddPartitionsToTxnPartitionResult(
                partition_index=tp.partition, partition_error_code=int(error)
            )
        )
    return [
        AddPartitionsToTxnResponseAddPartitionsToTxnTopicResult(name=topic, results_by_partition=r)
        for topic, r in by_topic.items()
    ]


async def add_partitions_to_txn(
    state: BrokerState, context: RequestContext, request: AddPartitionsToTxnRequest
) -> AddPartitionsToTxnResponse:
    transactional_id = request.v3_and_below_transactional_id
    partitions = [
        TopicPartition(topic.name, index)
        for topic in request.v3_and_below_topics
        for index in topic.partitions
    ]
    service = _service(state)
    if service is None:
        outcome = dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    elif not _write_allowed(state, context, transactional_id):
        outcome = dict.fromkeys(partitions, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    else:
        refused: dict[TopicPartition, ErrorCode] = {}
        for tp in partitions:
            if tp.topic in INTERNAL_TOPICS or not state.authorize(
                context, Operation.WRITE, ResourceType.TOPIC, tp.topic
            ):
                refused[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif state.log_of(tp.topic, tp.partition) is None:
                refused[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if refused:
            outcome = {tp: refused.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in partitions}
        else:
            error = await service.add_partitions(
                transactional_id,
                request.v3_and_below_producer_id,
                request.v3_and_below_producer_epoch,
                partitions,
            )
            outcome = dict.fromkeys(partitions, _for_version(error, context.api_version, 2))
    return AddPartitionsToTxnResponse(results_by_topic_v3_and_below=_partition_results(outcome))


async def add_offsets_to_txn(
    state: BrokerState, context: RequestContext, request: AddOffsetsToTxnRequest
) -> AddOffsetsToTxnResponse:
    service = _service(state)
    if service is None:
        return AddOffsetsToTxnResponse(error_code=int(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    if not _write_allowed(state, context, request.transactional_id):
        return AddOffsetsToTxnResponse(
            error_code=int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        )
    if not state.authorize(context, Operation.READ, ResourceType.GROUP, request.group_id):
        return AddOffsetsToTxnResponse(error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    if not state.groups.ensure_offsets_topic():
        return AddOffsetsToTxnResponse(error_code=int(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    partition = state.groups.store.partition_for(request.group_id)
    error = await service.add_partitions(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        [TopicPartition(OFFSETS_TOPIC, partition)],
    )
    return AddOffsetsToTxnResponse(error_code=int(_for_version(error, context.api_version, 2)))


async def end_txn(
    state: BrokerState, context: RequestContext, request: EndTxnRequest
) -> EndTxnResponse:
    service = _service(state)
    if service is None:
        return EndTxnResponse(error_code=int(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    if not _write_allowed(state, context, request.transactional_id):
        return EndTxnResponse(error_code=int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    error = await service.end_txn(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        commit=request.committed,
    )
    return EndTxnResponse(error_code=int(_for_version(error, context.api_version, 2)))


async def describe_transactions(
    state: BrokerState, context: RequestContext, request: DescribeTransactionsRequest
) -> DescribeTransactionsResponse:
    service = _service(state)
    answers: list[DescribeTransactionsResponseTransactionState] = []
    for transactional_id in request.transactional_ids:
        if service is None:
            answers.append(
                DescribeTransactionsResponseTransactionState(
                    error_code=int(ErrorCode.COORDINATOR_NOT_AVAILABLE),
                    transactional_id=transactional_id,
                )
            )
            continue
        if not state.authorize(
            context, Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, transactional_id
        ):
            answers.append(
                DescribeTransactionsResponseTransactionState(
                    error_code=int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
                    transactional_id=transactional_id,
                )
            )
            continue
        d = service.describe(transactional_id)
        topics: dict[str, list[int]] = {}
        for tp in d.partitions:
            topics.setdefault(tp.topic, []).append(tp.partition)
        describable = state.authorized_names(
            context, Operation.DESCRIBE, ResourceType.TOPIC, topics
        )
        answers.append(
            DescribeTransactionsResponseTransactionState(
                error_code=int(d.error),
                transactional_id=transactional_id,
                transaction_state=d.state,
                transaction_timeout_ms=d.timeout_ms,
                transaction_start_time_ms=d.start_ms,
                producer_id=d.producer_id,
                producer_epoch=d.producer_epoch,
                topics=[
                    DescribeTransactionsResponseTopicData(topic=topic, partitions=parts)
                    for topic, parts in topics.items()
                    if topic in describable
                ],
            )
        )
    return DescribeTransactionsResponse(transaction_states=answers)


async def list_transactions(
    state: BrokerState, context: RequestContext, request: ListTransactionsRequest
) -> ListTransactionsResponse:
    service = _service(state)
    if service is None:
        return ListTransactionsResponse(error_code=int(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    duration = request.duration_filter if context.api_version >= 1 else -1
    listing = service.list_transactions(
        request.state_filters, request.producer_id_filters, duration
    )
    return ListTransactionsResponse(
        error_code=int(listing.error),
        unknown_state_filters=list(listing.unknown_state_filters),
        transaction_states=[
            ListTransactionsResponseTransactionState(
                transactional_id=t.transactional_id,
                producer_id=t.producer_id,
                transaction_state=t.state,
            )
            for t in listing.transactions
            if state.authorize(
                context, Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, t.transactional_id
            )
        ],
    )


HANDLERS = [
    ApiHandler(24, 0, 3, add_partitions_to_txn),
    ApiHandler(25, 0, 3, add_offsets_to_txn),
    ApiHandler(26, 0, 3, end_txn),
    ApiHandler(65, 0, 0, describe_transactions),
    ApiHandler(66, 0, 1, list_transactions),
]
