"""A few long-lived threads that each run one short job while the caller waits in I/O.

The append path's use: a large append checks its batches' CRCs (and plans its index
entries) on a side thread while the appending thread is inside ``pwritev``, which releases
the GIL, so the two overlap on two cores (``LogSegment.append``).

Why not ``concurrent.futures.ThreadPoolExecutor``: its ``submit`` (a future, a condition,
a queue, the pool's bookkeeping) costs about 30 us here, a fifth of the time the write of a
1 MiB chunk gives the job. A side thread is handed its job with two raw locks instead.

Rules:

* :meth:`SideThreads.submit` never waits: it returns ``None`` when every thread is busy and
  the limit is reached, and the caller runs the job itself (so a job never queues behind
  another, and a caller never blocks on a pool);
* the caller must call :meth:`SideJob.result` once per job: it returns the job's value or
  raises its exception, running the job itself when the side thread has not started it
  (a late thread costs the caller nothing more than doing the job alone); the thread goes
  back to the pool when it is done with (or has skipped) its job;
* at most ``max_threads`` threads (made on first need, daemon threads named
  ``seglog-side-N``); :meth:`SideThreads.close` stops them once their jobs are done.
"""

from __future__ import annotations

import _thread
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

MAX_SIDE_THREADS_DEFAULT = 2


class SideJob(Generic[T]):
    """One job handed to a side thread; see the module docstring.

    Whoever takes ``_claim`` first runs the job: the side thread when it wakes, or the
    caller in :meth:`result` when the side thread has not started it yet (its core was busy
    or taken by the host), so a late thread never makes the caller wait longer than running
    the job itself would.
    """

    __slots__ = ("_claim", "_done", "_error", "_fn", "_result")

    def __init__(self, fn: Callable[[], T]) -> None:
        self._fn = fn
        self._claim = _thread.allocate_lock()
        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._result: T | None = None
        self._error: BaseException | None = None

    def _execute(self) -> None:
        try:
            self._result = self._fn()
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc

    def _try_run(self) -> bool:
        """Run the job here unless someone else has claimed it; whether this call ran it."""
        if not self._claim.acquire(blocking=False):
            return False
        self._execute()
        self._done.release()
        return True

    def result(self) -> T:
        """The job's value, or its exception raised here (runs it here if not started)."""
        self._try_run()
        self._done.acquire()
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]  # set by the job when no error


class _SideThread:
    """A daemon thread that waits on ``go``, runs its job unless the caller already took it,
    then goes back to its pool's idle list."""

    def __init__(self, owner: SideThreads, name: str) -> None:
        self.owner = owner
        self.go = _thread.allocate_lock()
        self.go.acquire()
        self.job: SideJob[object] | None = None
        self.busy = False  # handed a job and not yet back in the pool (the pool's lock)
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            self.go.acquire()
            job, self.job = self.job, None
            if job is None:
                return  # closed
            if job._claim.acquire(blocking=False):
                job._execute()
                # Back in the pool before the caller hears of the result, so the caller's
                # next submit finds this thread free.
                self.owner._give_back(self)
                job._done.release()
            else:  # the caller ran it meanwhile
                self.owner._give_back(self)


class SideThreads:
    """At most ``max_threads`` side threads, made on first need; see the module docstring."""

    def __init__(self, max_threads: int = MAX_SIDE_THREADS_DEFAULT) -> None:
        if max_threads < 1:
            raise ValueError(f"max_threads must be at least 1, got {max_threads}")
        self.max_threads = max_threads
        self._lock = threading.Lock()
        self._idle: list[_SideThread] = []
        self._all: list[_SideThread] = []
        self._closed = False

    def submit(self, fn: Callable[[], T]) -> SideJob[T] | None:
        """Start ``fn`` on a free side thread; None when none is free (run it yourself)."""
        with self._lock:
            if self._closed:
                return None
            if self._idle:
                thread = self._idle.pop()
            elif len(self._all) < self.max_threads:
                thread = _SideThread(self, f"seglog-side-{len(self._all)}")
                self._all.append(thread)
            else:
                return None
            thread.busy = True
        job: SideJob[T] = SideJob(fn)
        thread.job = job  # type: ignore[assignment]  # results are typed by the job
        thread.go.release()
        return job

    def _give_back(self, thread: _SideThread) -> None:
        with self._lock:
            thread.busy = False
            if not self._closed:
                self._idle.append(thread)

    def close(self) -> None:
        """Stop every thread once its job is over; later submits return None."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            threads = list(self._all)
        for thread in threads:
            # A busy thread finishes (or skips) its job first: wait until it is back.
            while thread.busy and thread.thread.is_alive():
                thread.thread.join(0.001)
            thread.job = None
            thread.go.release()
        for thread in threads:
            if thread.thread is not threading.current_thread():
                thread.thread.join()
