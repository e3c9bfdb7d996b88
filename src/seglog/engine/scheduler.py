"""A small task scheduler driven by an injected clock (Kafka's ``KafkaScheduler``, simplified).

Tasks run at ``due_ms`` on the clock's monotonic time, once or every ``period_ms``. Two ways to
drive it:

* :meth:`Scheduler.run_due` runs every task that is due *now* on the caller's thread; tests
  use it with a :class:`~seglog.clock.ManualClock` (no sleeping), and so does a CLI command
  that wants one pass;
* :meth:`Scheduler.start` runs a daemon thread that sleeps until the next task is due.

Limits: at most ``max_tasks`` tasks queued (a bug that schedules in a loop fails loudly). A
task that raises is logged and, if periodic, still runs at its next period.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from seglog.clock import Clock

LOG = logging.getLogger(__name__)
MAX_TASKS_DEFAULT = 100_000
IDLE_WAIT_MS = 1_000


@dataclass(order=True, slots=True)
class _Task:
    due_ms: int
    sequence: int
    name: str = field(compare=False)
    action: Callable[[], object] = field(compare=False)
    period_ms: int | None = field(compare=False, default=None)
    cancelled: bool = field(compare=False, default=False)


class Scheduler:
    """Run named tasks after a delay, once or periodically."""

    def __init__(self, clock: Clock, *, max_tasks: int = MAX_TASKS_DEFAULT) -> None:
        self.clock = clock
        self.max_tasks = max_tasks
        self._heap: list[_Task] = []
        self._sequence = itertools.count()
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self.failures: list[tuple[str, BaseException]] = []

    def schedule(
        self,
        name: str,
        action: Callable[[], object],
        *,
        delay_ms: int = 0,
        period_ms: int | None = None,
    ) -> None:
        """Run ``action`` after ``delay_ms``, then every ``period_ms`` if given (> 0)."""
        if period_ms is not None and period_ms <= 0:
            raise ValueError(f"task {name!r}: period_ms must be > 0, got {period_ms}")
        with self._lock:
            if len(self._heap) >= self.max_tasks:
                raise RuntimeError(f"scheduler queue is full ({self.max_tasks} tasks)")
            due = self.clock.monotonic_ms() + max(0, delay_ms)
            heapq.heappush(self._heap, _Task(due, next(self._sequence), name, action, period_ms))
            self._lock.notify()

    def pending(self) -> list[str]:
        """Names of queued tasks, soonest first."""
        with self._lock:
            return [task.name for task in sorted(self._heap)]

    def _pop_due(self) -> _Task | None:
        with self._lock:
            if self._heap and self._heap[0].due_ms <= self.clock.monotonic_ms():
                return heapq.heappop(self._heap)
            return None

    def _run(self, task: _Task) -> None:
        try:
            task.action()
        except Exception as exc:  # a failing task must not kill the scheduler
            LOG.exception("scheduled task %s failed", task.name)
            self.failures.append((task.name, exc))
        if task.period_ms is not None:
            with self._lock:
                task.due_ms = self.clock.monotonic_ms() + task.period_ms
                task.sequence = next(self._sequence)
                heapq.heappush(self._heap, task)

    def run_due(self) -> int:
        """Run every task due now on this thread; returns how many ran."""
        ran = 0
        while (task := self._pop_due()) is not None:
            self._run(task)
            ran += 1
        return ran

    def start(self) -> None:
        """Run due tasks on a daemon thread until :meth:`shutdown`."""
        if self._thread is not None:
            return
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="seglog-scheduler", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._lock:
                if self._stopping:
                    return
                wait_ms = IDLE_WAIT_MS
                if self._heap:
                    wait_ms = min(wait_ms, self._heap[0].due_ms - self.clock.monotonic_ms())
                if wait_ms > 0:
                    self._lock.wait(wait_ms / 1000)
                    continue
            self.run_due()

    def shutdown(self) -> None:
        """Stop the thread (tasks still queued are dropped)."""
        with self._lock:
            self._stopping = True
            self._lock.notify()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            self._heap.clear()
