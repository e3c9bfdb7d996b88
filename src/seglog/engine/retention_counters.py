"""What retention deleted in this process, counted for the metrics.

The :class:`~seglog.engine.log_manager.LogManager` records every applied retention plan here
(scheduler and cleaner threads alike); :mod:`seglog.engine.inspect.metrics` reads the counts. A
module of its own so that the manager does not import the metrics, which read the manager.
"""

from __future__ import annotations

import logging
import threading

from seglog.core.retention import RetentionPlan
from seglog.format.topic_names import TopicPartition

LOG = logging.getLogger("seglog.retention")


class RetentionCounters:
    """What retention deleted in this process, per (partition, rule); thread-safe.

    The manager records every applied plan (scheduler and cleaner threads alike); the
    counts only grow, and start at zero in each process (they are not persisted).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[TopicPartition, str], tuple[int, int]] = {}

    def record(self, tp: TopicPartition, plan: RetentionPlan) -> None:
        """Count an applied plan's deletions, and log each deleted segment at INFO."""
        if plan.is_empty:
            return
        with self._lock:
            for deletion in plan.deletions:
                key = (tp, str(deletion.rule))
                segments, size = self._counts.get(key, (0, 0))
                self._counts[key] = (segments + 1, size + deletion.size_bytes)
        for deletion in plan.deletions:
            LOG.info(
                "retention deleted segment %d of %s (%d bytes): %s",
                deletion.base_offset,
                tp,
                deletion.size_bytes,
                deletion.reason,
            )

    def snapshot(self) -> dict[tuple[TopicPartition, str], tuple[int, int]]:
        """(partition, rule) -> (segments, bytes) deleted so far."""
        with self._lock:
            return dict(self._counts)
