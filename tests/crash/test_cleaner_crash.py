"""Crash injection into the log cleaner (spec ``kafka-cleaner.md`` §6, ``seglog.testing.crash``).

A cleaner round is crashed right before each of its file operations, the data directory is
reopened (startup recovery of ``.cleaned``/``.swap``/``.deleted``), and the result is checked
against the state before the round and the state after an uninterrupted round:

* the log opens, and no ``.cleaned``, ``.swap``, ``.deleted`` or ``.tmp`` file is left in the
  partition directory or the log directory;
* its records (offset, key, value) are the state before the round, the state after it, or
  -- a round replaces its segment groups one at a time, each with its own swap, as Kafka's
  does -- the first k groups after and the rest before;
* offsets strictly increase; every key's latest value is the workload's (a tombstoned key
  is absent or a tombstone); log start and end offsets do not move;
* ``cleaner-offset-checkpoint`` holds the old value or the round's end offset, and the end
  offset only when the data is the state after the round;
* one more cleaner pass on the recovered directory gives the state after the round.

Two ways to crash: SIGKILL of a child process (``seglog.testing.crash.run_clean_forked``,
and ``python -m seglog.testing.crash`` for a few points) before every operation 1..N of
fixed workloads (in one of them an in-process ``SimulatedCrash`` at the same n must leave
the same state); and up to thousands of in-process ``SimulatedCrash`` trials at random
points of random workloads (``SEGLOG_CRASH_TRIALS``, default 2000, within
``SEGLOG_CRASH_BUDGET_S``, default 90 s; ``SEGLOG_CRASH_SEED``).

Found this way: a group whose cleaned segment ended below the base offset of one of the old
segments it replaced (their records all superseded) came back *partly* replaced when the
round died while renaming the old segments ``.deleted``: Kafka's recovery removes only the
live segments below the ``.swap`` segment's next offset, so the old segments above it
survived beside the cleaned one. Such a state is reported as "group g partly replaced". The
cleaner writes exactly Kafka's batches (no emptied batch kept to end a group); the swap
record (``seglog.storage.swap_record``) names the replaced segments for recovery instead,
and ``test_sigkill_in_a_swap_whose_cleaned_segment_ends_below_a_replaced_base`` crashes
such a swap at every point (and shows Kafka's rule alone leaves the group partly replaced).

Trials run in ``/dev/shm`` when it exists (``SEGLOG_CRASH_NO_SHM=1`` to use pytest's tmp
dir): a trial makes dozens of renames, unlinks and fsyncs, which cost milliseconds each on a
CI disk. The in-process trials also make ``os.fsync`` a no-op: it orders nothing for a
*process* crash (the page cache survives it), and the fault point before it still counts.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from seglog.clock import ManualClock
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.format.builder import BatchBuilder
from seglog.format.compression import CompressionType
from seglog.format.topic_names import TopicPartition
from seglog.storage.swap_record import SWAP_RECORD_NAME
from seglog.testing.crash import (
    EXIT_KILL_POINT_NOT_REACHED,
    SimulatedCrash,
    close_fds_opened_since,
    count_operations,
    crash_at,
    open_fds,
    run_clean_forked,
)

pytestmark = pytest.mark.crash

TOPIC = "kv"
TP = TopicPartition(TOPIC, 0)
T0 = 1_700_000_000_000
DAY_MS = 24 * 3600 * 1000
# Kafka's floor is more than 1 MiB per cleaner thread; a small map keeps each round's clear()
# cheap and still holds every key of these workloads.
BROKER = {"log.cleaner.dedupe.buffer.size": str(2 * 1024 * 1024)}
LEFTOVER_SUFFIXES = (".cleaned", ".swap", ".deleted", ".tmp")
# Random trials: at most TRIALS, and no new workload once BUDGET_S seconds have passed (after
# at least MIN_TRIALS), so a slow machine runs a prefix of the same deterministic sequence.
TRIALS = int(os.environ.get("SEGLOG_CRASH_TRIALS", "2000"))
BUDGET_S = float(os.environ.get("SEGLOG_CRASH_BUDGET_S", "90"))  # 0: no limit
MIN_TRIALS = min(TRIALS, 1000)
SEED = int(os.environ.get("SEGLOG_CRASH_SEED", "20250601"))
TRIALS_PER_WORKLOAD = 16

Rec = tuple[int, bytes | None, bytes | None]
Pair = tuple[bytes, bytes | None]


@contextmanager
def reaping_fds(directory: Path) -> Iterator[None]:
    """Close the descriptors under ``directory`` that the block leaves open.

    ``LogManager.close()`` drops the scheduled deletions of replaced segments (renamed
    ``.deleted``, unlinked after ``file.delete.delay.ms``) without closing their files, so
    every cleaned group leaks descriptors; thousands of trials would run out of them.
    """
    before = open_fds()
    try:
        yield
    finally:
        close_fds_opened_since(before, directory)


# --- workloads ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Workload:
    """Records appended in phases; a cleaner pass runs between phases (an older checkpoint
    and small cleaned segments that the next round groups together)."""

    phases: tuple[tuple[Pair, ...], ...]
    topic_configs: dict[str, str]
    per_batch: int = 1
    compression: CompressionType = CompressionType.NONE
    gap_ms: int = 5_000  # clock advance after each phase

    def model(self) -> dict[bytes, bytes | None]:
        """The latest value of every key (None: tombstone)."""
        latest: dict[bytes, bytes | None] = {}
        for phase in self.phases:
            for key, value in phase:
                latest[key] = value
        return latest


def compacted_configs(**extra: str) -> dict[str, str]:
    """A compacted topic that any dirty byte makes cleanable."""
    return {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", **extra}


def fixed_workload(*, phases: int) -> Workload:
    """60 keys updated 4 times per phase (values of varying size), a few tombstones at the
    end of each phase, 4096-byte segments: several segments and groups per round."""
    rng = random.Random(7)
    keys = [b"key-%03d" % i for i in range(60)]
    out = []
    for phase in range(phases):
        pairs: list[Pair] = []
        for update in range(4):
            for key in keys:
                pairs.append((key, b"p%d-u%d-%s-" % (phase, update, key) + rng.randbytes(12)))
        for key in rng.sample(keys, 4):
            pairs.append((key, None))
        out.append(tuple(pairs))
    return Workload(
        tuple(out),
        compacted_configs(
            **{
                "segment.bytes": "4096",
                "index.interval.bytes": "512",
                # Opening reads and checks whole index files: keep the preallocation small.
                "segment.index.bytes": "4096",
            }
        ),
        per_batch=3,
    )


def random_workload(rng: random.Random) -> Workload:
    """A small random workload (tens of records, a few segments)."""
    keys = [b"k%02d" % i for i in range(rng.randint(1, 12))]
    tombstone_p = rng.choice([0.0, 0.1, 0.3])
    value_bytes_max = rng.choice([0, 8, 40])
    phases = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        pairs: list[Pair] = []
        for _ in range(rng.randint(4, 40)):
            key = rng.choice(keys)
            value = (
                None
                if rng.random() < tombstone_p
                else rng.randbytes(rng.randint(0, value_bytes_max))
            )
            pairs.append((key, value))
        phases.append(tuple(pairs))
    configs = compacted_configs(
        **{
            "segment.bytes": str(rng.choice([512, 1024, 2048])),
            "segment.index.bytes": str(rng.choice([96, 4096])),
            "index.interval.bytes": str(rng.choice([64, 4096])),
            # 1 s: tombstones stamped by an earlier phase's round expire in the crashed one
            "delete.retention.ms": str(rng.choice([1_000, DAY_MS])),
        }
    )
    codecs = [CompressionType.NONE] * 4 + [
        CompressionType.GZIP,
        CompressionType.SNAPPY,
        CompressionType.LZ4,
        CompressionType.ZSTD,
    ]
    return Workload(
        tuple(phases),
        configs,
        per_batch=rng.choice([1, 1, 2, 5]),
        compression=rng.choice(codecs),
    )


def build(directory: Path, workload: Workload) -> int:
    """Write the workload into a fresh data directory and close it; returns the clock time
    (ms) at which the round under test runs."""
    clock = ManualClock(T0)
    with reaping_fds(directory):
        _write_phases(directory, workload, clock)
    return clock.now_ms()


def _write_phases(directory: Path, workload: Workload, clock: ManualClock) -> None:
    manager = open_log_dirs([directory], overrides=BROKER, clock=clock)
    try:
        manager.create_topic(TOPIC, 1, workload.topic_configs)
        log = manager.get_log(TOPIC, 0)
        for index, phase in enumerate(workload.phases):
            if index:
                [result] = manager.clean_once()
                assert result.error is None, result.error
            for start in range(0, len(phase), workload.per_batch):
                builder = BatchBuilder(compression=workload.compression)
                for key, value in phase[start : start + workload.per_batch]:
                    builder.append(clock.now_ms(), key, value)
                log.append(builder.build())
            log.roll()
            clock.advance(workload.gap_ms)
    finally:
        manager.close()


# --- states -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class State:
    """What a reader sees of the partition, and the cleaner's checkpoint."""

    records: tuple[Rec, ...]
    segment_bases: tuple[int, ...]
    log_start_offset: int
    log_end_offset: int
    checkpoint: int | None


def read_state(manager: LogManager) -> State:
    """The partition's state through the public API."""
    log = manager.get_log(TOPIC, 0)
    records = tuple((r.offset, r.key, r.value) for r in log.iter_records(log.log_start_offset))
    return State(
        records,
        tuple(s.base_offset for s in log.segments),
        log.log_start_offset,
        log.log_end_offset,
        manager.cleaner_checkpoints().get(TP),
    )


def open_at(directory: Path, round_ms: int, *, read_only: bool = False) -> LogManager:
    """The data directory with the test's broker settings and a clock stopped at the round."""
    return open_log_dirs(
        [directory], overrides=BROKER, clock=ManualClock(round_ms), read_only=read_only
    )


@dataclass(frozen=True)
class Reference:
    """Before and after one uninterrupted round, and the round's file operations."""

    before: State
    after: State
    end_offset: int
    groups: int
    operations: tuple[tuple[str, str], ...]  # (operation, path relative to the data dir)
    model: dict[bytes, bytes | None]
    round_ms: int
    states: dict[tuple[Rec, ...], str]  # records -> "before", "k/G groups replaced", "after"
    mixes: tuple[frozenset[Rec], ...]  # the records with the first k groups replaced, k=0..G

    def label_of(self, records: tuple[Rec, ...]) -> str | None:
        """``before``, ``after``, ``k/G groups replaced``, or None (no state a crash may leave)."""
        return self.states.get(records)

    def partly_replaced_group(self, records: tuple[Rec, ...]) -> int | None:
        """The group g (1-based) when ``records`` hold groups < g replaced, groups > g not, and
        of group g its cleaned segment plus some of the old segments it replaced (the
        recovery gap of the module docstring)."""
        found = frozenset(records)
        if len(found) != len(records):
            return None
        for g in range(1, len(self.mixes)):
            replaced, kept = self.mixes[g], self.mixes[g - 1]
            if replaced <= found <= (replaced | kept):
                return g
        return None


def relative(path: str, data_dir: Path) -> str:
    """``path`` relative to ``data_dir`` (``.`` for the directory itself)."""
    return os.path.relpath(path, data_dir)


def reference_for(before_dir: Path, work: Path, workload: Workload, round_ms: int) -> Reference:
    """Run one uninterrupted round on a copy of ``before_dir``, counting its file operations."""
    manager = open_at(before_dir, round_ms, read_only=True)
    try:
        before = read_state(manager)
    finally:
        manager.close()
    copy = work / "reference"
    shutil.copytree(before_dir, copy)
    with reaping_fds(copy):
        manager = open_at(copy, round_ms)
        try:
            with count_operations() as ops:
                [result] = manager.clean_once()
            assert result.error is None and result.stats is not None, result.error
            after = read_state(manager)
        finally:
            manager.close()
    shutil.rmtree(copy)
    end_offset = result.stats.end_offset
    assert after.checkpoint == end_offset
    # Each group became one segment at its first base offset; the active one stays last.
    group_bases = [b for b in after.segment_bases if b < end_offset]
    assert len(group_bases) == result.stats.groups, (group_bases, result.stats.groups)
    # The states a crash may leave: the first k groups replaced, k = 0 (before) .. G (after).
    mixes = [before.records]
    for bound in group_bases[1:]:
        mixes.append(
            tuple(r for r in after.records if r[0] < bound)
            + tuple(r for r in before.records if r[0] >= bound)
        )
    mixes.append(after.records)
    states: dict[tuple[Rec, ...], str] = {}
    for k, mixed in enumerate(mixes):
        states.setdefault(mixed, f"{k}/{len(group_bases)} groups replaced")
    states[before.records] = "before"
    states[after.records] = "after"
    return Reference(
        before,
        after,
        end_offset,
        len(group_bases),
        tuple((op, relative(path, copy)) for op, path in ops.operations),
        workload.model(),
        round_ms,
        states,
        tuple(frozenset(m) for m in mixes),
    )


def _diff(found: tuple[Rec, ...], ref: Reference) -> str:
    """A short description of how ``found`` differs from the before and after states."""
    found_set = set(found)
    lines = []
    for name, state in (("before", ref.before), ("after", ref.after)):
        want = set(state.records)
        extra = sorted(found_set - want)
        missing = sorted(want - found_set)
        lines.append(
            f"vs {name}: {len(extra)} extra (offsets {[r[0] for r in extra][:12]}), "
            f"{len(missing)} missing (offsets {[r[0] for r in missing][:12]})"
        )
    return "; ".join(lines)


@dataclass
class Verdict:
    """What reopening a crashed directory found."""

    label: str | None = None  # which state it is (Reference.label_of), None if none
    problems: list[str] = field(default_factory=list)  # broken invariants


def check_recovered(directory: Path, ref: Reference) -> Verdict:
    """Reopen a crashed directory and check every invariant of the module docstring."""
    with reaping_fds(directory):
        return _check_recovered(directory, ref)


def _check_recovered(directory: Path, ref: Reference) -> Verdict:
    verdict = Verdict()
    problems = verdict.problems
    try:
        manager = open_at(directory, ref.round_ms)
    except Exception as exc:
        problems.append(f"the data directory does not open: {type(exc).__name__}: {exc}")
        return verdict
    try:
        log = manager.get_log(TOPIC, 0)
        files = [*log.directory.iterdir(), *directory.iterdir()]  # partition dir and root
        leftovers = sorted(p.name for p in files if p.name.endswith(LEFTOVER_SUFFIXES))
        if leftovers:
            problems.append(f"leftover files after recovery: {leftovers}")
        state = read_state(manager)
        label = verdict.label = ref.label_of(state.records)
        if label is None:
            where = (
                f"segments {state.segment_bases}, before {ref.before.segment_bases}, after "
                f"{ref.after.segment_bases}; load: {log.load_report.summary()}"
            )
            group = ref.partly_replaced_group(state.records)
            if group is not None:
                problems.append(
                    f"group {group}/{ref.groups} partly replaced: its cleaned segment is in, "
                    "but old segments it replaced came back with superseded records: "
                    f"{_diff(state.records, ref)}; {where}"
                )
            else:
                problems.append(
                    "records are neither before, after, nor the first groups replaced: "
                    f"{_diff(state.records, ref)}; {where}"
                )
        offsets = [r[0] for r in state.records]
        if any(b <= a for a, b in itertools.pairwise(offsets)):
            problems.append(f"offsets do not strictly increase: {offsets}")
        latest: dict[bytes | None, bytes | None] = {}
        for _, key, value in state.records:
            latest[key] = value
        wrong = sorted(
            key for key in set(latest) | set(ref.model) if latest.get(key) != ref.model.get(key)
        )
        if wrong:
            problems.append(f"latest values differ from the model for keys {wrong[:10]}")
        if (state.log_start_offset, state.log_end_offset) != (
            ref.before.log_start_offset,
            ref.before.log_end_offset,
        ):
            problems.append(
                f"log start/end offsets moved: {state.log_start_offset}/{state.log_end_offset}, "
                f"before {ref.before.log_start_offset}/{ref.before.log_end_offset}"
            )
        if state.checkpoint not in (ref.before.checkpoint, ref.end_offset):
            problems.append(
                f"cleaner checkpoint {state.checkpoint} is neither the old "
                f"{ref.before.checkpoint} nor the round's end {ref.end_offset}"
            )
        elif state.checkpoint == ref.end_offset != ref.before.checkpoint and label != "after":
            problems.append(
                f"the checkpoint says the round finished ({state.checkpoint}) but the data is "
                f"{label or 'unknown'}"
            )
        results = manager.clean_once()
        errors = [r.error for r in results if r.error]
        if errors:
            problems.append(f"the next cleaner pass failed: {errors}")
        again = read_state(manager)
        if again.records != ref.after.records:
            problems.append(
                "one more cleaner pass does not give the state after the round: "
                + _diff(again.records, ref)
            )
        if again.checkpoint != ref.end_offset:
            problems.append(
                f"after one more pass the checkpoint is {again.checkpoint}, not {ref.end_offset}"
            )
    except Exception as exc:
        problems.append(f"checking the reopened log failed: {type(exc).__name__}: {exc}")
    finally:
        manager.close()
    return verdict


# --- fixtures -----------------------------------------------------------------------------------
@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """A directory for trials: in /dev/shm when there is one (module docstring)."""
    shm = Path("/dev/shm")
    if os.environ.get("SEGLOG_CRASH_NO_SHM") or not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    directory = Path(tempfile.mkdtemp(prefix="seglog-crash-", dir=shm))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def clean_argv(directory: Path, round_ms: int, kill_at: int | None) -> list[str]:
    """Arguments of ``seglog.testing.crash`` for one pass over ``directory``."""
    argv = [str(directory), "--clock-ms", str(round_ms)]
    for key, value in BROKER.items():
        argv += ["--override", f"{key}={value}"]
    if kill_at is not None:
        argv += ["--kill-at", str(kill_at)]
    return argv


def describe(ref: Reference, n: int) -> str:
    """Crash point ``n`` as ``n: operation path`` (path relative to the data directory)."""
    operation, path = ref.operations[n - 1]
    return f"n={n}: {operation} {path}"


# --- outcome -----------------------------------------------------------------------------------
def category(label: str | None) -> str:
    """A label coarsened for the per-test tally of states reached."""
    if label is None or label in ("before", "after"):
        return label or "invalid"
    return "first groups replaced"


def finish(failures: list[str], seen: dict[str, int]) -> None:
    """Fail with every broken invariant (the first 40), naming the crash points."""
    assert not failures, f"{len(failures)} problem(s); states {seen}:\n" + "\n".join(failures[:40])


# --- b. SIGKILL before every operation of a round ----------------------------------------------
@pytest.mark.parametrize("phases", [1, 2], ids=["first-round", "second-round"])
def test_sigkill_before_every_file_operation_of_a_round(scratch: Path, phases: int) -> None:
    """A child process is SIGKILLed right before operation n of a cleaner round, for every n;
    the reopened directory is one of the round's states and the next pass finishes it.

    ``second-round`` starts from an old checkpoint, with the first round's small cleaned
    segments grouped together: there, a crash while the old segments of a group are being
    renamed ``.deleted`` used to leave the group partly replaced (module docstring). It also
    runs the in-process ``SimulatedCrash`` at every n, which must leave the same state as the
    kill.
    """
    workload = fixed_workload(phases=phases)
    before_dir = scratch / "before"
    round_ms = build(before_dir, workload)
    ref = reference_for(before_dir, scratch, workload, round_ms)
    total = len(ref.operations)
    assert ref.groups >= 3 and total > 20, (ref.groups, total)
    if phases == 2:
        assert ref.before.checkpoint is not None  # the round starts from an old checkpoint
    failures: list[str] = []
    seen: dict[str, int] = {}
    for n in range(1, total + 1):
        trial = scratch / f"kill-{n}"
        shutil.copytree(before_dir, trial)
        status = run_clean_forked([*clean_argv(trial, round_ms, n), "--quiet"])
        if status != -signal.SIGKILL:
            failures.append(f"{describe(ref, n)}: the child exited with {status}, not -9")
            continue
        verdict = check_recovered(trial, ref)
        failures += [f"{describe(ref, n)}: {p}" for p in verdict.problems]
        seen[category(verdict.label)] = seen.get(category(verdict.label), 0) + 1
        shutil.rmtree(trial)
        if phases == 1:
            continue
        # The in-process simulation must leave the state a real kill leaves.
        shutil.copytree(before_dir, trial)
        simulated = simulated_crash_trial(trial, ref, n)
        if simulated.label != verdict.label or simulated.problems:
            failures.append(
                f"{describe(ref, n)}: SimulatedCrash left {simulated.label} "
                f"{simulated.problems}, SIGKILL left {verdict.label}"
            )
        shutil.rmtree(trial)
    finish(failures, seen)
    assert seen.get("before") and seen.get("after") and seen.get("first groups replaced"), seen


def gap_workload(directory: Path) -> tuple[Workload, int]:
    """Segments A (one batch: y, a), B (x), C (one batch: x, y, larger), then the empty
    active one: with 512-byte segments the round groups [A, B] and [C], and group 1 cleans
    to A's batch rebuilt with ``a`` alone, so its cleaned segment's next offset (2) is B's
    base: B lies outside the range Kafka's loader derives from the ``.swap`` file. Returns
    the workload and the round's time."""
    segments: tuple[tuple[Pair, ...], ...] = (
        ((b"y", b"Y" * 100), (b"a", b"A" * 100)),
        ((b"x", b"X" * 100),),
        ((b"x", b"x" * 300), (b"y", b"y" * 10)),
    )
    configs = compacted_configs(
        **{"segment.bytes": "512", "segment.index.bytes": "4096", "index.interval.bytes": "64"}
    )
    clock = ManualClock(T0)
    with reaping_fds(directory):
        manager = open_log_dirs([directory], overrides=BROKER, clock=clock)
        try:
            manager.create_topic(TOPIC, 1, configs)
            log = manager.get_log(TOPIC, 0)
            for pairs in segments:
                builder = BatchBuilder()
                for key, value in pairs:
                    builder.append(clock.now_ms(), key, value)
                log.append(builder.build())
                log.roll()
        finally:
            manager.close()
    return Workload((tuple(p for pairs in segments for p in pairs),), configs), clock.now_ms()


def test_sigkill_in_a_swap_whose_cleaned_segment_ends_below_a_replaced_base(
    scratch: Path,
) -> None:
    """The recovery gap of the module docstring, made on purpose: SIGKILL before every file
    operation of the round leaves a state of the round (never group 1 partly replaced), and
    the same crash in the swap with the swap record removed (Kafka's rule alone) does leave
    B beside the cleaned segment, so this test would see the gap."""
    before_dir = scratch / "before"
    workload, round_ms = gap_workload(before_dir)
    ref = reference_for(before_dir, scratch, workload, round_ms)
    assert ref.before.segment_bases == (0, 2, 3, 5), ref.before.segment_bases
    # Kafka's batches: B's emptied batch is not kept, C's ends at the upper bound and stays.
    assert ref.after.segment_bases == (0, 3, 5) and ref.groups == 2, ref.after
    assert [r[0] for r in ref.after.records] == [1, 3, 4]
    failures: list[str] = []
    seen: dict[str, int] = {}
    for n in range(1, len(ref.operations) + 1):
        trial = scratch / f"kill-{n}"
        shutil.copytree(before_dir, trial)
        status = run_clean_forked([*clean_argv(trial, round_ms, n), "--quiet"])
        if status != -signal.SIGKILL:
            failures.append(f"{describe(ref, n)}: the child exited with {status}, not -9")
            continue
        verdict = check_recovered(trial, ref)
        failures += [f"{describe(ref, n)}: {p}" for p in verdict.problems]
        seen[category(verdict.label)] = seen.get(category(verdict.label), 0) + 1
        shutil.rmtree(trial)
    finish(failures, seen)
    # (Group 2 keeps its one batch as it was: group 1 replaced reads the same as "after".)
    assert seen.get("before") and seen.get("after"), seen
    assert any(op == "rename" and path.endswith(".swap") for op, path in ref.operations)

    # Kafka's rule alone: crash right before B's first .deleted rename, drop the record.
    n = 1 + next(
        i
        for i, (operation, path) in enumerate(ref.operations)
        if operation == "rename" and Path(path).name.startswith("00000000000000000002.")
    )
    trial = scratch / "no-record"
    shutil.copytree(before_dir, trial)
    fds = open_fds()
    manager = open_at(trial, round_ms)
    with crash_at(n):
        with pytest.raises(SimulatedCrash):
            manager.clean_once()
        manager.abort()
    del manager
    close_fds_opened_since(fds, trial)
    partition = trial / f"{TOPIC}-0"
    assert (partition / "00000000000000000000.log.swap").exists()
    (partition / SWAP_RECORD_NAME).unlink()
    verdict = check_recovered(trial, ref)
    assert any("group 1/2 partly replaced" in p for p in verdict.problems), verdict


def test_module_entry_point_counts_and_dies_of_sigkill(scratch: Path) -> None:
    """``python -m seglog.testing.crash`` in a new interpreter: it counts a round's operations
    like the in-process counter, dies of SIGKILL at a chosen one, and says it did not get
    there when the point lies beyond the round."""
    workload = fixed_workload(phases=1)
    before_dir = scratch / "before"
    round_ms = build(before_dir, workload)
    ref = reference_for(before_dir, scratch, workload, round_ms)
    total = len(ref.operations)
    points = [total // 2, total + 1]
    processes = []
    for i, n in enumerate(points):
        trial = scratch / f"exec-{i}"
        shutil.copytree(before_dir, trial)
        argv = [sys.executable, "-m", "seglog.testing.crash", *clean_argv(trial, round_ms, n)]
        processes.append(
            (n, trial, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        )
    for n, trial, process in processes:
        out, err = process.communicate(timeout=120)
        if n > total:
            assert process.returncode == EXIT_KILL_POINT_NOT_REACHED, err.decode()
            assert json.loads(out)["operations"] == total
            continue
        assert process.returncode == -signal.SIGKILL, err.decode()
        operation, path = ref.operations[n - 1]
        assert f"SIGKILL at operation {n}: {operation} " in err.decode()
        assert Path(path).name in err.decode()
        verdict = check_recovered(trial, ref)
        assert not verdict.problems, (describe(ref, n), verdict)
        assert verdict.label is not None


# --- c. random in-process crashes ---------------------------------------------------------------
def _no_fsync(fd: int) -> None:
    """``os.fsync`` for in-process crashes: nothing to do (module docstring)."""


def simulated_crash_trial(trial: Path, ref: Reference, n: int) -> Verdict:
    """Crash a round at operation ``n`` in this process, abandon the manager, check recovery."""
    fds = open_fds()
    manager = open_at(trial, ref.round_ms)
    problems: list[str] = []
    with crash_at(n) as hook:
        try:
            manager.clean_once()
            problems.append("the round finished without reaching its crash point")
        except SimulatedCrash:
            pass
        point = hook.crash_point
        if point is None or (point[0], relative(point[1], trial)) != ref.operations[n - 1]:
            problems.append(f"crash point {point} is not the reference round's operation {n}")
        unwinding = len(hook.after_crash)
        try:
            manager.abort()  # the dead hook raises at any file operation abort() would make
        except SimulatedCrash:
            problems.append(f"abort() made file operations: {hook.after_crash[unwinding:]}")
    del manager
    close_fds_opened_since(fds, trial)
    if problems:
        return Verdict(problems=problems)
    return check_recovered(trial, ref)


@pytest.mark.slow
@pytest.mark.skipif(TRIALS <= 0, reason="SEGLOG_CRASH_TRIALS=0")
def test_random_simulated_crashes_recover(scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Up to ``SEGLOG_CRASH_TRIALS`` (2000) in-process crashes at random points of random
    workloads, ``TRIALS_PER_WORKLOAD`` distinct points of each, within
    ``SEGLOG_CRASH_BUDGET_S`` (90 s; at least ``MIN_TRIALS`` = 1000 trials)."""
    monkeypatch.setattr(os, "fsync", _no_fsync)
    started = time.monotonic()
    failures: list[str] = []
    seen: dict[str, int] = {}
    trials = 0
    workload_index = 0
    while trials < TRIALS:
        if BUDGET_S and trials >= MIN_TRIALS and time.monotonic() - started > BUDGET_S:
            break
        rng = random.Random(f"{SEED}-{workload_index}")
        workload = random_workload(rng)
        workdir = scratch / f"w{workload_index}"
        before_dir = workdir / "before"
        round_ms = build(before_dir, workload)
        ref = reference_for(before_dir, workdir, workload, round_ms)
        total = len(ref.operations)
        count = min(TRIALS_PER_WORKLOAD, TRIALS - trials, total)
        for n in rng.sample(range(1, total + 1), count):
            trials += 1
            trial = workdir / f"n{n}"
            shutil.copytree(before_dir, trial)
            verdict = simulated_crash_trial(trial, ref, n)
            where = f"seed {SEED} workload {workload_index} {describe(ref, n)} of {total}"
            failures += [f"{where}: {p}" for p in verdict.problems]
            seen[category(verdict.label)] = seen.get(category(verdict.label), 0) + 1
            shutil.rmtree(trial)
        shutil.rmtree(workdir)
        workload_index += 1
    elapsed = time.monotonic() - started
    print(f"{trials} trials on {workload_index} workloads in {elapsed:.1f} s; states {seen}")
    finish(failures, seen)
