"""TxnOffsetCommit (28, v0-3): a transactional producer's consumed offsets, pending until its
transaction ends (``send_offsets_to_transaction``).

In Kafka's order (``KafkaApis.handleTxnOffsetCommitRequest``, then the group coordinator):

1. WRITE on the transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every
   partition; READ on the group, else GROUP_AUTHORIZATION_FAILED;
2. per topic: READ on it, else TOPIC_AUTHORIZATION_FAILED; a topic or partition that is not
   here, UNKNOWN_TOPIC_OR_PARTITION; the rest go to the coordinator (when none is left, the
   answer is those errors);
3. an empty group id is INVALID_GROUP_ID; ``__consumer_offsets`` that cannot be made here,
   COORDINATOR_NOT_AVAILABLE; when the server runs a transaction coordinator
   (``BrokerState.txns``), the request is verified with it as Kafka 3.6+ does (KIP-890): the
   producer id and epoch must be the transactional id's and the group's ``__consumer_offsets``
   partition must be in its open transaction (AddOffsetsToTxn), else its error, translated as
   Kafka translates it for these versions (PRODUCER_FENCED -> INVALID_PRODUCER_EPOCH,
   TRANSACTION_ABORTABLE -> INVALID_TXN_STATE), so a zombie or a late request never opens a
   transaction in ``__consumer_offsets`` that no marker would close; then the group's check
   (v3 carries generation, member id and instance id and is checked as an OffsetCommit is,
   except that a rebalance does not refuse it; v0-2 carry none and are accepted whatever the
   group does; an unknown group is created Empty) gives one error for every remaining
   partition;
4. metadata longer than ``offset.metadata.max.bytes``: OFFSET_METADATA_TOO_LARGE;
5. the rest are appended as **one transactional batch** of the request's producer id and epoch
   to the group's ``__consumer_offsets`` partition, and answered only after that append. They
   stay pending until the transaction coordinator writes the marker to that partition and
   calls ``GroupService.complete_transaction`` (OffsetFetch shows the committed offsets until
   then; with ``require_stable`` it answers UNSTABLE_OFFSET_COMMIT for them).

Append failures: an epoch older than the producer's last one in that partition is
INVALID_PRODUCER_EPOCH (the client's fencing error), an open transaction that breaks the
log's producer rules INVALID_TXN_STATE, a batch too large UNKNOWN_SERVER_ERROR (Kafka's
coordinator maps MESSAGE_TOO_LARGE so), anything else COORDINATOR_NOT_AVAILABLE (retriable).

Decisions where Kafka is silent: a negative producer id cannot name a transaction and is
INVALID_PRODUCER_ID_MAPPING (Kafka would write the offsets as plain commits), a negative epoch
INVALID_PRODUCER_EPOCH. A server without a transaction coordinator verifies nothing (the
offsets stay pending until a marker is written by other means, e.g. ``WriteTxnMarkers``).
"""

from __future__ import annotations

import logging

from seglog.broker.authorization import Operation, ResourceType
from seglog.broker.groups.offsets_store import OFFSETS_TOPIC, OffsetAndMetadata
from seglog.broker.registry import ApiHandler
from seglog.broker.state import BrokerState, RequestContext
from seglog.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    RecordTooLargeError,
    SeglogError,
)
from seglog.format.topic_names import TopicPartition
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponseTxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTxnOffsetCommitResponseTopic,
)

LOG = logging.getLogger("seglog.serve.groups")

_APPEND_ERRORS: tuple[tuple[type[SeglogError], ErrorCode], ...] = (
    (InvalidProducerEpochError, ErrorCode.INVALID_PRODUCER_EPOCH),
    (InvalidTxnStateError, ErrorCode.INVALID_TXN_STATE),
    (RecordTooLargeError, ErrorCode.UNKNOWN_SERVER_ERROR),
)


#: How a failed verification is answered (Kafka's translations for TxnOffsetCommit v0-3).
_VERIFY_ERRORS = {
    ErrorCode.PRODUCER_FENCED: ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.TRANSACTION_ABORTABLE: ErrorCode.INVALID_TXN_STATE,
}


def verify_with_coordinator(state: BrokerState, request: TxnOffsetCommitRequest) -> ErrorCode:
    """The transaction coordinator's verdict on the request (NONE without a coordinator)."""
    txns = getattr(state, "txns", None)
    if txns is None:
        return ErrorCode.NONE
    offsets_tp = TopicPartition(OFFSETS_TOPIC, state.groups.store.partition_for(request.group_id))
    error = ErrorCode(
        txns.verify(
            request.transactional_id, request.producer_id, request.producer_epoch, offsets_tp
        )
    )
    return _VERIFY_ERRORS.get(error, error)


def append_error_code(failure: SeglogError) -> ErrorCode:
    """The answer for a failed transactional append (see the module docstring)."""
    for kind, code in _APPEND_ERRORS:
        if isinstance(failure, kind):
            return code
    return ErrorCode.COORDINATOR_NOT_AVAILABLE


def _answer(
    request: TxnOffsetCommitRequest, error_of: dict[TopicPartition, ErrorCode]
) -> TxnOffsetCommitResponse:
    return TxnOffsetCommitResponse(
        topics=[
            TxnOffsetCommitResponseTxnOffsetCommitResponseTopic(
                name=topic.name,
                partitions=[
                    TxnOffsetCommitResponseTxnOffsetCommitResponsePartition(
                        partition_index=p.partition_index,
                        error_code=int(error_of[TopicPartition(topic.name, p.partition_index)]),
                    )
                    for p in topic.partitions
                ],
            )
            for topic in request.topics
        ]
    )


async def txn_offset_commit(
    state: BrokerState, context: RequestContext, request: TxnOffsetCommitRequest
) -> TxnOffsetCommitResponse:
    """TxnOffsetCommit (see the module docstring)."""
    keys = [TopicPartition(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    if not state.authorize(
        context, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id
    ):
        return _answer(
            request, dict.fromkeys(keys, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        )
    if not state.authorize(context, Operation.READ, ResourceType.GROUP, request.group_id):
        return _answer(request, dict.fromkeys(keys, ErrorCode.GROUP_AUTHORIZATION_FAILED))
    errors: dict[TopicPartition, ErrorCode] = {}
    wanted: dict[TopicPartition, OffsetAndMetadata] = {}
    for topic in request.topics:
        allowed = state.authorize(context, Operation.READ, ResourceType.TOPIC, topic.name)
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            if not allowed:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif state.log_of(topic.name, p.partition_index) is None:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                wanted[tp] = OffsetAndMetadata(
                    p.committed_offset, p.committed_leader_epoch, p.committed_metadata or ""
                )
    if wanted:
        errors.update(_commit(state, request, wanted))
    return _answer(request, errors)


def _commit(
    state: BrokerState,
    request: TxnOffsetCommitRequest,
    wanted: dict[TopicPartition, OffsetAndMetadata],
) -> dict[TopicPartition, ErrorCode]:
    """The coordinator's part: the group's checks, then one transactional append."""
    service = state.groups
    if not request.group_id:
        return dict.fromkeys(wanted, ErrorCode.INVALID_GROUP_ID)
    if request.producer_id < 0:
        return dict.fromkeys(wanted, ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    if request.producer_epoch < 0:
        return dict.fromkeys(wanted, ErrorCode.INVALID_PRODUCER_EPOCH)
    if not service.ensure_offsets_topic():
        return dict.fromkeys(wanted, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    verified = verify_with_coordinator(state, request)
    if verified is not ErrorCode.NONE:
        return dict.fromkeys(wanted, verified)
    now = service.now_ms()
    error = service.coordinator.validate_offset_commit(
        request.group_id,
        request.generation_id,
        request.member_id,
        request.group_instance_id,
        now,
        transactional=True,
    )
    if error is not ErrorCode.NONE:
        return dict.fromkeys(wanted, error)
    errors: dict[TopicPartition, ErrorCode] = {}
    values: dict[TopicPartition, OffsetAndMetadata] = {}
    for tp, value in wanted.items():
        if service.store.is_metadata_too_large(value.metadata):
            errors[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
        else:
            values[tp] = value
    if values:
        try:
            service.store.commit_transactional(
                request.group_id,
                values,
                producer_id=request.producer_id,
                producer_epoch=request.producer_epoch,
                now_ms=now,
            )
            outcome = ErrorCode.NONE
        except SeglogError as failure:
            outcome = append_error_code(failure)
            LOG.log(
                logging.INFO if outcome is ErrorCode.INVALID_PRODUCER_EPOCH else logging.ERROR,
                "TxnOffsetCommit of group %s (producer %d epoch %d) failed: %s",
                request.group_id,
                request.producer_id,
                request.producer_epoch,
                failure,
            )
        errors.update(dict.fromkeys(values, outcome))
    return errors


HANDLERS = [ApiHandler(28, 0, 3, txn_offset_commit)]
