"""What moves the log start offsets of a node's logs: retention and DeleteRecords.

Owns the retention pass over every managed log (the scheduler's ``kafka-log-retention``
task, ``seglog retention --once``), retention on one log right after the cleaner cleaned it,
and DeleteRecords over several partitions.

Invariants:

* every change of a log start offset is followed by a write of ``log-start-offset-checkpoint``,
  so deleted data never comes back as readable after a restart; when a retention pass fails
  half-way (a rename on a full disk) the raised offset is checkpointed anyway (best effort) and
  the log is marked as needing recovery, and the error is raised;
* retention never works on a log the cleaner holds: it claims the log from the cleaner first
  (KAFKA-7322); the cleaner runs retention itself right after its round (:meth:`retain`);
* DeleteRecords checks every partition before it changes any;
* a read-only node plans retention and changes nothing.

Kafka runs retention only for logs without ``compact`` and leaves compacted logs to the
cleaner; seglog runs it for every log, so a ``compact`` log still loses segments below its
log start offset and a ``compact,delete`` log gets its size and time rules.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping

from seglog.clock import Clock
from seglog.core.retention import RetentionPlan
from seglog.engine.cleaning.cleaner_manager import CleanerManager
from seglog.engine.log import Log
from seglog.engine.retention_counters import RetentionCounters
from seglog.engine.run_history import RunHistory
from seglog.engine.topics import Topics
from seglog.errors import InvalidConfigError, OffsetOutOfRangeError
from seglog.format.topic_names import TopicPartition


class LogRetention:
    """Retention and DeleteRecords over the logs of ``topics`` (see the module docstring);
    ``checkpoint_log_start_offsets`` writes every root's log-start checkpoint and
    ``check_writable`` raises when the node may not write."""

    def __init__(
        self,
        topics: Topics,
        *,
        clock: Clock,
        read_only: bool,
        cleaner_manager: CleanerManager,
        history: RunHistory,
        counters: RetentionCounters,
        checkpoint_log_start_offsets: Callable[[], None],
        check_writable: Callable[[], None],
    ) -> None:
        self._topics = topics
        self._clock = clock
        self._read_only = read_only
        self._cleaner_manager = cleaner_manager
        self._history = history
        self._counters = counters
        self._checkpoint_log_start_offsets = checkpoint_log_start_offsets
        self._check_writable = check_writable

    def run_retention(self, *, dry_run: bool = False) -> list[tuple[TopicPartition, RetentionPlan]]:
        """Retention over every managed log; returns what was deleted per partition
        (``dry_run``: what would be, changing nothing)."""
        results: list[tuple[TopicPartition, RetentionPlan]] = []
        for tp, log in sorted(self._topics.managed_logs().items()):
            if dry_run or self._read_only:
                plan = log.plan_retention()
            else:
                # Claim the log from the cleaner first, so the two never work on one log at
                # once (KAFKA-7322); a log being cleaned gets its retention from the cleaner
                # right after the round.
                with self._cleaner_manager.deleting(tp) as claimed:
                    if not claimed:
                        continue
                    plan = self._apply_retention(log)
            if not plan.is_empty:
                results.append((tp, plan))
        if results and not dry_run and not self._read_only:
            self._checkpoint_log_start_offsets()
        return results

    def retain(self, tp: TopicPartition, log: Log) -> RetentionPlan | None:
        """Retention on one log the cleaner holds (after cleaning it); checkpoints follow."""
        if self._read_only:
            return None
        plan = self._apply_retention(log)
        if not plan.is_empty:
            self._checkpoint_log_start_offsets()
        return plan

    def _apply_retention(self, log: Log) -> RetentionPlan:
        """``log.apply_retention()``; when it fails half-way (a rename on a full disk), the
        segments not yet renamed stay listed below the raised log start offset (the next
        pass deletes them) and that offset is checkpointed anyway, so they never come back
        as readable data after a restart. What it deleted is recorded in the retention
        history."""
        try:
            now_ms = self._clock.now_ms()
            plan = log.apply_retention(now_ms)
            self._history.record_retention(log, plan, now_ms)
            self._counters.record(log.topic_partition, plan)
            return plan
        except OSError:
            log.mark_needs_recovery()
            # If the disk still fails, the error below is the one to report.
            with contextlib.suppress(OSError):
                self._checkpoint_log_start_offsets()
            raise

    def delete_records(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """DeleteRecords for several partitions (offset -1 = high watermark); returns each new
        log start offset. Every partition is checked before any is changed."""
        self._check_writable()
        logs = {tp: self._topics.get_log(tp.topic, tp.partition) for tp in offsets}
        for tp in logs:
            self._topics.check_config_known(tp.topic, "delete records of")
        for tp, log in logs.items():
            if not log.config.has_delete:
                raise InvalidConfigError(f"delete-records on {tp} needs cleanup.policy with delete")
            offset = offsets[tp]
            if offset != -1 and not 0 <= offset <= log.high_watermark:
                raise OffsetOutOfRangeError(
                    f"delete-records offset {offset} on {tp} is outside [0, "
                    f"{log.high_watermark}] (the high watermark)"
                )
        result = {tp: log.delete_records(offsets[tp]) for tp, log in logs.items()}
        self._checkpoint_log_start_offsets()
        return result
