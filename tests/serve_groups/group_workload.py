"""The records the group tests produce, and the checks of what the members read.

Partition ``p`` of a test topic holds, at offset ``i``, the record key ``k<i>``, value
``p<p>-<i>`` (produced in order by an idempotent confluent-kafka producer), so a read
``(partition, offset, value)`` proves itself. The checks:

* :func:`assert_split`: two members' assignments are disjoint and cover every partition;
* :func:`assert_resumed`: after a restart, a new member read exactly ``[committed, end)`` of
  every partition, and the reads before the restart covered ``[0, committed)``: none lost, none
  read twice beyond the uncommitted tail.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from group_server import PARTITIONS

Read = tuple[int, int, bytes]  # (partition, offset, value)


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(30)


def produce_numbered(
    bootstrap: str, topic: str, indexes: Iterable[int], *, create: bool = True
) -> None:
    """Append ``p<p>-<i>`` for every ``i`` of ``indexes`` to every partition (creates the topic)."""
    if create:
        create_topic(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in indexes:
        for p in range(PARTITIONS):
            producer.produce(topic, key=b"k%d" % i, value=b"p%d-%d" % (p, i), partition=p)
    assert producer.flush(30) == 0, "records left unsent"


def by_partition(reads: Iterable[Read]) -> dict[int, list[int]]:
    """The offsets read per partition, in reading order; every value checked."""
    offsets: dict[int, list[int]] = {}
    for partition, offset, value in reads:
        assert value == b"p%d-%d" % (partition, offset), (partition, offset, value)
        offsets.setdefault(partition, []).append(offset)
    return offsets


def assert_split(first: Iterable[int], second: Iterable[int]) -> None:
    """Two members hold disjoint, non-empty sets of partitions covering all of them."""
    a, b = set(first), set(second)
    assert a and b, (a, b)
    assert not a & b, (a, b)
    assert a | b == set(range(PARTITIONS)), (a, b)


def assert_resumed(
    before: Iterable[Read],
    committed: Mapping[int, int],
    after: Iterable[Read],
    end: Mapping[int, int],
) -> None:
    """See the module docstring."""
    read_before, read_after = by_partition(before), by_partition(after)
    for p in range(PARTITIONS):
        assert set(range(committed[p])) <= set(read_before.get(p, [])), f"partition {p}: lost"
        assert read_after.get(p, []) == list(range(committed[p], end[p])), (
            f"partition {p}: resumed at {read_after.get(p, [])[:1]}, committed {committed[p]}"
        )
