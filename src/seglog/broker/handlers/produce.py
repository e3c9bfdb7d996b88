"""Produce (key 0, v3-11; advertised from v0, see ``seglog.broker.registry``).

Each partition's records go to :meth:`Log.append` unchanged, so the wire validates exactly as
every other writer does, and the answer carries Kafka's error code per partition:

=======================================  =============================================
refusal                                  error code
=======================================  =============================================
no WRITE ACL on the topic                TOPIC_AUTHORIZATION_FAILED (29), asked before
                                         the topic's existence (which is not disclosed)
unknown topic or partition               UNKNOWN_TOPIC_OR_PARTITION (3)
an internal topic (``__consumer_offsets``)  INVALID_TOPIC_EXCEPTION (17)
acks other than -1, 0, 1                 INVALID_REQUIRED_ACKS (21)
batch above ``max.message.bytes``        MESSAGE_TOO_LARGE (10)
damaged batch (CRC, lengths)             CORRUPT_MESSAGE (2)
keyless record on a compacted topic      INVALID_RECORD (87), with the record's index
timestamp outside the allowed window     INVALID_TIMESTAMP (32), with the record's index
other broken rule (magic, no batches)    INVALID_RECORD (87)
sequence gap / old epoch / unknown id    OUT_OF_ORDER_SEQUENCE_NUMBER (45) /
                                         INVALID_PRODUCER_EPOCH (47) / UNKNOWN_PRODUCER_ID (59)
transaction state                        INVALID_TXN_STATE (48)
the disk refused the write               KAFKA_STORAGE_ERROR (56)
a transactional batch, no transactional  TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53),
id in the request (or one the principal  every partition of the request (Kafka's answer)
may not WRITE)
no WRITE on the request's transactional  TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53),
id                                       every partition of the request
a transactional batch the transaction    INVALID_TXN_STATE (48): partition not added;
coordinator does not verify              INVALID_PRODUCER_EPOCH (47): producer fenced;
                                         INVALID_PRODUCER_ID_MAPPING (49): unknown producer;
                                         NOT_ENOUGH_REPLICAS (19): the transaction is ending
                                         (retriable, Kafka's translation for old clients)
=======================================  =============================================

A transactional batch is verified with the transaction coordinator before it is appended
(Kafka's transaction verification, KIP-890 part 1): its producer id and epoch must be the
transactional id's current ones and the partition must have been added to the open
transaction; so a zombie producer, or a batch sent after its transaction ended, never opens a
transaction that no marker would ever close (which would pin the partition's last stable
offset and stall ``read_committed`` consumers).

A refused partition writes nothing (``Log.append`` is all or nothing) and does not affect the
other partitions of the request. An idempotent producer's retry of a batch already written is
answered with the original offsets (``LogAppendInfo.duplicate``). On one node ``acks=1`` and
``acks=-1`` both answer after the local append; ``acks=0`` gets no response at all, except
that, as in Kafka, a refused partition closes the connection: the only signal an ``acks=0``
producer gets, which makes it refresh its metadata and reconnect.
"""

from __future__ import annotations

import logging
import struct

from seglog.broker.authorization import Operation, ResourceType
from seglog.broker.registry import ApiHandler, CloseConnection
from seglog.broker.state import INTERNAL_TOPICS, BrokerState, RequestContext
from seglog.errors import (
    CorruptRecordError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTimestampError,
    InvalidTxnStateError,
    KeylessRecordError,
    OutOfOrderSequenceError,
    RecordTooLargeError,
    SeglogError,
    StorageWriteError,
    TransactionCoordinatorFencedError,
    UnknownProducerIdError,
)
from seglog.format.batch import ATTRIBUTES_OFFSET, LOG_OVERHEAD, MAGIC_V2, TRANSACTIONAL_FLAG_MASK
from seglog.format.topic_names import TopicPartition
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.messages import (
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceResponse,
    ProduceResponseBatchIndexAndErrorMessage,
    ProduceResponsePartitionProduceResponse,
    ProduceResponseTopicProduceResponse,
)

API_KEY = 0
LOG = logging.getLogger("seglog.serve")
_BATCH_LENGTH = struct.Struct(">i")  # at byte 8 of a batch, after the base offset
_MAGIC_POSITION = 16
_PRODUCER_ID = struct.Struct(">q")
_PRODUCER_ID_OFFSET = 43
_ATTRIBUTES = struct.Struct(">h")
_PRODUCER_EPOCH = struct.Struct(">h")
_PRODUCER_EPOCH_OFFSET = 51

_ERRORS: tuple[tuple[type[BaseException], ErrorCode], ...] = (
    (RecordTooLargeError, ErrorCode.MESSAGE_TOO_LARGE),
    (KeylessRecordError, ErrorCode.INVALID_RECORD),
    (InvalidTimestampError, ErrorCode.INVALID_TIMESTAMP),
    (OutOfOrderSequenceError, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),
    (InvalidProducerEpochError, ErrorCode.INVALID_PRODUCER_EPOCH),
    (UnknownProducerIdError, ErrorCode.UNKNOWN_PRODUCER_ID),
    (InvalidTxnStateError, ErrorCode.INVALID_TXN_STATE),
    (TransactionCoordinatorFencedError, ErrorCode.TRANSACTION_COORDINATOR_FENCED),
    (CorruptRecordError, ErrorCode.CORRUPT_MESSAGE),
    (InvalidRecordError, ErrorCode.INVALID_RECORD),
    (StorageWriteError, ErrorCode.KAFKA_STORAGE_ERROR),
)


def error_code_of(error: BaseException) -> ErrorCode:
    """Kafka's error code for an append refusal (the table of the module docstring)."""
    for kind, code in _ERRORS:
        if isinstance(error, kind):
            return code
    return ErrorCode.UNKNOWN_SERVER_ERROR


def has_transactional_batch(records: bytes | bytearray | memoryview) -> bool:
    """Whether a v2 batch of ``records`` is transactional and has a producer id (Kafka's
    ``ProduceRequest.hasTransactionalRecords``). Only headers are read; a truncated or
    non-v2 tail ends the scan (``Log.append`` judges those)."""
    view = memoryview(records)
    position = 0
    end = len(view)
    while position + _PRODUCER_ID_OFFSET + _PRODUCER_ID.size <= end:
        (length,) = _BATCH_LENGTH.unpack_from(view, position + 8)
        if view[position + _MAGIC_POSITION] != MAGIC_V2 or length <= 0:
            return False
        (attributes,) = _ATTRIBUTES.unpack_from(view, position + ATTRIBUTES_OFFSET)
        (producer_id,) = _PRODUCER_ID.unpack_from(view, position + _PRODUCER_ID_OFFSET)
        if attributes & TRANSACTIONAL_FLAG_MASK and producer_id >= 0:
            return True
        position += LOG_OVERHEAD + length
    return False


def transactional_producer(records: bytes | bytearray | memoryview) -> tuple[int, int] | None:
    """The producer id and epoch of the first transactional v2 batch of ``records`` with a
    producer id, or None (headers only, as :func:`has_transactional_batch`)."""
    view = memoryview(records)
    position = 0
    end = len(view)
    while position + _PRODUCER_EPOCH_OFFSET + _PRODUCER_EPOCH.size <= end:
        (length,) = _BATCH_LENGTH.unpack_from(view, position + 8)
        if view[position + _MAGIC_POSITION] != MAGIC_V2 or length <= 0:
            return None
        (attributes,) = _ATTRIBUTES.unpack_from(view, position + ATTRIBUTES_OFFSET)
        (producer_id,) = _PRODUCER_ID.unpack_from(view, position + _PRODUCER_ID_OFFSET)
        if attributes & TRANSACTIONAL_FLAG_MASK and producer_id >= 0:
            (epoch,) = _PRODUCER_EPOCH.unpack_from(view, position + _PRODUCER_EPOCH_OFFSET)
            return producer_id, epoch
        position += LOG_OVERHEAD + length
    return None


#: How a failed verification is answered to the producer (Kafka's translations).
_VERIFY_ERRORS = {
    ErrorCode.TRANSACTION_ABORTABLE: ErrorCode.INVALID_TXN_STATE,
    ErrorCode.PRODUCER_FENCED: ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.CONCURRENT_TRANSACTIONS: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_COORDINATOR: ErrorCode.NOT_ENOUGH_REPLICAS,
}


def _verify(
    state: BrokerState, transactional_id: str | None, producer: tuple[int, int], tp: TopicPartition
) -> ErrorCode:
    if state.txns is None or transactional_id is None:
        return ErrorCode.INVALID_TXN_STATE
    error = state.txns.verify(transactional_id, producer[0], producer[1], tp)
    return _VERIFY_ERRORS.get(error, error)


def _records_of(data: ProduceRequestPartitionProduceData) -> bytes | bytearray | memoryview | None:
    records = data.records
    return records if isinstance(records, (bytes, bytearray, memoryview)) else None


def _refused(
    index: int, code: ErrorCode, message: str | None
) -> ProduceResponsePartitionProduceResponse:
    return ProduceResponsePartitionProduceResponse(
        index=index, error_code=int(code), base_offset=-1, error_message=message
    )


def _append_one(
    state: BrokerState,
    topic: str,
    data: ProduceRequestPartitionProduceData,
    acks: int,
    authorized: bool,
    transactional_id: str | None,
) -> ProduceResponsePartitionProduceResponse:
    index = data.index
    if acks not in (-1, 0, 1):
        return _refused(index, ErrorCode.INVALID_REQUIRED_ACKS, f"acks={acks} is not -1, 0 or 1")
    if not authorized:
        return _refused(index, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
    if topic in INTERNAL_TOPICS:
        return _refused(
            index, ErrorCode.INVALID_TOPIC_EXCEPTION, f"cannot append to internal topic {topic}"
        )
    log = state.log_of(topic, index)
    if log is None:
        return _refused(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
    records = _records_of(data)
    if records is None:
        return _refused(index, ErrorCode.CORRUPT_MESSAGE, "no records in the produce request")
    producer = transactional_producer(records)
    if producer is not None:
        verified = _verify(state, transactional_id, producer, TopicPartition(topic, index))
        if verified is not ErrorCode.NONE:
            return _refused(
                index,
                verified,
                f"transaction verification failed for producer {producer[0]} epoch "
                f"{producer[1]} ({verified.name})",
            )
    try:
        info = log.append(records)
    except SeglogError as error:
        code = error_code_of(error)
        response = _refused(index, code, str(error))
        if isinstance(error, (KeylessRecordError, InvalidTimestampError)):
            response.record_errors = [
                ProduceResponseBatchIndexAndErrorMessage(
                    batch_index=error.record_index, batch_index_error_message=str(error)
                )
            ]
        if code is ErrorCode.UNKNOWN_SERVER_ERROR or code is ErrorCode.KAFKA_STORAGE_ERROR:
            LOG.error("produce to %s-%d failed: %s", topic, index, error)
        else:
            LOG.debug("produce to %s-%d refused (%s): %s", topic, index, code.name, error)
        return response
    state.appends.notify(TopicPartition(topic, index))
    return ProduceResponsePartitionProduceResponse(
        index=index,
        error_code=0,
        base_offset=info.first_offset,
        log_append_time_ms=info.log_append_time_ms,
        log_start_offset=log.log_start_offset,
    )


def _refuse_all(request: ProduceRequest, code: ErrorCode, message: str) -> ProduceResponse:
    return ProduceResponse(
        responses=[
            ProduceResponseTopicProduceResponse(
                name=topic.name,
                partition_responses=[
                    _refused(data.index, code, message) for data in topic.partition_data
                ],
            )
            for topic in request.topic_data
        ]
    )


def _has_transactional_records(request: ProduceRequest) -> bool:
    for topic in request.topic_data:
        for data in topic.partition_data:
            records = _records_of(data)
            if records is not None and has_transactional_batch(records):
                return True
    return False


def _transactional_id_refusal(
    state: BrokerState, context: RequestContext, request: ProduceRequest
) -> str | None:
    """Kafka's first check, the reason it fails or None: a transactional id needs WRITE on it,
    and transactional records need a transactional id."""
    transactional_id = request.transactional_id
    if transactional_id is not None:
        if state.authorize(
            context, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
        ):
            return None
        return f"not authorized to write for transactional id {transactional_id}"
    if _has_transactional_records(request):
        return "transactional records need a transactional id"
    return None


async def handle(
    state: BrokerState, context: RequestContext, request: ProduceRequest
) -> ProduceResponse | None:
    reason = _transactional_id_refusal(state, context, request)
    if reason is not None:
        refusal = _refuse_all(request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, reason)
        if request.acks == 0:
            _close_if_refused(refusal)
            return None
        return refusal
    transactional_id = request.transactional_id
    writable = state.authorized_names(
        context, Operation.WRITE, ResourceType.TOPIC, (t.name for t in request.topic_data)
    )
    responses = [
        ProduceResponseTopicProduceResponse(
            name=topic.name,
            partition_responses=[
                _append_one(
                    state, topic.name, data, request.acks, topic.name in writable, transactional_id
                )
                for data in topic.partition_data
            ],
        )
        for topic in request.topic_data
    ]
    response = ProduceResponse(responses=responses)
    if request.acks == 0:
        _close_if_refused(response)
        return None
    return response


def _close_if_refused(response: ProduceResponse) -> None:
    """An ``acks=0`` request: no answer; a refused partition closes the connection (Kafka)."""
    refused = [
        f"{topic.name}-{p.index}: {ErrorCode(p.error_code).name}"
        for topic in response.responses
        for p in topic.partition_responses
        if p.error_code != 0
    ]
    if refused:
        raise CloseConnection(f"acks=0 produce refused ({', '.join(refused)})")


HANDLERS = [ApiHandler(API_KEY, 3, 11, handle, advertised_min=0)]
