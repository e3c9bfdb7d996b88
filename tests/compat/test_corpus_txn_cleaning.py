"""The cleaner cleans real brokers' transactional and idempotent logs, and what it writes
decodes in kafka-python and aiokafka as seglog reads it.

Partitions (copied to a temporary directory; the corpus stays read-only): the ksqlDB command
topics (a transactional producer's data and its COMMIT markers), ``__transaction_state``,
``__consumer_offsets`` partitions, and an idempotent producers' topic. Each is opened as a
compacted log (full recovery: producer state and ``.txnindex`` rebuilt from the log), its
active segment rolled, and cleaned twice (the second round past every delete horizon).
After each round, a ``read_committed`` read gives the compaction of what it gave before,
every cleaned ``.log`` file reads the same in both peers, and each producer's last entry is
still in the log.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("kafka", reason="kafka-python (the test extra) is not installed")
pytest.importorskip("aiokafka", reason="aiokafka (the test extra) is not installed")

from compat_support import aiokafka_view, assert_same_reading, seglog_view

from corpus_location import NO_CORPUS_REASON, corpus_root
from seglog.clock import ManualClock
from seglog.config import LogConfig
from seglog.core.cleaning import LogToClean
from seglog.core.isolation import IsolationLevel
from seglog.core.offset_map import OffsetMap
from seglog.engine.cleaning.cleaner import Cleaner
from seglog.engine.log import Log
from seglog.format.reader import BatchReader
from seglog.format.topic_names import TopicPartition
from support.kafka_oracle import kafka_python_view

pytestmark = pytest.mark.compat

ROOT = corpus_root()
PARTITIONS = [
    "broker/itumelengmogase-cp-kraft/_confluent-ksql-default__command_topic-0",
    "broker/itumelengmogase-cp-kraft/__transaction_state-44",
    "broker/itumelengmogase-cp-kraft/__consumer_offsets-29",
    "broker/itumelengmogase-cp-kraft/__consumer_offsets-37",
    "no-licence/danielowo-ksql-txn/_confluent-ksql-default__command_topic-0",
    "no-licence/ldi-poc-kraft/TestTopicPatient-0",
]
DAY = 86_400_000
NOW = 4_102_444_800_000  # 2100-01-01: after every corpus record


def open_copy(name: str, tmp_path: Path) -> Log:
    """A writable copy of corpus partition ``name``, opened as a compacted log."""
    if ROOT is None or not (ROOT / name).is_dir():
        pytest.skip(NO_CORPUS_REASON)
    target = tmp_path / Path(name).name
    shutil.copytree(ROOT / name, target)
    for path in [target, *target.iterdir()]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    topic, _, partition = target.name.rpartition("-")
    config = LogConfig.from_overrides({"cleanup.policy": "compact"})
    return Log.open(target, TopicPartition(topic, int(partition)), config, clock=ManualClock(NOW))


def read_committed(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    return [
        (r.offset, r.key, r.value)
        for r in log.iter_records(0, isolation_level=IsolationLevel.READ_COMMITTED)
    ]


def compacted(
    records: list[tuple[int, bytes | None, bytes | None]], end: int, *, tombstones: bool
) -> list[tuple[int, bytes | None, bytes | None]]:
    """Kafka's compaction of ``records`` below ``end``: each key's latest record (tombstones
    only while ``tombstones``), keyless records dropped; the rest unchanged."""
    last = {key: offset for offset, key, _ in records if offset < end}
    return [
        (offset, key, value)
        for offset, key, value in records
        if offset >= end
        or (key is not None and last[key] == offset and (tombstones or value is not None))
    ]


def check_peers(log: Log) -> None:
    """Every segment file reads the same in seglog, kafka-python and aiokafka."""
    for segment in log.segments:
        data = segment.log_path.read_bytes()
        ours, end = seglog_view(data)
        assert_same_reading(data, ours, end, kafka_python_view(data), "kafka-python")
        assert_same_reading(data, ours, end, aiokafka_view(data), "aiokafka")


def last_entries(log: Log) -> dict[int, int]:
    """Per producer, the last offset of its last batch in the log."""
    out: dict[int, int] = {}
    for segment in log.segments:
        for batch in BatchReader(segment.log_path.read_bytes()):
            if batch.producer_id >= 0:
                out[batch.producer_id] = batch.last_offset
    return out


@pytest.mark.parametrize("name", PARTITIONS)
def test_cleaning_a_broker_written_transactional_log(name: str, tmp_path: Path) -> None:
    log = open_copy(name, tmp_path)
    try:
        assert log.last_stable_offset == log.log_end_offset  # every transaction decided
        before = read_committed(log)
        producers = last_entries(log)
        log.roll()
        end = log.segments[-1].base_offset
        cleaner = Cleaner(OffsetMap(1 << 20, 0.9), clock=ManualClock(NOW))
        to_clean = LogToClean(0, end, 0, log.size_bytes(), 0, 0.5)
        assert cleaner.clean(log, to_clean, now_ms=NOW)[0] == end
        after = read_committed(log)
        assert after == compacted(before, end, tombstones=True)
        check_peers(log)
        assert last_entries(log) == producers  # each producer's last entry stays
        cleaner.clean(log, to_clean, now_ms=NOW + DAY + 1)
        assert read_committed(log) == compacted(before, end, tombstones=False)
        check_peers(log)
        assert last_entries(log) == producers
    finally:
        log.close()
