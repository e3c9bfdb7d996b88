"""A consumer group of kafka-python consumers through ``seglog serve``.

Two members split a 4-partition topic, one leaves and the other takes every partition, commits
survive a server restart and a new member resumes from them (``KafkaConsumer.committed``); a
member killed with SIGKILL (no LeaveGroup) loses its partitions when its session expires.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from group_server import PARTITIONS, GroupServer, wait_for
from group_workload import Read, assert_resumed, assert_split, produce_numbered
from kafka import KafkaConsumer, TopicPartition
from kafka.errors import OffsetMetadataTooLargeError
from kafka.structs import OffsetAndMetadata

TAIL = 40
SESSION_MS = 1500


class Member:
    """A subscribed consumer that records what it reads and commits after each poll."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.topic = topic
        self.reads: list[Read] = []
        self.consumer = KafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=100,
        )

    def pump(self, *, commit: bool = True) -> None:
        batches = self.consumer.poll(timeout_ms=50)
        done: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, records in batches.items():
            for record in records:
                self.reads.append((tp.partition, record.offset, record.value))
            done[tp] = OffsetAndMetadata(records[-1].offset + 1, "", -1)
        if commit and done:
            self.consumer.commit(done)

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def committed(self) -> dict[int, int | None]:
        return {
            p: self.consumer.committed(TopicPartition(self.topic, p)) for p in range(PARTITIONS)
        }


def _read(members: list[Member], count: int, *, closed: tuple[Member, ...] = ()) -> Any:
    def probe() -> bool:
        for member in members:
            member.pump()
        return len({(p, o) for m in [*members, *closed] for p, o, _ in m.reads}) >= count

    return probe


def test_two_members_rebalance_commit_and_resume_after_restart(
    server: GroupServer, topic: str, group: str
) -> None:
    a = Member(server.bootstrap, group, topic)
    b = Member(server.bootstrap, group, topic)

    def split() -> bool:
        a.pump(commit=False)
        b.pump(commit=False)
        return bool(a.partitions() and b.partitions()) and (
            len(a.partitions()) + len(b.partitions()) == PARTITIONS
        )

    wait_for("two members to split the partitions", split)
    assert_split(a.partitions(), b.partitions())
    wait_for("the 100 records to be read", _read([a, b], 100))
    b.consumer.close()
    wait_for("the remaining member to own all", lambda: a.pump() or len(a.partitions()) == 4)

    produce_numbered(server.bootstrap, topic, range(25, 50), create=False)
    wait_for("the 200 records to be read", _read([a], 200, closed=(b,)))
    a.consumer.commit(
        {TopicPartition(topic, p): OffsetAndMetadata(TAIL, "", -1) for p in range(PARTITIONS)}
    )
    a.consumer.close(autocommit=False)
    before = a.reads + b.reads

    server.restart()
    c = Member(server.bootstrap, group, topic)
    committed = c.committed()
    assert committed == dict.fromkeys(range(PARTITIONS), TAIL)
    wait_for("the tail to be read again", _read([c], PARTITIONS * (50 - TAIL)))
    c.consumer.close(autocommit=False)
    assert_resumed(before, {p: TAIL for p in committed}, c.reads, dict.fromkeys(range(4), 50))


def test_a_killed_member_loses_its_partitions_when_its_session_expires(
    server: GroupServer, topic: str, group: str
) -> None:
    script = Path(__file__).with_name("kafka_python_member.py")
    child = subprocess.Popen(
        [sys.executable, str(script), server.bootstrap, group, topic, str(SESSION_MS)],
        stdout=subprocess.PIPE,
        text=True,
    )
    seen: list[list[int]] = []
    assert child.stdout is not None
    stdout = child.stdout
    reader = threading.Thread(target=lambda: seen.extend(json.loads(line) for line in stdout))
    reader.start()
    survivor = Member(server.bootstrap, group, topic)
    try:

        def split() -> bool:
            survivor.pump(commit=False)
            return bool(seen and seen[-1] and survivor.partitions()) and (
                len(seen[-1]) + len(survivor.partitions()) == PARTITIONS
            )

        wait_for("the child and this member to split the partitions", split)
        assert_split(seen[-1], survivor.partitions())
        child.kill()  # SIGKILL: no LeaveGroup, its heartbeats just stop
        child.wait()
        wait_for(
            "the session of the killed member to expire",
            lambda: survivor.pump(commit=False) or len(survivor.partitions()) == PARTITIONS,
        )
        assert survivor.partitions() == set(range(PARTITIONS))
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        reader.join()
        survivor.consumer.close(autocommit=False)


def test_commit_metadata_limit_counts_utf16_units_as_kafka(
    server: GroupServer, topic: str, group: str
) -> None:
    """``offset.metadata.max.bytes`` (4096) bounds the Java string length: 4096 ``é`` (8192
    UTF-8 bytes) and 2048 emoji (4096 UTF-16 units) pass; 4097 ASCII and 2049 emoji do not.
    (kafka-python sends the string as given; confluent-kafka appends a NUL character.)"""
    consumer = KafkaConsumer(bootstrap_servers=server.bootstrap, group_id=group)
    tp = TopicPartition(topic, 0)
    try:
        for offset, metadata in enumerate(["é" * 4096, "😀" * 2048], start=1):
            consumer.commit({tp: OffsetAndMetadata(offset, metadata, -1)})
            got = consumer.committed(tp, metadata=True)
            assert (got.offset, got.metadata) == (offset, metadata)
        for metadata in ["x" * 4097, "😀" * 2049]:
            with pytest.raises(OffsetMetadataTooLargeError):
                consumer.commit({tp: OffsetAndMetadata(9, metadata, -1)})
        assert consumer.committed(tp) == 2
    finally:
        consumer.close(autocommit=False)
