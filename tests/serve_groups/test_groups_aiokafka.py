"""A consumer group of aiokafka consumers through ``seglog serve``.

Two members split a 4-partition topic, one leaves (``stop()``: LeaveGroup) and the other takes
every partition, commits survive a server restart and a new member resumes from them
(``AIOKafkaConsumer.committed``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from aiokafka import AIOKafkaConsumer, TopicPartition
from group_server import PARTITIONS, GroupServer
from group_workload import Read, assert_resumed, assert_split, produce_numbered

TAIL = 40


async def wait_until(
    what: str, probe: Callable[[], Awaitable[bool]], timeout_s: float = 30
) -> None:
    """Await ``probe`` until it is true; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not await probe():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")


class Member:
    """A subscribed consumer that records what it reads and commits after each batch."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.topic = topic
        self.reads: list[Read] = []
        self.consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=3000,
            heartbeat_interval_ms=200,
        )

    async def pump(self, *, commit: bool = True) -> None:
        batches = await self.consumer.getmany(timeout_ms=50)
        done: dict[TopicPartition, int] = {}
        for tp, records in batches.items():
            for record in records:
                self.reads.append((tp.partition, record.offset, record.value or b""))
            done[tp] = records[-1].offset + 1
        if commit and done:
            await self.consumer.commit(done)

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}


def _count(*members: Member) -> int:
    return len({(p, o) for m in members for p, o, _ in m.reads})


async def _scenario(server: GroupServer, topic: str, group: str) -> None:
    a = Member(server.bootstrap, group, topic)
    b = Member(server.bootstrap, group, topic)
    await a.consumer.start()
    await b.consumer.start()

    async def split() -> bool:
        await asyncio.gather(a.pump(commit=False), b.pump(commit=False))
        return bool(a.partitions() and b.partitions()) and (
            len(a.partitions()) + len(b.partitions()) == PARTITIONS
        )

    await wait_until("two members to split the partitions", split)
    assert_split(a.partitions(), b.partitions())

    async def read_100() -> bool:
        await asyncio.gather(a.pump(), b.pump())
        return _count(a, b) >= 100

    await wait_until("the 100 records to be read", read_100)
    await b.consumer.stop()

    async def owns_all() -> bool:
        await a.pump()
        return len(a.partitions()) == PARTITIONS

    await wait_until("the remaining member to own all", owns_all)
    await asyncio.to_thread(produce_numbered, server.bootstrap, topic, range(25, 50), create=False)

    async def read_200() -> bool:
        await a.pump()
        return _count(a, b) >= 200

    await wait_until("the 200 records to be read", read_200)
    await a.consumer.commit({TopicPartition(topic, p): TAIL for p in range(PARTITIONS)})
    await a.consumer.stop()
    before = a.reads + b.reads

    await asyncio.to_thread(server.restart)
    c = Member(server.bootstrap, group, topic)
    await c.consumer.start()
    try:
        committed = {
            p: await c.consumer.committed(TopicPartition(topic, p)) for p in range(PARTITIONS)
        }
        assert committed == dict.fromkeys(range(PARTITIONS), TAIL)

        async def tail() -> bool:
            await c.pump(commit=False)
            return _count(c) >= PARTITIONS * (50 - TAIL)

        await wait_until("the tail to be read again", tail)
    finally:
        await c.consumer.stop()
    assert_resumed(before, dict.fromkeys(range(4), TAIL), c.reads, dict.fromkeys(range(4), 50))


def test_two_members_rebalance_commit_and_resume_after_restart(
    server: GroupServer, topic: str, group: str
) -> None:
    asyncio.run(_scenario(server, topic, group))
