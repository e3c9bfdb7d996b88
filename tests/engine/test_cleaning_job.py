"""The cleaner as a job (plan, tasks, commit) against the in-process cleaner: byte-identical
directories, key-sharded rounds, failures that leave the log as it was. These run the tasks in
this process; ``tests/spark/test_compaction_job.py`` runs the same job on Spark."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from seglog.clock import ManualClock
from seglog.engine.cleaning_job import (
    plan_cleaning_job,
    run_in_process,
    run_partition_task,
)
from seglog.engine.log_manager import open_log_dirs
from seglog.format.builder import BatchBuilder
from seglog.format.names import CLEANED_SUFFIX
from support.cleaning_data import DAY_MS, fill, fill_transactional, log_mtimes, tree


@pytest.fixture
def twin_dirs(tmp_path: Path) -> Iterator[tuple[Path, Path, ManualClock]]:
    clock = ManualClock(1_700_000_000_000)
    a = tmp_path / "a"
    with open_log_dirs([a], clock=clock) as manager:
        fill(manager, clock, keys=300, records=3000, seed=7)
    b = tmp_path / "b"
    shutil.copytree(a, b, copy_function=shutil.copy2)
    yield a, b, clock


def test_job_writes_the_same_bytes_as_the_in_process_cleaner(
    twin_dirs: tuple[Path, Path, ManualClock],
) -> None:
    a, b, clock = twin_dirs
    for round_number in range(3):
        with open_log_dirs([a], clock=clock) as manager:
            expected = manager.clean_once()
        with open_log_dirs([b], clock=clock) as manager:
            job = plan_cleaning_job(manager, now_ms=clock.now_ms())
            results = run_in_process(job)
        assert sorted(str(r.topic_partition) for r in results) == sorted(
            str(r.topic_partition) for r in expected
        )
        assert all(r.error is None for r in results), results
        assert tree(a) == tree(b), f"round {round_number}"
        if round_number == 0:  # later rounds append at different wall-clock times
            assert log_mtimes(a) == log_mtimes(b)
        # next round: more data, and time passes so KIP-534 horizons expire
        clock.advance(2 * DAY_MS)
        for root in (a, b):
            with open_log_dirs([root], clock=ManualClock(clock.now_ms())) as manager:
                fill(manager, ManualClock(clock.now_ms()), keys=300, records=500, seed=round_number)


def test_a_sharded_round_equals_one_round_with_a_map_for_every_key(tmp_path: Path) -> None:
    clock = ManualClock(1_700_000_000_000)
    a = tmp_path / "a"
    with open_log_dirs([a], clock=clock) as manager:
        fill(manager, clock, keys=120_000, records=60_000, seed=3)
    b = tmp_path / "b"
    shutil.copytree(a, b, copy_function=shutil.copy2)
    big = {"log.cleaner.dedupe.buffer.size": str(64 * 1024 * 1024)}
    small = {"log.cleaner.dedupe.buffer.size": str(1024 * 1024 + 1)}  # about 39k keys
    with open_log_dirs([a], clock=clock, overrides=big) as manager:
        expected = manager.clean_once()
    assert all(r.stats is not None and not r.stats.is_partial for r in expected)
    with open_log_dirs([b], clock=clock, overrides=small) as manager:
        job = plan_cleaning_job(manager, now_ms=clock.now_ms(), shard_keys=True)
        outcomes = [run_partition_task(t) for t in job.tasks]
        assert any(o.map_full for o in outcomes), "the small map must fill"
        job.abort()
        job = plan_cleaning_job(manager, now_ms=clock.now_ms(), shard_keys=True)
        results = run_in_process(job)
    assert all(r.error is None for r in results), results
    assert tree(a) == tree(b)


def test_without_sharding_a_small_map_makes_the_same_partial_round(tmp_path: Path) -> None:
    clock = ManualClock(1_700_000_000_000)
    a = tmp_path / "a"
    with open_log_dirs([a], clock=clock) as manager:
        fill(manager, clock, keys=120_000, records=60_000, seed=5)
    b = tmp_path / "b"
    shutil.copytree(a, b, copy_function=shutil.copy2)
    small = {"log.cleaner.dedupe.buffer.size": str(1024 * 1024 + 1)}
    with open_log_dirs([a], clock=clock, overrides=small) as manager:
        expected = manager.clean_once()
        checkpoints_a = manager.cleaner_checkpoints()
    assert any(r.stats is not None and r.stats.is_partial for r in expected)
    with open_log_dirs([b], clock=clock, overrides=small) as manager:
        results = run_in_process(plan_cleaning_job(manager, now_ms=clock.now_ms()))
        assert manager.cleaner_checkpoints() == checkpoints_a
    assert all(r.error is None for r in results)
    assert tree(a) == tree(b)


def test_a_failed_task_leaves_the_partition_as_it_was(
    twin_dirs: tuple[Path, Path, ManualClock],
) -> None:
    _, b, clock = twin_dirs
    victim = b / "prices-1"
    first = sorted(victim.glob("*.log"))[1]
    data = bytearray(first.read_bytes())
    data[200] ^= 0xFF  # inside a batch of a closed segment: its CRC fails
    first.write_bytes(bytes(data))
    before = tree(b)
    with open_log_dirs([b], clock=clock) as manager:
        results = run_in_process(plan_cleaning_job(manager, now_ms=clock.now_ms()))
        failed = [r for r in results if r.error is not None]
        assert [str(r.topic_partition) for r in failed] == ["prices-1"]
        assert "CorruptRecordError" in (failed[0].error or "")
        assert not list(b.rglob("*" + CLEANED_SUFFIX))
        # released: the partition can be planned again
        again = plan_cleaning_job(manager, now_ms=clock.now_ms())
        assert "prices-1" in [str(t.topic_partition) for t in again.tasks]
        again.abort()
    after = tree(b)
    assert after["prices-1/" + first.name] == before["prices-1/" + first.name]
    assert {k: v for k, v in after.items() if k.startswith("prices-1/")} == {
        k: v for k, v in before.items() if k.startswith("prices-1/")
    }


def test_abort_after_the_tasks_removes_their_output(
    twin_dirs: tuple[Path, Path, ManualClock],
) -> None:
    _, b, clock = twin_dirs
    before = tree(b)
    with open_log_dirs([b], clock=clock) as manager:
        job = plan_cleaning_job(manager, now_ms=clock.now_ms())
        outcomes = [run_partition_task(t) for t in job.tasks]
        assert all(o.error is None and o.groups for o in outcomes)
        assert list(b.rglob("*" + CLEANED_SUFFIX))
        job.abort()
        assert not list(b.rglob("*" + CLEANED_SUFFIX))
        assert manager.cleaner_checkpoints() == {}
    assert {k: v for k, v in tree(b).items() if k.endswith(".log")} == {
        k: v for k, v in before.items() if k.endswith(".log")
    }


def test_commit_refuses_segments_that_changed_after_the_tasks(
    twin_dirs: tuple[Path, Path, ManualClock],
) -> None:
    _, b, clock = twin_dirs
    with open_log_dirs([b], clock=clock) as manager:
        job = plan_cleaning_job(manager, now_ms=clock.now_ms(), topic="users")
        outcomes = [run_partition_task(t) for t in job.tasks]
        # pretend the task saw another size for the first group's first segment
        group = outcomes[0].groups[0]
        outcomes[0].groups[0] = type(group)(
            group.bases,
            (group.sizes[0] + 1, *group.sizes[1:]),
            group.cleaned_base,
            group.cleaned_size,
        )
        results = job.commit(outcomes)
        assert results[0].error is not None and "changed while the job ran" in results[0].error
        assert not list(b.rglob("*" + CLEANED_SUFFIX))
        assert manager.cleaner_checkpoints() == {}


def test_groups_cleaned_to_nothing_leave_the_same_empty_segments(tmp_path: Path) -> None:
    """Kafka keeps no emptied batch outside the round's last one: groups whose records are
    all superseded clean to empty segments, on both paths byte for byte (and the next round
    merges them into their neighbour the same way)."""
    clock = ManualClock(1_700_000_000_000)
    a = tmp_path / "a"
    with open_log_dirs([a], clock=clock) as manager:
        manager.create_topic(
            "t",
            1,
            configs={
                "cleanup.policy": "compact",
                "min.cleanable.dirty.ratio": "0.01",
                "segment.bytes": "2000",
            },
        )
        log = manager.get_log("t", 0)
        for update in range(6):  # each pass rewrites every key: older passes all superseded
            for key in range(20):
                builder = BatchBuilder()
                builder.append(clock.now_ms(), b"k%02d" % key, b"u%d-" % update + b"x" * 30)
                log.append(builder.build())
                clock.advance(1)
        log.roll()
    b = tmp_path / "b"
    shutil.copytree(a, b, copy_function=shutil.copy2)
    sizes = []
    for _ in range(2):
        with open_log_dirs([a], clock=clock) as manager:
            expected = manager.clean_once()
            sizes.append([s.size for s in manager.get_log("t", 0).segments])
        with open_log_dirs([b], clock=clock) as manager:
            results = run_in_process(plan_cleaning_job(manager, now_ms=clock.now_ms()))
        assert [r.error for r in expected] == [r.error for r in results] == [None]
        assert tree(a) == tree(b)
        with open_log_dirs([a], clock=clock) as manager:  # dirty again for the next round
            log = manager.get_log("t", 0)
            builder = BatchBuilder()
            builder.append(clock.now_ms(), b"k00", b"again")
            log.append(builder.build())
            log.roll()
        with open_log_dirs([b], clock=clock) as manager:
            log = manager.get_log("t", 0)
            builder = BatchBuilder()
            builder.append(clock.now_ms(), b"k00", b"again")
            log.append(builder.build())
            log.roll()
    # round 1: empty closed segments (groups cleaned to nothing); round 2 merged them
    assert 0 in sizes[0][:-1] and 0 not in sizes[1][:-1], sizes
    assert len(sizes[1]) < len(sizes[0]), sizes


def test_job_and_in_process_cleaner_agree_on_transactional_logs(tmp_path: Path) -> None:
    """Transactions (commits, aborts, an open one), idempotent and plain batches: the job
    writes the bytes the in-process cleaner writes, .txnindex files included, round after
    round as horizons pass; a sharded round equals one with a map for every key."""
    clock = ManualClock(1_700_000_000_000)
    a = tmp_path / "a"
    with open_log_dirs([a], clock=clock) as manager:
        fill_transactional(manager, clock, keys=200, records=3000, seed=1)
    b = tmp_path / "b"
    shutil.copytree(a, b, copy_function=shutil.copy2)
    for round_number in range(3):
        with open_log_dirs([a], clock=clock) as manager:
            expected = manager.clean_once()
        with open_log_dirs([b], clock=clock) as manager:
            results = run_in_process(plan_cleaning_job(manager, now_ms=clock.now_ms()))
        assert all(r.error is None for r in expected + results), expected + results
        assert len(results) == len(expected) == 2
        assert tree(a) == tree(b), f"round {round_number}"
        assert any(name.endswith(".txnindex") for name in tree(a))
        clock.advance(2 * DAY_MS)
        for root in (a, b):
            with open_log_dirs([root], clock=ManualClock(clock.now_ms())) as manager:
                fill_transactional(
                    manager,
                    ManualClock(clock.now_ms()),
                    keys=200,
                    records=800,
                    seed=round_number + 2,
                )


def test_a_sharded_round_over_transactions_equals_one_big_round(tmp_path: Path) -> None:
    """Shard tasks leave markers and aborted records out of their maps as the cleaner's map
    build does: the sharded job writes what one round with a map for every key writes."""
    clock = ManualClock(1_700_000_000_000)
    a = tmp_path / "a"
    with open_log_dirs([a], clock=clock) as manager:
        fill_transactional(manager, clock, keys=120_000, records=60_000, seed=6)
    b = tmp_path / "b"
    shutil.copytree(a, b, copy_function=shutil.copy2)
    big = {"log.cleaner.dedupe.buffer.size": str(64 * 1024 * 1024)}
    small = {"log.cleaner.dedupe.buffer.size": str(1024 * 1024 + 1)}  # about 39k keys
    with open_log_dirs([a], clock=clock, overrides=big) as manager:
        expected = manager.clean_once()
    assert all(r.stats is not None and not r.stats.is_partial for r in expected)
    with open_log_dirs([b], clock=clock, overrides=small) as manager:
        results = run_in_process(plan_cleaning_job(manager, now_ms=clock.now_ms(), shard_keys=True))
    assert all(r.error is None for r in results), results
    assert tree(a) == tree(b)
