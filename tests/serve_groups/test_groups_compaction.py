"""The log cleaner of ``seglog serve`` at work on what clients write over the wire.

* A compacted topic produced through the wire (small segments, a low
  ``min.cleanable.dirty.ratio``) is cleaned by the server's cleaner while a group member keeps
  consuming it: the member sees the latest value of every key, with no error; ``seglog cleaner
  status`` (read-only, beside the running server) shows the dirty section moved up; a reader
  from the earliest offset then gets fewer records than were produced, the latest per key.
* ``__consumer_offsets`` is cleaned by the same cleaner: after many commits of one group (small
  segments through ``offsets.topic.segment.bytes``), its partition keeps the latest commit of
  each key and not the older ones, and a restart still loads the latest offsets.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from group_server import FAST_GROUPS, GroupServer, seglog, wait_for

from seglog.broker.groups.offsets_store import OFFSETS_TOPIC
from seglog.engine.log_manager import open_log_dirs
from seglog.format.group_records import (
    OffsetCommitKey,
    OffsetCommitValue,
    decode_record,
    group_partition,
)

KEYS = 20
COMMITS = 150


@pytest.fixture
def server_settings() -> dict[str, str]:
    return {
        **FAST_GROUPS,
        "log.cleaner.backoff.ms": "50",
        "offsets.topic.segment.bytes": "1024",
        "offsets.topic.num.partitions": "5",
    }


def cleaner_status(server: GroupServer, topic: str) -> list[dict[str, Any]]:
    """``seglog cleaner status --json`` of ``topic``, read beside the running server."""
    done = seglog(server.data_dir, "--read-only", "cleaner", "status", "--json", "--topic", topic)
    assert done.returncode == 0, done.stderr
    partitions: list[dict[str, Any]] = json.loads(done.stdout)["partitions"]
    return partitions


def _consumer(bootstrap: str, group: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 3000,
            "heartbeat.interval.ms": 200,
            "enable.auto.commit": False,
        }
    )


def test_a_compacted_topic_is_cleaned_while_a_group_consumes(
    server: GroupServer, group: str
) -> None:
    topic = f"compacted-{uuid.uuid4().hex[:8]}"
    configs = {
        "cleanup.policy": "compact",
        "segment.bytes": "2048",
        "min.cleanable.dirty.ratio": "0.01",
        "min.compaction.lag.ms": "0",
    }
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(30)
    producer = Producer({"bootstrap.servers": server.bootstrap, "linger.ms": 0})
    member = _consumer(server.bootstrap, group)
    member.subscribe([topic])
    latest: dict[bytes, bytes] = {}
    produced = 0

    def pump() -> None:
        for message in member.consume(500, 0.05):
            assert message.error() is None, message.error()
            latest[message.key()] = message.value()

    def one_round() -> None:
        nonlocal produced
        for k in range(KEYS):
            value = b"%d:%d:" % (k, produced) + b"x" * 40
            producer.produce(topic, key=b"key-%d" % k, value=value)
            produced += 1
        assert producer.flush(30) == 0
        pump()

    def cleaned() -> bool:
        one_round()
        (status,) = cleaner_status(server, topic)
        return status["checkpoint"] is not None and status["first_dirty_offset"] > 0

    wait_for("the cleaner to clean the topic", cleaned, timeout_s=60)
    for _ in range(5):  # go on producing and consuming over the cleaned log
        one_round()
    last_round = produced - KEYS
    expected = {b"key-%d" % k: b"%d:%d:" % (k, last_round + k) + b"x" * 40 for k in range(KEYS)}
    wait_for("the member to see the latest values", lambda: pump() or latest == expected)
    member.close()

    (status,) = cleaner_status(server, topic)
    assert 0 < status["first_dirty_offset"] <= status["log_end_offset"] == produced
    fresh = _consumer(server.bootstrap, f"{group}-fresh")
    fresh.assign([TopicPartition(topic, 0, 0)])
    offsets: list[int] = []
    seen: dict[bytes, bytes] = {}

    def read_to_end() -> bool:
        for message in fresh.consume(500, 0.05):
            assert message.error() is None, message.error()
            offsets.append(message.offset())
            seen[message.key()] = message.value()
        return bool(offsets) and offsets[-1] == produced - 1

    wait_for("a reader from the earliest offset to reach the end", read_to_end)
    fresh.close()
    assert seen == expected
    assert offsets == sorted(set(offsets))
    assert len(offsets) < produced  # older values of the keys were cleaned away


def test_consumer_offsets_is_compacted_and_the_latest_commits_reload(
    server: GroupServer, topic: str, group: str
) -> None:
    committer = _consumer(server.bootstrap, group)
    partitions = [TopicPartition(topic, p) for p in range(4)]
    for n in range(1, COMMITS + 1):  # simple commits (no subscription): one batch each
        committer.commit(
            offsets=[TopicPartition(topic, tp.partition, n) for tp in partitions],
            asynchronous=False,
        )
    home = group_partition(group, 5)

    def status() -> dict[str, Any]:
        return next(s for s in cleaner_status(server, OFFSETS_TOPIC) if s["partition"] == home)

    def mostly_cleaned() -> bool:  # the cleaner went over at least half of the commits
        return status()["first_dirty_offset"] >= COMMITS * 4 // 2

    wait_for(f"the cleaner to clean {OFFSETS_TOPIC}-{home}", mostly_cleaned, timeout_s=60)
    committer.close()
    server.stop()
    first_dirty = status()["first_dirty_offset"]  # offline now: final

    with open_log_dirs([server.data_dir], read_only=True) as manager:
        log = manager.get_log(OFFSETS_TOPIC, home)
        cleaned: dict[tuple[str, int], list[int]] = {}
        last: dict[tuple[str, int], int] = {}
        for record in log.iter_records(log.log_start_offset):
            decoded = decode_record(record.key, record.value)
            if isinstance(decoded.key, OffsetCommitKey) and decoded.key.group == group:
                assert isinstance(decoded.value, OffsetCommitValue)
                key = (decoded.key.topic, decoded.key.partition)
                last[key] = decoded.value.offset
                if record.offset < first_dirty:
                    cleaned.setdefault(key, []).append(decoded.value.offset)
    # below the first dirty offset one commit per key is left (the older ones are gone) ...
    assert {key: len(values) for key, values in cleaned.items()} == {
        (topic, p): 1 for p in range(4)
    }
    # ... and the latest commit of each key is kept
    assert last == {(topic, p): COMMITS for p in range(4)}

    server.start()
    reader = _consumer(server.bootstrap, group)
    committed = reader.committed(partitions, timeout=10)
    reader.close()
    assert [tp.offset for tp in committed] == [COMMITS] * 4
