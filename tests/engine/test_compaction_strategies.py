"""KIP-280 compaction strategies (``compaction.strategy``), shared by the Kafka-style cleaner
and the compacted-copy compactor: the kept record per key is the one with the highest
(version, offset), the version being the offset, the timestamp or a header's number."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from seglog.clock import ManualClock
from seglog.core.version_map import VersionMap
from seglog.engine.compaction.compactor import iter_compacted_records
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.errors import InvalidConfigError
from seglog.format.builder import BatchBuilder
from seglog.format.columnar import scan_columns
from seglog.format.records import Header
from seglog.kernels.version_map import MISSING_VERSION, header_versions_nb

Row = tuple[int, bytes, bytes, int, int]  # offset, key, value, timestamp, version


def workload(seed: int, count: int = 120) -> list[tuple[bytes, bytes, int, int | None]]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        key = b"k%d" % rng.randrange(8)
        version = rng.choice([None, rng.randrange(-5, 50)])
        out.append((key, b"v%d" % i, 1_700_000_000_000 + rng.randrange(0, 100_000), version))
    return out


def produce(log: Log, rows: list[tuple[bytes, bytes, int, int | None]], per_batch: int) -> None:
    for i in range(0, len(rows), per_batch):
        builder = BatchBuilder()
        for key, value, timestamp, version in rows[i : i + per_batch]:
            headers = () if version is None else (Header("ver", str(version).encode()),)
            builder.append(timestamp, key, value, headers)
        log.append(builder.build())


def expected(rows: list[tuple[bytes, bytes, int, int | None]], strategy: str) -> list[int]:
    best: dict[bytes, tuple[int, int]] = {}
    for offset, (key, _, timestamp, version) in enumerate(rows):
        if strategy == "offset":
            rank = offset
        elif strategy == "timestamp":
            rank = timestamp
        else:
            rank = MISSING_VERSION if version is None else version
        if key not in best or (rank, offset) >= best[key]:
            best[key] = (rank, offset)
    return sorted(offset for _, offset in best.values())


@pytest.fixture
def manager(tmp_path: Path) -> LogManager:
    return open_log_dirs([tmp_path / "d"], clock=ManualClock(1_700_000_200_000))


@pytest.mark.parametrize("strategy", ["offset", "timestamp", "header:ver"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cleaner_keeps_the_winner_of_each_key(
    manager: LogManager, strategy: str, seed: int
) -> None:
    manager.create_topic(
        "t",
        1,
        configs={
            "cleanup.policy": "compact",
            "compaction.strategy": strategy,
            "min.cleanable.dirty.ratio": "0",
            "segment.bytes": "1500",
        },
    )
    log = manager.get_log("t", 0)
    rows = workload(seed)
    produce(log, rows[:60], 3)
    log.roll()
    manager.clean_once()  # the second half must also beat winners in the clean section
    produce(log, rows[60:], 4)
    log.roll()
    manager.clean_once()
    kept = [r.offset for r in log.iter_records(0)]
    assert kept == expected(rows, strategy)
    manager.close()


@pytest.mark.parametrize("strategy", ["offset", "timestamp", "header:ver"])
def test_compacted_copy_keeps_the_winner_of_each_key(manager: LogManager, strategy: str) -> None:
    manager.create_topic("c", 1, configs={"compaction.strategy": strategy, "retention.ms": "-1"})
    log = manager.get_log("c", 0)
    rows = workload(7)
    produce(log, rows[:50], 5)
    manager.compact("c")
    produce(log, rows[50:], 2)
    manager.compact("c")
    assert [r.offset for r in iter_compacted_records(log, 0)] == expected(rows, strategy)
    manager.close()


def test_strategy_config_is_checked() -> None:
    from seglog.config import LogConfig

    assert LogConfig.from_overrides({"compaction.strategy": "header:v"}).compaction_strategy
    for bad in ("latest", "header:", "header"):
        with pytest.raises(InvalidConfigError):
            LogConfig.from_overrides({"compaction.strategy": bad})


def test_header_versions_parse_numbers_and_miss_otherwise() -> None:
    builder = BatchBuilder()
    values = [b"12", b"-3", b"+7", b"x1", b"", b"9" * 19]
    for value in values:
        builder.append(0, b"k", b"v", (Header("other", b"5"), Header("ver", value)))
    builder.append(0, b"k", None, ())
    columns = scan_columns(builder.build())
    name = np.frombuffer(b"ver", dtype=np.uint8)
    for kernel in (header_versions_nb, header_versions_nb.py_func):
        out = np.empty(len(columns), dtype=np.int64)
        kernel(
            columns.data, columns.batches.records_position, columns.batches.record_start, name, out
        )
        assert out.tolist() == [12, -3, 7] + [MISSING_VERSION] * 4


@pytest.mark.parametrize("use_numba", [True, False])
def test_version_map_ties_go_to_the_later_offset(use_numba: bool) -> None:
    data = np.frombuffer(b"aab", dtype=np.uint8).copy()
    positions = np.array([0, 1, 2, 0], dtype=np.int64)
    lengths = np.array([1, 1, 1, 1], dtype=np.int32)
    offsets = np.array([10, 11, 12, 13], dtype=np.int64)
    versions = np.array([5, 5, 1, 4], dtype=np.int64)
    marks = np.zeros(4, dtype=np.uint8)
    m = VersionMap(32 * 11, 0.9, hash_key=bytes(16), use_numba=use_numba)
    m.put_columns(
        data,
        positions,
        lengths,
        offsets,
        versions,
        min_offset=0,
        superseded=marks,
        superseded_base=10,
    )
    assert marks.tolist() == [1, 0, 0, 1]  # "a"@10 loses the tie to @11; @13 (4 < 5) loses
    found, found_versions = m.get_columns(data, positions[:3], lengths[:3])
    assert found.tolist() == [11, 11, 12] and found_versions.tolist() == [5, 5, 1]
    assert m.size == 2 and m.memory_bytes == 32 * m.slots
