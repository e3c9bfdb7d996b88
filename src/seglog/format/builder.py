"""Building record batches as a producer does: append records until the batch is full.

:class:`BatchBuilder` encodes each record as it is appended, so it always knows the exact
uncompressed size of the batch. A batch is full when the next record would take it over
``max_batch_bytes`` (header included). For a compressed batch the test uses the codec's
worst-case output size for the records (never below their uncompressed size), so the built
batch stays within the limit even when the records do not compress. A record that alone
cannot fit in an empty batch raises ``RecordTooLargeError``: it is never silently split or
truncated.

Offsets are assigned consecutively from ``base_offset`` (a producer builds with base 0 and
the broker reassigns offsets on append); timestamps are kept as given.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from seglog.errors import InvalidRecordError, RecordTooLargeError
from seglog.format.batch import (
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    RECORD_BATCH_OVERHEAD,
    assemble_batch,
    encode_record,
    make_attributes,
)
from seglog.format.compression import CompressionType, compress, max_compressed_size
from seglog.format.records import NO_TIMESTAMP, Header, Record, TimestampType
from seglog.format.varint import INT32_MAX

DEFAULT_MAX_BATCH_BYTES = 1024 * 1024  # Kafka's max.message.bytes default is 1048588


class BatchBuilder:
    """Accumulate records into one v2 batch of at most ``max_batch_bytes`` bytes."""

    def __init__(
        self,
        *,
        base_offset: int = 0,
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
        compression: CompressionType = CompressionType.NONE,
        compression_level: int | None = None,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
        log_append_time_ms: int | None = None,
        is_transactional: bool = False,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    ) -> None:
        if max_batch_bytes < RECORD_BATCH_OVERHEAD + 7:
            raise InvalidRecordError(
                f"max_batch_bytes {max_batch_bytes} cannot hold even one empty record"
            )
        if is_transactional and producer_id < 0:
            raise InvalidRecordError("a transactional batch needs a producer id >= 0")
        if timestamp_type is TimestampType.LOG_APPEND_TIME and log_append_time_ms is None:
            raise InvalidRecordError("a LogAppendTime batch needs log_append_time_ms")
        self.base_offset = base_offset
        self.max_batch_bytes = max_batch_bytes
        self.compression = compression
        self.compression_level = compression_level
        self.timestamp_type = timestamp_type
        self.log_append_time_ms = log_append_time_ms
        self.is_transactional = is_transactional
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.partition_leader_epoch = partition_leader_epoch
        self._parts: list[bytes] = []
        self._size = RECORD_BATCH_OVERHEAD
        self._base_timestamp = NO_TIMESTAMP
        self._max_timestamp = NO_TIMESTAMP
        self._uncompressed_bytes_max = self._largest_fitting_uncompressed_size()

    def __len__(self) -> int:
        return len(self._parts)

    @property
    def size_in_bytes(self) -> int:
        """Uncompressed size of the batch built so far, header included."""
        return self._size

    @property
    def next_offset(self) -> int:
        """The offset the next appended record gets."""
        return self.base_offset + len(self._parts)

    def try_append(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] = (),
    ) -> bool:
        """Append a record if it fits; return False (batch unchanged) when the batch is full."""
        parts = self._parts
        offset_delta = len(parts)
        if offset_delta > INT32_MAX - 1:
            return False
        if not parts:
            self._base_timestamp = timestamp
        encoded = encode_record(offset_delta, timestamp - self._base_timestamp, key, value, headers)
        if self._size + len(encoded) > self._uncompressed_bytes_max:
            if not parts:
                raise RecordTooLargeError(
                    f"a record of {len(encoded)} bytes does not fit in a batch of at most "
                    f"{self.max_batch_bytes} bytes ({RECORD_BATCH_OVERHEAD} of header)"
                )
            return False
        parts.append(encoded)
        self._size += len(encoded)
        if timestamp > self._max_timestamp:  # noqa: PLR1730 - cheaper than max() per record
            self._max_timestamp = timestamp
        return True

    def _projected_size(self, uncompressed_size: int) -> int:
        """Largest the built batch can be: compression can grow incompressible records."""
        if self.compression is CompressionType.NONE:
            return uncompressed_size
        section = uncompressed_size - RECORD_BATCH_OVERHEAD
        return RECORD_BATCH_OVERHEAD + max_compressed_size(self.compression, section)

    def _largest_fitting_uncompressed_size(self) -> int:
        """The largest uncompressed batch size whose worst-case built size fits the limit.

        The bound is non-decreasing in the input size, so one binary search here replaces a
        bound computation on every append.
        """
        low, high = RECORD_BATCH_OVERHEAD, self.max_batch_bytes
        if self._projected_size(low) > self.max_batch_bytes:
            return low - 1  # not even an empty section fits: every record is too large
        while low < high:
            middle = (low + high + 1) // 2
            if self._projected_size(middle) <= self.max_batch_bytes:
                low = middle
            else:
                high = middle - 1
        return low

    def append(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] = (),
    ) -> None:
        """Append a record or raise ``RecordTooLargeError`` when the batch has no room."""
        if not self.try_append(timestamp, key, value, headers):
            raise RecordTooLargeError(
                f"batch is full at {self._size} bytes (limit {self.max_batch_bytes})"
            )

    def build(self) -> bytes:
        """The finished batch bytes (CRC computed); the builder must not be empty."""
        if not self._parts:
            raise InvalidRecordError("cannot build an empty batch from a builder")
        section = b"".join(self._parts)
        if self.compression is not CompressionType.NONE:
            section = compress(self.compression, section, self.compression_level)
        max_timestamp = self._max_timestamp
        if self.timestamp_type is TimestampType.LOG_APPEND_TIME:
            assert self.log_append_time_ms is not None
            max_timestamp = self.log_append_time_ms
        return assemble_batch(
            section,
            base_offset=self.base_offset,
            partition_leader_epoch=self.partition_leader_epoch,
            attributes=make_attributes(
                self.compression, self.timestamp_type, self.is_transactional, False, False
            ),
            last_offset_delta=len(self._parts) - 1,
            base_timestamp=self._base_timestamp,
            max_timestamp=max_timestamp,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.base_sequence,
            records_count=len(self._parts),
        )


def build_batches(
    records: Iterable[Record],
    *,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    compression: CompressionType = CompressionType.NONE,
    compression_level: int | None = None,
    base_offset: int = 0,
) -> list[bytes]:
    """Pack records (their key, value, timestamp and headers) into as few batches as fit.

    Offsets are assigned consecutively from ``base_offset``; each record's own offset is
    ignored, as a producer's would be.
    """
    batches: list[bytes] = []
    builder = BatchBuilder(
        base_offset=base_offset,
        max_batch_bytes=max_batch_bytes,
        compression=compression,
        compression_level=compression_level,
    )
    for record in records:
        if not builder.try_append(record.timestamp, record.key, record.value, record.headers):
            batches.append(builder.build())
            builder = BatchBuilder(
                base_offset=builder.next_offset,
                max_batch_bytes=max_batch_bytes,
                compression=compression,
                compression_level=compression_level,
            )
            builder.append(record.timestamp, record.key, record.value, record.headers)
    if len(builder):
        batches.append(builder.build())
    return batches
