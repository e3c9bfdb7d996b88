"""Typed errors of seglog.

Every error raised for bad input names *what* is wrong and *where*: the file (when there is
one), the byte position inside it, and the broken invariant. ``assert`` is reserved for our
own bugs; anything a user, a disk or a peer can cause raises one of these.
"""

from __future__ import annotations

from typing import Self


class SeglogError(Exception):
    """Base class of every error seglog raises on purpose."""


class PositionedError(SeglogError):
    """An error about bytes at a known place: ``path`` (when a file) and byte ``position``.

    ``reason`` is the broken invariant; the message reads ``<path> at position <n>: <reason>``.
    """

    def __init__(self, reason: str, *, position: int | None = None, path: str | None = None):
        self.reason = reason
        self.position = position
        self.path = path
        where = []
        if path is not None:
            where.append(path)
        if position is not None:
            where.append(f"position {position}")
        prefix = f"{' at '.join(where)}: " if where else ""
        super().__init__(f"{prefix}{reason}")

    def at(self, *, path: str | None = None, base_position: int = 0) -> Self:
        """Return the same error re-anchored in a file (positions shifted by base_position)."""
        position = None if self.position is None else self.position + base_position
        return type(self)(self.reason, position=position, path=path or self.path)


class CorruptRecordError(PositionedError):
    """Bytes that should hold a record batch (or legacy message) do not.

    ``position`` is the byte position of the batch inside the buffer or file, ``path`` the
    file when known, and ``reason`` the broken invariant (bad CRC, impossible length, ...).
    """


class InvalidRecordError(SeglogError):
    """A record or batch that is well-formed bytes but breaks a rule (for writers and builders)."""


class RecordTooLargeError(InvalidRecordError):
    """A record (or batch) that exceeds a configured size limit."""


class UnsupportedCodecError(SeglogError):
    """A compression codec id outside Kafka's 0..4 or a codec not valid for the magic."""


class InvalidConfigError(SeglogError, ValueError):
    """A configuration key or value that is unknown, malformed or out of range."""


class OffsetOutOfRangeError(SeglogError):
    """An offset below the log start or above the log end."""


class CorruptIndexError(PositionedError):
    """Bytes of an ``.index`` / ``.timeindex`` (or ``.txnindex``) file that break its layout.

    ``position`` is the byte position inside the index buffer or file, ``path`` the file when
    known, and ``reason`` the broken invariant (size not a multiple of the entry size, offsets
    going backwards, an entry below the segment's base offset, ...).
    """


class StorageWriteError(SeglogError, OSError):
    """Writing, syncing or renaming a file failed (disk full, I/O error, ...).

    ``path`` is the file, ``reason`` what the operating system said and ``errno`` its code
    (it is also an ``OSError``, so callers catching that keep working). The operation that
    raised it left its file as it was before (an append is rolled back) or, where that was
    not possible, the log is marked for recovery at its next open.
    """

    def __init__(self, reason: str, *, path: str, errno_code: int | None = None):
        self.reason = reason
        self.path = path
        SeglogError.__init__(self, f"cannot write {path}: {reason}")
        self.errno = errno_code
        self.strerror = reason
        self.filename = path


class UnreadableFileError(SeglogError):
    """A file that cannot be read: missing, a directory, no permission, or an I/O error.

    ``path`` is the file and ``reason`` what the operating system said.
    """

    def __init__(self, reason: str, *, path: str):
        self.reason = reason
        self.path = path
        super().__init__(f"cannot read {path}: {reason}")


class InvalidFileNameError(SeglogError, ValueError):
    """A file name that does not follow Kafka's naming (e.g. no numeric base offset prefix)."""


class CorruptCheckpointError(PositionedError):
    """A checkpoint or metadata text file that does not parse.

    Covers the offset and leader-epoch checkpoints, ``partition.metadata``,
    ``.kafka_cleanshutdown`` and ``meta.properties``. These are line-oriented text files, so the
    place is a 1-based ``line`` number, kept in its own attribute and written at the front of
    ``reason`` (``line 3: expected 3 fields ...``); ``position`` stays None because a byte
    position would be confusing in a text file. The message reads ``<path>: line <n>: <reason>``.
    """

    def __init__(
        self,
        reason: str,
        *,
        line: int | None = None,
        path: str | None = None,
        position: int | None = None,
    ):
        self.line = line
        super().__init__(
            reason if line is None else f"line {line}: {reason}", position=position, path=path
        )

    def at(self, *, path: str | None = None, base_position: int = 0) -> Self:
        """Return the same error anchored in a file (the line number is kept)."""
        error = super().at(path=path, base_position=base_position)
        error.line = self.line
        return error


class InvalidTopicError(SeglogError, ValueError):
    """A topic name, topic id or partition number that Kafka would reject.

    The message names the offending value (``repr``, so hostile names holding ``/``, NUL or
    newlines print safely) and the broken rule.
    """


class LogDirectoryLockedError(UnreadableFileError):
    """Another process holds a log directory's ``.lock`` (a second seglog, or a Kafka broker)."""


class LockHeldElsewhereError(LogDirectoryLockedError):
    """The ``.lock`` is held by another process right now (it may let go: a command can wait
    for it); ``holder`` names it (``process 1234 (seglog maintain)``) when it can be told."""

    def __init__(
        self,
        reason: str,
        *,
        path: str,
        holder: str | None = None,
    ) -> None:
        self.holder = holder
        super().__init__(reason, path=path)


class TopicExistsError(SeglogError, ValueError):
    """A topic with that name already exists."""


class InvalidPartitionsError(SeglogError, ValueError):
    """A partition count a topic cannot take (Kafka's ``InvalidPartitionsException``): not
    an increase, or a topic whose partition count belongs to a Kafka cluster."""


class UnknownTopicError(SeglogError, LookupError):
    """No topic (or no partition of it) with that name is here."""


class OffsetMapFullError(SeglogError):
    """A put into a bounded offset map that already holds its limit of keys.

    Kafka's ``SkimpyOffsetMap.put`` throws ``IllegalArgumentException`` in that case; the
    cleaner never gets there because it checks ``size < limit`` before every put.
    """


class ProducerIdsExhaustedError(SeglogError):
    """No block of producer ids is left below int64's maximum (InitProducerId cannot answer)."""


class SparkUnavailableError(SeglogError):
    """The Spark pipeline cannot start: pyspark/pyarrow not installed, or no Java."""


class SparkOptionError(SeglogError, ValueError):
    """A Spark source or sink option is wrong (named, with the value and what is allowed)."""


class DataLossError(SeglogError):
    """Requested offsets are gone (retention, truncation, a deleted topic) with failOnDataLoss."""


class CorruptRemoteObjectError(PositionedError):
    """An object of a Kafka tiered-storage bucket (a ``.rsm-manifest``, a chunk index, an
    ``.indexes`` object, a ``__remote_log_metadata`` record) is not what its format says;
    ``path`` names the object (or record) and ``position`` the byte where it breaks."""


class UnsupportedRemoteSegmentError(SeglogError):
    """A tiered-storage segment seglog cannot read as Kafka bytes (named, with the reason)."""

    def __init__(self, reason: str, *, path: str):
        self.path = path
        super().__init__(f"{path}: {reason}")


class EncryptedRemoteSegmentError(UnsupportedRemoteSegmentError):
    """The segment's chunks are AES-GCM encrypted by the Aiven plugin (never read as data)."""


class IcebergRemoteSegmentError(UnsupportedRemoteSegmentError):
    """The segment was written in the Aiven plugin's Iceberg mode: it holds no Kafka segment."""


class CorruptSnapshotError(CorruptRecordError):
    """A producer state ``.snapshot`` file is damaged (version, CRC or length); the loader
    skips it and rebuilds producer state from the log instead."""


class ProducerStateError(InvalidRecordError):
    """An append a partition leader refuses for its producer fields (Kafka's producer-state
    errors); the message names the partition, the producer id and what was expected."""


class OutOfOrderSequenceError(ProducerStateError):
    """A batch's first sequence is not the one after the producer's last (Kafka's
    ``OUT_OF_ORDER_SEQUENCE_NUMBER``)."""


class InvalidProducerEpochError(ProducerStateError):
    """A batch (or marker) carries an epoch older than the producer's current one: the
    producer was fenced (Kafka's ``INVALID_PRODUCER_EPOCH`` / ``PRODUCER_FENCED``)."""


class UnknownProducerIdError(ProducerStateError):
    """A batch of a producer this partition has no state for starts at a sequence other than
    0 (Kafka's ``UNKNOWN_PRODUCER_ID``; with the state expired or deleted, the producer must
    reset its sequence)."""


class InvalidTxnStateError(ProducerStateError):
    """A transactional append that breaks the transaction protocol: a non-transactional
    batch while the producer's transaction is open (Kafka's ``INVALID_TXN_STATE``)."""


class TransactionCoordinatorFencedError(ProducerStateError):
    """A marker carries a coordinator epoch older than one already written for the producer
    (Kafka's ``TRANSACTION_COORDINATOR_FENCED``)."""


class ProtocolDecodeError(PositionedError):
    """Bytes from the network that are not a valid Kafka message of the version they claim.

    Names the message (``ProduceRequest``), its version and the byte position inside the frame.
    The server answers it as Kafka does: the connection is closed, nothing is written.
    """

    def __init__(self, message: str, version: int, position: int, reason: str):
        self.message = message
        self.version = version
        super().__init__(f"{message} v{version}: {reason}", position=position)

    def at(self, *, path: str | None = None, base_position: int = 0) -> Self:
        position = (self.position or 0) + base_position
        return type(self)(self.message, self.version, position, self.reason.split(": ", 1)[-1])


class FrameTooLargeError(SeglogError):
    """A request frame larger than ``socket.request.max.bytes`` (Kafka closes the connection)."""

    def __init__(self, size: int, limit: int):
        self.size = size
        self.limit = limit
        super().__init__(f"request frame of {size} bytes exceeds socket.request.max.bytes={limit}")


class KeylessRecordError(InvalidRecordError):
    """A record without a key appended to a compacted topic (Kafka: INVALID_RECORD).

    ``record_index`` is the record's index in the append (the wire's ``batch_index``).
    """

    def __init__(self, reason: str, *, record_index: int):
        self.record_index = record_index
        super().__init__(reason)


class InvalidTimestampError(InvalidRecordError):
    """A record timestamp outside ``message.timestamp.before/after.max.ms`` (INVALID_TIMESTAMP)."""

    def __init__(self, reason: str, *, record_index: int):
        self.record_index = record_index
        super().__init__(reason)


class CorruptGroupRecordError(CorruptRecordError):
    """A ``__consumer_offsets`` record whose key or value breaks its layout (a string running
    past the end, a value version no Kafka writes, a null key). ``position`` is the byte inside
    the key or value; a loader adds the partition and offset of the record to ``reason``.
    Kafka stops loading the partition at such a record; so does seglog."""


class CorruptTxnRecordError(CorruptRecordError):
    """A ``__transaction_state`` record whose key or value breaks its layout (a string running
    past the end, a value version or status code no Kafka writes, a null key). ``position`` is
    the byte inside the key or value; a loader adds the partition and offset of the record to
    ``reason``. Kafka stops loading the partition at such a record; so does seglog."""


class InvalidCertificateError(PositionedError):
    """A client certificate whose DER structure does not parse where the server reads it (the
    subject's distinguished name); names the byte position and the broken rule."""


class InvalidAclError(SeglogError, ValueError):
    """An ACL binding or filter that breaks Kafka's rules (an ANY resource type in a binding,
    a MATCH pattern type stored, a principal without ``Type:``, an empty resource name, a
    cluster resource not named ``kafka-cluster``): Kafka's INVALID_REQUEST on the wire."""


class CorruptAclFileError(CorruptCheckpointError):
    """The ACL file of a data directory does not parse: the file and line say where. It is
    never read as "no ACLs", which would open (or, with ``allow.everyone.if.no.acl.found``,
    widen) access."""


class BrokerConnectionError(SeglogError):
    """A Kafka broker (or ``seglog serve``) named by ``--bootstrap-server`` cannot be reached,
    closed the connection, answered with bytes that do not decode, or does not serve the API a
    command needs; the message names the address and what went wrong."""


class BrokerResponseError(SeglogError):
    """A Kafka broker answered a request with an error code (``name`` is Kafka's name of the
    code, e.g. CLUSTER_AUTHORIZATION_FAILED; ``message`` the broker's message, if any)."""

    def __init__(self, api: str, name: str, message: str | None = None):
        self.api = api
        self.name = name
        detail = f": {message}" if message else ""
        super().__init__(f"{api} refused by the broker with {name}{detail}")
