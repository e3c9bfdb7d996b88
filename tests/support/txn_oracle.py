"""aiokafka's consumer as the oracle of ``read_committed``: which records it returns.

aiokafka's ``PartitionRecords`` is the consumer side of a Fetch: given the bytes a broker
returned and the fetch's aborted-transactions list (producer id, first offset), it drops the
aborted producers' transactional batches between their first offset and their ABORT marker,
and every control batch. No seglog code is used to filter here; seglog only supplies what a
broker would send: the partition's bytes and its ``.txnindex`` entries.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from aiokafka.consumer.fetcher import READ_COMMITTED, PartitionRecords
from aiokafka.record.memory_records import MemoryRecords
from aiokafka.structs import TopicPartition

Consumed = tuple[int, bytes | None, bytes | None]


def read_committed_with_aiokafka(
    partition_dir: Path,
    aborted: Sequence[tuple[int, int]],
    *,
    fetch_offset: int = 0,
    last_stable_offset: int,
) -> list[Consumed]:
    """(offset, key, value) of every record a read_committed aiokafka consumer gets from the
    partition's segments below ``last_stable_offset`` (a broker's read_committed fetch ends
    there); ``aborted``: the (producer id, first offset) pairs of the aborted transactions."""
    data = b"".join(p.read_bytes() for p in sorted(partition_dir.glob("*.log")))
    records = PartitionRecords(
        TopicPartition("t", 0),
        MemoryRecords(data),
        list(aborted),
        fetch_offset,
        None,
        None,
        True,
        READ_COMMITTED,
    )
    return [
        (r.offset, r.key, r.value) for r in records if fetch_offset <= r.offset < last_stable_offset
    ]
