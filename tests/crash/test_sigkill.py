"""SIGKILL of a real ``seglog`` process at random moments, then recovery (issue 8).

A fresh interpreter runs ``python -m seglog.testing.workload`` (produce to a delete topic and
a compacted topic, roll, retention, cleaner passes, compacted-copy runs, checkpoints; every
record acknowledged in a side file once a flush made it durable). The test waits for the
process to have opened the directory (recovery of the previous kill included), lets it run a
random time, SIGKILLs it, and checks a copy of the directory; the next process of the chain
then recovers the original crashed directory itself.

Invariants checked after every kill (on the copy, opened writable as a restart would):

* the data directory opens;
* no ``.cleaned``, ``.swap``, ``.deleted`` or ``.tmp`` file survives recovery, in any
  partition directory or the root;
* no checkpoint *found on disk after the kill* (recovery point, log start, high watermark,
  cleaner offset) is above the recovered log end offset;
* offsets strictly increase and ``verify_log`` finds nothing wrong (batches, CRCs, indexes
  agree with the log, no duplicate key below the cleaner checkpoint);
* ``events``: every acknowledged record at or above the log start offset reads back with
  the same offset, key and value; an offset is never acknowledged twice;
* ``kv`` (compacted): every acknowledged record reads back unchanged or was superseded by a
  later record of its key; every key's latest record is at or after its latest acknowledged
  one (the same value when at the same offset); a read-compacted reader (compacted copy up to
  its horizon, then the log) sees every key's latest value.

Trials: ``SEGLOG_SIGKILL_TRIALS`` (default 10, ``SEGLOG_RELIABILITY=long``: 100) kills, in
chains of ``CHAIN`` on one directory; seed ``SEGLOG_SIGKILL_SEED``.
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from seglog.engine.compaction.compactor import iter_compacted_records
from seglog.engine.inspect.verify import verify_log
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.format.checkpoint import parse_offset_checkpoint
from seglog.format.topic_names import TopicPartition
from seglog.storage.log_dir import OFFSET_CHECKPOINTS
from seglog.testing.workload import BROKER_OVERRIDES, EVENTS, KV, AckedRecord, read_acks
from support.reliability import record_figures, scaled

pytestmark = pytest.mark.crash

TRIALS = scaled("SEGLOG_SIGKILL_TRIALS", 10, 100)
SEED = int(os.environ.get("SEGLOG_SIGKILL_SEED", "20250610"))
CHAIN = 5  # kills on one directory before a fresh one
KILL_DELAY_S = (0.0, 1.2)  # after the process reported its open
OPEN_TIMEOUT_S = 60.0
LEFTOVER_SUFFIXES = (".cleaned", ".swap", ".deleted", ".tmp")

Row = tuple[int, bytes | None, bytes | None]


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """/dev/shm when there is one: the workload fsyncs often, which costs ms on a CI disk."""
    shm = Path("/dev/shm")
    if os.environ.get("SEGLOG_CRASH_NO_SHM") or not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    directory = Path(tempfile.mkdtemp(prefix="seglog-sigkill-", dir=shm))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


# --- running and killing ---------------------------------------------------------------------
def workload_process(data_dir: Path, acks: Path, seed: int, run: int) -> subprocess.Popen[bytes]:
    """A new interpreter running the workload until killed."""
    argv = [sys.executable, "-m", "seglog.testing.workload", str(data_dir)]
    argv += ["--acks", str(acks), "--seed", str(seed), "--run", str(run)]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_until_open(process: subprocess.Popen[bytes], acks: Path, run: int) -> None:
    """Poll the ack file until run ``run`` reported its open (recovery done)."""
    deadline = time.monotonic() + OPEN_TIMEOUT_S
    while time.monotonic() < deadline:
        _, events = read_acks(acks)
        if any(e.get("event") == "open" and e.get("run") == run for e in events):
            return
        if process.poll() is not None:
            stderr = process.stderr.read().decode() if process.stderr else ""
            pytest.fail(f"run {run} exited with {process.returncode} before opening:\n{stderr}")
        time.sleep(0.01)
    process.kill()
    pytest.fail(f"run {run} did not open within {OPEN_TIMEOUT_S} s")


def kill_at_random(
    process: subprocess.Popen[bytes], acks: Path, run: int, rng: random.Random
) -> None:
    """Let the open process run a random time, then SIGKILL it; it must die of the signal."""
    wait_until_open(process, acks, run)
    time.sleep(rng.uniform(*KILL_DELAY_S))  # the random moment of the kill, not a wait
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    stderr = process.stderr.read().decode() if process.stderr else ""
    assert process.returncode == -signal.SIGKILL, (
        f"run {run} exited with {process.returncode} before the kill:\n{stderr}"
    )


# --- checking --------------------------------------------------------------------------------
@dataclass
class Tally:
    """Figures over all kills (reported to RELIABILITY.md)."""

    kills: int = 0
    acked_records: int = 0
    acked_checked: int = 0
    lost: int = 0
    truncated_tails: int = 0
    truncated_bytes: int = 0
    leftovers_removed: int = 0
    swaps_completed: int = 0
    recovered_segments: int = 0
    problems: list[str] = field(default_factory=list)


def checkpoints_on_disk(data_dir: Path) -> dict[str, dict[TopicPartition, int]]:
    """Every offset checkpoint as the kill left it (before an open rewrites them)."""
    found = {}
    for name in OFFSET_CHECKPOINTS:
        path = data_dir / name
        if path.exists():
            found[name] = parse_offset_checkpoint(path.read_bytes(), path=str(path))
    return found


def rows_of(manager: LogManager, topic: str) -> tuple[list[Row], int, int]:
    log = manager.get_log(topic, 0)
    rows = [(r.offset, r.key, r.value) for r in log.iter_records(log.log_start_offset)]
    return rows, log.log_start_offset, log.log_end_offset


def check_events(rows: list[Row], start: int, acked: list[AckedRecord], tally: Tally) -> None:
    by_offset = {offset: (key, value) for offset, key, value in rows}
    for record in acked:
        if record.offset < start:
            continue  # retention removed it: allowed
        tally.acked_checked += 1
        if by_offset.get(record.offset) != (record.key, record.value):
            tally.lost += 1
            tally.problems.append(
                f"events: acknowledged offset {record.offset} ({record.key!r}) reads back as "
                f"{by_offset.get(record.offset)!r}"
            )


def check_kv(manager: LogManager, rows: list[Row], acked: list[AckedRecord], tally: Tally) -> None:
    by_offset = {offset: (key, value) for offset, key, value in rows}
    latest: dict[bytes | None, tuple[int, bytes | None]] = {}
    for offset, key, value in rows:
        latest[key] = (offset, value)
    for record in acked:
        tally.acked_checked += 1
        found = by_offset.get(record.offset)
        if found is not None:
            if found != (record.key, record.value):
                tally.lost += 1
                tally.problems.append(f"kv: offset {record.offset} reads back as {found!r}")
            continue
        newest = latest.get(record.key)
        if newest is None or newest[0] <= record.offset:
            tally.lost += 1
            tally.problems.append(
                f"kv: acknowledged offset {record.offset} key {record.key!r} is gone and no "
                f"later record of the key is there (latest {newest!r})"
            )
    acked_latest: dict[bytes | None, AckedRecord] = {}
    for record in acked:
        acked_latest[record.key] = record  # acks come in offset order
    for key, record in acked_latest.items():
        newest = latest.get(key)
        if newest is None or newest[0] < record.offset:
            tally.problems.append(f"kv: key {key!r} latest {newest!r} is before its ack")
        elif newest[0] == record.offset and newest[1] != record.value:
            tally.problems.append(f"kv: key {key!r} latest value differs from its ack")
    log = manager.get_log(KV, 0)
    seen: dict[bytes | None, bytes | None] = {}
    for consumed in iter_compacted_records(log, log.log_start_offset):
        seen[consumed.key] = consumed.value
    wanted = {k: v for k, (_, v) in latest.items() if v is not None}
    compacted = {k: v for k, v in seen.items() if v is not None}
    if compacted != wanted:
        wrong = sorted(
            str(k) for k in set(wanted) | set(compacted) if wanted.get(k) != compacted.get(k)
        )
        tally.problems.append(f"kv: read-compacted latest values differ for keys {wrong[:8]}")


def check_after_kill(data_dir: Path, acks: list[AckedRecord], tally: Tally) -> None:
    """Reopen ``data_dir`` and check the invariants of the module docstring."""
    problems = tally.problems
    before = checkpoints_on_disk(data_dir)
    try:
        manager = open_log_dirs([data_dir], overrides=BROKER_OVERRIDES)
    except Exception as exc:
        problems.append(f"the data directory does not open: {type(exc).__name__}: {exc}")
        return
    try:
        for report in manager.load_reports:
            tally.recovered_segments += len(report.recovered)
            tally.truncated_tails += sum(1 for r in report.recovered if r.truncated_bytes)
            tally.truncated_bytes += report.truncated_bytes
            tally.leftovers_removed += len(report.removed_files)
            tally.swaps_completed += len(report.completed_swaps)
        files = [p for d in (data_dir, *data_dir.iterdir()) if d.is_dir() for p in d.iterdir()]
        leftovers = sorted(p.name for p in files if p.name.endswith(LEFTOVER_SUFFIXES))
        if leftovers:
            problems.append(f"leftover files after recovery: {leftovers}")
        offsets_seen: set[tuple[str, int]] = set()
        for record in acks:
            if (record.topic, record.offset) in offsets_seen:
                problems.append(f"{record.topic}: offset {record.offset} acknowledged twice")
            offsets_seen.add((record.topic, record.offset))
        for topic in (EVENTS, KV):
            tp = TopicPartition(topic, 0)
            rows, start, end = rows_of(manager, topic)
            offsets = [r[0] for r in rows]
            if any(b <= a for a, b in itertools.pairwise(offsets)):
                problems.append(f"{topic}: offsets do not strictly increase")
            for name, entries in before.items():
                if entries.get(tp, -1) > end:
                    problems.append(f"{name}: {tp} at {entries[tp]}, above the log end {end}")
            log = manager.get_log(topic, 0)
            report = verify_log(log, cleaner_checkpoint=manager.cleaner_checkpoints().get(tp))
            if not report.ok:
                problems += [
                    f"{topic}: verify: {p.kind} {p.path} {p.message}" for p in report.problems
                ]
            acked = [r for r in acks if r.topic == topic]
            if any(r.offset >= end for r in acked):
                problems.append(f"{topic}: acknowledged offsets at or above the log end {end}")
            if topic == EVENTS:
                check_events(rows, start, acked, tally)
            else:
                check_kv(manager, rows, acked, tally)
    except Exception as exc:
        problems.append(f"checking the reopened directory failed: {type(exc).__name__}: {exc}")
    finally:
        manager.close()


def test_sigkill_at_random_moments_loses_no_acknowledged_record(scratch: Path) -> None:
    rng = random.Random(SEED)
    tally = Tally()
    started = time.monotonic()
    for chain in range((TRIALS + CHAIN - 1) // CHAIN):
        data_dir, acks_path = scratch / f"chain-{chain}", scratch / f"acks-{chain}.jsonl"
        for run in range(min(CHAIN, TRIALS - chain * CHAIN)):
            process = workload_process(data_dir, acks_path, rng.randrange(1 << 30), run)
            kill_at_random(process, acks_path, run, rng)
            tally.kills += 1
            acked, _ = read_acks(acks_path)
            copy = scratch / "check"
            shutil.copytree(data_dir, copy)
            before = len(tally.problems)
            check_after_kill(copy, acked, tally)
            tally.problems[before:] = [
                f"chain {chain} kill {run}: {p}" for p in tally.problems[before:]
            ]
            shutil.rmtree(copy)
        tally.acked_records += len(read_acks(acks_path)[0])
        shutil.rmtree(data_dir)
    record_figures(
        "sigkill",
        kills=tally.kills,
        acked_records=tally.acked_records,
        acked_checks=tally.acked_checked,
        records_lost=tally.lost,
        recovered_segments=tally.recovered_segments,
        truncated_tails=tally.truncated_tails,
        truncated_bytes=tally.truncated_bytes,
        leftovers_removed=tally.leftovers_removed,
        swaps_completed=tally.swaps_completed,
        problems=len(tally.problems),
        seconds=round(time.monotonic() - started, 1),
    )
    assert not tally.problems, f"{len(tally.problems)} problem(s):\n" + "\n".join(
        tally.problems[:40]
    )
    assert tally.kills == TRIALS
    assert tally.acked_checked > 0 and tally.lost == 0
    # The kills must have hit recovery paths, not only quiet moments.
    assert tally.recovered_segments > 0, tally
