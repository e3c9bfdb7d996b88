"""Distributed compaction on real Spark (local mode) against the in-process cleaner: the same
input gives byte-identical segments, indexes and checkpoints; key-sharded rounds; failures."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from seglog.clock import ManualClock
from seglog.config import BrokerConfig
from seglog.engine.log_manager import open_log_dirs
from seglog.format.names import CLEANED_SUFFIX
from seglog.spark.compaction_job import compact
from support.cleaning_data import DAY_MS, fill, fill_transactional, log_mtimes, tree

SMALL_MAP = {"log.cleaner.dedupe.buffer.size": str(1024 * 1024 + 1)}  # about 39k keys


def broker(root: Path, **overrides: str) -> BrokerConfig:
    return BrokerConfig.from_properties({"log.dirs": str(root), **overrides})


def twins(tmp_path: Path, *, keys: int, records: int) -> tuple[Path, Path, ManualClock]:
    clock = ManualClock(1_700_000_000_000)
    a = tmp_path / "a"
    with open_log_dirs([a], clock=clock) as manager:
        fill(manager, clock, keys=keys, records=records, seed=11)
    b = tmp_path / "b"
    shutil.copytree(a, b, copy_function=shutil.copy2)
    return a, b, clock


def test_spark_job_and_in_process_cleaner_write_identical_bytes(spark: Any, tmp_path: Path) -> None:
    a, b, clock = twins(tmp_path, keys=400, records=4000)
    for round_number in range(2):
        with open_log_dirs([a], clock=clock) as manager:
            expected = manager.clean_once()
        results = compact(spark, broker(b), now_ms=clock.now_ms())
        assert {str(r.topic_partition) for r in results} == {
            str(r.topic_partition) for r in expected
        }
        assert all(r.error is None and r.stats is not None for r in results), results
        assert tree(a) == tree(b), f"round {round_number}"
        if round_number == 0:
            assert log_mtimes(a) == log_mtimes(b)
        clock.advance(2 * DAY_MS)  # the next round expires the tombstones' horizons
        for root in (a, b):
            with open_log_dirs([root], clock=ManualClock(clock.now_ms())) as manager:
                fill(manager, ManualClock(clock.now_ms()), keys=400, records=600, seed=20)


def test_spark_sharded_round_cleans_a_partition_larger_than_one_map(
    spark: Any, tmp_path: Path
) -> None:
    a, b, clock = twins(tmp_path, keys=120_000, records=60_000)
    big = {"log.cleaner.dedupe.buffer.size": str(64 * 1024 * 1024)}
    with open_log_dirs([a], clock=clock, overrides=big) as manager:
        expected = manager.clean_once()
    assert all(r.stats is not None and not r.stats.is_partial for r in expected)
    results = compact(spark, broker(b, **SMALL_MAP), now_ms=clock.now_ms())
    assert all(r.error is None and r.stats is not None for r in results), results
    assert all(not r.stats.is_partial for r in results if r.stats is not None)
    assert tree(a) == tree(b)


def test_spark_without_sharding_matches_the_partial_in_process_round(
    spark: Any, tmp_path: Path
) -> None:
    a, b, clock = twins(tmp_path, keys=120_000, records=60_000)
    with open_log_dirs([a], clock=clock, overrides=SMALL_MAP) as manager:
        expected = manager.clean_once()
    assert any(r.stats is not None and r.stats.is_partial for r in expected)
    results = compact(spark, broker(b, **SMALL_MAP), now_ms=clock.now_ms(), shard_keys=False)
    assert all(r.error is None for r in results)
    assert tree(a) == tree(b)


def test_spark_failed_task_leaves_its_partition_as_it_was(spark: Any, tmp_path: Path) -> None:
    _, b, clock = twins(tmp_path, keys=400, records=4000)
    segment = sorted((b / "users-0").glob("*.log"))[1]
    data = bytearray(segment.read_bytes())
    data[300] ^= 0x5A
    segment.write_bytes(bytes(data))
    before = {k: v for k, v in tree(b).items() if k.startswith("users-0/")}
    results = compact(spark, broker(b), now_ms=clock.now_ms())
    by_name = {str(r.topic_partition): r for r in results}
    assert by_name["users-0"].error is not None
    assert "CorruptRecordError" in by_name["users-0"].error
    assert all(by_name[n].error is None for n in ("prices-0", "prices-1"))
    assert not list(b.rglob("*" + CLEANED_SUFFIX))
    after = {k: v for k, v in tree(b).items() if k.startswith("users-0/")}
    assert after == before
    with open_log_dirs([b], clock=clock) as manager:
        assert "users-0" not in {str(tp) for tp in manager.cleaner_checkpoints()}


def test_spark_failed_job_leaves_every_log_as_it_was(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Spark job itself fails (an executor's task raises after writing its ``.cleaned``
    files): compact() raises, the driver's abort removes every ``.cleaned`` file and
    releases every partition, the logs and checkpoints are byte for byte as before, and the
    next cleaning (in process) cleans them exactly as the twin that never failed."""
    import seglog.spark.compaction_job as job_module

    a, b, clock = twins(tmp_path, keys=400, records=4000)
    before = tree(b)

    def clean_then_die(tasks: list[Any]) -> list[Any]:
        from seglog.engine.cleaning_job import run_partition_task

        for task in tasks:
            run_partition_task(task)  # leaves .cleaned files beside the log
        raise RuntimeError("executor lost after writing its output")

    monkeypatch.setattr(job_module, "_run_bin", clean_then_die)
    with pytest.raises(Exception, match="executor lost after writing its output"):
        compact(spark, broker(b), now_ms=clock.now_ms())
    assert not list(b.rglob("*" + CLEANED_SUFFIX))
    assert tree(b) == before
    monkeypatch.undo()
    with open_log_dirs([a], clock=clock) as manager:
        manager.clean_once()
    with open_log_dirs([b], clock=clock) as manager:
        assert manager.cleaner_checkpoints() == {}
        manager.clean_once()
    assert tree(a) == tree(b)


def test_balance_packs_partitions_into_one_task_per_core() -> None:
    """LPT: largest first, each into the least loaded bin; no empty bins; every index once."""
    from seglog.spark.compaction_job import balance

    assert balance([5, 5, 5, 5, 5, 5, 5, 5], 2) == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert balance([10, 1, 1, 1, 7], 2) == [[0], [4, 1, 2, 3]]  # 10 against 7+1+1+1
    assert balance([3, 9], 8) == [[1], [0]]  # never more bins than partitions
    assert balance([], 4) == []
    bins = balance([7, 3, 9, 1, 4, 4, 8, 2], 3)
    assert sorted(i for b in bins for i in b) == list(range(8))
    loads = sorted(sum([7, 3, 9, 1, 4, 4, 8, 2][i] for i in b) for b in bins)
    assert loads == [12, 13, 13]
    with pytest.raises(ValueError, match="at least 1"):
        balance([1], 0)


def test_spark_job_matches_the_in_process_cleaner_on_transactional_logs(
    spark: Any, tmp_path: Path
) -> None:
    """Transactions (commits, aborts, one left open), idempotent and plain batches: the Spark
    job writes the bytes (segments, indexes, .txnindex files) the in-process cleaner writes,
    round after round as the markers' horizons pass."""
    clock = ManualClock(1_700_000_000_000)
    a = tmp_path / "a"
    with open_log_dirs([a], clock=clock) as manager:
        fill_transactional(manager, clock, keys=200, records=3000, seed=4)
    b = tmp_path / "b"
    shutil.copytree(a, b, copy_function=shutil.copy2)
    for round_number in range(2):
        with open_log_dirs([a], clock=clock) as manager:
            expected = manager.clean_once()
        results = compact(
            spark, broker(b), now_ms=clock.now_ms(), clock=ManualClock(clock.now_ms())
        )
        assert len(results) == len(expected) == 2
        assert all(r.error is None and r.stats is not None for r in results), results
        assert tree(a) == tree(b), f"round {round_number}"
        clock.advance(2 * DAY_MS)
        for root in (a, b):
            with open_log_dirs([root], clock=ManualClock(clock.now_ms())) as manager:
                fill_transactional(
                    manager,
                    ManualClock(clock.now_ms()),
                    keys=200,
                    records=600,
                    seed=30 + round_number,
                )
