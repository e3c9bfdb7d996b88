"""The one fault interface: every file operation of ``seglog.storage`` goes through
:mod:`seglog.storage.fileops`, and a hook can crash before or after, or fail, any of them.

* a source scan: no module of ``seglog/storage`` but ``fileops.py`` opens, writes, truncates,
  fsyncs, renames, unlinks, makes or removes a directory or sets a time itself;
* a real workload (create a topic, append, roll, flush, checkpoint, clean, compacted copy,
  close, reopen) reaches every kind of operation, creations and truncations included;
* a disk fault at a segment's *creation* (the roll's ``create``) and at a *truncation* (an
  index trim) fails the operation with a typed error naming the file; the log stays readable
  and works again once the fault is gone;
* a crash *before* and *after* the same operation leave different, both recoverable, disks.
"""

from __future__ import annotations

import ast
import errno
import os
from pathlib import Path

import pytest

import seglog.storage
from seglog.clock import ManualClock
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.errors import SeglogError, StorageWriteError
from seglog.storage import fileops
from seglog.storage.atomic import write_file_atomically
from seglog.testing.crash import (
    CrashAt,
    SimulatedCrash,
    close_fds_opened_since,
    count_operations,
    crash_at,
    installed,
    open_fds,
    run_clean_forked,
)
from support.disk_faults import DiskFault

T0 = 1_700_000_000_000
STORAGE = Path(seglog.storage.__file__).parent
INTERFACE = "fileops.py"

# Calls only the interface module may make.
OS_CALLS = frozenset(
    {
        "open", "write", "pwrite", "pwritev", "writev", "fsync", "fdatasync", "replace",
        "rename", "renames", "unlink", "remove", "ftruncate", "truncate", "utime", "mkdir",
        "makedirs", "rmdir", "removedirs", "link", "symlink", "chmod", "posix_fallocate",
    }
)  # fmt: skip
# Methods of pathlib.Path (and file objects) that touch files; no str method of these names
# is used in seglog.storage.
PATH_METHODS = frozenset(
    {
        "open", "write_bytes", "write_text", "read_bytes", "read_text", "unlink", "rename",
        "replace", "mkdir", "rmdir", "touch", "truncate", "chmod", "symlink_to",
        "hardlink_to",
    }
)  # fmt: skip
EVERY_OPERATION = frozenset(
    {
        "open", "create", "write", "truncate", "fsync", "fsync-dir", "rename", "unlink",
        "mkdir", "rmtree", "utime",
    }
)  # fmt: skip


def raw_file_calls(source: str) -> list[tuple[int, str]]:
    """(line, call) of every call in ``source`` that touches a file without the interface."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names]
            module = node.module if isinstance(node, ast.ImportFrom) else None
            if "shutil" in names or module == "shutil":
                found.append((node.lineno, "import shutil"))
            if module == "os" and set(names) & OS_CALLS:
                found.append((node.lineno, f"from os import {names}"))
            continue
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open":
            found.append((node.lineno, "open()"))
        elif isinstance(func, ast.Attribute):
            owner = func.value.id if isinstance(func.value, ast.Name) else None
            if owner == "os" and func.attr in OS_CALLS:
                found.append((node.lineno, f"os.{func.attr}()"))
            elif owner == "shutil":
                found.append((node.lineno, f"shutil.{func.attr}()"))
            elif owner not in {"os", "fileops"} and func.attr in PATH_METHODS:
                found.append((node.lineno, f".{func.attr}()"))
    return found


def test_the_scan_finds_raw_calls() -> None:
    """The scanner itself: each kind of raw call is found (so an empty result means
    something)."""
    source = (
        "import os, shutil\nfrom pathlib import Path\n"
        "open('x')\nos.open('x', 0)\nos.pwritev(1, [], 0)\nos.ftruncate(1, 0)\n"
        "os.fsync(1)\nos.replace('a', 'b')\nPath('x').unlink()\nPath('x').mkdir()\n"
        "shutil.rmtree('x')\nPath('x').read_bytes()\n"
    )
    assert len(raw_file_calls(source)) == 11


def test_storage_touches_files_only_through_the_interface() -> None:
    modules = sorted(STORAGE.glob("*.py"))
    assert len(modules) >= 10 and (STORAGE / INTERFACE).exists()
    offenders = {
        path.name: calls
        for path in modules
        if path.name != INTERFACE and (calls := raw_file_calls(path.read_text()))
    }
    assert offenders == {}, "file operations outside seglog.storage.fileops"
    # and the interface really does the calls (the scan is not vacuous there)
    assert len(raw_file_calls((STORAGE / INTERFACE).read_text())) >= 10


# --- a workload reaching every kind of operation ----------------------------------------------
def open_at(root: Path, clock: ManualClock) -> LogManager:
    return open_log_dirs([root], clock=clock)


def workload(root: Path) -> None:
    """Create topics, append across rolls, flush, checkpoint, clean, build the compacted copy,
    close, reopen."""
    clock = ManualClock(T0)
    small = {"segment.bytes": "2000", "segment.index.bytes": "4096", "index.interval.bytes": "64"}
    with open_at(root, clock) as manager:
        manager.create_topic("events", 1, small)
        manager.create_topic(
            "prices",
            1,
            {**small, "cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"},
        )
        events, prices = manager.get_log("events", 0), manager.get_log("prices", 0)
        for i in range(60):
            events.append_records([(b"e%d" % i, b"x" * 40)])
            prices.append_records([(b"k%d" % (i % 5), b"v%03d" % i + b"y" * 40)])
            clock.advance(10)
        events.flush()
        prices.flush()
        manager.checkpoint_all()
        manager.clean_once(topic="prices")
        manager.compact("prices")
        for i in range(20):
            prices.append_records([(b"k%d" % (i % 5), b"w%03d" % i + b"y" * 40)])
        manager.compact("prices")  # supersedes the first copy
        manager.create_topic("gone", 1)
        manager.delete_topic("gone")
    with open_at(root, clock) as manager:
        assert manager.get_log("events", 0).log_end_offset == 60


def test_a_workload_reaches_every_kind_of_operation(tmp_path: Path) -> None:
    with count_operations() as ops:
        workload(tmp_path / "data")
    kinds = {operation for operation, _ in ops.operations}
    assert kinds <= EVERY_OPERATION, kinds - EVERY_OPERATION
    missing = EVERY_OPERATION - kinds
    assert missing == set(), f"never reached: {sorted(missing)}"
    created = [p for op, p in ops.operations if op == "create" and p.endswith(".log")]
    assert any(Path(p).name == "00000000000000000000.log" for p in created), created
    assert any(op == "truncate" and p.endswith(".index") for op, p in ops.operations)


# --- disk faults at a creation and at a truncation -------------------------------------------
def prepare(root: Path) -> tuple[LogManager, ManualClock]:
    clock = ManualClock(T0)
    manager = open_at(root, clock)
    manager.create_topic("t", 1, {"segment.bytes": "1000", "index.interval.bytes": "64"})
    return manager, clock


def append_until_roll(manager: LogManager, start: int) -> int:
    """Append single records until the log has one more segment; returns records appended."""
    log = manager.get_log("t", 0)
    segments = len(log.segments)
    i = start
    while len(log.segments) == segments:
        log.append_records([(b"k%d" % i, b"v" * 100)])
        i += 1
    return i - start


def index_of(ops: list[tuple[str, str]], operation: str, suffix: str) -> int:
    """1-based number of the first ``operation`` on a path ending with ``suffix``."""
    for number, (op, path) in enumerate(ops, 1):
        if op == operation and path.endswith(suffix):
            return number
    raise AssertionError(f"no {operation} of *{suffix} among {ops}")


@pytest.mark.parametrize(
    ("operation", "suffix"), [("create", ".log"), ("truncate", ".index")], ids=["create", "trim"]
)
@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO], ids=["enospc", "eio"])
def test_a_fault_at_a_creation_or_a_truncation_fails_cleanly(
    tmp_path: Path, operation: str, suffix: str, code: int
) -> None:
    # Count the roll's operations on one directory, then fail the chosen one on a twin.
    counting, _ = prepare(tmp_path / "count")
    counting.get_log("t", 0).append_records([(b"a", b"v" * 100)])
    with count_operations() as ops:
        rolled = append_until_roll(counting, 1)
    counting.close()
    n = index_of(ops.operations, operation, suffix)

    manager, _ = prepare(tmp_path / "data")
    log = manager.get_log("t", 0)
    log.append_records([(b"a", b"v" * 100)])
    hook = DiskFault(n, code, sticky=code == errno.ENOSPC)
    with installed(hook), pytest.raises(SeglogError) as failure:
        append_until_roll(manager, 1)
    assert hook.point is not None and hook.point[0] == operation, hook.point
    error = failure.value
    assert isinstance(error, StorageWriteError), repr(error)
    assert error.errno == code and error.path.endswith(suffix), repr(error)
    # the log is consistent and readable: the records before the failed one read back
    appended = log.log_end_offset
    assert appended == rolled, (appended, rolled)
    got = [r.offset for r in log.iter_records(0)]
    assert got == list(range(appended))
    # space returns: appends roll and go on; every record survives a reopen
    for i in range(appended, appended + 3 * rolled):
        log.append_records([(b"k%d" % i, b"v" * 100)])
    end = log.log_end_offset
    manager.close()
    with open_log_dirs([tmp_path / "data"], clock=ManualClock(T0)) as reopened:
        again = reopened.get_log("t", 0)
        assert [r.offset for r in again.iter_records(0)] == list(range(end))


# --- crash before and after the same operation ------------------------------------------------
def test_crash_before_and_after_a_rename(tmp_path: Path) -> None:
    """Before the checkpoint's rename the old content survives, after it the new one (and a
    stray ``.tmp`` only in the first case)."""
    target = tmp_path / "checkpoint"
    write_file_atomically(target, b"old")
    with count_operations() as ops:
        write_file_atomically(target, b"new")
    n = index_of(ops.operations, "rename", "checkpoint")
    for after, expected in ((False, b"old"), (True, b"new")):
        write_file_atomically(target, b"old")
        with crash_at(n, after=after) as hook, pytest.raises(SimulatedCrash):
            write_file_atomically(target, b"new")
        assert hook.crash_point == ops.operations[n - 1]
        assert hook.crashed_after is after
        assert target.read_bytes() == expected
        assert (tmp_path / "checkpoint.tmp").exists() is not after
        # the hook is dead: the directory fsync after the rename never ran
        if after:
            assert hook.after_crash == [], hook.after_crash
        fileops.unlink(tmp_path / "checkpoint.tmp", missing_ok=True)


def test_crash_after_a_truncation_is_recovered(tmp_path: Path) -> None:
    """Crash right after each truncation of a roll (index trim): the directory reopens and
    every record reads back."""
    counting, _ = prepare(tmp_path / "count")
    counting.get_log("t", 0).append_records([(b"a", b"v" * 100)])
    with count_operations() as ops:
        append_until_roll(counting, 1)
    counting.close()
    points = [i for i, (op, _) in enumerate(ops.operations, 1) if op in ("truncate", "create")]
    assert len(points) >= 3, ops.operations
    for n in points:
        root = tmp_path / f"after-{n}"
        manager, _ = prepare(root)
        log = manager.get_log("t", 0)
        log.append_records([(b"a", b"v" * 100)])
        log.flush()
        before = open_fds()
        with crash_at(n, after=True) as hook, pytest.raises(SimulatedCrash):
            append_until_roll(manager, 1)
        assert hook.crashed_after and hook.crash_point is not None
        expected_op, expected_path = ops.operations[n - 1]
        assert hook.crash_point[0] == expected_op
        assert Path(hook.crash_point[1]).name == Path(expected_path).name
        appended = log.log_end_offset
        manager.abort()
        del manager, log
        close_fds_opened_since(before, root)
        with open_log_dirs([root], clock=ManualClock(T0)) as reopened:
            got = [r.offset for r in reopened.get_log("t", 0).iter_records(0)]
        assert got == list(range(len(got))) and len(got) >= 1
        assert len(got) <= appended + 1


def test_sigkill_after_an_operation_in_a_real_process(tmp_path: Path) -> None:
    """``python -m seglog.testing.crash --kill-at N --after`` dies of SIGKILL right after
    operation N of a cleaner pass, and the directory reopens."""
    root = tmp_path / "data"
    clock = ManualClock(T0)
    with open_at(root, clock) as manager:
        manager.create_topic("kv", 1, {"cleanup.policy": "compact", "segment.bytes": "600"})
        log = manager.get_log("kv", 0)
        for i in range(40):
            log.append_records([(b"k%d" % (i % 3), b"v%d" % i + b"z" * 30)])
    status = run_clean_forked([str(root), "--kill-at", "3", "--after", "--quiet"])
    assert status == -9
    with open_log_dirs([root], clock=clock) as manager:
        latest = {r.key: r.value for r in manager.get_log("kv", 0).iter_records(0)}
    assert latest == {b"k%d" % k: b"v%d" % i + b"z" * 30 for i, k in ((39, 0), (37, 1), (38, 2))}


def test_crash_at_rejects_a_zero_point() -> None:
    with pytest.raises(ValueError, match="1-based"):
        CrashAt(0, after=True)


def test_no_hook_means_no_cost_in_behaviour(tmp_path: Path) -> None:
    """Without a hook the interface is the plain call (a sanity check of each primitive)."""
    path = tmp_path / "f"
    fd = fileops.open_fd(path, os.O_RDWR | os.O_CREAT)
    try:
        assert fileops.write_all(fd, path, [b"ab", bytearray(b"cd"), memoryview(b"ef")], 0) == 6
        fileops.pwrite(fd, path, b"X", 1)
        fileops.truncate(fd, path, 4)
        fileops.fsync(fd, path)
    finally:
        os.close(fd)
    assert fileops.read_bytes(path) == b"aXcd"
    fileops.replace(path, tmp_path / "g")
    fileops.set_mtime_ms(tmp_path / "g", 1_000)
    assert os.stat(tmp_path / "g").st_mtime_ns == 1_000_000_000
    fileops.mkdir(tmp_path / "d" / "e", parents=True)
    fileops.mkdir(tmp_path / "d" / "e", exist_ok=True)
    fileops.fsync_directory(tmp_path / "d")
    fileops.rmtree(tmp_path / "d")
    fileops.unlink(tmp_path / "g")
    fileops.unlink(tmp_path / "g", missing_ok=True)
    assert sorted(os.listdir(tmp_path)) == []
