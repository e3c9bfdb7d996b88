"""Time for everything that decides by time: roll, flush, retention, deletion delays.

Every time-dependent component takes a :class:`Clock` instead of calling ``time`` itself, so
tests drive time with a :class:`ManualClock` and never sleep (docs/architecture.md, habits).

* ``now_ms()``: wall-clock milliseconds since the Unix epoch; what Kafka compares record
  timestamps with (LogAppendTime, ``segment.ms``, ``retention.ms``).
* ``monotonic_ms()``: a clock that never goes backwards, for intervals (scheduler periods,
  flush intervals, deletion delays); its origin is arbitrary.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    """Where components read the time."""

    def now_ms(self) -> int:
        """Wall-clock milliseconds since the Unix epoch."""
        ...

    def monotonic_ms(self) -> int:
        """Milliseconds on a clock that never goes backwards (arbitrary origin)."""
        ...


class SystemClock:
    """The real clocks of this machine."""

    def now_ms(self) -> int:
        """Wall-clock milliseconds since the Unix epoch."""
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        """``time.monotonic_ns`` in milliseconds."""
        return time.monotonic_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when a test moves it; wall and monotonic time move together."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self._lock = threading.Lock()
        self._now_ms = now_ms
        self._monotonic_ms = 0

    def now_ms(self) -> int:
        """The current (manual) wall-clock time."""
        with self._lock:
            return self._now_ms

    def monotonic_ms(self) -> int:
        """The current (manual) monotonic time."""
        with self._lock:
            return self._monotonic_ms

    def advance(self, ms: int) -> None:
        """Move both clocks forward by ``ms`` (>= 0)."""
        if ms < 0:
            raise ValueError(f"a clock cannot go back by {ms} ms")
        with self._lock:
            self._now_ms += ms
            self._monotonic_ms += ms

    def set_wall(self, now_ms: int) -> None:
        """Set the wall clock (it may jump either way, as real wall clocks do)."""
        with self._lock:
            self._now_ms = now_ms
