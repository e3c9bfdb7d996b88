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
a transactional batch of a transactional INVALID_TXN_STATE (48)
id
=======================================  =============================================

Transactional batches are refused because this server runs no transaction coordinator
(InitProducerId gives no transactional producer ids, EndTxn is not served): a transaction
begun here could never end, so it would pin the partition's last stable offset and stall
every ``read_committed`` consumer (librdkafka's default) of the partition for good. Without a
``transactional_id`` Kafka refuses the whole request with
TRANSACTIONAL_ID_AUTHORIZATION_FAILED; with one, a partition never added to the transaction
(AddPartitionsToTxn is not served) fails Kafka's transaction verification: INVALID_TXN_STATE.

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
    if has_transactional_batch(records):
        return _refused(
            index,
            ErrorCode.INVALID_TXN_STATE,
            "transactions are not supported: the partition is not part of a transaction",
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


def _transactional_id_refused(
    state: BrokerState, context: RequestContext, request: ProduceRequest
) -> bool:
    """Kafka's first check: transactional records need a transactional id the principal may
    WRITE."""
    if not _has_transactional_records(request):
        return False
    transactional_id = request.transactional_id
    return transactional_id is None or not state.authorize(
        context, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
    )


async def handle(
    state: BrokerState, context: RequestContext, request: ProduceRequest
) -> ProduceResponse | None:
    if _transactional_id_refused(state, context, request):
        refusal = _refuse_all(
            request,
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            "transactional records need a transactional id the principal may write",
        )
        if request.acks == 0:
            _close_if_refused(refusal)
            return None
        return refusal
    writable = state.authorized_names(
        context, Operation.WRITE, ResourceType.TOPIC, (t.name for t in request.topic_data)
    )
    responses = [
        ProduceResponseTopicProduceResponse(
            name=topic.name,
            partition_responses=[
                _append_one(state, topic.name, data, request.acks, topic.name in writable)
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
