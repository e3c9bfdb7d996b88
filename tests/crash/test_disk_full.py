"""Disk full (ENOSPC) and I/O errors (EIO) during append, roll, flush, cleaning, compacted-copy
writes, retention, checkpoint writes and close (``support.disk_faults``).

Each operation is run once without faults on a copy of its starting directory, counting its
file operations (N), then again failing at operation n, for every n (a seeded sample of
``SEGLOG_DISK_FULL_POINTS`` points when N is larger; ``SEGLOG_DISK_FULL_SEED``), in two
modes: ``enospc`` (a full disk: operation n and every later write, fsync and mkdir fail until
space returns) and ``eio`` (only operation n fails). After the failure:

* the error is an ``OSError`` or one of seglog's typed errors (for ``clean_once``, which
  catches errors per partition, the result's error text says ``[Errno 28]``/``[Errno 5]``
  or the OS's words for it); the fault points are every operation of
  :mod:`seglog.storage.fileops`, opens, creations and truncations included;
* ``resume``: space returns (the hook is removed) and the same manager runs the operation
  again; it succeeds and its result is the one of the run without faults; the manager
  closes cleanly;
* ``restart``: with the disk still full the manager is closed (``abort()`` when ``close()``
  fails), space returns, the directory is reopened and the operation runs again there;
* either way the reopened directory opens, ``verify_log`` finds no problem, every record of
  an append that returned is there with the same offset, key and value (a compacted log: the
  latest value of every key), nothing else is there but records the workload wrote at those
  offsets, and no ``.cleaned``/``.swap``/``.deleted``/``.tmp`` file or unpublished
  ``copy-*`` directory is left; and the operation's result is right.

Part two mounts a real 2 MiB tmpfs (we may be root in the test machine; skipped with the
reason when mounting is refused) and fills it until ``ENOSPC`` really happens.

Bugs found this way are kept as strict xfails in ``KNOWN_BUGS`` until fixed (none is open).
"""

from __future__ import annotations

import errno
import itertools
import os
import random
import shutil
import tempfile
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from seglog.clock import ManualClock
from seglog.engine.compaction.compactor import iter_compacted_records
from seglog.engine.inspect.verify import verify_log
from seglog.engine.log import Log
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.errors import SeglogError
from seglog.format.builder import BatchBuilder
from seglog.format.topic_names import TopicPartition
from seglog.storage.compacted_copy import CompactedCopyStore
from seglog.storage.log_dir import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)
from seglog.testing.crash import close_fds_opened_since, count_operations, installed, open_fds
from support.disk_faults import (
    DiskFault,
    close_or_abort,
    drain_flushes,
    error_names_path,
    is_typed_disk_error,
    leftovers,
    tmpfs,
    tmpfs_unavailable_reason,
)

pytestmark = pytest.mark.crash

TOPIC = "kv"
TP = TopicPartition(TOPIC, 0)
T0 = 1_700_000_000_000
BROKER = {"log.cleaner.dedupe.buffer.size": str(2 * 1024 * 1024)}
MAX_POINTS = int(os.environ.get("SEGLOG_DISK_FULL_POINTS", "48"))
SEED = int(os.environ.get("SEGLOG_DISK_FULL_SEED", "20250602"))
# mode -> (errno, sticky, torn); the sweeps run "enospc" and "eio", "torn" has its own test
MODES = {
    "enospc": (errno.ENOSPC, True, False),
    "eio": (errno.EIO, False, False),
    "torn": (errno.ENOSPC, False, True),
}
SWEEP_MODES = ("enospc", "eio")
SMALL_SEGMENTS = {
    "segment.bytes": "1024",
    "index.interval.bytes": "128",
    "segment.index.bytes": "4096",
}

Rec = tuple[int, bytes | None, bytes | None]
KV = tuple[bytes | None, bytes | None]


# --- the trial context --------------------------------------------------------------------------
@dataclass
class Ctx:
    """One manager's run of a scenario: what it was told (``written``: offset -> key, value of
    every record acknowledged, the base included; ``maybe``: records of appends that raised,
    at the offsets they would have had), and the scenario's progress."""

    manager: LogManager
    written: dict[int, KV]
    maybe: dict[int, KV] = field(default_factory=dict)
    progress: dict[str, Any] = field(default_factory=dict)

    @property
    def log(self) -> Log:
        return self.manager.get_log(TOPIC, 0)


class RoundFailed(Exception):
    """clean_once returned a partition error (the cleaner catches errors per partition)."""


def records_of(log: Log) -> tuple[Rec, ...]:
    return tuple((r.offset, r.key, r.value) for r in log.iter_records(log.log_start_offset))


def payload(i: int, size: int = 48) -> bytes:
    return (b"v%05d-" % i) * (size // 7 + 1)


def append_tracked(ctx: Ctx, pairs: list[KV]) -> None:
    """Append one batch; acknowledged records go to ``written``. An append that raises is
    remembered in ``maybe``; ``progress['landed']`` says whether its records went in anyway
    (the log end offset moved: e.g. the write worked and the flush after it failed)."""
    log = ctx.log
    leo = log.log_end_offset
    try:
        info = log.append_records(pairs)
    except BaseException:
        for j, pair in enumerate(pairs):
            ctx.maybe[leo + j] = pair
        ctx.progress["landed"] = log.log_end_offset > leo
        raise
    for j, pair in enumerate(pairs):
        ctx.written[info.first_offset + j] = pair


# --- scenarios ----------------------------------------------------------------------------------
class Scenario:
    """A starting directory (:meth:`build`), unfaulted steps in the trial's manager
    (:meth:`setup`), the operation under test (:meth:`operate`, which must be callable again
    after it failed: the retry), and the state it is judged by (:meth:`state`)."""

    name: ClassVar[str]
    configs: ClassVar[dict[str, str]]
    compacted: ClassVar[bool] = False
    variants: ClassVar[tuple[str, ...]] = ("resume", "restart")
    clock_ms: int = T0

    def build(self, manager: LogManager, clock: ManualClock) -> None:
        """Write the starting data (the directory is closed cleanly after)."""

    def setup(self, ctx: Ctx) -> None:
        """Unfaulted steps before the operation, in the trial's manager."""

    def operate(self, ctx: Ctx) -> None:
        raise NotImplementedError

    def state(self, manager: LogManager) -> dict[str, Any]:
        """What the operation's result is judged by (compared with the run without faults)."""
        log = manager.get_log(TOPIC, 0)
        return {"records": records_of(log), "log_end_offset": log.log_end_offset}

    def live_checks(self, ctx: Ctx) -> list[str]:
        """Extra checks right after the operation succeeded in the trial's manager."""
        return []

    def consistent(self, manager: LogManager, ctx: Ctx, ref: Reference) -> list[str]:
        """Scenario rules for a reopened directory whose operation may not have finished."""
        return []


def write_batches(ctx: Ctx, start: int, count: int, *, per_batch: int = 2) -> None:
    for i in range(start, start + count):
        append_tracked(ctx, [(b"k%02d" % ((i * per_batch + j) % 7), payload(i)) for j in range(2)])
    drain_flushes(ctx.manager)


class AppendScenario(Scenario):
    """24 appends of one 2-record batch into 1 KiB segments: writes, rolls and the background
    flushes after them."""

    name = "append"
    configs: ClassVar[dict[str, str]] = dict(SMALL_SEGMENTS)
    appends = 24

    def build(self, manager: LogManager, clock: ManualClock) -> None:
        manager.create_topic(TOPIC, 1, self.configs)

    def operate(self, ctx: Ctx) -> None:
        start = ctx.progress.get("next", 0)
        if "landed" in ctx.progress:
            # The append that raised: a producer would retry it. It went in anyway when the
            # log end offset moved; then it is not repeated (no duplicate to account for).
            if ctx.progress.pop("landed") or ctx.log.log_end_offset > min(ctx.maybe):
                landed = {o: kv for o, kv in ctx.maybe.items() if o < ctx.log.log_end_offset}
                ctx.written.update(landed)
                start += 1
            ctx.maybe.clear()
        for i in range(start, self.appends):
            ctx.progress["next"] = i
            append_tracked(ctx, [(b"k%02d" % (i % 7), payload(i)), (b"x", payload(i, 20))])
            drain_flushes(ctx.manager)
        ctx.progress["next"] = self.appends


class AppendFlushScenario(AppendScenario):
    """Appends with ``flush.messages=3`` (a flush inside every other append), then a flush."""

    name = "append-flush"
    configs: ClassVar[dict[str, str]] = {**SMALL_SEGMENTS, "segment.bytes": "2048"}
    appends = 10

    def build(self, manager: LogManager, clock: ManualClock) -> None:
        manager.create_topic(TOPIC, 1, {**self.configs, "flush.messages": "3"})

    def operate(self, ctx: Ctx) -> None:
        super().operate(ctx)
        ctx.log.flush()

    def live_checks(self, ctx: Ctx) -> list[str]:
        log = ctx.log
        if log.recovery_point != log.log_end_offset:
            return [
                f"after the flush the recovery point is {log.recovery_point}, not the "
                f"log end offset {log.log_end_offset}"
            ]
        return []


class RollScenario(Scenario):
    """An explicit roll of an active segment holding three batches (indexes not yet synced)."""

    name = "roll"
    configs: ClassVar[dict[str, str]] = {**SMALL_SEGMENTS, "segment.bytes": "4096"}

    def build(self, manager: LogManager, clock: ManualClock) -> None:
        manager.create_topic(TOPIC, 1, self.configs)
        ctx = Ctx(manager, {})
        write_batches(ctx, 0, 8)
        manager.get_log(TOPIC, 0).roll()

    def setup(self, ctx: Ctx) -> None:
        write_batches(ctx, 100, 3)

    def operate(self, ctx: Ctx) -> None:
        ctx.log.roll()
        drain_flushes(ctx.manager)

    def state(self, manager: LogManager) -> dict[str, Any]:
        log = manager.get_log(TOPIC, 0)
        return {
            **super().state(manager),
            "segments": tuple(s.base_offset for s in log.segments),
        }


class RetentionScenario(Scenario):
    """``run_retention`` removing about 8 of 11 segments (``retention.bytes``)."""

    name = "retention"
    configs: ClassVar[dict[str, str]] = {
        **SMALL_SEGMENTS,
        "segment.bytes": "512",
        "retention.bytes": "1200",
    }

    def build(self, manager: LogManager, clock: ManualClock) -> None:
        manager.create_topic(TOPIC, 1, self.configs)
        write_batches(Ctx(manager, {}), 0, 22)

    def operate(self, ctx: Ctx) -> None:
        ctx.manager.run_retention()

    def state(self, manager: LogManager) -> dict[str, Any]:
        log = manager.get_log(TOPIC, 0)
        return {
            **super().state(manager),
            "log_start_offset": log.log_start_offset,
            "segments": tuple(s.base_offset for s in log.segments),
        }

    def consistent(self, manager: LogManager, ctx: Ctx, ref: Reference) -> list[str]:
        start = manager.get_log(TOPIC, 0).log_start_offset
        low, high = ref.before["log_start_offset"], ref.after["log_start_offset"]
        if not low <= start <= high:
            return [f"log start offset {start} is outside [{low}, {high}] (before/after)"]
        return []


class CheckpointScenario(Scenario):
    """``checkpoint_all``: the recovery-point, log-start and high-watermark checkpoints."""

    name = "checkpoint"
    configs: ClassVar[dict[str, str]] = {**SMALL_SEGMENTS, "segment.bytes": "512"}

    def build(self, manager: LogManager, clock: ManualClock) -> None:
        manager.create_topic(TOPIC, 1, self.configs)
        write_batches(Ctx(manager, {}), 0, 6)
        manager.delete_records({TP: 3})

    def setup(self, ctx: Ctx) -> None:
        write_batches(ctx, 100, 4)
        ctx.log.flush()

    def operate(self, ctx: Ctx) -> None:
        ctx.manager.checkpoint_all()

    def state(self, manager: LogManager) -> dict[str, Any]:
        """The records, and whether each checkpoint file says what the manager holds (a
        reopened log starts from the old checkpoint's recovery point, so the values
        themselves differ between ``resume`` and ``restart``)."""
        log = manager.get_log(TOPIC, 0)
        root = Path(manager.broker.log_dirs[0])
        live = {
            RECOVERY_POINT_CHECKPOINT: log.recovery_point,
            LOG_START_OFFSET_CHECKPOINT: log.log_start_offset,
            REPLICATION_OFFSET_CHECKPOINT: log.high_watermark,
        }
        files = {}
        for name, value in live.items():
            text = (root / name).read_text()
            files[name] = text == f"0\n1\n{TOPIC} 0 {value}\n" or text
        return {**super().state(manager), **files}


class CloseScenario(Scenario):
    """``close()``: flush, index trims, checkpoints, the clean-shutdown marker. A failed close
    leaves the manager closed, so only ``restart`` applies."""

    name = "close"
    configs: ClassVar[dict[str, str]] = dict(SMALL_SEGMENTS)
    variants = ("restart",)

    def build(self, manager: LogManager, clock: ManualClock) -> None:
        manager.create_topic(TOPIC, 1, self.configs)
        write_batches(Ctx(manager, {}), 0, 5)

    def setup(self, ctx: Ctx) -> None:
        write_batches(ctx, 100, 7)

    def operate(self, ctx: Ctx) -> None:
        if not ctx.progress.get("closed"):
            ctx.progress["closed"] = True
            ctx.manager.close()


def compacted_phase(ctx: Ctx, clock: ManualClock, phase: int, keys: int = 20) -> None:
    rng = random.Random(phase)
    names = [b"key-%02d" % i for i in range(keys)]
    pairs: list[KV] = []
    for update in range(3):
        pairs += [(k, b"p%d-u%d-" % (phase, update) + rng.randbytes(10)) for k in names]
    pairs += [(k, None) for k in rng.sample(names, 3)]
    for start in range(0, len(pairs), 3):
        append_tracked(ctx, pairs[start : start + 3])
    ctx.log.roll()
    drain_flushes(ctx.manager)
    clock.advance(5_000)


class CleanScenario(Scenario):
    """A ``clean_once`` round over a compacted log that a first round cleaned already: map
    build, ``.cleaned`` segments, the swap, the cleaner checkpoint and its history."""

    name = "clean_once"
    compacted = True
    configs: ClassVar[dict[str, str]] = {
        **SMALL_SEGMENTS,
        "cleanup.policy": "compact",
        "min.cleanable.dirty.ratio": "0.01",
    }

    def build(self, manager: LogManager, clock: ManualClock) -> None:
        manager.create_topic(TOPIC, 1, self.configs)
        ctx = Ctx(manager, {})
        compacted_phase(ctx, clock, 1)
        [result] = manager.clean_once()
        assert result.error is None, result.error
        compacted_phase(ctx, clock, 2)
        self.clock_ms = clock.now_ms()

    def operate(self, ctx: Ctx) -> None:
        errors = [r.error for r in ctx.manager.clean_once() if r.error]
        if errors:
            raise RoundFailed("; ".join(errors))

    def state(self, manager: LogManager) -> dict[str, Any]:
        return {**super().state(manager), "checkpoint": manager.cleaner_checkpoints().get(TP)}


class CompactScenario(Scenario):
    """``compact``: a compacted-copy run superseding a published copy (status, ``copy-*``
    directory and its segments, the log flush, ``published.json``, old copy removed)."""

    name = "compact"
    compacted = True
    configs: ClassVar[dict[str, str]] = {
        **SMALL_SEGMENTS,
        "cleanup.policy": "compact",
        "segment.bytes": "2048",
        "delete.retention.ms": "60000",
    }

    def build(self, manager: LogManager, clock: ManualClock) -> None:
        manager.create_topic(TOPIC, 1, self.configs)
        ctx = Ctx(manager, {})
        compacted_phase(ctx, clock, 1, keys=12)
        manager.compact(TOPIC)
        compacted_phase(ctx, clock, 2, keys=16)
        self.clock_ms = clock.now_ms()

    def operate(self, ctx: Ctx) -> None:
        ctx.manager.compact(TOPIC)

    def state(self, manager: LogManager) -> dict[str, Any]:
        return {**super().state(manager), **compacted_view(manager)}

    def consistent(self, manager: LogManager, ctx: Ctx, ref: Reference) -> list[str]:
        view = compacted_view(manager)
        before = {k: ref.before[k] for k in view}
        after = {k: ref.after[k] for k in view}
        if view not in (before, after):
            return [
                f"the read-compacted view (horizon {view['horizon']}) is neither the one before "
                f"the run (horizon {before['horizon']}) nor after it ({after['horizon']})"
            ]
        return []


def compacted_view(manager: LogManager) -> dict[str, Any]:
    log = manager.get_log(TOPIC, 0)
    publication = CompactedCopyStore(log.directory, writable=False).published()
    view = tuple((r.offset, r.key, r.value) for r in iter_compacted_records(log, 0))
    return {"view": view, "horizon": publication.horizon if publication else -1}


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        AppendScenario(),
        AppendFlushScenario(),
        RollScenario(),
        CleanScenario(),
        CompactScenario(),
        RetentionScenario(),
        CheckpointScenario(),
        CloseScenario(),
    )
}


# --- references ---------------------------------------------------------------------------------
@dataclass
class Reference:
    """The starting directory and one run without faults."""

    base_dir: Path
    base_records: dict[int, KV]  # what the starting directory holds (all acknowledged)
    before: dict[str, Any]  # state before the operation (after setup)
    after: dict[str, Any]  # state after it
    after_reopen: dict[str, Any]  # state after it, closed and reopened
    operations: tuple[tuple[str, str], ...]


def open_at(directory: Path, scenario: Scenario) -> LogManager:
    return open_log_dirs([directory], overrides=BROKER, clock=ManualClock(scenario.clock_ms))


def build_reference(scenario: Scenario, work: Path) -> Reference:
    base = work / f"{scenario.name}-base"
    clock = ManualClock(T0)
    fds = open_fds()
    manager = open_log_dirs([base], overrides=BROKER, clock=clock)
    try:
        scenario.build(manager, clock)
    finally:
        manager.close()
        close_fds_opened_since(fds, base)
    if scenario.clock_ms == T0:
        scenario.clock_ms = clock.now_ms()
    copy = work / f"{scenario.name}-reference"
    shutil.copytree(base, copy)
    fds = open_fds()
    try:
        manager = open_at(copy, scenario)
        base_records = {o: (k, v) for o, k, v in records_of(manager.get_log(TOPIC, 0))}
        ctx = Ctx(manager, dict(base_records))
        scenario.setup(ctx)
        before = scenario.state(manager)
        with count_operations() as ops:
            scenario.operate(ctx)
            if not manager._closed:
                drain_flushes(manager)
        if scenario.name == "close":
            manager = open_at(copy, scenario)
        after = scenario.state(manager)
        problems = scenario.live_checks(ctx)
        assert not problems, problems
        manager.close()
        manager = open_at(copy, scenario)
        after_reopen = scenario.state(manager)
        report = verify_log(manager.get_log(TOPIC, 0), **verify_args(manager, scenario))
        assert report.ok, report.problems
        manager.close()
    finally:
        close_fds_opened_since(fds, copy)
    shutil.rmtree(copy)
    assert ops.count > 0
    return Reference(base, base_records, before, after, after_reopen, tuple(ops.operations))


def verify_args(manager: LogManager, scenario: Scenario) -> dict[str, Any]:
    if scenario.compacted:
        return {"cleaner_checkpoint": manager.cleaner_checkpoints().get(TP)}
    return {}


def points(total: int, rng: random.Random) -> list[int]:
    """Every n of 1..total, or a sample of MAX_POINTS (the first and the last included)."""
    if total <= MAX_POINTS:
        return list(range(1, total + 1))
    middle = rng.sample(range(2, total), MAX_POINTS - 2)
    return sorted({1, total, *middle})


# --- checking a directory ------------------------------------------------------------------------
def check_opened(
    manager: LogManager, ctx: Ctx, scenario: Scenario, ref: Reference | None
) -> list[str]:
    """The invariants of a reopened directory (module docstring), before any retry."""
    problems = []
    log = manager.get_log(TOPIC, 0)
    report = verify_log(log, **verify_args(manager, scenario))
    if not report.ok:
        problems.append(
            "verify_log: " + "; ".join(f"{p.kind} {p.message}" for p in report.problems[:4])
        )
    records = records_of(log)
    known = {**ctx.maybe, **ctx.written}
    foreign = [(o, k, v) for o, k, v in records if known.get(o) != (k, v)]
    if foreign:
        problems.append(
            f"records the workload never wrote there: offsets {[r[0] for r in foreign][:10]}"
        )
    if any(b[0] <= a[0] for a, b in itertools.pairwise(records)):
        problems.append("offsets do not strictly increase")
    present = {o for o, _, _ in records}
    if scenario.compacted:
        model: dict[bytes | None, bytes | None] = {}
        for offset in sorted(ctx.written):
            key, value = ctx.written[offset]
            model[key] = value
        latest: dict[bytes | None, bytes | None] = {}
        for _, key, value in records:
            latest[key] = value
        wrong = sorted(repr(k) for k in set(model) | set(latest) if latest.get(k) != model.get(k))
        if wrong:
            problems.append(f"latest values differ from the acknowledged ones: keys {wrong[:8]}")
    else:
        lost = sorted(o for o in ctx.written if o >= log.log_start_offset and o not in present)
        if lost:
            problems.append(f"acknowledged records lost: offsets {lost[:12]} ({len(lost)})")
    top = max(ctx.written, default=-1)
    if log.log_end_offset <= top:
        problems.append(f"log end offset {log.log_end_offset} is not above acknowledged {top}")
    if ref is not None:
        problems += scenario.consistent(manager, ctx, ref)
    return problems


def diff_states(found: dict[str, Any], want: dict[str, Any]) -> str:
    parts = []
    for key, wanted in want.items():
        if found.get(key) != wanted:
            if key in ("records", "view"):
                f, w = set(found.get(key) or ()), set(wanted)
                parts.append(
                    f"{key}: {len(f - w)} extra (offsets {sorted(r[0] for r in f - w)[:8]}), "
                    f"{len(w - f)} missing (offsets {sorted(r[0] for r in w - f)[:8]})"
                )
            else:
                parts.append(f"{key}: {str(found.get(key))[:80]} instead of {str(wanted)[:80]}")
    return "; ".join(parts)


# --- one trial ------------------------------------------------------------------------------
@dataclass
class Outcome:
    problems: list[str] = field(default_factory=list)
    point: tuple[str, str] | None = None
    error: str | None = None
    names_path: bool | None = None
    close_error: str | None = None


def describe_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def run_trial(
    scenario: Scenario, ref: Reference, trial: Path, mode: str, variant: str, n: int
) -> Outcome:
    code, sticky, torn = MODES[mode]
    out = Outcome()
    shutil.copytree(ref.base_dir, trial)
    fds = open_fds()
    try:
        hook = DiskFault(n, code, sticky=sticky, torn=torn)
        _run_trial(scenario, ref, trial, hook, variant, out)
    except Exception as exc:  # a bug in a check must name the trial too
        out.problems.append(f"the trial raised {describe_error(exc)}")
    finally:
        close_fds_opened_since(fds, trial)
        shutil.rmtree(trial, ignore_errors=True)
    return out


def _run_trial(
    scenario: Scenario, ref: Reference, trial: Path, hook: DiskFault, variant: str, out: Outcome
) -> None:
    problems = out.problems
    manager = open_at(trial, scenario)
    ctx = Ctx(manager, dict(ref.base_records))
    scenario.setup(ctx)
    failure: BaseException | None = None
    with installed(hook):
        try:
            scenario.operate(ctx)
        except Exception as exc:
            failure = exc
        if not manager._closed:
            drain_flushes(manager)
        if variant == "restart":
            out.close_error = close_or_abort(manager)  # the disk is still full (enospc)
    out.point = hook.point
    if not hook.fired:
        problems.append(f"the fault point was not reached ({hook.count} operations)")
        return
    if failure is not None:
        out.error = describe_error(failure)
        if isinstance(failure, RoundFailed):
            if "[Errno" not in str(failure) and os.strerror(hook.code) not in str(failure):
                problems.append(f"clean_once's error does not say what the OS said: {failure}")
        elif not is_typed_disk_error(failure):
            problems.append(f"untyped error: {out.error}")
        out.names_path = error_names_path(failure)
    if variant == "resume":
        # Space returns; the same manager goes on.
        try:
            scenario.operate(ctx)
            drain_flushes(manager)
        except Exception as exc:
            problems.append(
                f"after space returned the operation failed again: {describe_error(exc)}"
            )
        else:
            problems += scenario.live_checks(ctx)
            state = scenario.state(manager)
            if state != ref.after:
                problems.append(f"after the retry: {diff_states(state, ref.after)}")
        try:
            manager.close()
        except Exception as exc:
            problems.append(f"close() after space returned failed: {describe_error(exc)}")
            manager.abort()
    del manager
    try:
        reopened = open_at(trial, scenario)
    except Exception as exc:
        problems.append(f"the directory does not reopen: {describe_error(exc)}")
        return
    try:
        left = leftovers(trial)
        if left:
            problems.append(f"leftovers after reopen: {left}")
        problems += check_opened(reopened, ctx, scenario, ref)
        ctx.manager = reopened
        if variant == "restart":
            try:
                scenario.operate(ctx)
                drain_flushes(reopened)
            except Exception as exc:
                problems.append(
                    "after space returned and a restart the operation failed: "
                    + describe_error(exc)
                )
                return
            state = scenario.state(reopened)
            if state != ref.after and not (scenario.name == "close" and state == ref.before):
                problems.append(f"after restart and retry: {diff_states(state, ref.after)}")
        else:
            state = scenario.state(reopened)
            if state != ref.after_reopen:
                problems.append(f"reopened after the retry: {diff_states(state, ref.after_reopen)}")
    finally:
        try:
            reopened.close()
        except Exception as exc:
            problems.append(f"closing the reopened directory failed: {describe_error(exc)}")
            reopened.abort()


# --- fixtures -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    """Trials run in /dev/shm when there is one (many small renames and fsyncs)."""
    shm = Path("/dev/shm")
    parent = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    directory = Path(tempfile.mkdtemp(prefix="seglog-diskfull-", dir=parent))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


_REFERENCES: dict[tuple[Path, str], Reference] = {}


def reference(name: str, scratch: Path) -> Reference:
    """The scenario's reference, built once per scratch directory."""
    if (scratch, name) not in _REFERENCES:
        _REFERENCES[scratch, name] = build_reference(SCENARIOS[name], scratch)
    return _REFERENCES[scratch, name]


def run_all(
    scenario: Scenario,
    ref: Reference,
    scratch: Path,
    variant: str,
    modes: tuple[str, ...] = SWEEP_MODES,
    only: tuple[str, str] | None = None,
) -> list[str]:
    """Every mode and fault point of ``scenario`` in ``variant`` (``only``: the points whose
    operation is that (operation, path suffix)); the problems, each naming its trial. Prints
    a summary (errors seen, whether they named a path)."""
    total = len(ref.operations)
    rng = random.Random(f"{SEED}-{scenario.name}-{variant}")
    if only is None:
        chosen = points(total, rng)
    else:
        chosen = [
            n
            for n, (op, path) in enumerate(ref.operations, 1)
            if op == only[0] and path.endswith(only[1])
        ]
    failures: list[str] = []
    errors: dict[str, int] = {}
    unnamed: dict[str, int] = {}
    started = time.monotonic()
    trials = 0
    for mode in modes:
        for n in chosen:
            trials += 1
            trial = scratch / f"{scenario.name}-{variant}-{mode}-{n}"
            out = run_trial(scenario, ref, trial, mode, variant, n)
            op, path = out.point or ref.operations[n - 1]
            where = f"{scenario.name}/{variant}/{mode} n={n}/{total} ({op} {Path(path).name})"
            failures += [f"{where}: {p}" for p in out.problems]
            if out.error:
                kind = out.error.split(":")[0]
                errors[kind] = errors.get(kind, 0) + 1
                if out.names_path is False:
                    unnamed[f"{op} {Path(path).suffix or Path(path).name}"] = (
                        unnamed.get(f"{op} {Path(path).suffix or Path(path).name}", 0) + 1
                    )
    print(
        f"\n{scenario.name}/{variant}: N={total}, {trials} trials in "
        f"{time.monotonic() - started:.1f} s; errors raised {errors}; "
        f"errors not naming a path, by fault point {unnamed}"
    )
    return failures


def finish(failures: list[str]) -> None:
    assert not failures, f"{len(failures)} problem(s):\n" + "\n".join(failures[:40])


# --- part one: the fault layer -------------------------------------------------------------------
# (scenario, variant) -> a bug still open, run as a strict xfail; the six bugs this test
# found (swap, RUNNING status, published copy removed, torn append, close leaks, unnamed
# errors) are fixed and their cases pass.
KNOWN_BUGS: dict[tuple[str, str], str] = {}
MAIN_CASES = [
    pytest.param(
        name,
        variant,
        id=f"{name}-{variant}",
        marks=[pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[name, variant])]
        if (name, variant) in KNOWN_BUGS
        else [],
    )
    for name, scenario in SCENARIOS.items()
    for variant in scenario.variants
]


@pytest.mark.parametrize(("name", "variant"), MAIN_CASES)
def test_disk_fault_at_every_operation(scratch: Path, name: str, variant: str) -> None:
    """ENOSPC (sticky) and EIO (once) at each file operation n of the operation; the
    invariants of the module docstring hold, and the operation works once space returns."""
    scenario = SCENARIOS[name]
    ref = reference(name, scratch)
    finish(run_all(scenario, ref, scratch, variant))


def test_short_append_write_then_space_returns(scratch: Path) -> None:
    """ENOSPC in the middle of an append's ``.log`` write, a prefix of the batch written (as a
    real file system does, see the tmpfs tests), at every ``.log`` write of the append
    workload; then space returns and the manager is closed (it succeeds: the disk has room
    again). The directory must reopen with every acknowledged record.

    (``resume``, the appends going on first, passes here: the retried batch is as long as
    the failed one and overwrites its prefix; see the next test.)"""
    scenario = SCENARIOS["append"]
    ref = reference("append", scratch)
    finish(run_all(scenario, ref, scratch, "restart", modes=("torn",), only=("write", ".log")))


def test_short_write_of_a_large_batch_then_smaller_appends(scratch: Path) -> None:
    """A 3 KiB batch fails after 2 KiB were written (ENOSPC); space returns; three small
    batches are appended (acknowledged, written over the start of the partial batch), the
    manager closes cleanly. Reopening must give the log with those records."""
    data = scratch / "short-write"
    fds = open_fds()
    try:
        manager = open_log_dirs([data], overrides=BROKER, clock=ManualClock(T0))
        manager.create_topic(TOPIC, 1, {"segment.index.bytes": "4096"})
        ctx = Ctx(manager, {})
        append_tracked(ctx, [(b"a", payload(1))])
        log = ctx.log
        path = str(log.active_segment.log_path)
        builder = BatchBuilder()
        builder.append(T0, b"big", os.urandom(3000))
        big_batch = builder.build()

        def short_write(operation: str, where: str) -> None:
            if operation == "write" and where == path:
                with open(where, "ab") as handle:  # what a short pwritev leaves
                    handle.write(big_batch[:2048])
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        with installed(short_write), pytest.raises(OSError):
            append_tracked(ctx, [(b"big", bytes(3000))])
        for i in range(3):  # space returned
            append_tracked(ctx, [(b"small-%d" % i, b"v")])
        manager.close()
        reopened = open_log_dirs([data], overrides=BROKER, clock=ManualClock(T0))
        try:
            got = {o: (k, v) for o, k, v in records_of(reopened.get_log(TOPIC, 0))}
            assert got == ctx.written
            assert verify_log(reopened.get_log(TOPIC, 0)).ok
        finally:
            reopened.close()
    finally:
        close_fds_opened_since(fds, data)


# --- closing and opening while the disk is full ---------------------------------------------------


needs_proc_fds = pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir(), reason="open descriptors are listed from /proc/self/fd"
)


def data_dir_fds(directory: Path, before: set[int]) -> list[str]:
    root = os.path.realpath(directory) + os.sep
    out = []
    for fd in sorted(open_fds() - before):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(root):
            out.append(target)
    return out


@needs_proc_fds
def test_failed_close_then_abort_releases_descriptors(scratch: Path) -> None:
    """A full disk at close(): close raises, abort() follows; afterwards no descriptor of
    the process points into the data directory."""
    data = scratch / "close-leak"
    fds = open_fds()
    try:
        manager = open_log_dirs([data], overrides=BROKER, clock=ManualClock(T0))
        manager.create_topic(TOPIC, 2, dict(SMALL_SEGMENTS))
        for partition in (0, 1):
            log = manager.get_log(TOPIC, partition)
            for i in range(12):
                log.append_records([(b"k", payload(i))])
        drain_flushes(manager)
        with installed(DiskFault(1, errno.ENOSPC, sticky=True)):
            assert close_or_abort(manager) is not None  # close failed, abort ran
        leaked = data_dir_fds(data, fds)
        assert not leaked, f"{len(leaked)} descriptors left open: {leaked[:4]}"
    finally:
        close_fds_opened_since(fds, data)


@needs_proc_fds
def test_failed_open_on_a_full_disk_releases_descriptors(scratch: Path) -> None:
    """An unclean directory is opened while the disk is full: recovery's first write fails;
    the open raises an OSError and leaves no descriptor open."""
    data = scratch / "open-leak"
    fds = open_fds()
    try:
        manager = open_log_dirs([data], overrides=BROKER, clock=ManualClock(T0))
        manager.create_topic(TOPIC, 1, dict(SMALL_SEGMENTS))
        log = manager.get_log(TOPIC, 0)
        for i in range(30):
            log.append_records([(b"k", payload(i))])
        drain_flushes(manager)
        manager.abort()  # unclean: the next open recovers (and writes indexes)
        close_fds_opened_since(fds, data)
        with installed(DiskFault(1, errno.ENOSPC, sticky=True)), pytest.raises(OSError):
            open_log_dirs([data], overrides=BROKER, clock=ManualClock(T0))
        leaked = data_dir_fds(data, fds)
        assert not leaked, f"{len(leaked)} descriptors left open: {leaked[:4]}"
    finally:
        close_fds_opened_since(fds, data)


def test_append_error_on_a_full_disk_names_the_segment(scratch: Path) -> None:
    """ENOSPC at an append's ``.log`` write: the error says which file."""
    data = scratch / "unnamed"
    fds = open_fds()
    try:
        manager = open_log_dirs([data], overrides=BROKER, clock=ManualClock(T0))
        try:
            manager.create_topic(TOPIC, 1, dict(SMALL_SEGMENTS))
            log = manager.get_log(TOPIC, 0)
            log.append_records([(b"k", b"v")])
            with (
                installed(DiskFault(1, errno.ENOSPC, sticky=True)),
                pytest.raises((OSError, SeglogError)) as raised,
            ):
                log.append_records([(b"k", b"v")])
            assert error_names_path(raised.value), describe_error(raised.value)
        finally:
            manager.close()
    finally:
        close_fds_opened_since(fds, data)


# --- part two: a real, small file system --------------------------------------------------------
TMPFS_SIZE = "2m"
BALLAST_BYTES = 256 * 1024  # removed to make space return


@pytest.fixture(scope="module")
def can_mount() -> None:
    reason = tmpfs_unavailable_reason()
    if reason is not None:
        pytest.skip(f"cannot mount a {TMPFS_SIZE} tmpfs here ({reason}); the fault layer covers it")


def fill_until_full(path: Path) -> int:
    """Append to ``path`` until the file system is full; returns the bytes written."""
    written = 0
    with open(path, "ab", buffering=0) as handle:
        for chunk in (65536, 4096, 512, 1):
            while True:
                try:
                    handle.write(bytes(chunk))
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break
                written += chunk
    return written


def where_raised(exc: BaseException) -> str:
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    return f"{Path(frame.filename).name}:{frame.lineno} {frame.name} ({frame.line})"


def append_until_enospc(ctx: Ctx, value_bytes: int = 3000, limit: int = 5000) -> OSError:
    """Append one-record batches until the append fails; returns the error."""
    for i in range(limit):
        try:
            append_tracked(ctx, [(b"k%04d" % i, os.urandom(value_bytes))])
        except OSError as exc:
            return exc
    raise AssertionError(f"{limit} appends and the file system is not full")


def check_reopened_real(data: Path, ctx: Ctx) -> list[str]:
    """Open ``data`` (space has returned) and check the invariants; the manager is closed."""
    manager = open_log_dirs([data], overrides=BROKER, clock=ManualClock(T0))
    try:
        problems = [f"leftovers: {left}"] if (left := leftovers(data)) else []
        log = manager.get_log(TOPIC, 0)
        report = verify_log(log)
        if not report.ok:
            problems.append(f"verify_log: {[p.message for p in report.problems[:3]]}")
        got = {o: (k, v) for o, k, v in records_of(log)}
        lost = sorted(o for o, kv in ctx.written.items() if got.get(o) != kv)
        if lost:
            problems.append(f"acknowledged records lost or changed: {lost[:10]} ({len(lost)})")
        foreign = sorted(o for o, kv in got.items() if {**ctx.maybe, **ctx.written}.get(o) != kv)
        if foreign:
            problems.append(f"records nobody wrote there: {foreign[:10]}")
        return problems
    finally:
        manager.close()


@pytest.mark.usefixtures("can_mount")
def test_tmpfs_appends_until_enospc_then_space_returns() -> None:
    """Appends fill a 2 MiB tmpfs until ``ENOSPC`` really happens. The append fails with an
    OSError (ENOSPC); opening the directory while it is still full fails with a typed error
    or works; close (still full) fails, abort() works; once space returns the directory
    reopens, verifies, holds every acknowledged record, and takes appends again."""
    with tmpfs(TMPFS_SIZE) as mount:
        data = mount / "data"
        ballast = mount / "ballast"
        ballast.write_bytes(bytes(BALLAST_BYTES))
        fds = open_fds()
        try:
            manager = open_log_dirs([data], overrides=BROKER, clock=ManualClock(T0))
            manager.create_topic(
                TOPIC, 1, {"segment.bytes": str(256 * 1024), "segment.index.bytes": "65536"}
            )
            ctx = Ctx(manager, {})
            error = append_until_enospc(ctx)
            segment = ctx.log.active_segment
            on_disk = os.path.getsize(segment.log_path)
            print(
                f"\nappend error after {len(ctx.written)} records: {describe_error(error)}; "
                f"names a path: {error_names_path(error)}; raised at {where_raised(error)}; "
                f"active segment {segment.size} bytes, {on_disk} on disk"
            )
            assert error.errno == errno.ENOSPC, error
            # Still full: close fails (index pages, checkpoints); abort must work.
            close_error = close_or_abort(manager)
            print(f"close on the full disk: {close_error or 'succeeded'}")
            del manager
            close_fds_opened_since(fds, data)
            before_open = open_fds()
            try:
                still_full = open_log_dirs([data], overrides=BROKER, clock=ManualClock(T0))
            except (OSError, SeglogError) as exc:
                leaked = close_fds_opened_since(before_open, data)
                print(
                    f"open on the full disk: {describe_error(exc)} at {where_raised(exc)}; "
                    f"descriptors left open by the failed open: {len(leaked)}"
                )
            else:
                print("open on the full disk: worked")
                close_or_abort(still_full)
                close_fds_opened_since(before_open, data)
            ballast.unlink()  # space returns
            problems = check_reopened_real(data, ctx)
            assert not problems, problems
            manager = open_log_dirs([data], overrides=BROKER, clock=ManualClock(T0))
            ctx.manager = manager
            for i in range(5):
                append_tracked(ctx, [(b"again-%d" % i, os.urandom(100))])
            manager.close()
            problems = check_reopened_real(data, ctx)
            assert not problems, problems
        finally:
            close_fds_opened_since(fds, data)


@pytest.mark.usefixtures("can_mount")
def test_tmpfs_space_returns_before_close() -> None:
    """As above, but space returns while the manager is still open, and it closes cleanly:
    the short write the real ENOSPC left must not make the directory unopenable."""
    with tmpfs(TMPFS_SIZE) as mount:
        data = mount / "data"
        ballast = mount / "ballast"
        ballast.write_bytes(bytes(BALLAST_BYTES))
        fds = open_fds()
        try:
            manager = open_log_dirs([data], overrides=BROKER, clock=ManualClock(T0))
            manager.create_topic(
                TOPIC, 1, {"segment.bytes": str(256 * 1024), "segment.index.bytes": "65536"}
            )
            ctx = Ctx(manager, {})
            append_until_enospc(ctx)
            segment = ctx.log.active_segment
            if os.path.getsize(segment.log_path) == segment.size:
                pytest.skip("the disk filled exactly at a batch boundary: no short write")
            ballast.unlink()  # space returns
            manager.close()
            problems = check_reopened_real(data, ctx)
            assert not problems, problems
        finally:
            close_fds_opened_since(fds, data)


@pytest.mark.usefixtures("can_mount")
def test_tmpfs_cleaning_and_compaction_when_full(scratch: Path) -> None:
    """A compacted log on a tmpfs that a ballast file fills completely: clean_once reports
    the partition's ENOSPC, compact raises it; close (abort when it fails); space returns;
    the reopened directory verifies with every key's latest value and no leftovers, and one
    clean_once then one compact give what they give on a roomy disk."""
    configs = {
        "cleanup.policy": "compact",
        "min.cleanable.dirty.ratio": "0.01",
        "segment.bytes": str(16 * 1024),
        "segment.index.bytes": "4096",
        "delete.retention.ms": "60000",
    }
    with tmpfs(TMPFS_SIZE) as mount:
        data = mount / "data"
        fds = open_fds()
        try:
            clock = ManualClock(T0)
            manager = open_log_dirs([data], overrides=BROKER, clock=clock)
            manager.create_topic(TOPIC, 1, configs)
            ctx = Ctx(manager, {})
            for phase in range(4):
                rng = random.Random(phase)
                pairs = [(b"key-%03d" % rng.randrange(120), rng.randbytes(200)) for _ in range(150)]
                for start in range(0, len(pairs), 5):
                    append_tracked(ctx, pairs[start : start + 5])
                drain_flushes(manager)
                clock.advance(5_000)
            manager.close()
            # On a roomy disk: what one clean_once, then one compact, give.
            roomy = scratch / "tmpfs-reference"
            shutil.copytree(data, roomy)
            reference_manager = open_log_dirs([roomy], overrides=BROKER, clock=clock)
            [result] = reference_manager.clean_once()
            assert result.error is None, result.error
            reference_manager.compact(TOPIC)
            want = {
                "records": records_of(reference_manager.get_log(TOPIC, 0)),
                "checkpoint": reference_manager.cleaner_checkpoints().get(TP),
                **compacted_view(reference_manager),
            }
            reference_manager.close()
            close_fds_opened_since(fds, roomy)

            manager = open_log_dirs([data], overrides=BROKER, clock=clock)
            ctx.manager = manager
            ballast = mount / "ballast"
            filled = fill_until_full(ballast)
            results = manager.clean_once()
            print(f"\nballast {filled} bytes; clean_once on the full disk: {results}")
            assert [r.error for r in results if r.error], results
            assert all("[Errno 28]" in r.error for r in results if r.error), results
            with pytest.raises((OSError, SeglogError)) as raised:
                manager.compact(TOPIC)
            print(f"compact on the full disk: {describe_error(raised.value)}")
            print(f"close on the full disk: {close_or_abort(manager) or 'succeeded'}")
            del manager
            close_fds_opened_since(fds, data)
            ballast.unlink()  # space returns
            manager = open_log_dirs([data], overrides=BROKER, clock=clock)
            ctx.manager = manager
            try:
                problems = [f"leftovers: {left}"] if (left := leftovers(data)) else []
                problems += check_opened(manager, ctx, SCENARIOS["clean_once"], None)
                [result] = manager.clean_once()
                assert result.error is None, result.error
                manager.compact(TOPIC)
                got = {
                    "records": records_of(manager.get_log(TOPIC, 0)),
                    "checkpoint": manager.cleaner_checkpoints().get(TP),
                    **compacted_view(manager),
                }
                if got != want:
                    problems.append(f"after space returned: {diff_states(got, want)}")
                assert not problems, problems
            finally:
                manager.close()
        finally:
            close_fds_opened_since(fds, data)
