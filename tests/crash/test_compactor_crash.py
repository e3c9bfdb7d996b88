"""Crash injection into a compacted-copy run (``seglog.engine.compaction.compactor``, the
publication steps
of ``seglog.storage.compacted_copy``; helpers ``seglog.testing.crash``).

A run (``LogManager.compact``: status RUNNING, the new ``copy-*`` directory and its segments,
the log flushed up to the horizon, ``published.json`` replaced, the old copy removed, status
SUCCESS) is crashed right before each of its file operations n = 1..N, the data directory is
reopened (startup: ``CompactedCopyStore.recover``), and:

* the read-compacted view is the one before the run or the one after it, and the published
  horizon is the matching one;
* no unpublished or superseded ``copy-*`` directory and no ``*.tmp`` file is left;
* the status is never RUNNING: the one before the run, ERROR ("interrupted") with the
  previous figures, or the run's SUCCESS (only with the new copy published);
* the original log is unchanged: its ``.log`` files as the crash left them, and every file
  of the partition directory after a clean close, equal the files before the run;
* one more run gives the view after the run.

Three ways to crash: an in-process ``SimulatedCrash`` at every n (fast), a forked child
SIGKILLed at every n, and a few real ``python -c`` interpreters SIGKILLed at chosen points
(``seglog.testing.crash``'s entry point only runs the log cleaner, so the child program is
here: :data:`CHILD`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from seglog.clock import ManualClock
from seglog.engine.compaction.compactor import iter_compacted_records
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.format.builder import BatchBuilder
from seglog.format.compression import CompressionType
from seglog.storage.compacted_copy import COMPACTION_DIR, COPY_PREFIX, CompactedCopyStore
from seglog.testing.crash import (
    CrashAt,
    SimulatedCrash,
    close_fds_opened_since,
    count_operations,
    crash_at,
    installed,
    open_fds,
)

pytestmark = pytest.mark.crash

TOPIC = "kv"
T0 = 1_700_000_000_000
EXIT_NOT_REACHED = 3
BROKER = {"log.cleaner.dedupe.buffer.size": str(2 * 1024 * 1024)}
COPY_NAME = re.compile(r"copy-\d{20}-[0-9a-f]{8}")

Rec = tuple[int, int, bytes | None, bytes | None]

# The child program of the real-interpreter trials: one run, SIGKILLed before operation N.
CHILD = """
import sys
from seglog.clock import ManualClock
from seglog.engine.log_manager import open_log_dirs
from seglog.testing.crash import CrashAt, installed
data_dir, clock_ms, kill_at, topic = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
overrides = dict(arg.split("=", 1) for arg in sys.argv[5:])
manager = open_log_dirs([data_dir], overrides=overrides, clock=ManualClock(clock_ms))
with installed(CrashAt(kill_at, kill=True)):
    manager.compact(topic)
manager.close()
sys.exit(3)
"""


# --- workloads ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Workload:
    name: str
    configs: dict[str, str]
    phases: tuple[tuple[tuple[bytes | None, bytes | None], ...], ...]
    per_batch: int
    compression: CompressionType


def workload(name: str) -> Workload:
    """``second-run``: a copy is published by phase one's run, the crashed run supersedes it.
    ``first-run``: nothing published yet. ``keyless``: a delete topic keeping keyless records
    under time retention."""
    keys = [b"key-%02d" % i for i in range(10)]
    phase1 = (*((keys[i % 10], b"one-%d" % i) for i in range(30)), (keys[3], None))
    phase2 = (
        *((keys[i % 7], b"two-%d" % i) for i in range(21)),
        (keys[8], None),
        (keys[3], b"back"),
        *((b"new-%d" % i, b"x" * (i % 5)) for i in range(6)),
    )
    copy_configs = {
        "segment.bytes": "400",
        "index.interval.bytes": "128",
        "segment.index.bytes": "4096",
        "delete.retention.ms": "60000",
    }
    if name == "second-run":
        return Workload(
            name,
            {"cleanup.policy": "compact", **copy_configs},
            (phase1, phase2),
            3,
            CompressionType.NONE,
        )
    if name == "first-run":
        return Workload(
            name,
            {"cleanup.policy": "compact", **copy_configs},
            (phase1 + phase2,),
            2,
            CompressionType.LZ4,
        )
    assert name == "keyless"
    with_keyless: list[tuple[bytes | None, bytes | None]] = []
    for i, pair in enumerate(phase2):
        with_keyless += [pair, (None, b"nk-%d" % i)]
    return Workload(
        name,
        {
            "cleanup.policy": "delete",
            "retention.ms": "10000",
            "compaction.retain.null.key": "true",
            **copy_configs,
        },
        (phase1, tuple(with_keyless)),
        4,
        CompressionType.GZIP,
    )


def build(directory: Path, wl: Workload) -> int:
    """Write the workload (phase one compacted) and close; returns the run's clock time."""
    clock = ManualClock(T0)
    fds = open_fds()
    manager = open_log_dirs([directory], overrides=BROKER, clock=clock)
    try:
        manager.create_topic(TOPIC, 1, wl.configs)
        log = manager.get_log(TOPIC, 0)
        for index, phase in enumerate(wl.phases):
            if index:
                manager.compact(TOPIC)
                clock.advance(15_000)  # phase one's oldest records fall out of retention
            for start in range(0, len(phase), wl.per_batch):
                builder = BatchBuilder(compression=wl.compression)
                for key, value in phase[start : start + wl.per_batch]:
                    builder.append(clock.now_ms(), key, value)
                log.append(builder.build())
                clock.advance(100)
    finally:
        manager.close()
        close_fds_opened_since(fds, directory)
    return clock.now_ms() + 1_000


# --- states -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class State:
    view: tuple[Rec, ...]  # read-compacted from 0
    horizon: int  # published horizon, -1 when none
    status: str
    message: str
    figures: dict[str, object]  # see normalized_figures


def partition_dir(data_dir: Path) -> Path:
    return data_dir / f"{TOPIC}-0"


def read_state(manager: LogManager) -> State:
    log = manager.get_log(TOPIC, 0)
    view = tuple((r.offset, r.timestamp, r.key, r.value) for r in iter_compacted_records(log, 0))
    publication = CompactedCopyStore(log.directory).published()
    [status] = manager.compaction_status(TOPIC).values()
    return State(
        view,
        publication.horizon if publication else -1,
        status.state,
        status.message,
        normalized_figures(status.figures),
    )


def normalized_figures(figures: dict[str, object] | None) -> dict[str, object]:
    """Figures without the wall time, copy names without their random part."""
    out = {k: v for k, v in (figures or {}).items() if k != "duration_s"}
    if isinstance(out.get("copy"), str):
        out["copy"] = COPY_NAME.sub("copy-*", str(out["copy"]))
    return out


def open_at(directory: Path, clock_ms: int) -> LogManager:
    return open_log_dirs([directory], overrides=BROKER, clock=ManualClock(clock_ms))


def original_files(data_dir: Path, suffixes: tuple[str, ...] | None = None) -> dict[str, bytes]:
    """The partition directory's own files (not the compacted copies)."""
    return {
        p.name: p.read_bytes()
        for p in sorted(partition_dir(data_dir).iterdir())
        if p.is_file() and (suffixes is None or p.name.endswith(suffixes))
    }


def normalized(path: str, data_dir: Path) -> str:
    return COPY_NAME.sub("copy-*", os.path.relpath(path, data_dir))


@dataclass(frozen=True)
class Reference:
    before: State
    after: State
    operations: tuple[tuple[str, str], ...]
    clock_ms: int
    files: dict[str, bytes]  # the partition directory's files before the run
    log_files: dict[str, bytes]  # its .log files


def reference_for(before_dir: Path, work: Path, clock_ms: int) -> Reference:
    """One uninterrupted run on a copy of ``before_dir``, its operations counted."""
    copy = work / "reference"
    shutil.copytree(before_dir, copy)
    fds = open_fds()
    manager = open_at(copy, clock_ms)
    try:
        before = read_state(manager)
        with count_operations() as ops:
            manager.compact(TOPIC)
        after = read_state(manager)
    finally:
        manager.close()
        close_fds_opened_since(fds, copy)
    shutil.rmtree(copy)
    assert after.status == "SUCCESS" and after.horizon > before.horizon
    assert after.view != before.view
    return Reference(
        before,
        after,
        tuple((op, normalized(path, copy)) for op, path in ops.operations),
        clock_ms,
        original_files(before_dir),
        original_files(before_dir, (".log",)),
    )


def check_recovered(
    trial: Path, ref: Reference, *, check_figures: bool = False
) -> tuple[str | None, list[str]]:
    """Reopen a crashed directory: ("before" | "after" | None, broken invariants).
    ``check_figures``: the status after the next run must describe the published copy
    (see :func:`test_the_status_after_a_crash_past_the_publication_names_the_published_copy`)."""
    problems: list[str] = []
    if original_files(trial, (".log",)) != ref.log_files:
        problems.append("the crash left the original .log files changed")
    fds = open_fds()
    try:
        manager = open_at(trial, ref.clock_ms)
    except Exception as exc:
        close_fds_opened_since(fds, trial)
        return None, [f"the data directory does not open: {type(exc).__name__}: {exc}"]
    label = None
    try:
        state = read_state(manager)
        label = (
            "before"
            if state.view == ref.before.view
            else "after"
            if state.view == ref.after.view
            else None
        )
        if label is None:
            problems.append(f"the view is neither before nor after: {len(state.view)} records")
        elif state.horizon != getattr(ref, label).horizon:
            problems.append(f"published horizon {state.horizon} with the {label} view")
        compaction = partition_dir(trial) / COMPACTION_DIR
        entries = sorted(p.name for p in compaction.iterdir()) if compaction.is_dir() else []
        copies = [e for e in entries if e.startswith(COPY_PREFIX)]
        publication = CompactedCopyStore(partition_dir(trial)).published()
        if copies != ([publication.copy] if publication else []):
            problems.append(f"copy directories left: {copies}, published {publication}")
        leftovers = sorted(
            str(p.relative_to(trial)) for p in trial.rglob("*") if p.name.endswith(".tmp")
        )
        if leftovers:
            problems.append(f"temporary files left: {leftovers}")
        if state.status == "RUNNING":
            problems.append("the status is still RUNNING after a restart")
        elif state.status == "ERROR":
            if "interrupted" not in state.message or state.figures != ref.before.figures:
                problems.append(f"ERROR status {state.message!r} {state.figures}")
        elif (state.status, state.figures) == (ref.after.status, ref.after.figures):
            if label != "after":
                problems.append("the status is the run's SUCCESS but the old copy is published")
        elif (state.status, state.figures) != (ref.before.status, ref.before.figures):
            problems.append(
                f"unexpected status {state.status} {state.message!r} {state.figures}, before "
                f"{ref.before.figures}, after {ref.after.figures}"
            )
        manager.compact(TOPIC)
        again = read_state(manager)
        if again.view != ref.after.view or again.horizon != ref.after.horizon:
            problems.append("the next run does not give the view after the run")
        if again.status != "SUCCESS":
            problems.append(f"the next run's status is {again.status}")
        elif check_figures and again.figures.get("horizon") != again.horizon:
            problems.append(
                f"after the next run the status figures name horizon "
                f"{again.figures.get('horizon')} and copy {again.figures.get('copy')}, but the "
                f"published copy's horizon is {again.horizon}"
            )
    except Exception as exc:
        problems.append(f"checking failed: {type(exc).__name__}: {exc}")
    finally:
        manager.close()
        close_fds_opened_since(fds, trial)
    if original_files(trial) != ref.files:
        changed = sorted(
            name
            for name in set(ref.files) | set(original_files(trial))
            if ref.files.get(name) != original_files(trial).get(name)
        )
        problems.append(f"the original log's files changed: {changed}")
    return label, problems


def simulated_crash(trial: Path, ref: Reference, n: int) -> list[str]:
    """Crash the run at operation ``n`` in this process and abandon the manager."""
    fds = open_fds()
    manager = open_at(trial, ref.clock_ms)
    problems = []
    with crash_at(n) as hook:
        try:
            manager.compact(TOPIC)
            problems.append("the run finished without reaching its crash point")
        except SimulatedCrash:
            pass
        point = hook.crash_point
        if point is None or (point[0], normalized(point[1], trial)) != ref.operations[n - 1]:
            problems.append(f"crash point {point} is not the reference run's operation {n}")
        unwinding = len(hook.after_crash)
        try:
            manager.abort()
        except SimulatedCrash:
            problems.append(f"abort() made file operations: {hook.after_crash[unwinding:]}")
    del manager
    close_fds_opened_since(fds, trial)
    return problems


def run_forked(trial: Path, clock_ms: int, kill_at: int) -> int:
    """One run in a forked child SIGKILLed before operation ``kill_at``; its status."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        status = 1
        try:
            manager = open_at(trial, clock_ms)
            with installed(CrashAt(kill_at, kill=True, announce=False)):
                manager.compact(TOPIC)
            manager.close()
            status = EXIT_NOT_REACHED
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(status)
    _, wait_status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(wait_status):
        return -os.WTERMSIG(wait_status)
    return os.WEXITSTATUS(wait_status)


def describe(ref: Reference, n: int) -> str:
    operation, path = ref.operations[n - 1]
    return f"n={n}/{len(ref.operations)}: {operation} {path}"


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """Trials run in /dev/shm when there is one (dozens of file operations each)."""
    shm = Path("/dev/shm")
    if os.environ.get("SEGLOG_CRASH_NO_SHM") or not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    directory = Path(tempfile.mkdtemp(prefix="seglog-compactor-crash-", dir=shm))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def prepare(scratch: Path, name: str) -> tuple[Path, Reference]:
    before_dir = scratch / "before"
    clock_ms = build(before_dir, workload(name))
    return before_dir, reference_for(before_dir, scratch, clock_ms)


def assert_operations_cover_publication(ref: Reference) -> None:
    """The run's operations include every step of the publication protocol."""
    ops = ref.operations
    assert ("mkdir", f"{TOPIC}-0/{COMPACTION_DIR}/copy-*") in ops
    assert ("rename", f"{TOPIC}-0/{COMPACTION_DIR}/published.json") in ops
    assert any(op == "fsync" and path.endswith(".log") and "copy-*" in path for op, path in ops)
    if ref.before.horizon >= 0:
        assert ("rmtree", f"{TOPIC}-0/{COMPACTION_DIR}/copy-*") in ops


def finish(failures: list[str], seen: dict[str, int]) -> None:
    assert not failures, f"{len(failures)} problem(s); states {seen}:\n" + "\n".join(failures[:40])
    assert seen.get("before") and seen.get("after"), seen


# --- tests ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["second-run", "first-run", "keyless"])
def test_simulated_crash_at_every_operation_of_a_run(
    scratch: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In-process ``SimulatedCrash`` right before every file operation of a run."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)  # orders nothing for a process crash
    before_dir, ref = prepare(scratch, name)
    assert_operations_cover_publication(ref)
    failures: list[str] = []
    seen: dict[str, int] = {}
    for n in range(1, len(ref.operations) + 1):
        trial = scratch / f"sim-{n}"
        shutil.copytree(before_dir, trial)
        problems = simulated_crash(trial, ref, n)
        label = None
        if not problems:
            label, problems = check_recovered(trial, ref)
        failures += [f"{describe(ref, n)}: {p}" for p in problems]
        seen[label or "invalid"] = seen.get(label or "invalid", 0) + 1
        shutil.rmtree(trial)
    finish(failures, seen)


def test_sigkill_at_every_operation_of_a_run(scratch: Path) -> None:
    """A forked child SIGKILLed right before every file operation of a run that supersedes a
    published copy; and past the last one, it finishes."""
    before_dir, ref = prepare(scratch, "second-run")
    total = len(ref.operations)
    failures: list[str] = []
    seen: dict[str, int] = {}
    for n in range(1, total + 2):
        trial = scratch / f"kill-{n}"
        shutil.copytree(before_dir, trial)
        status = run_forked(trial, ref.clock_ms, n)
        if n > total:
            assert status == EXIT_NOT_REACHED, status
            label, problems = check_recovered(trial, ref)
            assert label == "after" and not problems, problems
            continue
        if status != -signal.SIGKILL:
            failures.append(f"{describe(ref, n)}: the child exited with {status}, not -9")
            continue
        label, problems = check_recovered(trial, ref)
        failures += [f"{describe(ref, n)}: {p}" for p in problems]
        seen[label or "invalid"] = seen.get(label or "invalid", 0) + 1
        shutil.rmtree(trial)
    finish(failures, seen)


def test_sigkill_of_a_real_interpreter_at_chosen_points(scratch: Path) -> None:
    """``python -c`` children (no inherited state) SIGKILLed inside the new copy, right before
    and right after the publication's rename, and while the old copy is removed."""
    before_dir, ref = prepare(scratch, "second-run")
    ops = ref.operations
    rename = ops.index(("rename", f"{TOPIC}-0/{COMPACTION_DIR}/published.json")) + 1
    unlink = ops.index(("rmtree", f"{TOPIC}-0/{COMPACTION_DIR}/copy-*")) + 1
    inside = next(i for i, (op, path) in enumerate(ops, 1) if op == "write" and "copy-*" in path)
    points = {inside: "before", rename: "before", rename + 1: "after", unlink: "after"}
    processes = []
    for n in points:
        trial = scratch / f"exec-{n}"
        shutil.copytree(before_dir, trial)
        argv = [sys.executable, "-c", CHILD, str(trial), str(ref.clock_ms), str(n), TOPIC]
        argv += [f"{key}={value}" for key, value in BROKER.items()]
        processes.append(
            (n, trial, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        )
    for n, trial, process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == -signal.SIGKILL, err.decode()
        operation = ops[n - 1][0]
        assert f"SIGKILL at operation {n}: {operation} " in err.decode(), err.decode()
        label, problems = check_recovered(trial, ref)
        assert not problems, (describe(ref, n), problems)
        assert label == points[n], (describe(ref, n), label)


def test_the_reference_run_is_what_the_model_says(scratch: Path) -> None:
    """The states the crash tests compare with: the run folds phase two into the copy
    (tombstones kept within their grace, keyless records kept, old records out of
    retention), and a restart restores the published copy and its status."""
    before_dir, ref = prepare(scratch, "keyless")
    after = {(key, value) for _, _, key, value in ref.after.view}
    assert (b"key-03", b"back") in after and (b"key-08", None) in after
    assert any(key is None for key, _ in after)
    # Phase one's records are older than now - retention.ms: only phase two's remain.
    assert all(value != b"one-%d" % i for i in range(30) for _, value in after)
    trial = scratch / "restart"
    shutil.copytree(before_dir, trial)
    manager = open_at(trial, ref.clock_ms)
    manager.compact(TOPIC)
    state = read_state(manager)
    manager.close()
    manager = open_at(trial, ref.clock_ms)
    try:
        assert read_state(manager) == state
        assert state.view == ref.after.view and state.status == "SUCCESS"
        status_file = partition_dir(trial) / COMPACTION_DIR / "status.json"
        assert json.loads(status_file.read_text())["figures"]["horizon"] == state.horizon
    finally:
        manager.close()


@pytest.mark.parametrize("name", ["second-run", "first-run"])
def test_the_status_after_a_crash_past_the_publication_names_the_published_copy(
    scratch: Path, name: str
) -> None:
    before_dir, ref = prepare(scratch, name)
    n = ref.operations.index(("rename", f"{TOPIC}-0/{COMPACTION_DIR}/published.json")) + 2
    trial = scratch / "past-publication"
    shutil.copytree(before_dir, trial)
    assert not simulated_crash(trial, ref, n)
    label, problems = check_recovered(trial, ref, check_figures=True)
    assert label == "after"
    assert not problems, (describe(ref, n), problems)
