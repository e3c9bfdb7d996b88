"""Producing records to a topic: partition choice and batching, as Kafka's producer does.

* A record with an explicit partition goes there (it must exist).
* A keyed record goes to Kafka's default partition for its key:
  ``(murmur2(key) & 0x7fffffff) % partitions`` (:mod:`seglog.core.partitioner`), so the same
  key lands where a Kafka client would put it.
* A keyless record goes round-robin over the partitions. (Kafka's clients since 2.4 use a
  "sticky" partitioner for keyless records; round-robin spreads small inputs evenly, which is
  what a command-line producer wants. Decision recorded here.)

Records are buffered per partition (at most ``max_buffered_records`` records or
``max_buffered_bytes`` of keys and values) and appended together, so a file of a million lines
becomes a few large appends rather than a million small ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from seglog.core.partitioner import partition_for_key
from seglog.engine.log import LogAppendInfo
from seglog.engine.log_manager import LogManager
from seglog.errors import UnknownTopicError
from seglog.format.records import Header

MAX_BUFFERED_RECORDS_DEFAULT = 10_000
MAX_BUFFERED_BYTES_DEFAULT = 16 * 1024 * 1024  # per partition, keys + values


@dataclass(frozen=True, slots=True)
class ProduceRecord:
    """A record to produce: every field but ``value`` optional."""

    value: bytes | None
    key: bytes | None = None
    headers: tuple[Header, ...] = ()
    timestamp_ms: int | None = None
    partition: int | None = None


@dataclass(slots=True)
class ProduceSummary:
    """What a producer wrote: records and first/last offsets per partition."""

    records: int = 0
    offsets: dict[int, tuple[int, int]] = field(default_factory=dict)

    def add(self, partition: int, info: LogAppendInfo) -> None:
        """Account one append."""
        self.records += info.record_count
        first, _ = self.offsets.get(partition, (info.first_offset, info.last_offset))
        self.offsets[partition] = (first, info.last_offset)


class Producer:
    """Buffer records per partition of one topic and append them in chunks."""

    def __init__(
        self,
        manager: LogManager,
        topic: str,
        *,
        max_buffered_records: int = MAX_BUFFERED_RECORDS_DEFAULT,
        max_buffered_bytes: int = MAX_BUFFERED_BYTES_DEFAULT,
    ) -> None:
        self.manager = manager
        self.topic = topic
        self.partitions = manager.partitions_of(topic)
        if not self.partitions:
            raise UnknownTopicError(f"topic {topic!r} does not exist")
        if max_buffered_records < 1:
            raise ValueError("max_buffered_records must be >= 1")
        self.max_buffered_records = max_buffered_records
        self.max_buffered_bytes = max_buffered_bytes
        self._buffered_bytes: dict[int, int] = {}
        self._next_round_robin = 0
        self._buffers: dict[
            int, list[tuple[bytes | None, bytes | None, Sequence[Header], int]]
        ] = {}
        self.summary = ProduceSummary()

    def partition_for(self, record: ProduceRecord) -> int:
        """The partition a record goes to (see the module docstring)."""
        count = len(self.partitions)
        if record.partition is not None:
            if record.partition not in self.partitions:
                raise UnknownTopicError(
                    f"topic {self.topic!r} has no partition {record.partition} (it has {count})"
                )
            return record.partition
        if record.key is not None:
            return self.partitions[partition_for_key(record.key, count)]
        partition = self.partitions[self._next_round_robin % count]
        self._next_round_robin += 1
        return partition

    def send(self, record: ProduceRecord) -> int:
        """Buffer a record; returns its partition. Appends when a buffer is full."""
        partition = self.partition_for(record)
        timestamp = (
            self.manager.clock.now_ms() if record.timestamp_ms is None else record.timestamp_ms
        )
        buffer = self._buffers.setdefault(partition, [])
        buffer.append((record.key, record.value, record.headers, timestamp))
        size = self._buffered_bytes.get(partition, 0) + len(record.key or b"")
        size += len(record.value or b"")
        self._buffered_bytes[partition] = size
        if len(buffer) >= self.max_buffered_records or size >= self.max_buffered_bytes:
            self._flush_partition(partition)
        return partition

    def _flush_partition(self, partition: int) -> None:
        buffer = self._buffers.pop(partition, [])
        self._buffered_bytes.pop(partition, None)
        if buffer:
            info = self.manager.get_log(self.topic, partition).append_records(buffer)
            self.summary.add(partition, info)

    def flush(self) -> ProduceSummary:
        """Append everything buffered; returns the running summary."""
        for partition in sorted(self._buffers):
            self._flush_partition(partition)
        return self.summary
