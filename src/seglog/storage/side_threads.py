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
* the caller must call :meth:`SideJob.result` exactly once per job (it waits for the job,
  returns its value or raises its exception, and gives the thread back);
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
    """One job handed to a side thread; see the module docstring."""

    __slots__ = ("_error", "_owner", "_result", "_thread")

    def __init__(self, owner: SideThreads, thread: _SideThread) -> None:
        self._owner = owner
        self._thread = thread
        self._result: T | None = None
        self._error: BaseException | None = None

    def result(self) -> T:
        """Wait for the job; its value, or its exception raised here."""
        thread = self._thread
        thread.done.acquire()
        self._owner._give_back(thread)
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]  # set by the job when no error


class _SideThread:
    """A daemon thread that waits on ``go``, runs ``job``, then releases ``done``."""

    def __init__(self, name: str) -> None:
        self.go = _thread.allocate_lock()
        self.done = _thread.allocate_lock()
        self.go.acquire()
        self.done.acquire()
        self.fn: Callable[[], object] | None = None
        self.job: SideJob[object] | None = None
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            self.go.acquire()
            fn, job = self.fn, self.job
            if fn is None or job is None:
                return  # closed
            try:
                job._result = fn()
            except BaseException as exc:  # handed to the caller by SideJob.result
                job._error = exc
            self.fn = self.job = None
            self.done.release()


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
                thread = _SideThread(f"seglog-side-{len(self._all)}")
                self._all.append(thread)
            else:
                return None
        job: SideJob[T] = SideJob(self, thread)
        thread.fn = fn
        thread.job = job  # type: ignore[assignment]  # results are typed by the job
        thread.go.release()
        return job

    def _give_back(self, thread: _SideThread) -> None:
        with self._lock:
            self._idle.append(thread)

    def close(self) -> None:
        """Stop every thread (each finishes its job first); later submits return None."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            threads = list(self._all)
        for thread in threads:
            thread.fn = thread.job = None
            thread.go.release()
        for thread in threads:
            if thread.thread is not threading.current_thread():
                thread.thread.join()
