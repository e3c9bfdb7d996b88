"""A consumer group of ``kcat -G`` balanced consumers (librdkafka 2.0 through Debian's kcat).

Two kcat processes split a 4-partition topic; one is stopped with SIGTERM (kcat closes its
consumer: final commit, LeaveGroup) and the other takes every partition; kcat commits
automatically (every 100 ms and on close); after a server restart a new kcat resumes from the
committed offsets, which read back through confluent-kafka's ``Consumer.committed``.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import threading

import pytest
from confluent_kafka import Consumer, TopicPartition
from group_server import PARTITIONS, GroupServer, wait_for
from group_workload import Read, assert_resumed, assert_split, produce_numbered

pytestmark = pytest.mark.skipif(
    shutil.which("kcat") is None, reason="kcat is not installed (make install adds it)"
)
ASSIGNED = re.compile(r"rebalanced \(memberid [^)]*\): (assigned|revoked): (.*)$")


class KcatMember:
    """``kcat -G GROUP TOPIC``: its reads (stdout) and current assignment (stderr)."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.reads: list[Read] = []
        self.assigned: set[int] = set()
        self.stderr: list[str] = []
        settings = [
            "auto.offset.reset=earliest",
            "auto.commit.interval.ms=100",
            "session.timeout.ms=3000",
            "heartbeat.interval.ms=200",
        ]
        self.process = subprocess.Popen(
            ["kcat", "-b", bootstrap, "-G", group, topic, "-u", "-f", "%p %o %s\\n"]
            + [arg for setting in settings for arg in ("-X", setting)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._threads = [
            threading.Thread(target=self._read_stdout),
            threading.Thread(target=self._read_stderr),
        ]
        for thread in self._threads:
            thread.start()

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            partition, offset, value = line.rstrip(b"\n").split(b" ", 2)
            self.reads.append((int(partition), int(offset), value))

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for raw in self.process.stderr:
            line = raw.decode(errors="replace").rstrip()
            self.stderr.append(line)
            match = ASSIGNED.search(line)
            if match and match.group(1) == "assigned":
                self.assigned = {int(p) for p in re.findall(r"\[(\d+)\]", match.group(2))}
            elif match:
                self.assigned = set()

    def stop(self) -> None:
        """SIGTERM: kcat commits, leaves the group and exits 0."""
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(30)
        for thread in self._threads:
            thread.join()
        assert code == 0, f"kcat exited {code}: " + "\n".join(self.stderr)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for thread in self._threads:
            thread.join()


def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        wanted = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        return {tp.partition: tp.offset for tp in consumer.committed(wanted, timeout=10)}
    finally:
        consumer.close()


def _count(*members: KcatMember) -> int:
    return len({(p, o) for m in members for p, o, _ in m.reads})


def test_two_kcat_members_rebalance_commit_and_resume_after_restart(
    server: GroupServer, topic: str, group: str
) -> None:
    a = KcatMember(server.bootstrap, group, topic)
    b = KcatMember(server.bootstrap, group, topic)
    c: KcatMember | None = None
    try:
        wait_for(
            "two kcat members to split the partitions",
            lambda: (
                bool(a.assigned and b.assigned) and len(a.assigned) + len(b.assigned) == PARTITIONS
            ),
        )
        assert_split(a.assigned, b.assigned)
        wait_for("the 100 records to be read", lambda: _count(a, b) >= 100)
        b.stop()
        wait_for("the remaining member to own all", lambda: len(a.assigned) == PARTITIONS)
        produce_numbered(server.bootstrap, topic, range(25, 50), create=False)
        wait_for("the 200 records to be read", lambda: _count(a, b) >= 200)
        a.stop()
        before = a.reads + b.reads

        server.restart()
        committed = _committed(server.bootstrap, group, topic)
        assert committed == dict.fromkeys(range(PARTITIONS), 50)
        produce_numbered(server.bootstrap, topic, range(50, 60), create=False)
        c = KcatMember(server.bootstrap, group, topic)
        wait_for("the records after the commit", lambda: _count(c) >= PARTITIONS * 10)
        c.stop()
    finally:
        for member in (a, b, c):
            if member is not None:
                member.kill()
    assert_resumed(before, committed, c.reads, dict.fromkeys(range(PARTITIONS), 60))
