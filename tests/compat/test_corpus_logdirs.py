"""Real Kafka data directories open in seglog (read-only, never writing) and read as kafka-python
reads them; a copy opens read-write, takes appends, and still decodes in kafka-python."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from corpus_location import NO_CORPUS_REASON, corpus_root, snapshot
from seglog.clock import ManualClock
from seglog.config import BrokerConfig
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager
from seglog.format.topic_names import PartitionDirKind, parse_partition_dir_name
from support.kafka_oracle import read_partition_dir_with_kafka_python

pytestmark = pytest.mark.compat


def _data_dirs() -> list[Path]:
    root = corpus_root()
    if root is None:
        return []
    found = set()
    for log_file in root.rglob("*.log"):
        partition_dir = log_file.parent
        parsed = parse_partition_dir_name(partition_dir.name)
        if (
            parsed is not None
            and parsed.kind is PartitionDirKind.LIVE
            and parsed.topic != "__cluster_metadata"  # KRaft's own log: Kafka's LogManager skips it
        ):
            found.add(partition_dir.parent)
    return sorted(found)


def _params() -> list[object]:
    root = corpus_root()
    dirs = _data_dirs()
    if root is None or not dirs:
        return [pytest.param(None, id="no-corpus", marks=pytest.mark.skip(reason=NO_CORPUS_REASON))]
    return [pytest.param(d, id=str(d.relative_to(root))) for d in dirs]


def _open(data_dir: Path, *, read_only: bool) -> LogManager:
    broker = BrokerConfig.from_properties({"log.dirs": str(data_dir)})
    return LogManager.open(broker, clock=ManualClock(), read_only=read_only)


def _records(log: Log) -> list[tuple[int, int, bytes | None, bytes | None]]:
    return [
        (r.offset, r.timestamp, r.key, r.value)
        for r in log.read_records(log.log_start_offset, 10**9)
    ]


def _oracle(log: Log) -> list[tuple[int, int, bytes | None, bytes | None]]:
    return [
        (offset, timestamp, key, value)
        for offset, timestamp, key, value, _ in read_partition_dir_with_kafka_python(log.directory)
        if log.log_start_offset <= offset < log.log_end_offset
    ]


@pytest.mark.parametrize("data_dir", _params())
def test_corpus_data_dir_opens_read_only_and_reads_like_kafka_python(data_dir: Path) -> None:
    before = snapshot(data_dir)
    manager = _open(data_dir, read_only=True)
    try:
        logs = manager.logs()
        assert logs, f"no partition opened in {data_dir}"
        for tp, log in logs.items():
            expected = _oracle(log)
            assert _records(log) == expected, f"{tp} differs from kafka-python"
            if expected:
                assert log.log_end_offset > expected[-1][0]
    finally:
        manager.close()
    assert snapshot(data_dir) == before, "a read-only open changed the corpus"


@pytest.mark.parametrize("data_dir", _params())
def test_corpus_lookups_by_offset_and_timestamp(data_dir: Path) -> None:
    manager = _open(data_dir, read_only=True)
    try:
        for tp, log in manager.logs().items():
            expected = _oracle(log)
            offsets = [e[0] for e in expected]
            # every offset, and every gap a compacted log has, reads from the next record on
            for probe in range(
                log.log_start_offset, log.log_end_offset, max(1, len(offsets) // 50)
            ):
                got = log.read_records(probe, 1)
                following = [o for o in offsets if o >= probe]
                assert [r.offset for r in got] == following[:1], f"{tp} offset {probe}"
            if not expected or min(e[1] for e in expected) < 0:
                continue  # v0 data has no timestamps: Kafka falls back to file times
            for _, ts, _, _ in expected[:: max(1, len(expected) // 25)]:
                want = next(o for o, t, _, _ in expected if t >= ts)
                found = log.fetch_offset_by_timestamp(ts)
                assert found is not None and found.offset == want, f"{tp} timestamp {ts}"
    finally:
        manager.close()


@pytest.mark.parametrize("data_dir", _params())
def test_corpus_copy_takes_appends_and_still_decodes_in_kafka_python(
    data_dir: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "data"
    shutil.copytree(data_dir, copy)
    manager = _open(copy, read_only=False)
    try:
        before = {tp: log.log_end_offset for tp, log in manager.logs().items()}
        for log in manager.logs().values():
            log.append_records(
                [(b"seglog-key", b"appended by seglog")], timestamp_ms=1_800_000_000_000
            )
    finally:
        manager.close()
    manager = _open(copy, read_only=False)
    try:
        for tp, log in manager.logs().items():
            decoded = read_partition_dir_with_kafka_python(log.directory)
            assert log.log_end_offset == before[tp] + 1
            last = decoded[-1]
            assert (last[0], last[2], last[3]) == (before[tp], b"seglog-key", b"appended by seglog")
    finally:
        manager.close()
    assert (copy / ".kafka_cleanshutdown").exists()
