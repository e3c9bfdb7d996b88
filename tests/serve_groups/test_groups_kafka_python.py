"""A consumer group of kafka-python consumers through ``seglog serve``.

Two members split a 4-partition topic, one leaves and the other takes every partition, commits
survive a server restart and a new member resumes from them (``KafkaConsumer.committed``); a
member killed with SIGKILL (no LeaveGroup) loses its partitions when its session expires; a
stopped member (SIGSTOP) is dropped at its rebalance timeout; ``offset.metadata.max.bytes``
counts UTF-16 code units.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from group_server import PARTITIONS, GroupServer, wait_for
from group_workload import Read, assert_resumed, assert_split, produce_numbered
from kafka import KafkaConsumer, TopicPartition
from kafka.errors import CommitFailedError, OffsetMetadataTooLargeError
from kafka.structs import OffsetAndMetadata

TAIL = 40
SESSION_MS = 1500
#: kafka-python 3.0.12 drops a JoinGroup/SyncGroup round that completes between two of its
#: polls and joins again with heartbeats still off, so a member polled with short timeouts (or
#: waiting while another member is polled) can hang "rebalancing" until its session expires.
#: So each member polls in its own thread, with timeouts long enough for a whole round
#: (``poll`` returns early with records).
POLL_MS = 1000


class Member:
    """A subscribed consumer polled by its own thread, which records what it reads, commits
    after each poll (``commit``) and keeps :attr:`assigned` current."""

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topic: str,
        *,
        commit: bool = True,
        poll_ms: int = POLL_MS,
        rebalance_timeout_ms: int = 300_000,
    ) -> None:
        self.topic = topic
        self.poll_ms = poll_ms
        self.commit = commit
        self.reads: list[Read] = []
        self.assigned: set[int] = set()
        self.consumer = KafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=100,
            max_poll_interval_ms=rebalance_timeout_ms,
        )
        self.closed = False
        self._stopping = threading.Event()
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                self._poll_once()
        except BaseException as failure:  # re-raised by stop()
            self._failure = failure

    def _poll_once(self) -> None:
        batches = self.consumer.poll(timeout_ms=self.poll_ms)
        done: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, records in batches.items():
            for record in records:
                self.reads.append((tp.partition, record.offset, record.value))
            done[tp] = OffsetAndMetadata(records[-1].offset + 1, "", -1)
        if self.commit and done:
            # a rebalance may have taken the partitions: their next owner reads them again
            with contextlib.suppress(CommitFailedError):
                self.consumer.commit(done)
        self.assigned = {tp.partition for tp in self.consumer.assignment()}

    def stop(self) -> None:
        """Stop polling (the consumer stays open); raises what the thread raised."""
        self._stopping.set()
        self._thread.join()
        if self._failure is not None:
            raise self._failure

    def close(self) -> None:
        """Stop polling and close (LeaveGroup); again: nothing."""
        if self.closed:
            return
        self.closed = True
        try:
            self.stop()
        finally:
            self.consumer.close(autocommit=False)

    def committed(self) -> dict[int, int | None]:
        return {
            p: self.consumer.committed(TopicPartition(self.topic, p)) for p in range(PARTITIONS)
        }


def _count(*members: Member) -> int:
    return len({(p, o) for m in members for p, o, _ in m.reads})


def test_two_members_rebalance_commit_and_resume_after_restart(
    server: GroupServer, topic: str, group: str
) -> None:
    a = Member(server.bootstrap, group, topic)
    b = Member(server.bootstrap, group, topic)
    c: Member | None = None
    try:
        wait_for(
            "two members to split the partitions",
            lambda: (
                bool(a.assigned and b.assigned) and len(a.assigned) + len(b.assigned) == PARTITIONS
            ),
        )
        assert_split(a.assigned, b.assigned)
        wait_for("the 100 records to be read", lambda: _count(a, b) >= 100)
        b.close()  # LeaveGroup: a rebalances onto every partition
        wait_for("the remaining member to own all", lambda: len(a.assigned) == PARTITIONS)
        produce_numbered(server.bootstrap, topic, range(25, 50), create=False)
        wait_for("the 200 records to be read", lambda: _count(a, b) >= 200)
        a.stop()
        tail = {TopicPartition(topic, p): OffsetAndMetadata(TAIL, "", -1) for p in range(4)}
        a.consumer.commit(tail)  # commits may move back: [40, 50) is read again after the restart
        a.close()
        before = a.reads + b.reads

        server.restart()
        c = Member(server.bootstrap, group, topic, commit=False)
        committed = c.committed()
        assert committed == dict.fromkeys(range(PARTITIONS), TAIL)
        wait_for("the tail to be read again", lambda: _count(c) >= PARTITIONS * (50 - TAIL))
    finally:
        for member in (a, b, c):
            if member is not None:
                member.close()
    assert_resumed(before, {p: TAIL for p in committed}, c.reads, dict.fromkeys(range(4), 50))


class ChildMember:
    """``kafka_python_member.py`` in its own process: its assignments as it prints them."""

    def __init__(self, bootstrap: str, group: str, topic: str, *timeouts_ms: int) -> None:
        script = Path(__file__).with_name("kafka_python_member.py")
        self.process = subprocess.Popen(
            [sys.executable, str(script), bootstrap, group, topic, *map(str, timeouts_ms)],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.seen: list[list[int]] = []
        assert self.process.stdout is not None
        stdout = self.process.stdout
        self._reader = threading.Thread(
            target=lambda: self.seen.extend(json.loads(line) for line in stdout)
        )
        self._reader.start()

    def partitions(self) -> list[int]:
        return self.seen[-1] if self.seen else []

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._reader.join()


def _split_with(child: ChildMember, survivor: Member) -> Any:
    def probe() -> bool:
        return bool(child.partitions() and survivor.assigned) and (
            len(child.partitions()) + len(survivor.assigned) == PARTITIONS
        )

    return probe


def test_a_killed_member_loses_its_partitions_when_its_session_expires(
    server: GroupServer, topic: str, group: str
) -> None:
    child = ChildMember(server.bootstrap, group, topic, SESSION_MS)
    survivor = Member(server.bootstrap, group, topic, commit=False)
    try:
        wait_for("the child and this member to split the partitions", _split_with(child, survivor))
        assert_split(child.partitions(), survivor.assigned)
        child.kill()  # SIGKILL: no LeaveGroup, its heartbeats just stop
        wait_for(
            "the session of the killed member to expire",
            lambda: len(survivor.assigned) == PARTITIONS,
        )
        assert survivor.assigned == set(range(PARTITIONS))
    finally:
        child.kill()
        survivor.close()


def test_a_member_that_does_not_rejoin_is_dropped_at_its_rebalance_timeout(
    server: GroupServer, topic: str, group: str
) -> None:
    """A stopped (SIGSTOP) member with a 60 s session but a 2 s rebalance timeout
    (``max.poll.interval.ms``) does not rejoin when a second member joins: the join phase
    ends at the rebalance timeout without it, long before its session would expire."""
    child = ChildMember(server.bootstrap, group, topic, 60_000, 2_000)
    try:
        wait_for("the child to own every partition", lambda: len(child.partitions()) == 4)
        child.process.send_signal(signal.SIGSTOP)
        # the join phase lasts the largest rebalance timeout: poll longer than that
        joiner = Member(
            server.bootstrap, group, topic, commit=False, poll_ms=5_000, rebalance_timeout_ms=2_000
        )
        try:
            wait_for(
                "the join phase to end without the stopped member",
                lambda: len(joiner.assigned) == PARTITIONS,
                timeout_s=30,  # half the stopped member's session timeout
            )
        finally:
            joiner.close()
    finally:
        child.process.send_signal(signal.SIGCONT)
        child.kill()


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
