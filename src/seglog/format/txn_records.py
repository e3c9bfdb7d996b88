"""The records of ``__transaction_state`` (the transaction coordinator's log): bytes <-> values.

A record's **key** is ``TransactionLogKey``: an int16 version (always 0) then the
``transactionalId`` string (int16 length + UTF-8). Its **value** is ``TransactionLogValue``,
an int16 version then the struct below, or null (a tombstone: the transactional id was
removed). Every integer is big-endian two's complement.

``TransactionLogValue`` v0 (Kafka's non-flexible encoding)::

    producerId                        int64
    producerEpoch                     int16
    transactionTimeoutMs              int32
    transactionStatus                 int8    (TxnState codes below)
    transactionPartitions             nullable array (int32 count, -1 = null) of
        topic                         string (int16 length + UTF-8)
        partitionIds                  array (int32 count) of int32
    transactionLastUpdateTimestampMs  int64
    transactionStartTimestampMs       int64

v1 is the flexible encoding (KIP-482) of the same fields: arrays and strings carry an unsigned
varint ``length + 1`` (0 = null), each ``PartitionsSchema`` element and the value end with a
tagged-field buffer, and the value's buffer holds, when not at their defaults, tag 0
``previousProducerId`` int64 (-1), tag 1 ``nextProducerId`` int64 (-1) and tag 2
``clientTransactionVersion`` int16 (0), in tag order (Kafka's generated writer). Unknown tags
are skipped on reading.

**Partitions.** Kafka writes a null partition array for an Empty transaction and an array
(possibly empty, as for CompleteCommit/CompleteAbort) otherwise, one element per topic with
that topic's partitions; its reader ignores the array of an Empty transaction.
:func:`encode_value` follows that rule: Empty -> null; other states group
:attr:`TransactionLogEntry.partitions` by topic, topics in order of first appearance,
partitions in tuple order. :func:`decode_value` keeps the partitions in record order (so a
Kafka-written record re-encodes to the same bytes) and gives ``()`` for a null array.

**Versions.** Kafka writes v0 until the ``transaction.version`` feature is 1 or more (Kafka
4.0's transactions V2), then v1. :func:`encode_value` with ``version=None`` writes v1 only when
a v1-only field is set (``previous_producer_id``/``next_producer_id`` not -1 or
``client_transaction_version`` not 0), v0 otherwise: nothing is lost, and every Kafka since
0.11 reads what seglog writes. :func:`value_version` tells which version a value's bytes are.

**Status codes** (Kafka's ``TransactionState.id``): Empty 0, Ongoing 1, PrepareCommit 2,
PrepareAbort 3, CompleteCommit 4, CompleteAbort 5, Dead 6, PrepareEpochFence 7.

:func:`transaction_partition` is Kafka's ``TransactionStateManager.partitionFor``:
``Utils.abs(transactionalId.hashCode()) % transaction.state.log.num.partitions``.

Bytes after a value's last field are ignored (as Kafka's generated readers do). Anything else
that breaks a layout (a string past the end, an unknown version or status code, a null key)
raises :class:`~seglog.errors.CorruptTxnRecordError` naming the field and the byte position
inside the key or value.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from seglog.errors import CorruptGroupRecordError, CorruptTxnRecordError, InvalidRecordError
from seglog.format.group_records import group_partition
from seglog.format.message_fields import FieldReader, write_string, write_uvarint
from seglog.format.topic_names import TopicPartition

KEY_VERSION = 0
VALUE_MAX_VERSION = 1
FLEXIBLE_VERSION = 1
DEFAULT_TXN_PARTITIONS = 50
NO_PRODUCER_ID = -1
PREVIOUS_PRODUCER_ID_TAG = 0
NEXT_PRODUCER_ID_TAG = 1
CLIENT_TRANSACTION_VERSION_TAG = 2

_I8, _I16, _I32, _I64 = (struct.Struct(f">{c}") for c in "bhiq")


class TxnState(IntEnum):
    """A transaction's status, with Kafka's byte codes; ``str()`` is Kafka's state name."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """Kafka's name of the state (``PrepareCommit``), as tools and DescribeTransactions
        print it."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    def __str__(self) -> str:
        return self.kafka_name


@dataclass(frozen=True, slots=True)
class TransactionLogEntry:
    """One transactional id's metadata as ``__transaction_state`` stores it."""

    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    state: TxnState
    partitions: tuple[TopicPartition, ...]
    last_update_timestamp_ms: int
    start_timestamp_ms: int
    previous_producer_id: int = NO_PRODUCER_ID  # v1 tag 0
    next_producer_id: int = NO_PRODUCER_ID  # v1 tag 1
    client_transaction_version: int = 0  # v1 tag 2


def transaction_partition(transactional_id: str, partitions: int = DEFAULT_TXN_PARTITIONS) -> int:
    """The ``__transaction_state`` partition of ``transactional_id`` (Kafka's ``partitionFor``)."""
    return group_partition(transactional_id, partitions)


# --- writing ---------------------------------------------------------------------------------


def encode_key(transactional_id: str) -> bytes:
    """A ``TransactionLogKey`` (version 0)."""
    return _I16.pack(KEY_VERSION) + write_string(transactional_id)


def default_value_version(entry: TransactionLogEntry) -> int:
    """1 when a v1-only field is set, else 0 (see the module docstring)."""
    v1_only = (
        entry.previous_producer_id != NO_PRODUCER_ID
        or entry.next_producer_id != NO_PRODUCER_ID
        or entry.client_transaction_version != 0
    )
    return FLEXIBLE_VERSION if v1_only else 0


def _grouped(partitions: tuple[TopicPartition, ...]) -> dict[str, list[int]]:
    topics: dict[str, list[int]] = {}
    for tp in partitions:
        topics.setdefault(tp.topic, []).append(tp.partition)
    return topics


def _count(n: int, flexible: bool) -> bytes:
    return write_uvarint(n + 1) if flexible else _I32.pack(n)


def encode_value(entry: TransactionLogEntry, version: int | None = None) -> bytes:
    """A ``TransactionLogValue`` in ``version`` (default: :func:`default_value_version`).

    Raises :class:`~seglog.errors.InvalidRecordError` for a version outside 0..1, an Empty
    entry with partitions (Kafka refuses to write one too), or a field out of its range.
    """
    v = default_value_version(entry) if version is None else version
    if not 0 <= v <= VALUE_MAX_VERSION:
        raise InvalidRecordError(f"TransactionLogValue version {v} is outside 0..1")
    if entry.state == TxnState.EMPTY and entry.partitions:
        raise InvalidRecordError(
            f"an Empty transaction has no partitions, but this entry has {len(entry.partitions)}"
        )
    fx = v >= FLEXIBLE_VERSION
    try:
        parts = [
            _I16.pack(v),
            _I64.pack(entry.producer_id),
            _I16.pack(entry.producer_epoch),
            _I32.pack(entry.transaction_timeout_ms),
            _I8.pack(int(entry.state)),
        ]
        if entry.state == TxnState.EMPTY:
            parts.append(b"\x00" if fx else _I32.pack(-1))
        else:
            topics = _grouped(entry.partitions)
            parts.append(_count(len(topics), fx))
            for topic, ids in topics.items():
                parts.append(write_string(topic, flexible=fx))
                parts.append(_count(len(ids), fx))
                parts.extend(_I32.pack(p) for p in ids)
                if fx:
                    parts.append(b"\x00")
        parts.append(_I64.pack(entry.last_update_timestamp_ms))
        parts.append(_I64.pack(entry.start_timestamp_ms))
        if fx:
            parts.append(_tagged_fields(entry))
    except struct.error as exc:
        raise InvalidRecordError(f"TransactionLogValue field out of range: {exc}") from None
    return b"".join(parts)


def _tagged_fields(entry: TransactionLogEntry) -> bytes:
    tags: list[tuple[int, bytes]] = []
    if entry.previous_producer_id != NO_PRODUCER_ID:
        tags.append((PREVIOUS_PRODUCER_ID_TAG, _I64.pack(entry.previous_producer_id)))
    if entry.next_producer_id != NO_PRODUCER_ID:
        tags.append((NEXT_PRODUCER_ID_TAG, _I64.pack(entry.next_producer_id)))
    if entry.client_transaction_version != 0:
        tags.append((CLIENT_TRANSACTION_VERSION_TAG, _I16.pack(entry.client_transaction_version)))
    out = [write_uvarint(len(tags))]
    for tag, data in tags:
        out += [write_uvarint(tag), write_uvarint(len(data)), data]
    return b"".join(out)


# --- reading ---------------------------------------------------------------------------------


def _txn_error(exc: CorruptGroupRecordError) -> CorruptTxnRecordError:
    return CorruptTxnRecordError(exc.reason, position=exc.position)


def decode_key(data: bytes | None) -> str:
    """The transactional id of a ``TransactionLogKey``."""
    if data is None:
        raise CorruptTxnRecordError("TransactionLogKey is null (every record has a key)")
    reader = FieldReader(bytes(data), "TransactionLogKey")
    try:
        version = reader.int16("version")
        if version != KEY_VERSION:
            raise CorruptTxnRecordError(
                f"TransactionLogKey version {version} is not 0 (the only version Kafka writes)",
                position=0,
            )
        return reader.required("transactionalId")
    except CorruptGroupRecordError as exc:
        raise _txn_error(exc) from None


def value_version(data: bytes) -> int:
    """The version of a ``TransactionLogValue``'s bytes (its first int16)."""
    reader = FieldReader(bytes(data), "TransactionLogValue")
    try:
        return reader.int16("version")
    except CorruptGroupRecordError as exc:
        raise _txn_error(exc) from None


def decode_value(data: bytes) -> TransactionLogEntry:
    """A ``TransactionLogValue`` of version 0 or 1 (a tombstone's null is the caller's)."""
    reader = FieldReader(bytes(data), "TransactionLogValue")
    try:
        return _read_value(reader)
    except CorruptGroupRecordError as exc:
        raise _txn_error(exc) from None


def _read_value(reader: FieldReader) -> TransactionLogEntry:
    version = reader.int16("version")
    if not 0 <= version <= VALUE_MAX_VERSION:
        raise CorruptTxnRecordError(
            f"TransactionLogValue version {version} is outside 0..1", position=0
        )
    reader.what = f"TransactionLogValue v{version}"
    fx = version >= FLEXIBLE_VERSION
    producer_id = reader.int64("producerId")
    producer_epoch = reader.int16("producerEpoch")
    timeout_ms = reader.int32("transactionTimeoutMs")
    status_at = reader.pos
    reader.field = "transactionStatus"
    status = _I8.unpack(reader.take(1))[0]
    try:
        state = TxnState(status)
    except ValueError:
        raise CorruptTxnRecordError(
            f"{reader.what} transactionStatus {status} is not a transaction state (0..7)",
            position=status_at,
        ) from None
    partitions = _read_partitions(reader, fx)
    last_update = reader.int64("transactionLastUpdateTimestampMs")
    start = reader.int64("transactionStartTimestampMs")
    previous = nxt = NO_PRODUCER_ID
    client_version = 0
    if fx:
        for tag, raw in reader.tagged_fields().items():
            if tag == PREVIOUS_PRODUCER_ID_TAG:
                previous = _tag_int(reader, raw, _I64, "previousProducerId")
            elif tag == NEXT_PRODUCER_ID_TAG:
                nxt = _tag_int(reader, raw, _I64, "nextProducerId")
            elif tag == CLIENT_TRANSACTION_VERSION_TAG:
                client_version = _tag_int(reader, raw, _I16, "clientTransactionVersion")
    return TransactionLogEntry(
        producer_id,
        producer_epoch,
        timeout_ms,
        state,
        () if state == TxnState.EMPTY else partitions,
        last_update,
        start,
        previous,
        nxt,
        client_version,
    )


def _read_partitions(reader: FieldReader, fx: bool) -> tuple[TopicPartition, ...]:
    start, reader.field = reader.pos, "transactionPartitions"
    count = reader.uvarint() - 1 if fx else reader.int32()
    if count == -1:
        return ()
    reader.pos = start
    out: list[TopicPartition] = []
    for _ in range(reader.array_length("transactionPartitions", flexible=fx)):
        topic = reader.required("topic", flexible=fx)
        for _ in range(reader.array_length("partitionIds", flexible=fx)):
            out.append(TopicPartition(topic, reader.int32("partitionIds")))
        if fx:
            reader.tagged_fields()
    return tuple(out)


def _tag_int(reader: FieldReader, raw: bytes, kind: struct.Struct, name: str) -> int:
    if len(raw) != kind.size:
        raise CorruptTxnRecordError(
            f"{reader.what} tagged field {name} has {len(raw)} bytes, not {kind.size}",
            position=reader.pos,
        )
    return int(kind.unpack(raw)[0])
