"""Crash injection at the file operations of seglog's storage layer.

Every file operation of the storage layer goes through :mod:`seglog.storage.fileops`, which
calls :func:`seglog.storage.fault_points.reached` with ``(operation, path)`` right *before* it
(``open``, ``create``, ``write``, ``truncate``, ``fsync``, ``fsync-dir``, ``rename``,
``unlink``, ``mkdir``, ``rmtree``, ``utime``) and
:func:`~seglog.storage.fault_points.completed` right *after* it succeeded. This module
installs hooks there that count those operations and crash at the n-th one (1-based), either
*before* it happens (the default) or *after* it happened (``after=True``), so a test can
check recovery from *every* point of a procedure (the cleaner's round, the swap protocol,
checkpoint writes).

Two ways to crash at operation ``n``:

* **SIGKILL** (:class:`CrashAt` with ``kill=True``): the process sends itself ``SIGKILL``
  (``os.kill(os.getpid(), signal.SIGKILL)``) before the n-th operation happens. Nothing
  runs after that (no ``finally``, no ``except``, no atexit, no buffered output), which is
  what a real crash is. Use it in a subprocess (:func:`run_clean_main` below).
* **SimulatedCrash** (:class:`CrashAt` with ``kill=False``, the default): the hook raises
  :class:`SimulatedCrash`, a ``BaseException`` so that ``except Exception`` handlers of the
  engine do not swallow it. It is fast (no new interpreter), for thousands of in-process
  trials. After the crash the hook is *dead*: every further operation (``finally`` blocks
  and cleanup handlers run while the exception unwinds) is recorded in
  :attr:`CrashAt.after_crash` and raises :class:`SimulatedCrash` again, so the disk is left
  as a killed process would leave it. Limits of the simulation: the crashed objects keep
  their file descriptors: drop every reference
  to the crashed manager, call :meth:`~seglog.engine.log_manager.LogManager.abort` (it
  writes nothing; keep the dead hook installed to prove it), and close the leaked
  descriptors with :func:`close_fds_opened_since`, as the kernel does for a dead process.

Helpers:

* :func:`installed` -- context manager: install any ``(operation, path)`` hook (and its
  ``completed(operation, path, source)`` method, when it has one, as the after-operation
  hook), restore the previous ones on exit.
* :func:`count_operations` -- context manager yielding an :class:`OperationLog` that records
  every operation of the block: ``with count_operations() as ops: manager.clean_once()``
  then ``ops.count`` is N, the number of crash points of that block, and ``ops.operations``
  lists them in order.
* :func:`crash_at` -- context manager installing a :class:`CrashAt` hook for the block.
* :func:`open_fds` / :func:`close_fds_opened_since` -- the process's descriptors (Linux
  ``/proc/self/fd``; elsewhere empty) and closing those a crashed trial leaked under a
  directory.

Subprocess entry point (one cleaner pass, killed at operation N)::

    python -m seglog.testing.crash DATA_DIR [--kill-at N [--after]] [--topic T]
        [--clock-ms MS] [--override KEY=VALUE ...] [--abort] [--quiet]

:func:`run_clean_main` (the same, taking ``argv``; returns the exit status):

1. opens ``DATA_DIR`` with ``open_log_dirs([DATA_DIR], overrides=...)``: ``--override``
   takes server.properties keys (e.g. ``log.cleaner.dedupe.buffer.size=2097152``),
   ``--clock-ms`` a :class:`~seglog.clock.ManualClock` stopped there (reproducible
   tombstone horizons; default: the system clock). Opening is *not* counted;
2. installs the hook and runs ``manager.clean_once(topic=...)``. With ``--kill-at N`` the
   process writes ``seglog-crash: SIGKILL at operation N: OPERATION PATH`` to stderr
   (unbuffered) and SIGKILLs itself right before operation N (with ``--after``: right after
   operation N succeeded): its status is ``-9`` as :mod:`subprocess` reports it;
3. otherwise removes the hook, prints one JSON line ``{"operations": N, "results": [...]}``
   (N: the pass's operations) and closes the manager cleanly (``--abort``:
   :meth:`~seglog.engine.log_manager.LogManager.abort`, no checkpoints and no clean-shutdown
   marker). ``--quiet`` prints neither line; errors still go to stderr.

Exit status: ``-9`` killed; 0 the pass finished; :data:`EXIT_KILL_POINT_NOT_REACHED` (3) the
pass finished before operation N; 2 bad arguments; 1 an error (traceback on stderr).

:func:`run_clean_forked` runs :func:`run_clean_main` in a forked child instead of a new
interpreter (tens of milliseconds instead of about a second: modules and compiled kernels
are inherited) and returns the child's status the same way (``-9`` after SIGKILL).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from seglog.storage import fault_points

__all__ = [
    "EXIT_KILL_POINT_NOT_REACHED",
    "CrashAt",
    "OperationLog",
    "SimulatedCrash",
    "close_fds_opened_since",
    "count_operations",
    "crash_at",
    "installed",
    "main",
    "open_fds",
    "run_clean_forked",
    "run_clean_main",
]

EXIT_KILL_POINT_NOT_REACHED = 3
Operation = tuple[str, str]  # (operation, path)
Hook = Callable[[str, str], None]
AfterHook = Callable[[str, str, str | None], None]


class SimulatedCrash(BaseException):
    """Raised by a :class:`CrashAt` hook at its crash point (and at every later operation).

    A ``BaseException``: the engine's ``except Exception`` handlers must not turn a crash
    into an ordinary error (e.g. mark the partition uncleanable and go on).
    """

    def __init__(self, number: int, operation: str, path: str) -> None:
        super().__init__(f"simulated crash at operation {number}: {operation} {path}")
        self.number = number
        self.operation = operation
        self.path = path


@dataclass
class OperationLog:
    """Every ``(operation, path)`` seen, in order; a hook itself (see :func:`count_operations`)."""

    operations: list[Operation] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self, operation: str, path: str) -> None:
        with self._lock:
            self.operations.append((operation, path))

    @property
    def count(self) -> int:
        """How many operations were seen (N: the crash points 1..N of the block)."""
        return len(self.operations)


class CrashAt:
    """A hook that counts operations and crashes right before the ``n``-th (1-based), or,
    with ``after=True``, right after the ``n``-th succeeded.

    ``kill=True``: SIGKILL the current process (after one unbuffered line on stderr unless
    ``announce`` is false).
    ``kill=False``: raise :class:`SimulatedCrash`; from then on the hook is dead and every
    operation raises again (recorded in :attr:`after_crash`).

    With ``after=True`` the crash comes from :meth:`completed` (the after-operation hook) once
    operation ``n`` returned. If operation ``n`` fails instead (its ``OSError`` propagates),
    the crash comes right before the next operation, which is the same point on disk.
    """

    def __init__(
        self, n: int, *, kill: bool = False, announce: bool = True, after: bool = False
    ) -> None:
        if n < 1:
            raise ValueError(f"the crash point is 1-based, got {n}")
        self.n = n
        self.kill = kill
        self.announce = announce
        self.after = after
        self.count = 0  # operations reached so far, the crash point included
        self.crash_point: Operation | None = None  # the n-th operation, once reached
        self.crashed_after = False  # the crash came after the n-th operation had happened
        self.after_crash: list[Operation] = []  # operations attempted after the crash
        self._armed = False  # after=True: operation n is under way, crash when it returns
        self._dead = False
        self._lock = threading.Lock()

    @property
    def crashed(self) -> bool:
        """True once the crash happened (before or after the n-th operation)."""
        return self._dead

    def _crash(self, operation: str, path: str) -> None:
        if self.kill:
            if self.announce:
                when = "after" if self.after else "at"
                line = f"seglog-crash: SIGKILL {when} operation {self.n}: {operation} {path}\n"
                os.write(2, line.encode("utf-8", "backslashreplace"))
            os.kill(os.getpid(), signal.SIGKILL)
        raise SimulatedCrash(self.n, operation, path)

    def __call__(self, operation: str, path: str) -> None:
        with self._lock:
            if self._dead:
                self.after_crash.append((operation, path))
                raise SimulatedCrash(self.n, operation, path)
            if self._armed:  # operation n ended (it failed, or another thread is here)
                self._dead = self.crashed_after = True
                point = self.crash_point
                assert point is not None
            else:
                self.count += 1
                if self.count < self.n:
                    return
                self.crash_point = point = (operation, path)
                if self.after:
                    self._armed = True
                    return
                self._dead = True
        self._crash(*point)

    def completed(self, operation: str, path: str, source: str | None = None) -> None:
        """The after-operation hook: crash once operation ``n`` returned (``after=True``)."""
        with self._lock:
            if not self._armed or self._dead:
                return
            self._dead = self.crashed_after = True
            point = self.crash_point
            assert point is not None
        self._crash(*point)


@contextmanager
def installed(hook: Hook) -> Iterator[Hook]:
    """Install ``hook`` at the fault points for the block (and its ``completed`` method, if
    any, as the after-operation hook); the previous hooks come back after."""
    after: AfterHook | None = getattr(hook, "completed", None)
    previous = fault_points.set_hook(hook)
    previous_after = fault_points.set_after_hook(after)
    try:
        yield hook
    finally:
        fault_points.set_hook(previous)
        fault_points.set_after_hook(previous_after)


@contextmanager
def count_operations() -> Iterator[OperationLog]:
    """Record every file operation of the block: ``with count_operations() as ops: ...``."""
    log = OperationLog()
    with installed(log):
        yield log


@contextmanager
def crash_at(n: int, *, kill: bool = False, after: bool = False) -> Iterator[CrashAt]:
    """Install a :class:`CrashAt` hook (crash right before operation ``n``, or right after it
    with ``after=True``) for the block."""
    hook = CrashAt(n, kill=kill, after=after)
    with installed(hook):
        yield hook


_FD_DIR = Path("/proc/self/fd")


def open_fds() -> set[int]:
    """The process's open file descriptors (empty where ``/proc/self/fd`` does not exist)."""
    try:
        return {int(name) for name in os.listdir(_FD_DIR)}
    except OSError:
        return set()


def close_fds_opened_since(before: set[int], directory: Path) -> list[str]:
    """Close the descriptors not in ``before`` (see :func:`open_fds`) that point into
    ``directory``: what the kernel does for a process that died. Returns their paths.
    Call it once nothing alive uses such a descriptor (after the crashed objects are
    dropped and before the directory is opened again)."""
    root = os.path.realpath(directory) + os.sep
    closed = []
    for fd in sorted(open_fds() - before):
        try:
            target = os.readlink(_FD_DIR / str(fd))
        except OSError:
            continue  # the listing's own descriptor, or already closed
        if target.startswith(root):
            try:
                os.close(fd)
            except OSError:
                continue
            closed.append(target)
    return closed


# --- the subprocess entry point ---------------------------------------------------------------
def _parse_override(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m seglog.testing.crash",
        description="Run one log-cleaner pass over a data directory, optionally SIGKILLed "
        "right before its N-th file operation.",
    )
    parser.add_argument("data_dir", type=Path, help="the log directory (log.dirs) to open")
    parser.add_argument(
        "--kill-at", type=int, default=None, metavar="N", help="SIGKILL before operation N"
    )
    parser.add_argument(
        "--after",
        action="store_true",
        help="with --kill-at N: SIGKILL right after operation N succeeded instead of before",
    )
    parser.add_argument("--topic", default=None, help="clean only this topic")
    parser.add_argument(
        "--clock-ms",
        type=int,
        default=None,
        metavar="MS",
        help="run on a ManualClock stopped at MS (default: the system clock)",
    )
    parser.add_argument(
        "--override",
        type=_parse_override,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker property (server.properties key) for open_log_dirs; repeatable",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="print neither the JSON line nor the SIGKILL line (errors still go to stderr)",
    )
    parser.add_argument(
        "--abort",
        action="store_true",
        help="after the pass, abort the manager (no checkpoints) instead of closing it",
    )
    return parser


def run_clean_main(argv: Sequence[str] | None = None) -> int:
    """``python -m seglog.testing.crash`` (module docstring); returns the exit status."""
    from seglog.clock import ManualClock
    from seglog.engine.log_manager import open_log_dirs  # the engine only when run

    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.kill_at is not None and args.kill_at < 1:
        print("--kill-at is 1-based", file=sys.stderr)
        return 2
    clock = None if args.clock_ms is None else ManualClock(args.clock_ms)
    manager = open_log_dirs([args.data_dir], overrides=dict(args.override), clock=clock)
    hook = (
        OperationLog()
        if args.kill_at is None
        else CrashAt(args.kill_at, kill=True, announce=not args.quiet, after=args.after)
    )
    with installed(hook):
        results = manager.clean_once(topic=args.topic)
    if not args.quiet:
        print(json.dumps({"operations": hook.count, "results": [r.to_json() for r in results]}))
        sys.stdout.flush()
    if args.abort:
        manager.abort()
    else:
        manager.close()
    if args.kill_at is not None:
        return EXIT_KILL_POINT_NOT_REACHED
    return 0


def run_clean_forked(argv: Sequence[str]) -> int:
    """:func:`run_clean_main` in a forked child (no new interpreter: the modules and compiled
    kernels are inherited); returns its status as :mod:`subprocess` does (``-9`` when it
    died of SIGKILL). POSIX only; call it with no hook installed."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never return into the caller's stack
        status = 1
        try:
            status = run_clean_main(argv)
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
    _, wait_status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(wait_status):
        return -os.WTERMSIG(wait_status)
    return os.WEXITSTATUS(wait_status)


def main() -> None:
    """Process entry point: exit with :func:`run_clean_main`'s status."""
    sys.exit(run_clean_main())


if __name__ == "__main__":
    main()
