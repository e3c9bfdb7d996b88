"""A consumer group of confluent-kafka (librdkafka) consumers through ``seglog serve``.

Two members split a 4-partition topic, one leaves and the other takes every partition, commits
survive a server restart (SIGTERM, start again on the same directory) and a new member resumes
from them; the committed offsets read back through ``Consumer.committed``.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition
from group_server import PARTITIONS, GroupServer, wait_for
from group_workload import Read, assert_resumed, assert_split, produce_numbered

TAIL = 40  # the last member commits this offset in every partition, then reads on to 50


class Member:
    """A subscribed consumer that records what it reads and, after each batch, commits the
    next offset of every partition it owns whose last commit is behind (a commit refused by a
    rebalance is tried again; a partition taken away is read again by its next owner)."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.topic = topic
        self.reads: list[Read] = []
        self.next_offsets: dict[int, int] = {}
        self.done: dict[int, int] = {}
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 3000,
                "heartbeat.interval.ms": 200,
            }
        )
        self.consumer.subscribe([topic])

    def pump(self, *, commit: bool = True) -> None:
        for message in self.consumer.consume(100, 0.05):
            assert message.error() is None, message.error()
            self.reads.append((message.partition(), message.offset(), message.value()))
            self.next_offsets[message.partition()] = message.offset() + 1
        owned = self.partitions()
        behind = {
            p: o for p, o in self.next_offsets.items() if p in owned and self.done.get(p) != o
        }
        if not commit or not behind:
            return
        wanted = [TopicPartition(self.topic, p, o) for p, o in behind.items()]
        try:
            answers = self.consumer.commit(offsets=wanted, asynchronous=False)
        except KafkaException:  # the whole commit refused (a rebalance): tried again next time
            return
        self.done.update({tp.partition: tp.offset for tp in answers if tp.error is None})

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def committed(self) -> dict[int, int]:
        wanted = [TopicPartition(self.topic, p) for p in range(PARTITIONS)]
        return {tp.partition: tp.offset for tp in self.consumer.committed(wanted, timeout=10)}


def _settled(members: list[Member], end: int) -> Any:
    def probe() -> bool:
        owned: list[int] = []
        for member in members:
            member.pump()
            assigned = list(member.consumer.assignment())
            positions = member.consumer.position(assigned)
            if any(tp.offset != end for tp in positions):
                return False
            owned += [tp.partition for tp in assigned]
        return sorted(owned) == list(range(PARTITIONS))

    return probe


def _read_all(members: list[Member], count: int, *, closed: tuple[Member, ...] = ()) -> Any:
    def probe() -> bool:
        for member in members:
            member.pump()
        everyone = [*members, *closed]
        return len({(p, o) for m in everyone for p, o, _ in m.reads}) >= count

    return probe


def test_two_members_rebalance_commit_and_resume_after_restart(
    server: GroupServer, topic: str, group: str
) -> None:
    a = Member(server.bootstrap, group, topic)
    b = Member(server.bootstrap, group, topic)
    wait_for("two members to split the partitions", _split(a, b))
    assert_split(a.partitions(), b.partitions())
    wait_for("the 100 records to be read", _read_all([a, b], 100))
    b.consumer.close()  # LeaveGroup: a rebalances onto every partition
    wait_for("the remaining member to own all", lambda: a.pump() or len(a.partitions()) == 4)

    produce_numbered(server.bootstrap, topic, range(25, 50), create=False)
    wait_for("the 200 records to be read", _read_all([a], 200, closed=(b,)))
    a.consumer.commit(
        offsets=[TopicPartition(topic, p, TAIL) for p in range(PARTITIONS)], asynchronous=False
    )  # commits may move back: the tail [40, 50) is read again after the restart
    a.consumer.close()
    before = a.reads + b.reads

    server.restart()
    c = Member(server.bootstrap, group, topic)
    committed = c.committed()
    assert committed == dict.fromkeys(range(PARTITIONS), TAIL)
    wait_for("the tail to be read again", _read_all([c], PARTITIONS * (50 - TAIL)))
    c.consumer.close()
    assert_resumed(before, committed, c.reads, dict.fromkeys(range(PARTITIONS), 50))


def _split(a: Member, b: Member) -> Any:
    def probe() -> bool:
        a.pump(commit=False)
        b.pump(commit=False)
        return len(a.partitions()) + len(b.partitions()) == PARTITIONS and bool(
            a.partitions() and b.partitions()
        )

    return probe


def test_members_ride_through_a_server_restart(server: GroupServer, topic: str, group: str) -> None:
    """Members stay up while the server restarts on the same port: the group is restored from
    ``__consumer_offsets`` (members included) and they go on from their positions: after the
    restart each new record is read once and no old one again. (Before it, records read while
    the group first formed may be read twice: a commit refused by the rebalance is not retried.)"""
    a = Member(server.bootstrap, group, topic)
    b = Member(server.bootstrap, group, topic)
    everything = dict.fromkeys(range(PARTITIONS), 25)
    try:
        wait_for("two members to split the partitions", _split(a, b))
        read = _read_all([a, b], 100)
        wait_for(
            "the 100 records read and committed", lambda: read() and a.committed() == everything
        )
        assert_split(a.partitions(), b.partitions())
        # A late rebalance can hand a partition to a member whose OffsetFetch came before the
        # old owner's commit: it reads that partition again from the beginning (at least once).
        # The server restarts only once every owner stands at the end of its partitions.
        wait_for("every owner at the end of its partitions", _settled([a, b], 25))
        marks = (len(a.reads), len(b.reads))
        server.restart(same_port=True)
        produce_numbered(server.bootstrap, topic, range(25, 50), create=False)
        wait_for("the 200 records to be read", _read_all([a, b], 200))
        assert_split(a.partitions(), b.partitions())
    finally:
        a.consumer.close()
        b.consumer.close()
    after = sorted((p, o) for p, o, _ in a.reads[marks[0] :] + b.reads[marks[1] :])
    assert after == [(p, o) for p in range(PARTITIONS) for o in range(25, 50)]
