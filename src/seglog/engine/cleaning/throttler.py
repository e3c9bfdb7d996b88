"""Kafka's shared cleaner I/O throttle (``log.cleaner.io.max.bytes.per.second``)."""

from __future__ import annotations

import time
from collections.abc import Callable


class Throttler:
    """Kafka's shared cleaner I/O throttle: sleep when the observed rate over the last
    period (at least ``check_interval_s``) exceeds ``bytes_per_second``."""

    def __init__(
        self,
        bytes_per_second: float,
        *,
        check_interval_s: float = 0.3,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if bytes_per_second <= 0:
            raise ValueError("bytes_per_second must be positive")
        self.bytes_per_second = bytes_per_second
        self.check_interval_s = check_interval_s
        self._monotonic = monotonic
        self._sleep = sleep
        self._period_start = monotonic()
        self._observed = 0.0
        self.total_bytes = 0
        self.slept_s = 0.0

    def maybe_throttle(self, byte_count: int) -> None:
        """Account ``byte_count`` bytes and sleep if the period's rate is above the target."""
        self.total_bytes += byte_count
        if self.bytes_per_second >= 1e300:
            return
        self._observed += byte_count
        now = self._monotonic()
        elapsed = now - self._period_start
        if elapsed < self.check_interval_s:
            return
        rate = self._observed / elapsed
        if rate > self.bytes_per_second:
            pause = self._observed / self.bytes_per_second - elapsed
            if pause > 0:
                self._sleep(pause)
                self.slept_s += pause
        self._period_start = self._monotonic()
        self._observed = 0.0
